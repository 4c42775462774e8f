// tinytorch/optim/optimizer.ipp — the bodies of optimizer.hpp: step_impl, zero_grad, state_dict,
// load_state_dict, add_group.
//
// Not a header to include: optimizer.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The declarations and their documentation are in optimizer.hpp.
// Chapter: chapters/01-training-loop.md.
#pragma once

#include "tinytorch/optim/optimizer.hpp"
#include "tinytorch/ops/dispatch.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace optim {

TT_DECL void Optimizer::step_impl() {
  NoGradGuard no_grad;
  for (ParamGroup& group : param_groups_) {
    for (Tensor& p : group.params) {
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      ParamState& st = state_[p.impl()];
      // State made on another device (the model moved after the optimizer's first step) would
      // be read through the wrong pointers: PyTorch's error instead (its foreach kernels raise it).
      ops::check_same_device("Optimizer.step", p, grad, st.momentum_buffer, st.exp_avg, st.exp_avg_sq,
                             st.max_exp_avg_sq);
      update(p, grad, st, group);
    }
  }
}

TT_DECL void Optimizer::zero_grad(bool set_to_none) {
  for (ParamGroup& group : param_groups_) {
    for (Tensor& p : group.params) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        NoGradGuard no_grad;
        if (grad.grad_fn()) grad.detach_();  // as PyTorch's zero_grad (detach_ refuses views)
        else grad.impl()->requires_grad = false;
        grad.zero_();
      }
    }
  }
}

TT_DECL std::vector<std::pair<std::string, Tensor>> Optimizer::state_dict() const {
  std::vector<std::pair<std::string, Tensor>> out;
  const std::vector<std::string> names = state_names();
  int64_t index = 0;
  for (const ParamGroup& group : param_groups_) {
    for (const Tensor& p : group.params) {
      const std::string prefix = "state." + std::to_string(index++) + ".";
      auto it = state_.find(p.impl());
      if (it == state_.end()) continue;
      for (const std::string& name : names) {
        Tensor t = state_tensor(it->second, name);
        if (t.defined()) out.emplace_back(prefix + name, t);
      }
    }
  }
  index = 0;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const ParamGroup& group = param_groups_[g];
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    for (const std::string& name : hyperparameter_names()) out.emplace_back(prefix + name, group_value(group, name));
    if (group.initial_lr) out.emplace_back(prefix + "initial_lr", scalar_tensor(*group.initial_lr, kFloat64));
    Tensor ids = empty({static_cast<int64_t>(group.params.size())}, kInt64);
    for (size_t j = 0; j < group.params.size(); ++j) ids.data_ptr<int64_t>()[j] = index++;
    out.emplace_back(prefix + "params", ids);
  }
  return out;
}

TT_DECL void Optimizer::load_state_dict(const std::vector<std::pair<std::string, Tensor>>& sd) {
  const char* op = "Optimizer.load_state_dict";
  std::map<std::string, Tensor> by_key;
  for (const auto& [key, t] : sd) {
    TT_CHECK(t.defined(), op, ": undefined tensor for key \"", key, "\"");
    TT_CHECK(by_key.emplace(key, t).second, op, ": duplicate key \"", key, "\"");
  }
  std::unordered_set<std::string> used;
  auto take = [&](const std::string& key) -> const Tensor* {
    auto it = by_key.find(key);
    if (it == by_key.end()) return nullptr;
    used.insert(key);
    return &it->second;
  };
  size_t saved_groups = 0;
  while (by_key.count("param_groups." + std::to_string(saved_groups) + ".params")) ++saved_groups;
  TT_CHECK(saved_groups == param_groups_.size(), "loaded state dict has a different number of parameter groups");
  // Hyper-parameters and the saved ids -> this optimizer's parameters.
  std::vector<ParamGroup> groups = param_groups_;
  std::map<int64_t, const Tensor*> param_of_id;
  std::map<int64_t, size_t> group_of_id;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    const Tensor ids = take(prefix + "params")->contiguous();
    TT_CHECK(ids.dtype() == kInt64 && ids.dim() == 1, op, ": ", prefix, "params must be a 1-D int64 tensor, got ",
             dtype_name(ids.dtype()), " of shape ", shape_str(ids.sizes()));
    TT_CHECK(ids.numel() == static_cast<int64_t>(groups[g].params.size()),
             "loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
    for (int64_t j = 0; j < ids.numel(); ++j) {
      const int64_t id = ids.data_ptr<int64_t>()[j];
      TT_CHECK(param_of_id.emplace(id, &groups[g].params[static_cast<size_t>(j)]).second, op,
               ": parameter id ", id, " appears twice in param_groups");
      group_of_id[id] = g;
    }
    for (const std::string& name : hyperparameter_names()) {
      const Tensor* t = take(prefix + name);
      TT_CHECK(t != nullptr, op, ": missing key \"", prefix, name, "\"");
      set_group_value(groups[g], name, *t, prefix + name);
    }
    if (const Tensor* t = take(prefix + "initial_lr")) groups[g].initial_lr = scalar_value(*t, prefix + "initial_lr");
    else groups[g].initial_lr.reset();
  }
  // The state: "state.<id>.<name>".
  std::unordered_map<TensorImpl*, ParamState> state;
  std::map<int64_t, std::set<std::string>> loaded;  // id -> the state names found for it
  const std::vector<std::string> names = state_names();
  for (const auto& [key, t] : by_key) {
    if (used.count(key) || key.compare(0, 6, "state.") != 0) continue;
    const size_t dot = key.find('.', 6);
    const std::string id_text = key.substr(6, dot == std::string::npos ? std::string::npos : dot - 6);
    const std::string name = dot == std::string::npos ? "" : key.substr(dot + 1);
    char* end = nullptr;
    const long long id = std::strtoll(id_text.c_str(), &end, 10);
    // Only the canonical spelling of an id ("0", not "00", "+0" or " 0"): two spellings of one
    // id would silently overwrite each other; the others end as unexpected keys below.
    if (id_text.empty() || *end != '\0' || std::to_string(id) != id_text ||
        std::find(names.begin(), names.end(), name) == names.end())
      continue;
    auto p = param_of_id.find(id);
    TT_CHECK(p != param_of_id.end(), op, ": ", key, " is the state of parameter id ", id,
             ", which no param group lists");
    const Tensor& param = *p->second;
    ParamState& st = state[param.impl()];
    loaded[id].insert(name);
    used.insert(key);
    if (name == "step") {
      const double v = scalar_value(t, key);
      TT_CHECK(v >= 0 && v == std::floor(v) && v < 9.2e18, op, ": ", key, " must be a non-negative integer, got ",
               detail::py_float(v));
      st.step = static_cast<int64_t>(v);
      continue;
    }
    TT_CHECK(t.sizes() == param.sizes(), op, ": size mismatch for ", key, ": copying a state with shape ",
             shape_str(t.sizes()), ", the shape of parameter ", id, " is ", shape_str(param.sizes()));
    NoGradGuard no_grad;
    state_tensor(st, name) = t.to(param.dtype()).to(param.device()).contiguous().clone().detach();
  }
  for (const auto& entry : by_key)
    TT_CHECK(used.count(entry.first), op, ": unexpected key \"", entry.first, "\" (this optimizer's keys: state.<i>.{",
             join(names), "}, param_groups.<g>.{", join(hyperparameter_names()), ", initial_lr, params})");
  // A parameter with some state must have all of it (PyTorch's step raises KeyError: 'exp_avg'
  // otherwise); an Adam that restarted exp_avg from zero at step 2 would be silently wrong.
  for (const auto& [id, found] : loaded)
    for (const std::string& name : required_state_names(groups[group_of_id.at(id)]))
      TT_CHECK(found.count(name), op, ": missing key \"state.", id, ".", name, "\" (parameter ", id,
               " has other state entries, so it needs all of ", join(required_state_names(groups[group_of_id.at(id)])), ")");
  param_groups_ = std::move(groups);
  state_ = std::move(state);
}

TT_DECL int64_t Optimizer::state_nbytes() const {
  int64_t n = 0;
  for (const auto& entry : state_)
    for (const Tensor* t : {&entry.second.momentum_buffer, &entry.second.exp_avg, &entry.second.exp_avg_sq,
                            &entry.second.max_exp_avg_sq})
      if (t->defined()) n += t->numel() * static_cast<int64_t>(element_size(t->dtype()));
  return n;
}

TT_DECL void Optimizer::add_group(ParamGroup group) {
  std::unordered_set<TensorImpl*> in_group;
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    TT_CHECK(p.defined(), "optimizer got an undefined tensor at index ", i, " of a parameter group");
    TT_CHECK(p.is_leaf(), "can't optimize a non-leaf Tensor");
    TT_CHECK(in_group.insert(p.impl()).second,
             "optimizer contains a parameter group with duplicate parameters");
  }
  for (const ParamGroup& g : param_groups_)
    for (const Tensor& q : g.params)
      TT_CHECK(in_group.count(q.impl()) == 0, "some parameters appear in more than one parameter group");
  param_groups_.push_back(std::move(group));
}

TT_DECL bool Optimizer::fast_path_ok(const Tensor& param, const Tensor& grad) {
  return param.device() == grad.device() && param.dtype() == grad.dtype() &&
         param.dtype() != kInt64 && !is_reduced_floating_point(param.dtype()) && param.is_contiguous() &&
         grad.is_contiguous() &&
         param.sizes() == grad.sizes();
}

TT_DECL std::string Optimizer::join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

TT_DECL double Optimizer::scalar_value(const Tensor& t, const std::string& key) {
  TT_CHECK(t.numel() == 1, "Optimizer.load_state_dict: ", key, " must hold one number, got shape ",
           shape_str(t.sizes()));
  return t.item<double>();
}

TT_DECL Tensor& Optimizer::state_tensor(ParamState& st, const std::string& name) {
  if (name == "momentum_buffer") return st.momentum_buffer;
  if (name == "exp_avg") return st.exp_avg;
  if (name == "exp_avg_sq") return st.exp_avg_sq;
  return st.max_exp_avg_sq;
}

TT_DECL Tensor Optimizer::group_value(const ParamGroup& g, const std::string& name) {
  if (name == "betas") return tensor({g.betas.first, g.betas.second}, kFloat64);
  double v = 0;
  if (name == "lr") v = g.lr;
  else if (name == "weight_decay") v = g.weight_decay;
  else if (name == "momentum") v = g.momentum;
  else if (name == "dampening") v = g.dampening;
  else if (name == "nesterov") v = g.nesterov ? 1 : 0;
  else if (name == "eps") v = g.eps;
  else if (name == "amsgrad") v = g.amsgrad ? 1 : 0;
  else TT_CHECK(false, "Optimizer.state_dict: unknown hyper-parameter \"", name, "\"");
  return scalar_tensor(v, kFloat64);
}

TT_DECL void Optimizer::set_group_value(ParamGroup& g, const std::string& name, const Tensor& t,
    const std::string& key) {
  if (name == "betas") {
    TT_CHECK(t.numel() == 2, "Optimizer.load_state_dict: ", key, " must hold two numbers, got shape ",
             shape_str(t.sizes()));
    const Tensor b = t.to(kFloat64).to(Device::cpu()).contiguous();  // a host read: copy a CUDA tensor first
    g.betas = {b.data_ptr<double>()[0], b.data_ptr<double>()[1]};
    return;
  }
  const double v = scalar_value(t, key);
  if (name == "nesterov" || name == "amsgrad") {
    TT_CHECK(v == 0 || v == 1, "Optimizer.load_state_dict: ", key, " must be 0 or 1 (a bool), got ",
             detail::py_float(v));
    (name == "nesterov" ? g.nesterov : g.amsgrad) = v == 1;
    return;
  }
  if (name == "lr") g.lr = v;
  else if (name == "weight_decay") g.weight_decay = v;
  else if (name == "momentum") g.momentum = v;
  else if (name == "dampening") g.dampening = v;
  else if (name == "eps") g.eps = v;
  else TT_CHECK(false, "Optimizer.load_state_dict: unknown hyper-parameter \"", name, "\"");
}

}  TT_NAMESPACE_END  // namespace tinytorch::optim

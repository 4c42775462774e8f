// tinytorch/optim/optimizer.hpp — Optimizer: parameter groups, per-parameter state, zero_grad.
//
// An optimizer owns handles to the parameters it updates (the same TensorImpls as the model's),
// grouped into param groups that each carry their own hyper-parameters, as PyTorch's
// `optimizer.param_groups` (a list of dicts) does:
//   step():  with no_grad: for group in param_groups: for p in group.params:
//                if p.grad is None: continue            // e.g. a frozen or unused layer
//                update(p, p.grad, state[p], group)     // SGD, Adam, ... (one subclass each)
//   zero_grad(set_to_none=True): p.grad = None          // PyTorch 2.x default
//                (set_to_none=False): p.grad.zero_()    // keeps the buffers allocated
// state[p] is per-parameter memory (SGD's momentum buffer, Adam's moments and step count), keyed
// by the parameter's TensorImpl*, created on the parameter's first update.
// Learning-rate schedulers (lr_scheduler.hpp) write `param_groups()[i].lr` between steps.
// Bookkeeping as PyTorch's: step() counts its calls (step_count(), which schedulers check to warn
// when they are stepped first) and every parameter update bumps the parameter's version counter
// (core/storage.hpp), so a backward through a graph built before the step raises instead of
// differentiating with the new values.
// Shapes: every state tensor has its parameter's shape and dtype.
// Checkpoints: state_dict() / load_state_dict() give the state and the groups' hyper-parameters as
// a flat list of (key, Tensor) that tinytorch::save writes, keyed by parameter index as PyTorch's
// optimizer.state_dict() (the key mapping is documented at state_dict() below).
// Chapter: chapters/01-training-loop.md (the loop), chapters/03-optimizers.md (the updates, state
// memory, state_dict and resuming).
// Reference: torch.optim.Optimizer (PyTorch 2.x: torch/optim/optimizer.py).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../functional.hpp"
#include "../core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace optim {

namespace detail {
/// A double as Python's repr(float) prints it ("0.1", "-1.0", "1e-05", "inf"), so that error
/// messages read exactly as PyTorch's f"Invalid learning rate: {lr}". (A Python int argument
/// prints without ".0" there; tinytorch's arguments are always doubles.)
inline std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Shortest %e form that reads back as the same double (what repr does).
  char buf[40];
  for (int prec = 0; prec < 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s(buf);
  const bool neg = s[0] == '-';
  if (neg) s.erase(0, 1);
  const size_t e = s.find('e');
  const int exp10 = std::atoi(s.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (s[i] != '.') digits += s[i];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exp10 < -4 || exp10 >= 16) {  // scientific, as repr(1e-05) == '1e-05'
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += ebuf;
  } else if (exp10 < 0) {
    out = "0." + std::string(static_cast<size_t>(-exp10 - 1), '0') + digits;
  } else {
    const size_t int_digits = static_cast<size_t>(exp10) + 1;
    if (digits.size() <= int_digits) out = digits + std::string(int_digits - digits.size(), '0') + ".0";
    else out = digits.substr(0, int_digits) + "." + digits.substr(int_digits);
  }
  return neg ? "-" + out : out;
}
}  // namespace detail

/// One parameter group: parameters plus the hyper-parameters used for them (PyTorch's group
/// dict, with every optimizer's keys as fields; an optimizer reads its own and ignores the rest).
/// Change them between steps, e.g. `opt.param_groups()[0].lr = 0.01;` (what schedulers do).
struct ParamGroup {
  std::vector<Tensor> params;
  double lr = 1e-3;                   ///< learning rate (every optimizer)
  std::optional<double> initial_lr;   ///< set by the first LR scheduler (PyTorch's 'initial_lr')
  double weight_decay = 0.0;          ///< L2 penalty (SGD, Adam) or decoupled decay (AdamW)
  // SGD
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;
  // Adam / AdamW
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;
  bool amsgrad = false;
};

/// Per-parameter optimizer memory (PyTorch's optimizer.state[p]); each optimizer uses its fields.
struct ParamState {
  Tensor momentum_buffer;  ///< SGD with momentum: the velocity b_t (undefined before the first step)
  int64_t step = 0;        ///< Adam/AdamW: number of updates applied to this parameter
  Tensor exp_avg;          ///< Adam/AdamW: first moment m_t
  Tensor exp_avg_sq;       ///< Adam/AdamW: second moment v_t
  Tensor max_exp_avg_sq;   ///< Adam/AdamW with amsgrad: max over t of v_t
};

/// Base class of SGD, Adam, AdamW. Not copyable (schedulers refer to it, state is keyed by the
/// parameters' TensorImpl*).
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One optimization step: for every parameter whose grad is defined, update(p, p.grad, state, group),
  /// under NoGradGuard. Parameters with an undefined grad (unused, frozen) are skipped and get no state.
  /// Each updated parameter's version counter is bumped (as by PyTorch's in-place updates), so a
  /// backward through a graph built before the step raises instead of using the new values.
  /// Counts the call (step_count()), which LR schedulers check.
  void step() {
    ++step_count_;
    step_impl();
  }

  /// Number of step() calls so far (PyTorch 1.13's optimizer._step_count, which
  /// lr_scheduler.step() reads to warn when it is called before the first optimizer.step()).
  int64_t step_count() const { return step_count_; }

 protected:
  /// The step itself (the loop above). A subclass with another loop overrides this, not step().
  virtual void step_impl();

 public:

  /// Resets the gradients of all parameters: to undefined (set_to_none=true, the PyTorch 2.x
  /// default: saves memory, and the next backward writes instead of adding) or to zeros.
  void zero_grad(bool set_to_none = true) {
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

  /// The parameter groups (mutable: set group.lr between steps to change the learning rate).
  std::vector<ParamGroup>& param_groups() { return param_groups_; }
  const std::vector<ParamGroup>& param_groups() const { return param_groups_; }

  /// All per-parameter state, keyed by TensorImpl* (PyTorch's optimizer.state).
  const std::unordered_map<TensorImpl*, ParamState>& state() const { return state_; }
  /// The state of parameter p, or nullptr before p's first update.
  const ParamState* state(const Tensor& p) const {
    auto it = state_.find(p.impl());
    return it == state_.end() ? nullptr : &it->second;
  }

  /// The optimizer's checkpoint (torch.optim.Optimizer.state_dict) as a flat list of
  /// (key, Tensor), what tinytorch::save writes. PyTorch's nested dict maps to keys as:
  ///   sd['state'][i]['momentum_buffer']          "state.<i>.momentum_buffer"   (p's shape, dtype)
  ///   sd['state'][i]['step']                     "state.<i>.step"              0-d float32, as PyTorch's
  ///   sd['state'][i]['exp_avg' | 'exp_avg_sq' | 'max_exp_avg_sq']   "state.<i>.exp_avg", ...
  ///   sd['param_groups'][g]['lr'] (a float)      "param_groups.<g>.lr"         0-d float64
  ///   sd['param_groups'][g]['betas'] (a tuple)   "param_groups.<g>.betas"      (2,) float64
  ///   sd['param_groups'][g]['nesterov'] (bool)   "param_groups.<g>.nesterov"   0-d float64, 0 or 1
  ///   sd['param_groups'][g]['initial_lr']        "param_groups.<g>.initial_lr" (only once a scheduler set it)
  ///   sd['param_groups'][g]['params'] ([0, 1])   "param_groups.<g>.params"     (n,) int64
  /// i counts the parameters over all groups in order (group 0's first), as PyTorch's ids; only
  /// parameters that have state (were updated at least once) appear under "state.", in that
  /// order, then each group's hyper-parameters (hyperparameter_names(): SGD's lr, momentum,
  /// dampening, weight_decay, nesterov; Adam's lr, betas, eps, weight_decay, amsgrad), then
  /// "params". PyTorch's flags that tinytorch does not have (maximize, foreach, fused, ...) are
  /// not written; SGD without momentum has no state entries (PyTorch stores momentum_buffer=None).
  /// The state tensors are the live ones, not copies (as PyTorch's): clone them, or save them,
  /// to keep a snapshot while training goes on.
  std::vector<std::pair<std::string, Tensor>> state_dict() const {
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

  /// Restores a state_dict() (torch.optim.Optimizer.load_state_dict): every group's
  /// hyper-parameters (lr included, and initial_lr) are replaced by the loaded ones, the
  /// parameters stay this optimizer's, matched to the saved ids by position (group by group, as
  /// PyTorch's zip of the saved and current "params" lists); the state tensors are copied, cast to
  /// their parameter's dtype (step: an integer count), and replace all current state.
  /// Everything is checked before anything changes; throws tinytorch::Error:
  ///   "loaded state dict has a different number of parameter groups"  (PyTorch's ValueError)
  ///   "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
  ///   "Optimizer.load_state_dict: size mismatch for state.0.exp_avg: copying a state with shape
  ///    [3], the shape of parameter 0 is [2, 3]"  (PyTorch does not check, and fails later)
  ///   "... missing key \"param_groups.0.momentum\"", "... unexpected key \"...\"" (a key of
  ///   another optimizer, or none of ours, or an id not written as state_dict() writes it, e.g.
  ///   "state.00.step"), a state for an id no group lists, a parameter's state without an entry
  ///   its optimizer needs (required_state_names(): Adam's step, exp_avg, exp_avg_sq; PyTorch's
  ///   step raises KeyError), a step that is not a non-negative integer, a hyper-parameter that
  ///   is not a number (betas: two numbers). Hyper-parameter values are not range-checked (NaN or
  ///   a negative lr loads, as in PyTorch).
  void load_state_dict(const std::vector<std::pair<std::string, Tensor>>& sd) {
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

  /// The names of the per-group hyper-parameters state_dict() writes (PyTorch's group keys).
  /// The base class lists every field of ParamGroup; SGD and Adam list their own.
  virtual std::vector<std::string> hyperparameter_names() const {
    return {"lr", "momentum", "dampening", "weight_decay", "nesterov", "betas", "eps", "amsgrad"};
  }
  /// The names of the per-parameter state entries state_dict() writes (when defined).
  virtual std::vector<std::string> state_names() const {
    return {"momentum_buffer", "step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  }
  /// The state entries a parameter that has any state must have, in `group` (load_state_dict
  /// checks them): none here and for SGD (its momentum_buffer may be absent), Adam's step,
  /// exp_avg, exp_avg_sq, and max_exp_avg_sq when the group has amsgrad.
  virtual std::vector<std::string> required_state_names(const ParamGroup& group) const {
    (void)group;
    return {};
  }

  /// Bytes held by the optimizer's per-parameter state tensors (momentum buffers, moments; the
  /// step counters are not tensors here and not counted): 0 for plain SGD, the parameters' bytes
  /// for SGD with momentum, twice that for Adam/AdamW (three times with amsgrad).
  int64_t state_nbytes() const {
    int64_t n = 0;
    for (const auto& entry : state_)
      for (const Tensor* t : {&entry.second.momentum_buffer, &entry.second.exp_avg, &entry.second.exp_avg_sq,
                              &entry.second.max_exp_avg_sq})
        if (t->defined()) n += t->numel() * static_cast<int64_t>(element_size(t->dtype()));
    return n;
  }

 protected:
  Optimizer() = default;

  /// The update rule for one parameter (grad defined, grad mode off). `state` starts empty.
  virtual void update(Tensor& param, const Tensor& grad, ParamState& state, const ParamGroup& group) = 0;

  /// Appends a group after checking its parameters (PyTorch's add_param_group): defined, leaves,
  /// not already in this optimizer. Throws tinytorch::Error:
  ///   "can't optimize a non-leaf Tensor"
  ///   "some parameters appear in more than one parameter group"
  ///   "optimizer contains a parameter group with duplicate parameters" (PyTorch only warns;
  ///     tinytorch throws, since such a parameter would be updated twice per step)
  void add_group(ParamGroup group) {
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

  /// Throws "optimizer got an empty parameter list" (what PyTorch's constructor checks).
  static void check_not_empty(const std::vector<Tensor>& params) {
    TT_CHECK(!params.empty(), "optimizer got an empty parameter list");
  }

  /// True when the update can run as a raw loop: a CPU float32/float64 parameter and a grad of
  /// the same dtype, both dense and row-major (the usual case: nn:: parameters and the grads
  /// autograd accumulates). Otherwise optimizers fall back to their *_naive tensor-op version.
  static bool fast_path_ok(const Tensor& param, const Tensor& grad) {
    return param.device() == grad.device() && param.dtype() == grad.dtype() &&
           param.dtype() != kInt64 && param.is_contiguous() && grad.is_contiguous() &&
           param.sizes() == grad.sizes();
  }

 private:
  static std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  }
  /// A one-element tensor's value as a double (any dtype), or an error naming the key.
  static double scalar_value(const Tensor& t, const std::string& key) {
    TT_CHECK(t.numel() == 1, "Optimizer.load_state_dict: ", key, " must hold one number, got shape ",
             shape_str(t.sizes()));
    return t.item<double>();
  }
  static Tensor& state_tensor(ParamState& st, const std::string& name) {
    if (name == "momentum_buffer") return st.momentum_buffer;
    if (name == "exp_avg") return st.exp_avg;
    if (name == "exp_avg_sq") return st.exp_avg_sq;
    return st.max_exp_avg_sq;
  }
  /// The state entry `name` as a tensor ("step": a 0-d float32 count, as PyTorch's).
  static Tensor state_tensor(const ParamState& st, const std::string& name) {
    if (name == "step") return scalar_tensor(static_cast<double>(st.step), kFloat32);
    return state_tensor(const_cast<ParamState&>(st), name);
  }
  static Tensor group_value(const ParamGroup& g, const std::string& name) {
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
  static void set_group_value(ParamGroup& g, const std::string& name, const Tensor& t, const std::string& key) {
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

 protected:
  std::vector<ParamGroup> param_groups_;
  std::unordered_map<TensorImpl*, ParamState> state_;
  int64_t step_count_ = 0;
};

}  TT_NAMESPACE_END  // namespace tinytorch::optim

#if TT_HEADER_ONLY
#include "optimizer.ipp"
#endif

// tinytorch/nn/module.ipp — the bodies of module.hpp: registration, named_parameters, state_dict,
// load_state_dict, to, repr, clone_module_tensor.
//
// Not a header to include: module.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The declarations and their documentation are in module.hpp.
// Chapter: chapters/01-training-loop.md.
#pragma once

#include "tinytorch/nn/module.hpp"
#include "tinytorch/ops/creation.hpp"
#include "tinytorch/ops/shape.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace detail {

TT_DECL Tensor clone_module_tensor(const Tensor& t) {
  if (!t.defined()) return t;
  Tensor out;
  if (ReplicateClone::active()) {
    out = ops::make_view(t, t.sizes(), t.strides(), t.storage_offset());
  } else {
    NoGradGuard no_grad;
    out = ops::clone(t);
  }
  out.impl()->requires_grad = t.requires_grad();
  return out;
}

}  TT_NAMESPACE_END  // namespace tinytorch::detail

TT_NAMESPACE_BEGIN namespace nn {

TT_DECL Tensor& Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  check_name(name, "register_parameter");
  check_unique(name, "register_parameter");
  if (t.defined() && t.requires_grad() != requires_grad) t.requires_grad_(requires_grad);
  params_.emplace_back(name, std::move(t));
  return params_.back().second;
}

TT_DECL Tensor& Module::register_buffer(const std::string& name, Tensor t) {
  check_name(name, "register_buffer");
  check_unique(name, "register_buffer");
  buffers_.emplace_back(name, std::move(t));
  return buffers_.back().second;
}

TT_DECL std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect(out, "", recurse, true);
  return out;
}

TT_DECL std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect(out, "", recurse, false);
  return out;
}

TT_DECL std::vector<std::pair<std::string, Tensor>> Module::state_dict() const {
  auto out = named_parameters();
  auto b = named_buffers();
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

TT_DECL void Module::load_state_dict(const std::vector<std::pair<std::string, Tensor>>& sd) {
  auto mine = state_dict();
  TT_CHECK(mine.size() == sd.size(), "load_state_dict: expected ", mine.size(), " entries, got ", sd.size());
  NoGradGuard ng;
  for (auto& [name, t] : mine) {
    const Tensor* src = nullptr;
    for (auto& e : sd)
      if (e.first == name) src = &e.second;
    TT_CHECK(src != nullptr, "load_state_dict: Missing key(s) in state_dict: \"", name, "\"");
    TT_CHECK(src->sizes() == t.sizes(), "load_state_dict: size mismatch for ", name, ": copying a param with shape ",
             shape_str(src->sizes()), ", the shape in current model is ", shape_str(t.sizes()));
    Tensor dst = t;
    dst.copy_(*src);
  }
}

TT_DECL void Module::train(bool on) {
  training_ = on;
  for (auto& c : children_) c.second->train(on);
}

TT_DECL Module& Module::to(Device device) {
  NoGradGuard no_grad;
  auto move = [&](Tensor& t) {
    if (!t.defined() || t.device() == device) return;
    Tensor moved = t.detach().to(device).contiguous();
    TensorImpl& impl = *t.impl();
    impl.storage = moved.impl()->storage;
    impl.strides = moved.strides();
    impl.offset = moved.storage_offset();
    if (impl.grad) impl.grad = Tensor(impl.grad).to(device).contiguous().impl_ptr();
  };
  for (auto& e : params_) move(e.second);
  for (auto& e : buffers_) move(e.second);
  for (auto& c : children_) c.second->to(device);
  return *this;
}

TT_DECL Module& Module::to(DType dtype) {
  TT_CHECK(is_floating_point(dtype), "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=",
           dtype_name(dtype));
  NoGradGuard no_grad;
  auto convert = [&](Tensor& t) {
    if (!t.defined() || !is_floating_point(t.dtype()) || t.dtype() == dtype) return;
    Tensor converted = t.detach().to(dtype).contiguous();
    TensorImpl& impl = *t.impl();
    impl.storage = converted.impl()->storage;
    impl.strides = converted.strides();
    impl.offset = converted.storage_offset();
    impl.dtype = dtype;
    if (impl.grad) impl.grad = Tensor(impl.grad).to(dtype).contiguous().impl_ptr();
  };
  for (auto& e : params_) convert(e.second);
  for (auto& e : buffers_) convert(e.second);
  for (auto& c : children_) c.second->to(dtype);
  return *this;
}

TT_DECL void Module::zero_grad(bool set_to_none) {
  for (Tensor& p : parameters()) {
    if (set_to_none || !p.grad().defined()) {
      p.set_grad(Tensor());
    } else {
      NoGradGuard ng;
      p.grad().zero_();
    }
  }
}

TT_DECL std::string Module::repr() const {
  std::string s = name() + "(" + extra_repr();
  if (!children_.empty()) {
    s += "\n";
    for (auto& [n, c] : children_) {
      std::string child = c->repr();
      std::string indented;
      for (char ch : child) {
        indented += ch;
        if (ch == '\n') indented += "  ";
      }
      s += "  (" + n + "): " + indented + "\n";
    }
  }
  return s + ")";
}

TT_DECL void Module::check_member(const Tensor& member, const std::string& name) const {
  Tensor registered = own_tensor(name, true);
  if (!registered.defined()) registered = own_tensor(name, false);
  TT_CHECK(member.defined() == registered.defined() && (!member.defined() || member.is_same(registered)), this->name(),
           ": member `", name, "` is not the registered tensor of that name (assigned after construction?); "
           "clone() and DataParallel copy registered tensors only. To share weights, use one module in two places");
}

TT_DECL std::string Module::cpp_class_name() const {
  int status = 0;
  char* demangled = abi::__cxa_demangle(typeid(*this).name(), nullptr, nullptr, &status);
  std::string out = status == 0 && demangled ? demangled : typeid(*this).name();
  std::free(demangled);
  return out;
}

TT_DECL Tensor Module::own_tensor(const std::string& name, bool param) const {
  for (const auto& e : param ? params_ : buffers_)
    if (e.first == name) return e.second;
  return Tensor();
}

TT_DECL Tensor Module::get_tensor(const std::string& target, bool param) const {
  const size_t dot = target.rfind('.');
  const Module* owner = this;
  std::shared_ptr<Module> keep;
  if (dot != std::string::npos) {
    keep = get_submodule(target.substr(0, dot));
    owner = keep.get();
  }
  const std::string item = dot == std::string::npos ? target : target.substr(dot + 1);
  Tensor t = owner->own_tensor(item, param);
  if (t.defined()) return t;
  throw Error(detail::str_cat(param ? "get_parameter: " : "get_buffer: ", owner->name(), " has no ",
                              param ? "parameter" : "buffer", " `", item, "` (in `", target, "`)"));
}

TT_DECL void Module::check_name(const std::string& name, const char* op) {
  TT_CHECK(!name.empty() && name.find('.') == std::string::npos, op, ": name '", name,
           "' must be non-empty and contain no '.'");
}

TT_DECL void Module::check_unique(const std::string& name, const char* op) const {
  auto taken = [&](const auto& entries) {
    for (const auto& e : entries)
      if (e.first == name) return true;
    return false;
  };
  TT_CHECK(!taken(params_) && !taken(buffers_) && !taken(children_), op, ": attribute '", name,
           "' already exists");
}

TT_DECL std::vector<Tensor> Module::values(const std::vector<std::pair<std::string, Tensor>>& v) {
  std::vector<Tensor> out;
  out.reserve(v.size());
  for (auto& e : v) out.push_back(e.second);
  return out;
}

TT_DECL void Module::collect(std::vector<std::pair<std::string, Tensor>>& out, const std::string& prefix,
    bool recurse, bool params) const {
  for (auto& [n, t] : params ? params_ : buffers_)
    if (t.defined()) out.emplace_back(prefix + n, t);
  if (recurse)
    for (auto& [n, c] : children_) c->collect(out, prefix + n + ".", true, params);
}

}  TT_NAMESPACE_END  // namespace tinytorch::nn

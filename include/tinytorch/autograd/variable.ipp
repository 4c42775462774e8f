// tinytorch/autograd/variable.ipp — the bodies of Tensor's autograd methods (autograd/variable.hpp).
//
// Not a header to include: autograd/variable.hpp includes it in a header-only build,
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp).
// Chapter: chapters/02-autograd.md.
#pragma once

#include <memory>
#include <utility>

#include "tinytorch/autograd/variable.hpp"
#include "tinytorch/autograd/engine.hpp"   // run_backward
#include "tinytorch/autograd/inplace.hpp"  // refresh_view
#include "tinytorch/ops/dispatch.hpp"  // make_view
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN

// A view's grad_fn is remade first when its base was changed by an in-place op since
// (autograd/inplace.hpp); a view requires grad when its base does (PyTorch's view semantics).
TT_DECL bool Tensor::requires_grad() const {
  TensorImpl* i = checked();
  if (i->view_base) autograd::refresh_view(i);
  if (i->requires_grad || i->grad_fn) return true;
  return i->view_base && (i->view_base->requires_grad || i->view_base->grad_fn);
}
TT_DECL const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  TensorImpl* i = checked();
  if (i->view_base) autograd::refresh_view(i);
  return i->grad_fn;
}
TT_DECL bool Tensor::is_leaf() const { return grad_fn() == nullptr; }
TT_DECL Tensor& Tensor::requires_grad_(bool r) {
  TT_CHECK(is_leaf() || r, "requires_grad_: you can only change requires_grad flags of leaf variables. "
           "If you want to use a computed variable in a subgraph that doesn't require differentiation "
           "use var_no_grad = var.detach().");
  TT_CHECK(!r || is_floating_point(), "requires_grad_: only Tensors of floating point dtype can require "
           "gradients (got ", dtype_name(dtype()), ")");
  impl_->requires_grad = r;
  return *this;
}
TT_DECL Tensor Tensor::grad() const { return Tensor(checked()->grad); }
TT_DECL void Tensor::set_grad(const Tensor& g) {
  if (g.defined()) {
    TT_CHECK(g.sizes() == sizes(), "set_grad: assigned grad has data of a different size (",
             shape_str(g.sizes()), " vs ", shape_str(sizes()), ")");
    TT_CHECK(g.device() == device(), "set_grad: assigned grad has data located on a different device (",
             g.device().str(), " vs ", device().str(), ")");
    TT_CHECK(g.dtype() == dtype(), "set_grad: assigned grad has data of a different type (", dtype_name(g.dtype()),
             " vs ", dtype_name(dtype()), ")");
  }
  checked()->grad = g.impl_ptr();
}
TT_DECL void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::run_backward(*this, gradient, retain_graph);
}
TT_DECL Tensor Tensor::detach() const {
  return ops::make_view(*this, sizes(), strides(), storage_offset());
}
TT_DECL Tensor& Tensor::detach_() {
  TT_CHECK(defined(), "detach_: undefined tensor");
  TT_CHECK(!impl_->view_base, "detach_: Can't detach views in-place. Use detach() instead.");
  impl_->grad_fn.reset();
  impl_->requires_grad = false;
  return *this;
}
TT_DECL void Tensor::register_hook(TensorHook hook) const {
  TT_CHECK(requires_grad(), "register_hook: cannot register a hook on a tensor that doesn't require gradient");
  if (grad_fn()) grad_fn()->hooks.push_back(std::move(hook));
  else impl_->hooks.push_back(std::move(hook));
}
TT_DECL void Tensor::register_post_accumulate_grad_hook(PostAccumulateGradHook hook) const {
  TT_CHECK(is_leaf(), "register_post_accumulate_grad_hook: post accumulate grad hooks cannot be registered "
           "on non-leaf tensors");
  TT_CHECK(requires_grad(), "register_post_accumulate_grad_hook: cannot register a hook on a tensor that "
           "doesn't require gradient");
  impl_->post_accumulate_grad_hooks.push_back(std::move(hook));
}

TT_NAMESPACE_END  // namespace tinytorch

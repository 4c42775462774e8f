// tinytorch/optim/sgd.ipp — the bodies of sgd.hpp that need the library's internals: SGD::update (the fused kernel's dispatch).
//
// Not a header to include: sgd.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The declarations and their documentation are in sgd.hpp.
// Chapter: chapters/01-training-loop.md.
#pragma once

#include "tinytorch/optim/sgd.hpp"
#include "tinytorch/autograd/inplace.hpp"
#include "tinytorch/ops/dispatch.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace optim {

TT_DECL void SGD::update(Tensor& param, const Tensor& grad, ParamState& state, const ParamGroup& group) {
  if (!fast_path_ok(param, grad)) {
    sgd_naive(param, grad, state.momentum_buffer, group.lr, group.momentum, group.dampening,
              group.weight_decay, group.nesterov);
    return;
  }
  const bool first_step = group.momentum != 0 && !state.momentum_buffer.defined();
  // State lives on the parameter's device (PyTorch: torch.clone(grad) on the grad's device).
  if (first_step) state.momentum_buffer = empty(param.sizes(), TensorOptions(param.dtype()).device(param.device()));
  dispatch_floating(param.dtype(), "SGD", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* buf = group.momentum != 0 ? state.momentum_buffer.data_ptr<T>() : nullptr;
    backend::dispatch::sgd_kernel<T>(param.device(), param.data_ptr<T>(), grad.data_ptr<T>(), buf, param.numel(),
                                     group.lr, group.momentum, group.dampening, group.weight_decay,
                                     group.nesterov, first_step);
  });
  autograd::increment_version(param);  // one in-place write, as PyTorch's param.add_
}

}  TT_NAMESPACE_END  // namespace tinytorch::optim

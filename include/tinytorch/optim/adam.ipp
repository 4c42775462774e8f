// tinytorch/optim/adam.ipp — the bodies of adam.hpp that need the library's internals: adam_naive and Adam::update (the fused kernel's dispatch).
//
// Not a header to include: adam.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The declarations and their documentation are in adam.hpp.
// Chapter: chapters/03-optimizers.md.
#pragma once

#include "tinytorch/optim/adam.hpp"
#include "tinytorch/autograd/inplace.hpp"
#include "tinytorch/ops/dispatch.hpp"
#include "tinytorch/ops/elementwise.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace optim {

TT_DECL void adam_naive(Tensor& param, const Tensor& grad_in, ParamState& state, double lr, double beta1,
                       double beta2, double eps, double weight_decay, bool amsgrad, bool decoupled_weight_decay) {
  NoGradGuard no_grad;
  const TensorOptions like = TensorOptions(param.dtype()).device(param.device());
  if (!state.exp_avg.defined()) state.exp_avg = zeros(param.sizes(), like);
  if (!state.exp_avg_sq.defined()) state.exp_avg_sq = zeros(param.sizes(), like);
  if (amsgrad && !state.max_exp_avg_sq.defined()) state.max_exp_avg_sq = zeros(param.sizes(), like);
  state.step += 1;
  Tensor grad = grad_in;
  if (weight_decay != 0) {
    if (decoupled_weight_decay) param.mul_(1 - lr * weight_decay);
    else grad = add(grad, param, weight_decay);
  }
  state.exp_avg.add_(sub(grad, state.exp_avg), 1 - beta1);  // exp_avg.lerp_(grad, 1 - beta1)
  state.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
  const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(state.step));
  const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(state.step));
  const double step_size = lr / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  Tensor v = state.exp_avg_sq;
  if (amsgrad) {
    ops::binary_(state.max_exp_avg_sq, state.exp_avg_sq, [](auto a, auto b) { return detail::maximum(a, b); },
                 "maximum");
    v = state.max_exp_avg_sq;
  }
  Tensor denom = (v.sqrt() / bias_correction2_sqrt).add_(eps);
  param.addcdiv_(state.exp_avg, denom, -step_size);
}

TT_DECL void Adam::update(Tensor& param, const Tensor& grad, ParamState& state, const ParamGroup& group) {
  const double beta1 = group.betas.first, beta2 = group.betas.second;
  if (!fast_path_ok(param, grad)) {
    adam_naive(param, grad, state, group.lr, beta1, beta2, group.eps, group.weight_decay, group.amsgrad,
               decoupled_weight_decay_);
    return;
  }
  // State lives on the parameter's device (PyTorch: torch.zeros_like(p)).
  const TensorOptions like = TensorOptions(param.dtype()).device(param.device());
  if (!state.exp_avg.defined()) state.exp_avg = zeros(param.sizes(), like);
  if (!state.exp_avg_sq.defined()) state.exp_avg_sq = zeros(param.sizes(), like);
  if (group.amsgrad && !state.max_exp_avg_sq.defined()) state.max_exp_avg_sq = zeros(param.sizes(), like);
  state.step += 1;
  dispatch_floating(param.dtype(), decoupled_weight_decay_ ? "AdamW" : "Adam", [&](auto tag) {
    using T = typename decltype(tag)::type;
    backend::dispatch::adam_kernel<T>(param.device(), param.data_ptr<T>(), grad.data_ptr<T>(), state.exp_avg.data_ptr<T>(),
                   state.exp_avg_sq.data_ptr<T>(), group.amsgrad ? state.max_exp_avg_sq.data_ptr<T>() : nullptr,
                   param.numel(), state.step, group.lr, beta1, beta2, group.eps, group.weight_decay,
                   group.amsgrad, decoupled_weight_decay_);
  });
  // The in-place writes PyTorch makes: param.mul_ (AdamW's decay), then param.addcdiv_.
  if (decoupled_weight_decay_ && group.weight_decay != 0) autograd::increment_version(param);
  autograd::increment_version(param);
}

}  TT_NAMESPACE_END  // namespace tinytorch::optim

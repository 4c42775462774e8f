// tinytorch/backend/optim_functors.hpp — the SGD and Adam/AdamW per-element updates, written once
// for the CPU loops (backend/cpu/optim.hpp: sgd_kernel, adam_kernel) and the CUDA kernels
// (backend/cuda/optim.cuh).
//
// Each is a TT_HOST_DEVICE functor struct built on the host from the hyper-parameters, rounded to
// the parameter dtype T as PyTorch's kernels do, then applied to element i of dense buffers:
//   SGD:   d_p = g + weight_decay * p                       (weight_decay != 0)
//          b = d_p (first step) | momentum * b + (1 - dampening) * d_p;   (momentum != 0)
//          d_p = nesterov ? d_p + momentum * b : b
//          p = p - lr * d_p
//   Adam:  AdamW: p = p * (1 - lr * weight_decay) | Adam: g = g + weight_decay * p
//          m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g;  v_max = max(v_max, v)
//          p = p - (lr / (1 - beta1^t)) * m / (sqrt(v or v_max) / sqrt(1 - beta2^t) + eps)
// Shapes: param, grad and every state buffer have n elements, dense. No CUDA syntax (the kernel
// simulator and g++ CPU builds compile it as plain host code).
// Chapter: chapters/03-optimizers.md, chapters/10-gpu-kernels.md (shared functors).
// Reference: torch.optim.SGD / Adam / AdamW (PyTorch 2.x _single_tensor_sgd, _single_tensor_adam);
// PyTorch's fused Adam CUDA kernel (aten/src/ATen/native/cuda/fused_adam_utils.cuh).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "tinytorch/core/config.hpp"  // TT_HOST_DEVICE, TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend {

/// One SGD element update, as cpu::sgd_kernel. buf is read/written only when momentum != 0.
template <class T>
struct SgdUpdate {
  T neg_lr, wd, mom, one_minus_dampening;
  bool decay, use_momentum, nesterov, first_step;

  static SgdUpdate make(double lr, double momentum, double dampening, double weight_decay, bool nesterov,
                        bool first_step) {
    return SgdUpdate{static_cast<T>(-lr),       static_cast<T>(weight_decay), static_cast<T>(momentum),
                     static_cast<T>(1 - dampening), weight_decay != 0,       momentum != 0,
                     nesterov,                  first_step};
  }
  TT_HOST_DEVICE void operator()(int64_t i, T* param, const T* grad, T* buf) const {
    const T d_p = decay ? grad[i] + wd * param[i] : grad[i];
    if (!use_momentum) {
      param[i] = param[i] + neg_lr * d_p;
      return;
    }
    const T b = first_step ? d_p : buf[i] * mom + one_minus_dampening * d_p;
    buf[i] = b;
    param[i] = param[i] + neg_lr * (nesterov ? d_p + mom * b : b);
  }
};
static_assert(std::is_trivially_copyable_v<SgdUpdate<float>>, "a kernel argument");

/// One Adam/AdamW element update at step `step` (>= 1), as cpu::adam_kernel.
template <class T>
struct AdamUpdate {
  T neg_step_size, bias_correction2_sqrt, one_minus_beta1, beta2, one_minus_beta2, eps, wd, decay;
  bool l2, decoupled, amsgrad;

  static AdamUpdate make(int64_t step, double lr, double beta1, double beta2, double eps, double weight_decay,
                         bool amsgrad, bool decoupled_weight_decay) {
    const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(step));
    const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(step));
    AdamUpdate u;
    u.neg_step_size = static_cast<T>(-(lr / bias_correction1));
    u.bias_correction2_sqrt = static_cast<T>(std::sqrt(bias_correction2));
    u.one_minus_beta1 = static_cast<T>(1 - beta1);
    u.beta2 = static_cast<T>(beta2);
    u.one_minus_beta2 = static_cast<T>(1 - beta2);
    u.eps = static_cast<T>(eps);
    u.wd = static_cast<T>(weight_decay);
    u.decay = static_cast<T>(1 - lr * weight_decay);
    u.l2 = weight_decay != 0 && !decoupled_weight_decay;
    u.decoupled = weight_decay != 0 && decoupled_weight_decay;
    u.amsgrad = amsgrad;
    return u;
  }
  /// torch.lerp as PyTorch's CPU kernel computes it (accurate at both ends of w).
  static TT_HOST_DEVICE T lerp(T a, T b, T w) {
    return (w < 0 ? -w : w) < T(0.5) ? a + w * (b - a) : b - (b - a) * (T(1) - w);
  }
  /// torch.maximum: NaN if either is NaN.
  static TT_HOST_DEVICE T maximum(T a, T b) {
    if (a != a) return a;
    if (b != b) return b;
    return a > b ? a : b;
  }
  TT_HOST_DEVICE void operator()(int64_t i, T* param, const T* grad, T* exp_avg, T* exp_avg_sq,
                                 T* max_exp_avg_sq) const {
    T p = param[i];
    T g = grad[i];
    if (decoupled) p = p * decay;
    if (l2) g = g + wd * p;
    const T m = lerp(exp_avg[i], g, one_minus_beta1);
    const T v = exp_avg_sq[i] * beta2 + one_minus_beta2 * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    T v_used = v;
    if (amsgrad) v_used = max_exp_avg_sq[i] = maximum(max_exp_avg_sq[i], v);
    const T denom = std::sqrt(v_used) / bias_correction2_sqrt + eps;
    param[i] = p + neg_step_size * m / denom;
  }
};
static_assert(std::is_trivially_copyable_v<AdamUpdate<float>>, "a kernel argument");

}  TT_NAMESPACE_END  // namespace tinytorch::backend

// tinytorch/backend/cuda/optim.cuh — the SGD and Adam/AdamW parameter updates as CUDA kernels.
//
// The CUDA twins of cpu::sgd_kernel and cpu::adam_kernel (backend/cpu/optim.hpp),
// same names and signatures, device pointers. The per-element math lives in two TT_HOST_DEVICE
// functor structs, SgdUpdate<T> and AdamUpdate<T>, built on the host from the hyper-parameters
// exactly as the CPU loops build their constants (rounded to T as PyTorch's kernels do):
//   SGD:   d_p = g + weight_decay * p                       (weight_decay != 0)
//          b = d_p (first step) | momentum * b + (1 - dampening) * d_p;   (momentum != 0)
//          d_p = nesterov ? d_p + momentum * b : b
//          p = p - lr * d_p
//   Adam:  AdamW: p = p * (1 - lr * weight_decay) | Adam: g = g + weight_decay * p
//          m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g;  v_max = max(v_max, v)
//          p = p - (lr / (1 - beta1^t)) * m / (sqrt(v or v_max) / sqrt(1 - beta2^t) + eps)
// Shapes: every buffer has n elements (param's numel), dense.
// The kernel applies the functor to one element per grid-stride iteration; its naive twin is the
// same functor run on the host (sgd_on_host / adam_on_host), and the tests check both against
// the optimizers' own CPU loops. optim/sgd.hpp's and adam.hpp's CPU loops run the same functors
// (backend/optim_functors.hpp), so CPU and CUDA share one body.
// Chapter: chapters/10-gpu-kernels.md (and chapters/03-optimizers.md for the math).
// Reference: torch.optim.SGD / Adam / AdamW (PyTorch 2.x _single_tensor_sgd, _single_tensor_adam);
// PyTorch's fused Adam CUDA kernel (aten/src/ATen/native/cuda/fused_adam_utils.cuh) has the same shape.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "tinytorch/backend/cuda/elementwise.cuh"  // TT_GRID_STRIDE_LOOP, launch_kernel
#include "tinytorch/backend/optim_functors.hpp"  // SgdUpdate, AdamUpdate
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend::cuda {

// SgdUpdate<T> and AdamUpdate<T>, the per-element math, live in backend/optim_functors.hpp (shared
// with the CPU loops of optim/sgd.hpp and optim/adam.hpp).

// ================================ kernels ========================================================
namespace kernels {

template <class T>
__global__ void sgd_update(T* param, const T* grad, T* buf, int64_t n, SgdUpdate<T> u) {
  TT_GRID_STRIDE_LOOP(i, n) u(i, param, grad, buf);
}
template <class T>
__global__ void adam_update(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, int64_t n,
                            AdamUpdate<T> u) {
  TT_GRID_STRIDE_LOOP(i, n) u(i, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
}

}  // namespace kernels

// ================================ launchers ======================================================

/// The SGD update on n device elements (twin of cpu::sgd_kernel: same arguments).
/// momentum_buffer may be null when momentum == 0; with first_step it is written, not read.
template <class T>
void sgd_kernel(T* param, const T* grad, T* momentum_buffer, int64_t n, double lr, double momentum,
                double dampening, double weight_decay, bool nesterov, bool first_step) {
  static_assert(std::is_floating_point_v<T>, "sgd_kernel: float or double parameters");
  if (n <= 0) return;
  TT_CHECK(momentum == 0 || momentum_buffer != nullptr, "sgd_kernel: momentum ", momentum,
           " needs a momentum buffer");
  launch_kernel("sgd_update", kernels::sgd_update<T>, grid_1d(n), dim3(256), 0, param, grad, momentum_buffer, n,
                SgdUpdate<T>::make(lr, momentum, dampening, weight_decay, nesterov, first_step));
}
/// The naive twin: the same functor over n HOST elements.
template <class T>
void sgd_on_host(T* param, const T* grad, T* momentum_buffer, int64_t n, double lr, double momentum,
                 double dampening, double weight_decay, bool nesterov, bool first_step) {
  const auto u = SgdUpdate<T>::make(lr, momentum, dampening, weight_decay, nesterov, first_step);
  for (int64_t i = 0; i < n; ++i) u(i, param, grad, momentum_buffer);
}

/// The Adam/AdamW update on n device elements at step `step` (>= 1, already incremented) (twin of
/// cpu::adam_kernel: same arguments). max_exp_avg_sq may be null unless amsgrad.
template <class T>
void adam_kernel(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, int64_t n, int64_t step,
                 double lr, double beta1, double beta2, double eps, double weight_decay, bool amsgrad,
                 bool decoupled_weight_decay) {
  static_assert(std::is_floating_point_v<T>, "adam_kernel: float or double parameters");
  if (n <= 0) return;
  TT_CHECK(step >= 1, "adam_kernel: step must be >= 1, got ", step);
  TT_CHECK(!amsgrad || max_exp_avg_sq != nullptr, "adam_kernel: amsgrad needs max_exp_avg_sq");
  launch_kernel("adam_update", kernels::adam_update<T>, grid_1d(n), dim3(256), 0, param, grad, exp_avg, exp_avg_sq,
                max_exp_avg_sq, n,
                AdamUpdate<T>::make(step, lr, beta1, beta2, eps, weight_decay, amsgrad, decoupled_weight_decay));
}
/// The naive twin: the same functor over n HOST elements.
template <class T>
void adam_on_host(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, int64_t n, int64_t step,
                  double lr, double beta1, double beta2, double eps, double weight_decay, bool amsgrad,
                  bool decoupled_weight_decay) {
  const auto u = AdamUpdate<T>::make(step, lr, beta1, beta2, eps, weight_decay, amsgrad, decoupled_weight_decay);
  for (int64_t i = 0; i < n; ++i) u(i, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cuda

// tinytorch/backend/cpu/optim.hpp — the optimizer updates on raw CPU pointers: sgd_kernel and
// adam_kernel, what SGD::step() and Adam::step() run for dense float/double parameters.
//
// Each loop applies one per-element functor of backend/optim_functors.hpp (SgdUpdate, AdamUpdate:
// the math, with the hyper-parameters rounded to T as PyTorch's kernels do) to i = 0 .. n-1; the
// CUDA twins in backend/cuda/optim.cuh (same names, same arguments) run the same functors, one
// element per thread. ops/dispatch.hpp picks between the two by device.
//   sgd_kernel:  p[i], b[i] <- SgdUpdate(p[i], g[i], b[i])
//   adam_kernel: p[i], m[i], v[i], v_max[i] <- AdamUpdate(p[i], g[i], m[i], v[i], v_max[i])
// Shapes: every buffer has n elements, dense. The tensor-op twins (sgd_naive, adam_naive in
// optim/sgd.hpp, optim/adam.hpp: PyTorch's Python line by line) are the oracle they are tested
// against (tests/test_optim.cpp, tests/cuda/test_cuda_optim.cpp).
// Chapter: chapters/03-optimizers.md. Reference: torch.optim.SGD / Adam / AdamW (PyTorch 2.x
// _single_tensor_sgd, _single_tensor_adam).
#pragma once

#include <cstdint>

#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END
#include "tinytorch/backend/optim_functors.hpp"

TT_NAMESPACE_BEGIN namespace backend::cpu {

/// The SGD update on n elements of raw pointers. `momentum_buffer` may be null when
/// momentum == 0; with first_step it is written (b = d_p), not read.
template <typename T>
inline void sgd_kernel(T* param, const T* grad, T* momentum_buffer, int64_t n, double lr, double momentum,
                       double dampening, double weight_decay, bool nesterov, bool first_step) {
  const auto u = SgdUpdate<T>::make(lr, momentum, dampening, weight_decay, nesterov, first_step);
  for (int64_t i = 0; i < n; ++i) u(i, param, grad, momentum_buffer);
}

/// The Adam/AdamW update on n elements of raw pointers, for step number `step` (>= 1, already
/// incremented). max_exp_avg_sq may be null unless amsgrad.
template <typename T>
inline void adam_kernel(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, int64_t n,
                        int64_t step, double lr, double beta1, double beta2, double eps, double weight_decay,
                        bool amsgrad, bool decoupled_weight_decay) {
  const auto u = AdamUpdate<T>::make(step, lr, beta1, beta2, eps, weight_decay, amsgrad, decoupled_weight_decay);
  for (int64_t i = 0; i < n; ++i) u(i, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cpu

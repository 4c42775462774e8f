// tinytorch/backend/cuda/optim.cuh — the SGD and Adam/AdamW parameter updates as CUDA kernels.
//
// The CUDA twins of optim::sgd_kernel (optim/sgd.hpp) and optim::adam_kernel (optim/adam.hpp),
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
// the optimizers' own CPU loops. TODO(lead): once optim/sgd.hpp and adam.hpp call these functors
// (CUDA.md §5: "sgd_kernel/adam_kernel math becomes TT_HOST_DEVICE"), the CPU loops and these
// kernels share one body.
// Chapter: chapters/10-gpu-kernels.md (and chapters/03-optimizers.md for the math).
// Reference: torch.optim.SGD / Adam / AdamW (PyTorch 2.x _single_tensor_sgd, _single_tensor_adam);
// PyTorch's fused Adam CUDA kernel (aten/src/ATen/native/cuda/fused_adam_utils.cuh) has the same shape.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "elementwise.cuh"  // TT_GRID_STRIDE_LOOP, launch_kernel
#include "../../core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend::cuda {

/// One SGD element update, as optim::sgd_kernel. buf is read/written only when momentum != 0.
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

/// One Adam/AdamW element update at step `step` (>= 1), as optim::adam_kernel.
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
  /// torch.lerp as PyTorch's CPU kernel (optim::detail::lerp, which is host-only).
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

/// The SGD update on n device elements (twin of optim::sgd_kernel: same arguments).
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
/// optim::adam_kernel: same arguments). max_exp_avg_sq may be null unless amsgrad.
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

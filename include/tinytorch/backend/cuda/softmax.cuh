// tinytorch/backend/cuda/softmax.cuh — softmax and log_softmax along one dim, forward and backward.
//
// The CUDA twins of backend/cpu/softmax.hpp (softmax_kernel, softmax_backward_kernel), same names
// and signatures, device pointers. Viewed as (outer, n, inner), a "row" is the n elements
// x[o, :, i] (stride inner; the usual last-dim softmax has inner = 1):
//   softmax:      y_k = exp(x_k - m) / sum_j exp(x_j - m),       m = max_j x_j
//   log_softmax:  y_k = x_k - m - log(sum_j exp(x_j - m))
//   backward:     softmax      dx_k = y_k * (dy_k - sum_j dy_j y_j)
//                 log_softmax  dx_k = dy_k - exp(y_k) * sum_j dy_j
// As the CPU twin: the sums accumulate in double, m of an all -inf row is taken as 0 (so the row
// gives NaN, as PyTorch, rather than (-inf) - (-inf) inside exp), and a NaN anywhere in a row
// makes the whole row NaN.
// (cross_entropy is log_softmax followed by nll_loss, ops of their own: functional.hpp.)
// Two kernels per direction, as every kernel of this backend (chapters/10-gpu-kernels.md):
//   fast   one warp per row: lanes stride over the row, the max and the sum are warp all-reduces
//          (__shfl_xor_sync), so every lane has them without shared memory
//   naive  (the oracle) one thread per row, the CPU's three passes
// Chapter: chapters/10-gpu-kernels.md. Reference: PyTorch aten/src/ATen/native/cuda/
// PersistentSoftmax.cuh (warp per row) and SoftMax.cpp (the formulas).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "tinytorch/backend/cpu/softmax.hpp"  // the CPU twins
#include "tinytorch/backend/cuda/elementwise.cuh"     // TT_GRID_STRIDE_LOOP, launch_kernel
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend::cuda {

// ================================ kernels ========================================================
namespace kernels {

constexpr unsigned kSoftmaxMask = 0xffffffffu;
constexpr int kSoftmaxWarpsPerBlock = 4;

/// Every lane gets the warp's max of m (butterfly: __shfl_xor_sync). The warp-per-row kernels'
/// row loop is uniform across a warp, so all 32 lanes reach the shuffles.
template <class T>
__device__ __forceinline__ T warp_max_allreduce(T m) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const T o = __shfl_xor_sync(kSoftmaxMask, m, offset);
    m = o > m ? o : m;  // the CPU's comparison (a NaN row gives NaN output either way)
  }
  return m;
}
/// Every lane gets the warp's sum of s.
__device__ __forceinline__ double warp_sum_allreduce(double s) {
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(kSoftmaxMask, s, offset);
  return s;
}

template <class T>
__global__ void softmax_warp(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  const int lane = threadIdx.x % 32;
  const int64_t warp = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = warp; r < outer * inner; r += nwarps) {
    const int64_t o = r / inner, i = r - o * inner;
    const T* xp = x + o * n * inner + i;
    T* yp = y + o * n * inner + i;
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t k = lane; k < n; k += 32) m = xp[k * inner] > m ? xp[k * inner] : m;
    m = warp_max_allreduce(m);
    if (std::isinf(m) && m < 0) m = 0;  // all -inf
    double s = 0;
    for (int64_t k = lane; k < n; k += 32) s += std::exp(static_cast<double>(xp[k * inner] - m));
    s = warp_sum_allreduce(s);
    if (log) {
      const T lse = static_cast<T>(std::log(s));
      for (int64_t k = lane; k < n; k += 32) yp[k * inner] = xp[k * inner] - m - lse;
    } else {
      const T inv = static_cast<T>(1.0 / s);
      for (int64_t k = lane; k < n; k += 32) yp[k * inner] = std::exp(xp[k * inner] - m) * inv;
    }
  }
}

template <class T>
__global__ void softmax_naive(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  TT_GRID_STRIDE_LOOP(r, outer * inner) {
    const int64_t o = r / inner, i = r - o * inner;
    const T* xp = x + o * n * inner + i;
    T* yp = y + o * n * inner + i;
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t k = 0; k < n; ++k) m = xp[k * inner] > m ? xp[k * inner] : m;
    if (std::isinf(m) && m < 0) m = 0;
    double s = 0;
    for (int64_t k = 0; k < n; ++k) s += std::exp(static_cast<double>(xp[k * inner] - m));
    if (log) {
      const T lse = static_cast<T>(std::log(s));
      for (int64_t k = 0; k < n; ++k) yp[k * inner] = xp[k * inner] - m - lse;
    } else {
      const T inv = static_cast<T>(1.0 / s);
      for (int64_t k = 0; k < n; ++k) yp[k * inner] = std::exp(xp[k * inner] - m) * inv;
    }
  }
}

template <class T>
__global__ void softmax_backward_warp(const T* dy, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner,
                                      bool log) {
  const int lane = threadIdx.x % 32;
  const int64_t warp = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = warp; r < outer * inner; r += nwarps) {
    const int64_t o = r / inner, i = r - o * inner;
    const int64_t base = o * n * inner + i;
    double s = 0;
    for (int64_t k = lane; k < n; k += 32) {
      const int64_t j = base + k * inner;
      s += log ? static_cast<double>(dy[j]) : static_cast<double>(dy[j] * y[j]);
    }
    s = warp_sum_allreduce(s);
    for (int64_t k = lane; k < n; k += 32) {
      const int64_t j = base + k * inner;
      dx[j] = log ? static_cast<T>(dy[j] - std::exp(y[j]) * s) : static_cast<T>(y[j] * (dy[j] - s));
    }
  }
}

template <class T>
__global__ void softmax_backward_naive(const T* dy, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner,
                                       bool log) {
  TT_GRID_STRIDE_LOOP(r, outer * inner) {
    const int64_t o = r / inner, i = r - o * inner;
    const int64_t base = o * n * inner + i;
    double s = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t j = base + k * inner;
      s += log ? static_cast<double>(dy[j]) : static_cast<double>(dy[j] * y[j]);
    }
    for (int64_t k = 0; k < n; ++k) {
      const int64_t j = base + k * inner;
      dx[j] = log ? static_cast<T>(dy[j] - std::exp(y[j]) * s) : static_cast<T>(y[j] * (dy[j] - s));
    }
  }
}


}  // namespace kernels

// ================================ launchers ======================================================

namespace detail {
inline dim3 softmax_grid(int64_t rows) {
  const int64_t blocks = (rows + kernels::kSoftmaxWarpsPerBlock - 1) / kernels::kSoftmaxWarpsPerBlock;
  return dim3(static_cast<unsigned>(blocks < 65535 ? blocks : 65535));
}
inline void check_softmax_sizes(const char* op, int64_t outer, int64_t n, int64_t inner) {
  TT_CHECK(outer >= 0 && n >= 0 && inner >= 0, op, ": negative sizes (outer=", outer, ", n=", n, ", inner=",
           inner, ")");
}
}  // namespace detail

/// softmax (log = false) or log_softmax (log = true) over n, the warp-per-row kernel.
template <class T>
void softmax_kernel_fast(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  detail::check_softmax_sizes("softmax_kernel", outer, n, inner);
  if (outer * inner * n == 0) return;
  launch_kernel("softmax_warp", kernels::softmax_warp<T>, detail::softmax_grid(outer * inner),
                dim3(32 * kernels::kSoftmaxWarpsPerBlock), 0, x, y, outer, n, inner, log);
}
/// softmax / log_softmax, the thread-per-row kernel (the oracle).
template <class T>
void softmax_kernel_naive(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  detail::check_softmax_sizes("softmax_kernel", outer, n, inner);
  if (outer * inner * n == 0) return;
  launch_kernel("softmax_naive", kernels::softmax_naive<T>, grid_1d(outer * inner), dim3(256), 0, x, y, outer, n,
                inner, log);
}
/// y = softmax or log_softmax of x over n (twin of cpu::softmax_kernel): the warp-per-row kernel.
template <class T>
void softmax_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  softmax_kernel_fast(x, y, outer, n, inner, log);
}

/// The backward, warp-per-row kernel.
template <class T>
void softmax_backward_kernel_fast(const T* dy, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner,
                                  bool log) {
  detail::check_softmax_sizes("softmax_backward_kernel", outer, n, inner);
  if (outer * inner * n == 0) return;
  launch_kernel("softmax_backward_warp", kernels::softmax_backward_warp<T>, detail::softmax_grid(outer * inner),
                dim3(32 * kernels::kSoftmaxWarpsPerBlock), 0, dy, y, dx, outer, n, inner, log);
}
/// The backward, thread-per-row kernel (the oracle).
template <class T>
void softmax_backward_kernel_naive(const T* dy, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner,
                                   bool log) {
  detail::check_softmax_sizes("softmax_backward_kernel", outer, n, inner);
  if (outer * inner * n == 0) return;
  launch_kernel("softmax_backward_naive", kernels::softmax_backward_naive<T>, grid_1d(outer * inner), dim3(256), 0,
                dy, y, dx, outer, n, inner, log);
}
/// dx from dy and the forward's output y (twin of cpu::softmax_backward_kernel).
template <class T>
void softmax_backward_kernel(const T* dy, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner, bool log) {
  softmax_backward_kernel_fast(dy, y, dx, outer, n, inner, log);
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cuda

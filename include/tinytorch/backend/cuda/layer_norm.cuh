// tinytorch/backend/cuda/layer_norm.cuh — layer normalisation over the last dims on the GPU,
// forward and backward.
//
// The CUDA twins of backend/cpu/layer_norm.hpp (layer_norm_kernel, layer_norm_backward_kernel),
// same names and signatures, device pointers; x viewed as (M, K), formulas there:
//   y_mk  = (x_mk - mean_m) rstd_m w_k + b_k
//   dx_mk = rstd_m (g_mk - mean_k(g) - xhat_mk mean_k(g xhat)),  g = dy w
//   dw_k  = sum_m dy_mk xhat_mk,  db_k = sum_m dy_mk
// Two kernels for the rows, as every kernel of this backend (chapters/10-gpu-kernels.md):
//   fast   one warp per row: lanes stride over the K elements, the row's sums are warp
//          all-reduces (softmax.cuh's __shfl_xor_sync butterfly), so every lane has the mean
//   naive  (the oracle) one thread per row, the CPU twin's loops
// The column sums dw, db (one kernel for both paths): one thread per column k, adding the M rows
// in order in double, the CPU twin's order, so they agree with it bit for bit; neighbouring
// threads read neighbouring columns (coalesced); with M = 0 they write 0, as the CPU twin. Sums run in double, mean and rstd are double.
// Chapter: chapters/12-model-parallelism.md (the GPT on cuda:0), chapters/10-gpu-kernels.md.
// Reference: PyTorch aten/src/ATen/native/cuda/layer_norm_kernel.cu (RowwiseMomentsCUDAKernel,
// a block per row; ComputeGradientFusedParamsCUDAKernel and the column-sum kernels).
#pragma once

#include <cmath>
#include <cstdint>

#include "tinytorch/backend/cpu/layer_norm.hpp"  // the CPU twins
#include "tinytorch/backend/cuda/elementwise.cuh"        // TT_GRID_STRIDE_LOOP, launch_kernel, grid_1d
#include "tinytorch/backend/cuda/softmax.cuh"            // kernels::warp_sum_allreduce, detail::softmax_grid (warps per block)
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend::cuda {

// ================================ kernels ========================================================
namespace kernels {

template <class T>
__global__ void layer_norm_warp(const T* x, const T* w, const T* b, T* y, double* mean, double* rstd, int64_t M,
                                int64_t K, double eps) {
  const int lane = threadIdx.x % 32;
  const int64_t warp = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t m = warp; m < M; m += nwarps) {  // uniform across the warp: every lane reaches the shuffles
    const T* row = x + m * K;
    double s = 0, ss = 0;
    for (int64_t k = lane; k < K; k += 32) s += row[k];
    const double mu = warp_sum_allreduce(s) / static_cast<double>(K);
    for (int64_t k = lane; k < K; k += 32) ss += (row[k] - mu) * (row[k] - mu);
    const double r = 1.0 / std::sqrt(warp_sum_allreduce(ss) / static_cast<double>(K) + eps);
    if (lane == 0) {
      mean[m] = mu;
      rstd[m] = r;
    }
    for (int64_t k = lane; k < K; k += 32) {
      const double wk = w ? static_cast<double>(w[k]) : 1.0, bk = b ? static_cast<double>(b[k]) : 0.0;
      y[m * K + k] = static_cast<T>((row[k] - mu) * r * wk + bk);
    }
  }
}

template <class T>
__global__ void layer_norm_naive(const T* x, const T* w, const T* b, T* y, double* mean, double* rstd, int64_t M,
                                 int64_t K, double eps) {
  TT_GRID_STRIDE_LOOP(m, M) {
    const T* row = x + m * K;
    double s = 0, ss = 0;
    for (int64_t k = 0; k < K; ++k) s += row[k];
    const double mu = s / static_cast<double>(K);
    for (int64_t k = 0; k < K; ++k) ss += (row[k] - mu) * (row[k] - mu);
    const double r = 1.0 / std::sqrt(ss / static_cast<double>(K) + eps);
    mean[m] = mu;
    rstd[m] = r;
    for (int64_t k = 0; k < K; ++k) {
      const double wk = w ? static_cast<double>(w[k]) : 1.0, bk = b ? static_cast<double>(b[k]) : 0.0;
      y[m * K + k] = static_cast<T>((row[k] - mu) * r * wk + bk);
    }
  }
}

template <class T>
__global__ void layer_norm_backward_dx_warp(const T* dy, const T* x, const T* w, const double* mean,
                                            const double* rstd, T* dx, int64_t M, int64_t K) {
  const int lane = threadIdx.x % 32;
  const int64_t warp = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t m = warp; m < M; m += nwarps) {
    const T* row = x + m * K;
    const T* grow = dy + m * K;
    double sg = 0, sgx = 0;
    for (int64_t k = lane; k < K; k += 32) {
      const double wk = w ? static_cast<double>(w[k]) : 1.0;
      const double xhat = (row[k] - mean[m]) * rstd[m];
      sg += grow[k] * wk;
      sgx += grow[k] * wk * xhat;
    }
    const double mg = warp_sum_allreduce(sg) / static_cast<double>(K);
    const double mgx = warp_sum_allreduce(sgx) / static_cast<double>(K);
    for (int64_t k = lane; k < K; k += 32) {
      const double wk = w ? static_cast<double>(w[k]) : 1.0;
      const double xhat = (row[k] - mean[m]) * rstd[m];
      dx[m * K + k] = static_cast<T>(rstd[m] * (grow[k] * wk - mg - xhat * mgx));
    }
  }
}

template <class T>
__global__ void layer_norm_backward_dx_naive(const T* dy, const T* x, const T* w, const double* mean,
                                             const double* rstd, T* dx, int64_t M, int64_t K) {
  TT_GRID_STRIDE_LOOP(m, M) {
    const T* row = x + m * K;
    const T* grow = dy + m * K;
    double sg = 0, sgx = 0;
    for (int64_t k = 0; k < K; ++k) {
      const double wk = w ? static_cast<double>(w[k]) : 1.0;
      const double xhat = (row[k] - mean[m]) * rstd[m];
      sg += grow[k] * wk;
      sgx += grow[k] * wk * xhat;
    }
    const double mg = sg / static_cast<double>(K), mgx = sgx / static_cast<double>(K);
    for (int64_t k = 0; k < K; ++k) {
      const double wk = w ? static_cast<double>(w[k]) : 1.0;
      const double xhat = (row[k] - mean[m]) * rstd[m];
      dx[m * K + k] = static_cast<T>(rstd[m] * (grow[k] * wk - mg - xhat * mgx));
    }
  }
}

/// dw_k = sum_m dy_mk xhat_mk, db_k = sum_m dy_mk: one thread per column, rows in order.
template <class T>
__global__ void layer_norm_backward_columns(const T* dy, const T* x, const double* mean, const double* rstd, T* dw,
                                            T* db, int64_t M, int64_t K) {
  TT_GRID_STRIDE_LOOP(k, K) {
    double sw = 0, sb = 0;
    for (int64_t m = 0; m < M; ++m) {
      sw += dy[m * K + k] * ((x[m * K + k] - mean[m]) * rstd[m]);
      sb += dy[m * K + k];
    }
    if (dw) dw[k] = static_cast<T>(sw);
    if (db) db[k] = static_cast<T>(sb);
  }
}

}  // namespace kernels

// ================================ launchers ======================================================

namespace detail {
inline void check_layer_norm_sizes(const char* op, int64_t M, int64_t K) {
  TT_CHECK(M >= 0 && K >= 0, op, ": negative sizes (M=", M, ", K=", K, ")");
}
}  // namespace detail

/// y, mean, rstd of the M rows of x (M, K), the warp-per-row kernel.
template <class T>
void layer_norm_kernel_fast(const T* x, const T* w, const T* b, T* y, double* mean, double* rstd, int64_t M,
                            int64_t K, double eps) {
  detail::check_layer_norm_sizes("layer_norm_kernel", M, K);
  if (M * K == 0) return;
  launch_kernel("layer_norm_warp", kernels::layer_norm_warp<T>, detail::softmax_grid(M),
                dim3(32 * kernels::kSoftmaxWarpsPerBlock), 0, x, w, b, y, mean, rstd, M, K, eps);
}
/// The same, one thread per row (the oracle).
template <class T>
void layer_norm_kernel_naive(const T* x, const T* w, const T* b, T* y, double* mean, double* rstd, int64_t M,
                             int64_t K, double eps) {
  detail::check_layer_norm_sizes("layer_norm_kernel", M, K);
  if (M * K == 0) return;
  launch_kernel("layer_norm_naive", kernels::layer_norm_naive<T>, grid_1d(M), dim3(256), 0, x, w, b, y, mean, rstd,
                M, K, eps);
}
/// y = layer_norm of x (M, K) (twin of cpu::layer_norm_kernel): the warp-per-row kernel.
template <class T>
void layer_norm_kernel(const T* x, const T* w, const T* b, T* y, double* mean, double* rstd, int64_t M, int64_t K,
                       double eps) {
  layer_norm_kernel_fast(x, w, b, y, mean, rstd, M, K, eps);
}

namespace detail {
template <class T>
void layer_norm_backward_columns(const T* dy, const T* x, const double* mean, const double* rstd, T* dw, T* db,
                                 int64_t M, int64_t K) {
  if (!dw && !db) return;
  launch_kernel("layer_norm_backward_columns", kernels::layer_norm_backward_columns<T>, grid_1d(K), dim3(256), 0,
                dy, x, mean, rstd, dw, db, M, K);
}
}  // namespace detail

/// The backward with the warp-per-row dx kernel; dx, dw, db may each be nullptr.
template <class T>
void layer_norm_backward_kernel_fast(const T* dy, const T* x, const T* w, const double* mean, const double* rstd,
                                     T* dx, T* dw, T* db, int64_t M, int64_t K) {
  detail::check_layer_norm_sizes("layer_norm_backward_kernel", M, K);
  if (K == 0) return;
  if (dx && M > 0)
    launch_kernel("layer_norm_backward_dx_warp", kernels::layer_norm_backward_dx_warp<T>, detail::softmax_grid(M),
                  dim3(32 * kernels::kSoftmaxWarpsPerBlock), 0, dy, x, w, mean, rstd, dx, M, K);
  detail::layer_norm_backward_columns(dy, x, mean, rstd, dw, db, M, K);
}
/// The backward with the thread-per-row dx kernel (the oracle).
template <class T>
void layer_norm_backward_kernel_naive(const T* dy, const T* x, const T* w, const double* mean, const double* rstd,
                                      T* dx, T* dw, T* db, int64_t M, int64_t K) {
  detail::check_layer_norm_sizes("layer_norm_backward_kernel", M, K);
  if (K == 0) return;
  if (dx && M > 0)
    launch_kernel("layer_norm_backward_dx_naive", kernels::layer_norm_backward_dx_naive<T>, grid_1d(M), dim3(256), 0,
                  dy, x, w, mean, rstd, dx, M, K);
  detail::layer_norm_backward_columns(dy, x, mean, rstd, dw, db, M, K);
}
/// dx (M, K), dw, db (K) from dy, x and the forward's mean and rstd (twin of
/// cpu::layer_norm_backward_kernel).
template <class T>
void layer_norm_backward_kernel(const T* dy, const T* x, const T* w, const double* mean, const double* rstd, T* dx,
                                T* dw, T* db, int64_t M, int64_t K) {
  layer_norm_backward_kernel_fast(dy, x, w, mean, rstd, dx, dw, db, M, K);
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cuda

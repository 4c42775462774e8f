// tinytorch/backend/cpu/layer_norm.hpp — layer normalisation over the last dims, forward and
// backward, on raw pointers.
//
// x viewed as (M, K): M rows (every position of the leading dims), K = the product of
// normalized_shape. Per row m, with w, b of K elements (nullptr: weight 1, bias 0):
//   mean_m = sum_k x_mk / K,   rstd_m = 1 / sqrt(sum_k (x_mk - mean_m)^2 / K + eps)
//   y_mk   = (x_mk - mean_m) * rstd_m * w_k + b_k
// Backward, with xhat_mk = (x_mk - mean_m) rstd_m and g_mk = dy_mk w_k:
//   dx_mk = rstd_m (g_mk - mean_k(g_m.) - xhat_mk mean_k(g_m. xhat_m.))
//   dw_k  = sum_m dy_mk xhat_mk,   db_k = sum_m dy_mk
// (derivation: autograd/functions/normalization.hpp). Sums run in double in the order of k (per
// row) and of m (per column), whatever T; mean and rstd are kept in double (M each). The CUDA
// twins (backend/cuda/layer_norm.cuh) sum the columns in the same order, so dw and db agree bit
// for bit; a row's sums are split over a warp's lanes there (close, not bitwise).
// dx, dw, db may each be nullptr (not needed).
// Chapter: chapters/12-model-parallelism.md (the GPT's LayerNorms). Reference: PyTorch
// aten/src/ATen/native/layer_norm.cpp, cpu/layer_norm_kernel.cpp (LayerNormKernelImplInternal,
// LayerNormBackwardKernelImplInternal: the same formulas).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend::cpu {

template <class T>
void layer_norm_kernel(const T* x, const T* w, const T* b, T* y, double* mean, double* rstd, int64_t M, int64_t K,
                       double eps) {
  for (int64_t m = 0; m < M; ++m) {
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

/// dx (M, K) of the rows (when dx != nullptr); dw, db (K): the column sums (when not nullptr).
template <class T>
void layer_norm_backward_kernel(const T* dy, const T* x, const T* w, const double* mean, const double* rstd, T* dx,
                                T* dw, T* db, int64_t M, int64_t K) {
  if (dx)
    for (int64_t m = 0; m < M; ++m) {
      const T* row = x + m * K;
      const T* grow = dy + m * K;
      double sg = 0, sgx = 0;  // sum of g, sum of g * xhat over the row
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
  if (dw || db) {  // column sums, m outer so that x and dy are read in row order
    std::vector<double> sw(static_cast<size_t>(K), 0.0), sb(static_cast<size_t>(K), 0.0);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) {
        sw[k] += dy[m * K + k] * ((x[m * K + k] - mean[m]) * rstd[m]);
        sb[k] += dy[m * K + k];
      }
    for (int64_t k = 0; k < K; ++k) {
      if (dw) dw[k] = static_cast<T>(sw[k]);
      if (db) db[k] = static_cast<T>(sb[k]);
    }
  }
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cpu

// tinytorch/backend/cpu/softmax.hpp — softmax and log_softmax along one dim, forward and backward.
//
// Viewed as (outer, n, inner), reducing over n (see reduce.hpp):
//   softmax:      y_k = exp(x_k - m) / sum_j exp(x_j - m),       m = max_j x_j (stability)
//   log_softmax:  y_k = x_k - m - log(sum_j exp(x_j - m))
//   backward:     softmax      dx_k = y_k * (dy_k - sum_j dy_j y_j)
//                 log_softmax  dx_k = dy_k - exp(y_k) * sum_j dy_j
// Subtracting the max keeps exp() from overflowing for large logits (x = 1000 is fine).
// Reference: PyTorch aten/src/ATen/native/SoftMax.cpp (same formulas).
// Chapter: chapters/01-training-loop.md.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend::cpu {

template <class T>
void softmax_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const T* xp = x + o * n * inner + i;
      T* yp = y + o * n * inner + i;
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t k = 0; k < n; ++k) m = xp[k * inner] > m ? xp[k * inner] : m;
      if (std::isinf(m) && m < 0) m = 0;  // all -inf: avoid (-inf) - (-inf) = nan
      double s = 0;
      for (int64_t k = 0; k < n; ++k) s += std::exp(static_cast<double>(xp[k * inner] - m));
      if (log) {
        T lse = static_cast<T>(std::log(s));
        for (int64_t k = 0; k < n; ++k) yp[k * inner] = xp[k * inner] - m - lse;
      } else {
        T inv = static_cast<T>(1.0 / s);
        for (int64_t k = 0; k < n; ++k) yp[k * inner] = std::exp(xp[k * inner] - m) * inv;
      }
    }
}

template <class T>
void softmax_backward_kernel(const T* dy, const T* y, T* dx, int64_t outer, int64_t n,
                             int64_t inner, bool log) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      double s = 0;
      for (int64_t k = 0; k < n; ++k)
        s += log ? dy[base + k * inner] : dy[base + k * inner] * y[base + k * inner];
      for (int64_t k = 0; k < n; ++k) {
        const int64_t j = base + k * inner;
        dx[j] = log ? static_cast<T>(dy[j] - std::exp(y[j]) * s) : static_cast<T>(y[j] * (dy[j] - s));
      }
    }
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cpu

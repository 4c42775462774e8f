// tinytorch/backend/cpu/reduce.hpp — reductions along one dim of a contiguous buffer: sum, max, min.
//
// A contiguous tensor reduced over dim d is viewed as (outer, n, inner) with
//   outer = prod(shape[:d]), n = shape[d], inner = prod(shape[d+1:]);
//   out[o, i] = reduce_{k < n} x[o, k, i]          out: (outer, inner)
// Sums accumulate in double for float32 and the 16-bit types (whose CUDA sums read 16-bit
// elements: ops/reduce.hpp), and in the type itself otherwise, so a long sum of
// float32 stays close to PyTorch's pairwise-summed result. max/argmax and min/argmin are one
// kernel (extreme_dim_kernel) with std::greater or std::less: values[o, i] is the extreme,
// indices[o, i] the first k that attains it, and a NaN wins (the first NaN), as PyTorch does.
// amin/amax over several dims use the same kernels on a permuted copy whose reduced dims are
// last (ops/reduce.hpp).
// This layer never sees Tensor (docs/architecture.md). Chapter: chapters/01-training-loop.md.
// Reference: PyTorch's torch.sum / torch.max / torch.min / torch.argmin documentation.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <type_traits>

#include "tinytorch/core/half.hpp"    // is_reduced_floating_point_v (acc_t)
#include "tinytorch/core/scalar.hpp"  // wrapping_add: int64 sums wrap modulo 2^64, as PyTorch's
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend::cpu {

template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, float> || is_reduced_floating_point_v<T>, double, T>;

/// acc + v; for int64 modulo 2^64 (an overflowing sum wraps as in PyTorch, without the undefined
/// behaviour of a signed overflow).
template <class A, class T> A accumulate(A acc, T v) {
  if constexpr (std::is_same_v<A, int64_t>) return wrapping_add(acc, v);
  else return acc + v;
}

/// out[o, i] = sum_k x[o, k, i] (scale multiplies the result: 1 for sum, 1/n for mean).
template <class T>
void sum_dim_kernel(const T* x, T* out, int64_t outer, int64_t n, int64_t inner, double scale) {
  for (int64_t o = 0; o < outer; ++o) {
    const T* xo = x + o * n * inner;
    T* yo = out + o * inner;
    if (inner == 1) {
      acc_t<T> acc = 0;
      for (int64_t k = 0; k < n; ++k) acc = accumulate(acc, xo[k]);
      // (scale == 1 for int64: mean is floating only; a product with a double would round int64
      // sums beyond 2^53)
      if (scale == 1.0) yo[0] = static_cast<T>(acc);
      else yo[0] = static_cast<T>(acc * scale);
      continue;
    }
    for (int64_t i = 0; i < inner; ++i) yo[i] = 0;
    for (int64_t k = 0; k < n; ++k)
      for (int64_t i = 0; i < inner; ++i) yo[i] = accumulate(yo[i], xo[k * inner + i]);
    if (scale != 1.0)
      for (int64_t i = 0; i < inner; ++i) yo[i] = static_cast<T>(yo[i] * scale);
  }
}

/// values[o, i] = the best x[o, k, i] over k by `better(v, best)` (std::greater: max, std::less:
/// min), indices[o, i] = its first index (NaN wins, as in PyTorch); either output may be null.
template <class T, class Better>
void extreme_dim_kernel(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
                        Better better) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const T* p = x + o * n * inner + i;
      T best = p[0];
      int64_t arg = 0;
      for (int64_t k = 1; k < n; ++k) {
        T v = p[k * inner];
        bool best_nan = best != best;
        if (!best_nan && (better(v, best) || v != v)) { best = v; arg = k; }
      }
      if (values) values[o * inner + i] = best;
      if (indices) indices[o * inner + i] = arg;
    }
}
/// values[o, i] = max_k x[o, k, i], indices[o, i] = first argmax (NaN wins, as in PyTorch).
template <class T>
void max_dim_kernel(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner) {
  extreme_dim_kernel(x, values, indices, outer, n, inner, std::greater<T>());
}

/// values[o, i] = min_k x[o, k, i], indices[o, i] = first argmin (NaN wins, as in PyTorch).
/// The twin of max_dim_kernel: both are extreme_dim_kernel (above).
template <class T>
void min_dim_kernel(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner) {
  extreme_dim_kernel(x, values, indices, outer, n, inner, std::less<T>());
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cpu

// tinytorch/backend/cpu/reduce_more.hpp — min along one dim of a contiguous buffer.
//
// The twin of max_dim_kernel (backend/cpu/reduce.hpp): a contiguous tensor reduced over dim d is
// viewed as (outer, n, inner) and
//   values[o, i] = min_{k < n} x[o, k, i],   indices[o, i] = the first k that attains it;
// a NaN wins (the first NaN), as PyTorch's min/argmin. amin/amax over several dims use these two
// kernels on a permuted copy whose reduced dims are last (ops/reduce_more.hpp).
// This layer never sees Tensor (DESIGN.md). Chapter: chapters/01-training-loop.md.
// Reference: PyTorch's torch.min / torch.argmin documentation.
#pragma once

#include <cstdint>

namespace tinytorch::backend::cpu {

/// values[o, i] = min_k x[o, k, i], indices[o, i] = first argmin (NaN wins, as in PyTorch).
/// The twin of max_dim_kernel (backend/cpu/reduce.hpp); either output pointer may be null.
template <class T>
void min_dim_kernel(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const T* p = x + o * n * inner + i;
      T best = p[0];
      int64_t arg = 0;
      for (int64_t k = 1; k < n; ++k) {
        T v = p[k * inner];
        bool best_nan = best != best;
        if (!best_nan && (v < best || v != v)) { best = v; arg = k; }
      }
      if (values) values[o * inner + i] = best;
      if (indices) indices[o * inner + i] = arg;
    }
}

}  // namespace tinytorch::backend::cpu

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
#include <functional>

#include "reduce.hpp"
#include "../../core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend::cpu {

/// values[o, i] = min_k x[o, k, i], indices[o, i] = first argmin (NaN wins, as in PyTorch).
/// The twin of max_dim_kernel: both are extreme_dim_kernel (backend/cpu/reduce.hpp).
template <class T>
void min_dim_kernel(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner) {
  extreme_dim_kernel(x, values, indices, outer, n, inner, std::less<T>());
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cpu

// tinytorch/ops/reduce_more.hpp — min/argmin over one dim; amax/amin over a list of dims. No autograd.
//
//   min_dim(x, d, keepdim) -> (values, indices): as max_dim (ops/reduce.hpp) with min; indices int64,
//                             the first index on ties, a NaN wins (the first NaN).
//   amax_amin(x, dims, keepdim, is_max): the max (or min) over every dim in `dims` at once; an empty
//                             list means all dims. (A, B, C).amax({0, 2}) -> (B); keepdim -> (1, B, 1).
//                             Computed by moving the reduced dims last (a permuted contiguous copy
//                             (kept..., reduced...) viewed as (M, R)) and reducing each row of R.
// Errors as PyTorch: a dim out of range, a dim listed twice ("dim 0 appears multiple times in the
// list of dims"), an empty reduced dim ("Expected reduction dim 0 to have non-zero size").
// Chapter: chapters/01-training-loop.md. Reference: torch.min / torch.argmin / torch.amax / torch.amin.
#pragma once

#include <algorithm>
#include <tuple>
#include <vector>

#include "../backend/cpu/reduce.hpp"
#include "../backend/cpu/reduce_more.hpp"
#include "creation.hpp"
#include "dispatch.hpp"
#include "reduce.hpp"
#include "shape.hpp"
#include "../core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace ops {

/// (values, indices) of the min along dim; indices int64, first index on ties (torch.min(x, dim)).
inline std::tuple<Tensor, Tensor> min_dim(const Tensor& x, int64_t dim, bool keepdim, const char* op = "min") {
  return extreme_dim(x, dim, keepdim, /*is_max=*/false, op);
}

/// torch.amax (is_max) / torch.amin of x over `dims` (empty: all dims), keeping them as size 1
/// with keepdim. The result has x's dtype.
inline Tensor amax_amin(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, bool is_max) {
  const char* op = is_max ? "amax" : "amin";
  check_device(x, op);
  const std::vector<int64_t> red = reduction_dims(dims, x.dim(), op);
  if (x.dim() == 0) return clone(x);
  TT_CHECK(x.numel() > 0 || !dims.empty(), op, "(): Expected reduction dim to be specified for input.numel() == 0. "
           "Specify the reduction dim with the 'dim' argument.");
  for (int64_t d : red)
    TT_CHECK(x.sizes()[d] > 0, op, "(): Expected reduction dim ", d, " to have non-zero size (input shape ",
             shape_str(x.sizes()), ")");
  const ReducedLast r = reduced_last(x, red, keepdim);  // (rows, cols), reduced dims last
  Tensor out = make_tensor(r.out_shape, x.dtype(), x.device());
  if (r.rows == 0) return out;
  dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = r.x.data_ptr<T>();
    if (is_max) backend::dispatch::max_dim_kernel(x.device(), xp, out.data_ptr<T>(), nullptr, r.rows, r.cols, 1);
    else backend::dispatch::min_dim_kernel(x.device(), xp, out.data_ptr<T>(), nullptr, r.rows, r.cols, 1);
  });
  return out;
}

}  TT_NAMESPACE_END  // namespace tinytorch::ops

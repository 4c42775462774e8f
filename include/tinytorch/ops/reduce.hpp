// tinytorch/ops/reduce.hpp — sum and mean over all elements, one dim or a list of dims (sum_dims);
// max/argmax and min/argmin over one dim (over everything: functional.ipp reshapes to one dim);
// amax/amin over a list of dims; sum_to. No autograd.
//
// Over one dim d with keepdim=false the dim is removed: (A, B, C).sum(1) -> (A, C); with
// keepdim=true it stays as size 1: (A, 1, C). Over all elements the result is 0-d. Over a list
// of dims each listed dim goes: (A, B, C).sum({0, 2}) -> (B), keepdim -> (1, B, 1); the errors
// are PyTorch's (a dim out of range, "dim 0 appears multiple times in the list of dims").
//   max_dim / min_dim(x, d, keepdim) -> (values, indices): indices int64, the first index on
//                             ties, a NaN wins (the first NaN).
//   amax_amin(x, dims, keepdim, is_max): the max (or min) over every dim in `dims` at once; an empty
//                             list means all dims. (A, B, C).amax({0, 2}) -> (B); keepdim -> (1, B, 1).
//                             Computed by moving the reduced dims last (a permuted contiguous copy
//                             (kept..., reduced...) viewed as (M, R)) and reducing each row of R;
//                             an empty reduced dim is refused ("Expected reduction dim 0 to have
//                             non-zero size").
// sum_to(g, shape) sums a broadcast gradient back to the shape of the input it came from:
// leading extra dims are summed away, dims that were 1 are summed with keepdim.
// On the input's device (backend::dispatch::sum_dim_kernel / max_dim_kernel / min_dim_kernel). On
// CUDA a sum adds in another order than the CPU loop: equal within rounding, not bitwise.
// Chapter: chapters/01-training-loop.md.
// Reference: torch.sum / torch.mean / torch.max / torch.argmax / torch.min / torch.amax / torch.amin.
#pragma once

#include <algorithm>
#include <tuple>
#include <vector>

#include "tinytorch/backend/cpu/reduce.hpp"
#include "tinytorch/ops/creation.hpp"  // zeros() for max over a 0-d tensor
#include "tinytorch/ops/dispatch.hpp"
#include "tinytorch/ops/shape.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace ops {

namespace detail {
struct DimSplit {
  int64_t outer = 1, n = 1, inner = 1;
  Shape out_shape;
};
inline DimSplit split_dim(const Shape& s, int64_t dim, bool keepdim) {
  DimSplit r;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    if (i < dim) r.outer *= s[i];
    else if (i == dim) r.n = s[i];
    else r.inner *= s[i];
    if (i != dim || keepdim) r.out_shape.push_back(i == dim ? 1 : s[i]);
  }
  return r;
}
}  // namespace detail

/// Sum (scale=1) or mean (scale=1/n) along dim.
inline Tensor sum_dim(const Tensor& x0, int64_t dim, bool keepdim, bool mean = false) {
  const char* op = mean ? "mean" : "sum";
  check_device(x0, op);
  TT_CHECK(!mean || x0.is_floating_point(), "mean(): could not infer output dtype. Input dtype must be "
           "either a floating point or complex dtype. Got: ", dtype_name(x0.dtype()));
  // float16/bfloat16: accumulated as float32 is (in double), rounded once; on a CUDA device the
  // sum kernel reads the 16-bit values itself, on the CPU the op sums a float32 copy
  if (via_float32(x0.device(), x0.dtype()))
    return to_dtype(sum_dim(to_dtype(x0, kFloat32), dim, keepdim, mean), x0.dtype());
  const Tensor x = contiguous(x0);
  dim = wrap_dim(dim, x.dim(), op);  // a 0-d tensor accepts dim 0 and -1 only
  if (x.dim() == 0) return clone(x);
  auto sp = detail::split_dim(x.sizes(), dim, keepdim);
  Tensor out = make_tensor(sp.out_shape, x.dtype(), x.device());
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    double scale = mean ? 1.0 / static_cast<double>(sp.n) : 1.0;
    backend::dispatch::sum_dim_kernel(x.device(), x.data_ptr<T>(), out.data_ptr<T>(), sp.outer, sp.n, sp.inner, scale);
  });
  return out;
}

/// `dims` wrapped into [0, ndim) and sorted; an empty list means every dim. Throws for a dim out
/// of range or one listed twice (PyTorch: "dim 0 appears multiple times in the list of dims").
inline std::vector<int64_t> reduction_dims(const std::vector<int64_t>& dims, int64_t ndim, const char* op) {
  std::vector<bool> seen(static_cast<size_t>(ndim > 0 ? ndim : 1), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, ndim, op);
    TT_CHECK(!seen[w], op, ": dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
  }
  std::vector<int64_t> out;
  for (int64_t d = 0; d < ndim; ++d)
    if (dims.empty() || seen[d]) out.push_back(d);
  return out;
}

/// x with the dims `red` (ascending) moved last, as a contiguous (rows, cols) matrix in row-major
/// order (rows: the kept dims' elements, cols: the reduced ones'), and the result's shape: what a
/// reduction over several dims at once needs (sum_dims, amax_amin).
struct ReducedLast {
  Tensor x;  // the permuted contiguous copy (kept..., reduced...)
  Shape out_shape;
  int64_t rows = 1, cols = 1;
};
inline ReducedLast reduced_last(const Tensor& x, const std::vector<int64_t>& red, bool keepdim) {
  ReducedLast r;
  std::vector<int64_t> perm;  // kept dims first, then the reduced ones
  for (int64_t d = 0; d < x.dim(); ++d) {
    const bool reduced = std::find(red.begin(), red.end(), d) != red.end();
    if (!reduced) {
      perm.push_back(d);
      r.rows *= x.sizes()[d];
    } else {
      r.cols *= x.sizes()[d];
    }
    if (!reduced || keepdim) r.out_shape.push_back(reduced ? 1 : x.sizes()[d]);
  }
  perm.insert(perm.end(), red.begin(), red.end());
  r.x = contiguous(permute(x, perm));
  return r;
}

/// Sum (or mean) over every dim in `dims` at once (torch.sum(x, dim=(0, 2)), keepdim keeps them
/// as size 1); an empty list means every dim, as PyTorch. (A, B, C) over {0, 2} -> (B). One dim
/// is sum_dim itself; several are summed in one pass per output element, like amax_amin: the
/// reduced dims moved last (a permuted contiguous copy viewed as (rows, cols)), each row summed.
/// mean needs a floating dtype; an empty reduction gives 0 (sum) or NaN (mean), as PyTorch.
inline Tensor sum_dims(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, bool mean = false) {
  const char* op = mean ? "mean" : "sum";
  check_device(x, op);
  TT_CHECK(!mean || x.is_floating_point(), "mean(): could not infer output dtype. Input dtype must be "
           "either a floating point or complex dtype. Got: ", dtype_name(x.dtype()));
  if (via_float32(x.device(), x.dtype()))  // as sum_dim
    return to_dtype(sum_dims(to_dtype(x, kFloat32), dims, keepdim, mean), x.dtype());
  const std::vector<int64_t> red = reduction_dims(dims, x.dim(), op);
  if (red.size() == 1 && x.dim() > 0) return sum_dim(x, red[0], keepdim, mean);
  if (x.dim() == 0) return clone(x);
  const ReducedLast r = reduced_last(x, red, keepdim);
  Tensor out = make_tensor(r.out_shape, x.dtype(), x.device());
  if (r.rows == 0) return out;
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const double scale = mean ? 1.0 / static_cast<double>(r.cols) : 1.0;
    backend::dispatch::sum_dim_kernel(x.device(), r.x.data_ptr<T>(), out.data_ptr<T>(), r.rows, r.cols, 1, scale);
  });
  return out;
}

/// Sum (or mean) of all elements: a 0-d tensor.
inline Tensor sum_all(const Tensor& x, bool mean = false) {
  Tensor flat = reshape(x, {x.numel()});
  Tensor r = sum_dim(flat, 0, false, mean);
  return r;
}

/// (values, indices) of the max (is_max) or min along dim; indices int64, first index on ties,
/// NaN wins (torch.max(x, dim) / torch.min(x, dim)). `op` names the caller in errors.
inline std::tuple<Tensor, Tensor> extreme_dim(const Tensor& x0, int64_t dim, bool keepdim, bool is_max, const char* op) {
  check_device(x0, op);
  if (is_reduced_floating_point(x0.dtype())) {  // a selection: float32 and back is exact (NaN payloads aside)
    auto [values, indices] = extreme_dim(to_dtype(x0, kFloat32), dim, keepdim, is_max, op);
    return {to_dtype(values, x0.dtype()), indices};
  }
  const Tensor x = contiguous(x0);
  dim = wrap_dim(dim, x.dim(), op);  // a 0-d tensor accepts dim 0 and -1 only
  if (x.dim() == 0) {
    const Tensor index = zeros({}, kInt64);
    return {clone(x), x.device().is_cpu() ? index : to_device(index, x.device())};
  }
  TT_CHECK(x.sizes()[dim] > 0, op, "(): Expected reduction dim ", dim,
           " to have non-zero size (input shape ", shape_str(x.sizes()), ")");
  auto sp = detail::split_dim(x.sizes(), dim, keepdim);
  Tensor values = make_tensor(sp.out_shape, x.dtype(), x.device());
  Tensor indices = make_tensor(sp.out_shape, kInt64, x.device());
  dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (is_max)
      backend::dispatch::max_dim_kernel(x.device(), x.data_ptr<T>(), values.data_ptr<T>(), indices.data_ptr<int64_t>(),
                                        sp.outer, sp.n, sp.inner);
    else
      backend::dispatch::min_dim_kernel(x.device(), x.data_ptr<T>(), values.data_ptr<T>(), indices.data_ptr<int64_t>(),
                                        sp.outer, sp.n, sp.inner);
  });
  return {values, indices};
}

/// (values, indices) of the max along dim; indices int64, first index on ties.
inline std::tuple<Tensor, Tensor> max_dim(const Tensor& x, int64_t dim, bool keepdim, const char* op = "max") {
  return extreme_dim(x, dim, keepdim, /*is_max=*/true, op);
}

/// Sums g down to `shape` (the inverse of broadcasting `shape` to g's shape).
inline Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.sizes() == shape) return g;
  Tensor r = g;
  const int64_t lead = r.dim() - static_cast<int64_t>(shape.size());
  for (int64_t i = 0; i < lead; ++i) r = sum_dim(r, 0, false);
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    if (shape[i] == 1 && r.sizes()[i] != 1) r = sum_dim(r, i, true);
  return r;
}


/// (values, indices) of the min along dim; indices int64, first index on ties (torch.min(x, dim)).
inline std::tuple<Tensor, Tensor> min_dim(const Tensor& x, int64_t dim, bool keepdim, const char* op = "min") {
  return extreme_dim(x, dim, keepdim, /*is_max=*/false, op);
}

/// torch.amax (is_max) / torch.amin of x over `dims` (empty: all dims), keeping them as size 1
/// with keepdim. The result has x's dtype.
inline Tensor amax_amin(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, bool is_max) {
  const char* op = is_max ? "amax" : "amin";
  check_device(x, op);
  if (is_reduced_floating_point(x.dtype()))  // a selection: float32 and back is exact (NaN payloads aside)
    return to_dtype(amax_amin(to_dtype(x, kFloat32), dims, keepdim, is_max), x.dtype());
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

// tinytorch/autograd/functions/reduce.hpp — the autograd nodes of the reductions: sum and mean
// (over everything, one dim or a list of dims), max and min (over everything or one dim, with
// indices), amax / amin.
//
//   sum(x, dims)        dx = dy expanded back over the reduced dims (/ n for mean)  SumBackward0/1, MeanBackward0/1
//   max(x) / min(x)     dy shared evenly among the elements equal to the result (among the NaNs
//                       when the result is NaN)                      MaxBackward1 / MinBackward1
//   max/min(x, dim)     dx[index] = dy, 0 elsewhere                  MaxBackward0 / MinBackward0
//   amax/amin(x, dims)  dx = dy / count * (x == y), count = #ties in the slice   AmaxBackward0
// Chapter: chapters/02-autograd.md. Reference: PyTorch tools/autograd/derivatives.yaml.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "tinytorch/ops/reduce.hpp"
#include "tinytorch/autograd/functions/common.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

// ---------------------------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------------------------

/// y = sum(x) or mean(x) over all elements or one dim  =>  dx = dy broadcast back (/ n for mean)
struct SumMean : Node {
  Shape in_shape;
  std::vector<int64_t> dims;  // the reduced dims, wrapped and ascending (all: every dim)
  bool keepdim = false, mean = false, all = true;
  double scale = 1;
  std::string name() const override {
    return std::string(mean ? "MeanBackward" : "SumBackward") + (all ? "0" : "1");
  }
  /// sum / mean of every element (no dim), or over one dim.
  static Tensor forward(const Tensor& x, std::optional<int64_t> dim, bool keepdim, bool mean) {
    Tensor out = dim ? ops::sum_dim(x, *dim, keepdim, mean) : ops::sum_all(x, mean);
    if (!any_requires_grad({&x})) return out;
    std::vector<int64_t> dims;
    if (dim) dims.push_back(wrap_dim(*dim, x.dim(), mean ? "mean" : "sum"));
    return record_node(x, out, std::move(dims), !dim.has_value(), keepdim, mean);
  }
  /// sum / mean over a list of dims (torch.sum(x, dim=(0, 2))); an empty list: every dim, the
  /// result shaped by keepdim (PyTorch's SumBackward1 too).
  static Tensor forward(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, bool mean) {
    Tensor out = ops::sum_dims(x, dims, keepdim, mean);
    if (!any_requires_grad({&x})) return out;
    return record_node(x, out, ops::reduction_dims(dims, x.dim(), mean ? "mean" : "sum"), false, keepdim, mean);
  }
  // y = sum over dims of x  =>  dx = dy with the reduced dims put back (size 1) and expanded;
  // mean: times 1/n, n the number of elements summed into each output.
  std::vector<Tensor> backward(const Tensor& dy) override {
    Tensor g = dy;
    if (!all && !keepdim && !in_shape.empty())
      for (int64_t d : dims) g = ops::unsqueeze(g, d);  // ascending: each lands at its place
    Tensor dx = ops::contiguous(ops::expand(g, in_shape));
    if (mean) dx = ops::scalar(dx, scale, cpu::MulOp{}, "mean_backward");
    return {dx};
  }

 private:
  static Tensor record_node(const Tensor& x, const Tensor& out, std::vector<int64_t> dims, bool all, bool keepdim,
                            bool mean) {
    auto n = std::make_shared<SumMean>();
    n->in_shape = x.sizes();
    n->all = all;
    n->keepdim = keepdim;
    n->mean = mean;
    double count = 1;
    if (all || x.dim() == 0) count = static_cast<double>(x.numel());
    else for (int64_t d : dims) count *= static_cast<double>(x.sizes()[static_cast<size_t>(d)]);
    n->dims = std::move(dims);
    n->scale = mean ? 1.0 / count : 1.0;
    return record(out, n, {&x});
  }
};

/// values, indices = max(x, dim)  =>  dx[index] = dy, 0 elsewhere.
/// max(x) over all elements      =>  dy shared evenly among all maximal elements (among the NaNs
///                                    when the max is NaN), as PyTorch. min reuses this node (Min).
struct Max : Node {
  Tensor indices;  // for the dim form
  Tensor x, y;     // for the all-elements form
  Shape in_shape;
  int64_t dim = -1;
  bool keepdim = false, all = false;
  std::string name() const override { return all ? "MaxBackward1" : "MaxBackward0"; }
  static std::tuple<Tensor, Tensor> forward_dim(const Tensor& x, int64_t dim, bool keepdim) {
    auto [values, indices] = ops::max_dim(x, dim, keepdim);
    if (!any_requires_grad({&x})) return {values, indices};
    auto n = std::make_shared<Max>();
    n->indices = n->save(indices, /*is_output=*/true, /*output_nr=*/1);
    n->in_shape = x.sizes();
    n->dim = x.dim() ? wrap_dim(dim, x.dim(), "max") : 0;
    n->keepdim = keepdim;
    return {record(values, n, {&x}), indices};
  }
  static Tensor forward_all(const Tensor& x) {
    TT_CHECK(x.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() == 0. "
             "Specify the reduction dim with the 'dim' argument.");
    Tensor values = std::get<0>(ops::max_dim(ops::reshape(x, {x.numel()}), 0, false));
    if (!any_requires_grad({&x})) return values;
    auto n = std::make_shared<Max>();
    n->all = true;
    n->x = n->save(x);
    values = record(values, n, {&x});
    n->y = n->save(values, /*is_output=*/true);  // a detached handle: `values` itself would be a cycle
    return values;
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    if (all) {
      // PyTorch's evenly_distribute_backward: the elements equal to the result share dy; when the
      // result is NaN, the NaNs share it (x == NaN would match nothing and make 0/0).
      // (ExtremeMaskOp: x == y, or isnan(x) when y is NaN; no host read of y)
      Tensor mask = ops::to_dtype(ops::binary(x, y, backend::ExtremeMaskOp{}, "max_backward", true), dy.dtype());
      Tensor count = ops::sum_all(mask);
      return {grad_math::mul(mask, grad_math::div(dy, count))};
    }
    if (in_shape.empty()) return {ops::clone(dy)};
    // The scatter dx[.., k, ..] = dy[.., 0, ..] where k == index, as an elementwise op on any
    // device: positions 0..n-1 along dim, compared with the (kept-dim) indices, select dy or 0.
    Tensor g = keepdim ? dy : ops::unsqueeze(dy, dim);
    Tensor idx = keepdim ? indices : ops::unsqueeze(indices, dim);
    Shape pos_shape(in_shape.size(), 1);
    pos_shape[dim] = in_shape[dim];
    Tensor pos = ops::reshape(arange(0, static_cast<double>(in_shape[dim]), 1, kInt64), pos_shape);
    if (!dy.device().is_cpu()) pos = ops::to_device(pos, dy.device());
    const Tensor hit = ops::binary(pos, idx, cpu::EqOp{}, "max_backward", true);  // in_shape, 0/1
    return {ops::where(hit, g, ops::scalar_as_tensor(0.0, dy.dtype(), dy.device()))};
  }
  void release_saved() override { indices = x = y = Tensor(); }
};

// ---------------------------------------------------------------------------------------------
// min, amax / amin, maximum / minimum
// ---------------------------------------------------------------------------------------------

/// values, indices = min(x, dim)  =>  dx[index] = dy;  min(x)  =>  dy shared among the minima.
/// The backward is Max's (above): only the name differs.
struct Min : Max {
  std::string name() const override { return all ? "MinBackward1" : "MinBackward0"; }
  static std::tuple<Tensor, Tensor> forward_dim(const Tensor& x, int64_t dim, bool keepdim) {
    auto [values, indices] = ops::min_dim(x, dim, keepdim);
    if (!any_requires_grad({&x})) return {values, indices};
    auto n = std::make_shared<Min>();
    n->indices = n->save(indices, /*is_output=*/true, /*output_nr=*/1);
    n->in_shape = x.sizes();
    n->dim = x.dim() ? wrap_dim(dim, x.dim(), "min") : 0;
    n->keepdim = keepdim;
    return {record(values, n, {&x}), indices};
  }
  static Tensor forward_all(const Tensor& x) {
    TT_CHECK(x.numel() > 0, "min(): Expected reduction dim to be specified for input.numel() == 0. "
             "Specify the reduction dim with the 'dim' argument.");
    Tensor values = std::get<0>(ops::min_dim(ops::reshape(x, {x.numel()}), 0, false));
    if (!any_requires_grad({&x})) return values;
    auto n = std::make_shared<Min>();
    n->all = true;
    n->x = n->save(x);
    values = record(values, n, {&x});
    n->y = n->save(values, /*is_output=*/true);  // a detached handle: `values` itself would be a cycle
    return values;
  }
};

/// y = amax(x, dims) or amin(x, dims)  =>  dx = dy / count * (x == y), count = number of elements
/// equal to y in each reduced slice (a slice whose result is NaN gets NaN, as PyTorch's
/// scale_grad_by_count).
struct AmaxAmin : Node {
  Tensor x, y;  // y with the reduced dims kept as size 1
  Shape keep_shape;
  bool is_max = true;
  std::string name() const override { return is_max ? "AmaxBackward0" : "AminBackward0"; }
  static Tensor forward(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, bool is_max) {
    Tensor out = ops::amax_amin(x, dims, keepdim, is_max);
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<AmaxAmin>();
    n->is_max = is_max;
    n->x = n->save(x);
    n->keep_shape = x.sizes();
    for (int64_t d : ops::reduction_dims(dims, x.dim(), is_max ? "amax" : "amin")) n->keep_shape[d] = 1;
    out = record(out, n, {&x});
    n->y = ops::reshape(n->save(out, /*is_output=*/true), n->keep_shape);
    return out;
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    Tensor g = ops::reshape(dy, keep_shape);
    Tensor mask = ops::to_dtype(ops::binary(x, y, cpu::EqOp{}, "amax_backward", true), dy.dtype());
    Tensor count = ops::sum_to(mask, keep_shape);
    return {grad_math::mul(grad_math::div(g, count), mask)};
  }
  void release_saved() override { x = y = Tensor(); }
};

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

// tinytorch/autograd/functions/shape.hpp — the autograd nodes of views and copies: reshape,
// transpose, permute, the shape-only views (expand, squeeze, ...), slicing, copy/contiguous, cat.
//
// A view's backward maps dy back through the inverse view: reshape -> reshape to x's shape,
// transpose/permute -> the inverse permutation, a slice -> dy written into zeros of x's shape at
// the slice; cat splits dy along dim. Chapter: chapters/02-autograd.md.
// Reference: PyTorch tools/autograd/derivatives.yaml.
#pragma once

#include <vector>

#include "tinytorch/ops/shape.hpp"
#include "tinytorch/autograd/functions/common.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

// ---------------------------------------------------------------------------------------------
// Views and copies
// ---------------------------------------------------------------------------------------------

/// y = x viewed/reshaped  =>  dx = dy reshaped to x's shape
struct Reshape : Node {
  Shape in_shape;
  const char* node_name = "ViewBackward0";
  std::string name() const override { return node_name; }
  static Tensor forward(const Tensor& x, const Shape& shape, bool must_view) {
    Tensor out = must_view ? ops::view(x, shape) : ops::reshape(x, shape);
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<Reshape>();
    n->in_shape = x.sizes();
    if (!must_view && out.impl()->storage != x.impl()->storage) n->node_name = "UnsafeViewBackward0";
    return record(out, n, {&x});
  }
  std::vector<Tensor> backward(const Tensor& dy) override { return {ops::reshape(dy, in_shape)}; }
};

/// y = x with dims d0, d1 swapped  =>  dx = dy with them swapped back
struct Transpose : Node {
  int64_t d0 = 0, d1 = 0;
  const char* node_name = "TransposeBackward0";
  std::string name() const override { return node_name; }
  static Tensor forward(const Tensor& x, int64_t d0, int64_t d1, const char* node_name) {
    Tensor out = ops::transpose(x, d0, d1);
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<Transpose>();
    n->d0 = d0;
    n->d1 = d1;
    n->node_name = node_name;
    return record(out, n, {&x});
  }
  std::vector<Tensor> backward(const Tensor& dy) override { return {ops::transpose(dy, d0, d1)}; }
};

/// y = x.permute(p)  =>  dx = dy.permute(p^-1)
struct Permute : Node {
  std::vector<int64_t> inverse;
  std::string name() const override { return "PermuteBackward0"; }
  static Tensor forward(const Tensor& x, const std::vector<int64_t>& dims) {
    Tensor out = ops::permute(x, dims);
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<Permute>();
    n->inverse.resize(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) n->inverse[wrap_dim(dims[i], x.dim(), "permute")] = i;
    return record(out, n, {&x});
  }
  std::vector<Tensor> backward(const Tensor& dy) override { return {ops::permute(dy, inverse)}; }
};

/// unsqueeze / squeeze / expand: y has x's data in another shape  =>  dx = sum_to(dy, x.shape)
struct ShapeOnly : Node {
  Shape in_shape;
  const char* node_name;
  explicit ShapeOnly(const char* n) : node_name(n) {}
  std::string name() const override { return node_name; }
  static Tensor wrap(const Tensor& x, Tensor out, const char* node_name) {
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<ShapeOnly>(node_name);
    n->in_shape = x.sizes();
    return record(out, n, {&x});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    // expand: sum the broadcast dims; (un)squeeze: same numel, a reshape suffices
    if (dy.numel() == numel_of(in_shape)) return {ops::reshape(dy, in_shape)};
    return {ops::sum_to(dy, in_shape)};
  }
};

/// y = x.narrow(dim, start, len) or x.select(dim, i)  =>  dx = zeros with dy written at the slice
struct Slice : Node {
  Shape in_shape;
  int64_t dim = 0, start = 0, length = 0;
  bool select = false;
  std::string name() const override { return select ? "SelectBackward0" : "SliceBackward0"; }
  static Tensor forward(const Tensor& x, int64_t dim, int64_t start, int64_t length, bool select) {
    Tensor out = select ? ops::select(x, dim, start) : ops::narrow(x, dim, start, length);
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<Slice>();
    n->in_shape = x.sizes();
    n->dim = wrap_dim(dim, x.dim(), select ? "select" : "narrow");
    int64_t size = x.sizes()[n->dim];
    n->start = start < 0 ? start + size : start;
    n->length = length;
    n->select = select;
    return record(out, n, {&x});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    Tensor dx = zeros(in_shape, TensorOptions(dy.dtype()).device(dy.device()));
    Tensor part = select ? ops::select(dx, dim, start) : ops::narrow(dx, dim, start, length);
    ops::binary_(part, dy, backend::SecondOp{}, "slice_backward");
    return {dx};
  }
};

/// y = copy of x (clone, contiguous, to(dtype), to(device))
///   =>  dx = dy (converted back to x's dtype, copied back to x's device)
struct Copy : Node {
  DType in_dtype = kFloat32;
  Device in_device = Device::cpu();
  const char* node_name = "CloneBackward0";
  std::string name() const override { return node_name; }
  static Tensor wrap(const Tensor& x, Tensor out, const char* node_name) {
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<Copy>();
    n->in_dtype = x.dtype();
    n->in_device = x.device();
    n->node_name = node_name;
    return record(out, n, {&x});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    return {ops::to_device(ops::to_dtype(dy, in_dtype), in_device)};
  }
};

/// y = cat(xs, dim)  =>  dx_i = dy narrowed to x_i's range along dim. stack = cat of unsqueezed.
struct Cat : Node {
  std::vector<int64_t> sizes;
  int64_t dim = 0;
  std::string name() const override { return "CatBackward0"; }
  std::vector<Tensor> backward(const Tensor& dy) override {
    std::vector<Tensor> out;
    int64_t start = 0;
    for (int64_t s : sizes) {
      out.push_back(ops::narrow(dy, dim, start, s));
      start += s;
    }
    return out;
  }
};

inline Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  TT_CHECK(!xs.empty(), "cat: expected a non-empty list of Tensors");
  const Tensor& first = xs[0];
  dim = wrap_dim(dim, first.dim(), "cat");
  TT_CHECK(first.dim() > 0, "cat: zero-dimensional tensor (at position 0) cannot be concatenated");
  Shape shape = first.sizes();
  DType dt = first.dtype();
  shape[dim] = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    ops::check_device(xs[i], "cat");
    TT_CHECK(xs[i].dim() == first.dim(), "cat: Tensors must have same number of dimensions: got ",
             first.dim(), " and ", xs[i].dim(), " (tensor ", i, ")");
    for (int64_t d = 0; d < first.dim(); ++d)
      TT_CHECK(d == dim || xs[i].sizes()[d] == first.sizes()[d], "cat: Sizes of tensors must match except in "
               "dimension ", dim, ". Expected size ", first.sizes()[d], " but got size ", xs[i].sizes()[d],
               " for tensor number ", i, " in the list (shapes ", shape_str(first.sizes()), " and ",
               shape_str(xs[i].sizes()), ")");
    shape[dim] += xs[i].sizes()[dim];
    dt = ops::promote_types(dt, xs[i].dtype());
  }
  for (const Tensor& x : xs) ops::check_same_device("cat", first, x);
  Tensor out = ops::make_tensor(shape, dt, first.device());
  int64_t start = 0;
  bool grad = false;
  for (const Tensor& x : xs) {
    Tensor part = ops::narrow(out, dim, start, x.sizes()[dim]);
    ops::binary_(part, x, backend::SecondOp{}, "cat");
    start += x.sizes()[dim];
    grad = grad || any_requires_grad({&x});
  }
  if (!grad) return out;
  auto n = std::make_shared<Cat>();
  n->dim = dim;
  for (const Tensor& x : xs) {
    n->sizes.push_back(x.sizes()[dim]);
    n->next_edges.push_back(gradient_edge(x));
  }
  out.impl()->grad_fn = n;
  return out;
}

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

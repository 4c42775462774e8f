// tinytorch/autograd/functions/conv.hpp — the autograd nodes of conv2d and max_pool2d.
//
//   y = conv2d(x, w) + b   =>  dx = col2im(W^T dY),  dw = sum_n dY_n col_n^T,  db = sum_{n,h,w} dY
//                              (per group; the math is in backend/cpu/conv.hpp)
//   y, idx = max_pool2d(x) =>  dx[p, idx[p, o]] += dy[p, o]   (the gradient goes to each window's
//                              argmax, found in forward and saved as int64 indices)
// Node names are PyTorch's: ConvolutionBackward0, MaxPool2DWithIndicesBackward0.
// Like the other nodes (autograd/functions/*.hpp), backward is not itself differentiable.
// Chapter: chapters/01-training-loop.md ("A convolutional network").
// Reference: PyTorch tools/autograd/derivatives.yaml (convolution, max_pool2d_with_indices).
#pragma once

#include "tinytorch/ops/conv.hpp"
#include "tinytorch/autograd/node.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

/// conv2d on a 4-D input; see the header for the derivatives.
struct Convolution : Node {
  // Saved through Node::save (detached, version watched); both are needed for the sizes, each is
  // read only for the other's gradient.
  Tensor x, w;
  Size2 stride{1}, padding{0}, dilation{1};
  int64_t groups = 1;
  bool need_dx = false, need_dw = false, need_db = false;
  std::string name() const override { return "ConvolutionBackward0"; }
  static Tensor forward(const Tensor& x, const Tensor& w, const Tensor& b, Size2 stride, Size2 padding,
                        Size2 dilation, int64_t groups) {
    Tensor out = ops::conv2d(x, w, b, stride, padding, dilation, groups);
    if (!any_requires_grad({&x, &w, &b})) return out;
    auto n = std::make_shared<Convolution>();
    n->x = n->save(x);
    n->w = n->save(w);
    n->stride = stride;
    n->padding = padding;
    n->dilation = dilation;
    n->groups = groups;
    n->need_dx = x.requires_grad();
    n->need_dw = w.requires_grad();
    n->need_db = b.defined() && b.requires_grad();
    return b.defined() ? set_history(out, n, {&x, &w, &b}) : set_history(out, n, {&x, &w});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    auto [dx, dw, db] = ops::conv2d_backward(dy, x, w, stride, padding, dilation, groups, need_dx, need_dw, need_db);
    return {dx, dw, db};
  }
  void release_saved() override { x = w = Tensor(); }
};

/// max_pool2d on a 3-D or 4-D input; backward routes dy to the saved argmax indices.
struct MaxPool2dWithIndices : Node {
  Tensor indices;  // int64, the output's shape
  Shape input_shape;
  DType dtype = kFloat32;
  std::string name() const override { return "MaxPool2DWithIndicesBackward0"; }
  /// (values, indices); only values carries the graph.
  static std::tuple<Tensor, Tensor> forward(const Tensor& x, Size2 kernel_size, std::optional<Size2> stride,
                                            Size2 padding, Size2 dilation, bool ceil_mode) {
    auto [out, idx] = ops::max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode);
    if (!any_requires_grad({&x})) return {out, idx};
    auto n = std::make_shared<MaxPool2dWithIndices>();
    n->watch(x);  // watched, as PyTorch saves self: an in-place change of x before backward raises
    n->indices = n->save(idx, /*is_output=*/true, /*output_nr=*/1);
    n->input_shape = x.sizes();
    n->dtype = x.dtype();
    return {set_history(out, n, {&x}), idx};
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    return {ops::max_pool2d_backward(dy, indices, input_shape, dtype)};
  }
  void release_saved() override { indices = Tensor(); }
};

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

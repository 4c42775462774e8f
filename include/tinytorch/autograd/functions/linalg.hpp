// tinytorch/autograd/functions/linalg.hpp — the autograd nodes of the matrix products: mm,
// linear (x W^T + b, one node where PyTorch records addmm with W^T), bmm.
//
//   Y = A B   =>  dA = dY B^T,  dB = A^T dY      (bmm: the same per batch)
// Chapter: chapters/02-autograd.md. Reference: PyTorch tools/autograd/derivatives.yaml.
#pragma once

#include "tinytorch/ops/linalg.hpp"
#include "tinytorch/autograd/functions/common.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

// ---------------------------------------------------------------------------------------------
// Matrix products
// ---------------------------------------------------------------------------------------------

/// Y = A @ B (2-D)  =>  dA = dY @ B^T,  dB = A^T @ dY
struct Mm : Node {
  Tensor a, b;
  std::string name() const override { return "MmBackward0"; }
  static Tensor forward(const Tensor& a, const Tensor& b) {
    Tensor out = ops::mm(a, b);
    if (!any_requires_grad({&a, &b})) return out;
    auto n = std::make_shared<Mm>();
    if (b.requires_grad()) n->a = n->save(a);
    if (a.requires_grad()) n->b = n->save(b);
    return record(out, n, {&a, &b});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    Tensor da, db;
    if (b.defined()) da = ops::mm(dy, ops::transpose(b, 0, 1));
    if (a.defined()) db = ops::mm(ops::transpose(a, 0, 1), dy);
    return {da, db};
  }
  void release_saved() override { a = b = Tensor(); }
};

/// Y = X @ W^T + b  (nn.Linear; X: (N, in), W: (out, in), b: (out))
///   =>  dX = dY @ W,  dW = dY^T @ X,  db = sum over rows of dY
/// PyTorch records addmm(b, X, W.t()) as AddmmBackward0 -> TBackward0 -> W; tinytorch fuses
/// the transpose into this one node (same numbers, one node fewer per layer).
struct Linear : Node {
  Tensor x, w;
  bool has_bias = false;
  std::string name() const override { return "AddmmBackward0"; }
  static Tensor forward(const Tensor& x, const Tensor& w, const Tensor& b) {
    TT_CHECK(x.dim() == 2 && w.dim() == 2, "linear: expected input (N, in) and weight (out, in), got ",
             shape_str(x.sizes()), " and ", shape_str(w.sizes()));
    TT_CHECK(x.sizes()[1] == w.sizes()[1], "linear: mat1 and mat2 shapes cannot be multiplied (",
             x.sizes()[0], "x", x.sizes()[1], " and ", w.sizes()[1], "x", w.sizes()[0],
             "): input has ", x.sizes()[1], " features but weight expects ", w.sizes()[1]);
    if (b.defined())
      TT_CHECK(b.dim() == 1 && b.sizes()[0] == w.sizes()[0], "linear: bias of shape ", shape_str(b.sizes()),
               " does not match weight of shape ", shape_str(w.sizes()));
    Tensor wt = ops::transpose(w, 0, 1);
    Tensor out = b.defined() ? ops::addmm(b, x, wt) : ops::mm(x, wt);
    if (!any_requires_grad({&x, &w, &b})) return out;
    auto n = std::make_shared<Linear>();
    if (w.requires_grad()) n->x = n->save(x);
    if (x.requires_grad()) n->w = n->save(w);
    n->has_bias = b.defined();
    return b.defined() ? record(out, n, {&x, &w, &b}) : record(out, n, {&x, &w});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    Tensor dx, dw, db;
    if (w.defined()) dx = ops::mm(dy, w);
    if (x.defined()) dw = ops::mm(ops::transpose(dy, 0, 1), x);
    if (has_bias) db = ops::sum_dim(dy, 0, false);
    return {dx, dw, db};
  }
  void release_saved() override { x = w = Tensor(); }
};

/// Y = A @ B batched (3-D)  =>  dA = dY @ B^T,  dB = A^T @ dY  (per batch)
struct Bmm : Node {
  Tensor a, b;
  std::string name() const override { return "BmmBackward0"; }
  static Tensor forward(const Tensor& a, const Tensor& b) {
    Tensor out = ops::bmm(a, b);
    if (!any_requires_grad({&a, &b})) return out;
    auto n = std::make_shared<Bmm>();
    if (b.requires_grad()) n->a = n->save(a);
    if (a.requires_grad()) n->b = n->save(b);
    return record(out, n, {&a, &b});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    Tensor da, db;
    if (b.defined()) da = ops::bmm(dy, ops::transpose(b, 1, 2));
    if (a.defined()) db = ops::bmm(ops::transpose(a, 1, 2), dy);
    return {da, db};
  }
  void release_saved() override { a = b = Tensor(); }
};

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

// tinytorch/autograd/functions/softmax.hpp — the autograd node of softmax and log_softmax along
// one dim: forward and backward are ops/softmax.hpp's softmax and softmax_backward (formulas in
// backend/cpu/softmax.hpp, shared with the CUDA kernels); the node saves its output y.
// Chapter: chapters/02-autograd.md. Reference: PyTorch tools/autograd/derivatives.yaml.
#pragma once

#include "tinytorch/ops/softmax.hpp"
#include "tinytorch/autograd/functions/common.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

// ---------------------------------------------------------------------------------------------
// Softmax
// ---------------------------------------------------------------------------------------------

/// y = softmax(x) or log_softmax(x) along dim; backward: dx from dy and the saved y
struct Softmax : Node {
  Tensor y;
  int64_t dim = 0;
  bool log = false;
  std::string name() const override { return log ? "LogSoftmaxBackward0" : "SoftmaxBackward0"; }
  static Tensor forward(const Tensor& x0, int64_t dim, bool log) {
    Tensor out = ops::softmax(x0, dim, log);
    if (!any_requires_grad({&x0})) return out;
    auto n = std::make_shared<Softmax>();
    n->saves_tensors = true;
    n->dim = wrap_dim(dim, x0.dim(), log ? "log_softmax" : "softmax");
    n->log = log;
    out = record(out, n, {&x0});
    n->y = n->save(out, /*is_output=*/true);
    return out;
  }
  std::vector<Tensor> backward(const Tensor& dy) override { return {ops::softmax_backward(dy, y, dim, log)}; }
  void release_saved() override { y = Tensor(); }
};

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

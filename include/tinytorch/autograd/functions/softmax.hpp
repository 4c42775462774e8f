// tinytorch/autograd/functions/softmax.hpp — the autograd node of softmax and log_softmax along
// one dim (the formulas are in backend/cpu/softmax.hpp, shared with the CUDA kernels).
// Chapter: chapters/02-autograd.md. Reference: PyTorch tools/autograd/derivatives.yaml.
#pragma once

#include "../../backend/cpu/softmax.hpp"
#include "common.hpp"
#include "../../core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

// ---------------------------------------------------------------------------------------------
// Softmax
// ---------------------------------------------------------------------------------------------

/// y = softmax(x) or log_softmax(x) along dim (backward formulas in backend/cpu/softmax.hpp)
struct Softmax : Node {
  Tensor y;
  int64_t dim = 0;
  bool log = false;
  std::string name() const override { return log ? "LogSoftmaxBackward0" : "SoftmaxBackward0"; }
  static Tensor forward(const Tensor& x0, int64_t dim, bool log) {
    const char* op = log ? "log_softmax" : "softmax";
    ops::check_device(x0, op);
    const Tensor x = ops::contiguous(x0.dtype() == kInt64 ? ops::to_dtype(x0, kFloat32) : x0);
    Tensor out = ops::make_tensor(x.sizes(), x.dtype(), x.device());
    int64_t d = x.dim() ? wrap_dim(dim, x.dim(), op) : 0;
    auto sp = ops::detail::split_dim(x.sizes(), x.dim() ? d : -1, true);
    dispatch_floating(x.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      backend::dispatch::softmax_kernel(x.device(), x.data_ptr<T>(), out.data_ptr<T>(), sp.outer, sp.n, sp.inner, log);
    });
    if (!any_requires_grad({&x0})) return out;
    auto n = std::make_shared<Softmax>();
    n->saves_tensors = true;
    n->dim = d;
    n->log = log;
    out = record(out, n, {&x0});
    n->y = n->save(out, /*is_output=*/true);
    return out;
  }
  std::vector<Tensor> backward(const Tensor& dy0) override {
    const Tensor dy = ops::contiguous(dy0);
    Tensor dx = ops::make_tensor(dy.sizes(), dy.dtype(), dy.device());
    auto sp = ops::detail::split_dim(dy.sizes(), dy.dim() ? dim : -1, true);
    dispatch_floating(dy.dtype(), "softmax_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      backend::dispatch::softmax_backward_kernel(dy.device(), dy.data_ptr<T>(), y.data_ptr<T>(), dx.data_ptr<T>(), sp.outer, sp.n,
                                   sp.inner, log);
    });
    return {dx};
  }
  void release_saved() override { y = Tensor(); }
};

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

// tinytorch/ops/softmax.hpp — softmax and log_softmax along one dim, and their backward, on
// tensors: no autograd (autograd/functions/softmax.hpp records the node that calls these).
//
// x viewed as (outer, n, inner) around dim (ops/reduce.hpp's split_dim), each of the outer *
// inner rows of n elements normalised on its own (formulas in backend/cpu/softmax.hpp):
//   softmax(x, dim, log=false):  y = exp(x - max) / sum exp(x - max)
//   softmax(x, dim, log=true):   y = x - max - log(sum exp(x - max))        (log_softmax)
//   softmax_backward(dy, y, dim, log): dx = y * (dy - sum(dy * y))          (softmax)
//                                      dx = dy - exp(y) * sum(dy)           (log_softmax)
// Shapes: y and dx have x's shape; a 0-d x is one row of one element. dim may be negative
// (wrapped as PyTorch's; out of range throws naming the op). An int64 x is computed in float32,
// as tinytorch's float-only unary ops (exp, log, ...) promote it; here PyTorch differs and raises
// ("softmax_lastdim_kernel_impl" not implemented for 'Long').
// On x's device: backend::dispatch::softmax_kernel / softmax_backward_kernel (backend/cpu/softmax.hpp,
// backend/cuda/softmax.cuh). A non-contiguous input is copied contiguous first.
// Chapter: chapters/01-training-loop.md (cross-entropy), chapters/10-gpu-kernels.md (the kernels).
// Reference: torch.softmax / torch.log_softmax; PyTorch aten/src/ATen/native/SoftMax.cpp.
#pragma once

#include "tinytorch/ops/dispatch.hpp"
#include "tinytorch/ops/elementwise.hpp"  // to_dtype
#include "tinytorch/ops/reduce.hpp"       // detail::split_dim
#include "tinytorch/ops/shape.hpp"        // contiguous
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace ops {

/// softmax (log = false) or log_softmax (log = true) of x along `dim`; returns a new contiguous
/// tensor of x's shape (float32 for an int64 x). Throws for an undefined x, a CUDA x in a CPU
/// build, or a dim out of range.
inline Tensor softmax(const Tensor& x0, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  check_device(x0, op);
  if (is_reduced_floating_point(x0.dtype()))  // computed in float32, rounded once
    return to_dtype(softmax(to_dtype(x0, kFloat32), dim, log), x0.dtype());
  const Tensor x = contiguous(x0.dtype() == kInt64 ? to_dtype(x0, kFloat32) : x0);
  Tensor out = make_tensor(x.sizes(), x.dtype(), x.device());
  const int64_t d = wrap_dim(dim, x.dim(), op);  // a 0-d x takes dim -1 or 0, as PyTorch
  const auto sp = detail::split_dim(x.sizes(), x.dim() ? d : -1, true);
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    backend::dispatch::softmax_kernel(x.device(), x.data_ptr<T>(), out.data_ptr<T>(), sp.outer, sp.n, sp.inner, log);
  });
  return out;
}

/// The gradient of softmax (log = false) or log_softmax (log = true) along `dim` (already
/// wrapped, as the node stores it), given the upstream gradient dy and the forward's output y
/// (both of one shape, on one device). Returns dx, contiguous, of dy's shape.
inline Tensor softmax_backward(const Tensor& dy0, const Tensor& y, int64_t dim, bool log) {
  if (is_reduced_floating_point(dy0.dtype()))  // computed in float32, rounded once
    return to_dtype(softmax_backward(to_dtype(dy0, kFloat32), to_dtype(y, kFloat32), dim, log), dy0.dtype());
  const Tensor dy = contiguous(dy0);
  Tensor dx = make_tensor(dy.sizes(), dy.dtype(), dy.device());
  const auto sp = detail::split_dim(dy.sizes(), dy.dim() ? dim : -1, true);
  dispatch_floating(dy.dtype(), "softmax_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    backend::dispatch::softmax_backward_kernel(dy.device(), dy.data_ptr<T>(), y.data_ptr<T>(), dx.data_ptr<T>(),
                                               sp.outer, sp.n, sp.inner, log);
  });
  return dx;
}

}  TT_NAMESPACE_END  // namespace tinytorch::ops

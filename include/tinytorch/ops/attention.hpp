// tinytorch/ops/attention.hpp — fused scaled dot-product attention on tensors, forward and
// backward: no autograd (autograd/functions/attention.hpp records the node that calls these).
//
// query (*, L, E), key (*, S, E), value (*, S, Ev), the same batch dims * (N = their product,
// batch x heads):
//   attention(q, k, v, scale, causal)      -> out (*, L, Ev), lse (*, L) float64
//   attention_backward(dout, q, k, v, out, lse, scale, causal) -> dq, dk, dv (the inputs' shapes)
// out = softmax(scale q k^T, causal mask) v; lse the log-sum-exp of each row of scores, which is
// all the backward keeps of the softmax (formulas: backend/cpu/attention.hpp). Inputs are made
// contiguous; outputs are new contiguous tensors on the inputs' device, through
// backend::dispatch::attention_kernel / attention_backward_kernel.
// The caller (functional.ipp, scaled_dot_product_attention) checks shapes, dtypes and devices
// and that the fused kernel applies (equal batch dims, S, E >= 1, no attn_mask, no dropout).
// Chapter: chapters/12-model-parallelism.md (12.2). Reference: PyTorch's
// _scaled_dot_product_efficient_attention (aten/src/ATen/native/transformers), which also
// returns (output, logsumexp).
#pragma once

#include <tuple>
#include <utility>

#include "tinytorch/ops/dispatch.hpp"
#include "tinytorch/ops/shape.hpp"  // contiguous
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace ops {

namespace attention_detail {
struct Sizes {
  int64_t N, L, S, E, Ev;
};
inline Sizes sizes(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t L = q.sizes()[q.dim() - 2], E = q.sizes().back(), S = k.sizes()[k.dim() - 2], Ev = v.sizes().back();
  int64_t N = 1;  // the product of the batch dims
  for (int64_t d = 0; d + 2 < q.dim(); ++d) N *= q.sizes()[d];
  return {N, L, S, E, Ev};
}
}  // namespace attention_detail

/// (out, lse) of the fused attention; see the top of the file.
inline std::pair<Tensor, Tensor> attention(const Tensor& q0, const Tensor& k0, const Tensor& v0, double scale,
                                           bool causal) {
  if (is_reduced_floating_point(q0.dtype())) {  // computed in float32, out rounded once; lse stays float64
    auto [out, lse] = attention(to_dtype(q0, kFloat32), to_dtype(k0, kFloat32), to_dtype(v0, kFloat32), scale, causal);
    return {to_dtype(out, q0.dtype()), lse};
  }
  const Tensor q = contiguous(q0), k = contiguous(k0), v = contiguous(v0);
  const auto z = attention_detail::sizes(q, k, v);
  Shape out_shape = q.sizes(), lse_shape(q.sizes().begin(), q.sizes().end() - 1);
  out_shape.back() = z.Ev;
  Tensor out = make_tensor(out_shape, q.dtype(), q.device()), lse = make_tensor(lse_shape, kFloat64, q.device());
  dispatch_floating(q.dtype(), "scaled_dot_product_attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    backend::dispatch::attention_kernel(q.device(), q.data_ptr<T>(), k.data_ptr<T>(), v.data_ptr<T>(),
                                        out.data_ptr<T>(), lse.data_ptr<double>(), z.N, z.L, z.S, z.E, z.Ev, scale,
                                        causal);
  });
  return {out, lse};
}

/// (dq, dk, dv) of the fused attention, given dout (out's shape) and the forward's out and lse.
inline std::tuple<Tensor, Tensor, Tensor> attention_backward(const Tensor& dout0, const Tensor& q0, const Tensor& k0,
                                                             const Tensor& v0, const Tensor& out0, const Tensor& lse,
                                                             double scale, bool causal) {
  if (is_reduced_floating_point(q0.dtype())) {  // computed in float32, each gradient rounded once
    const DType dt = q0.dtype();
    auto [dq, dk, dv] = attention_backward(to_float32(dout0), to_float32(q0), to_float32(k0), to_float32(v0),
                                           to_float32(out0), lse, scale, causal);
    return {to_dtype(dq, dt), to_dtype(dk, dt), to_dtype(dv, dt)};
  }
  const Tensor dout = contiguous(dout0), q = contiguous(q0), k = contiguous(k0), v = contiguous(v0),
               out = contiguous(out0);
  const auto z = attention_detail::sizes(q, k, v);
  Tensor dq = make_tensor(q.sizes(), q.dtype(), q.device()), dk = make_tensor(k.sizes(), k.dtype(), k.device()),
         dv = make_tensor(v.sizes(), v.dtype(), v.device());
  dispatch_floating(q.dtype(), "scaled_dot_product_attention_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    backend::dispatch::attention_backward_kernel(q.device(), dout.data_ptr<T>(), q.data_ptr<T>(), k.data_ptr<T>(),
                                                 v.data_ptr<T>(), out.data_ptr<T>(), lse.data_ptr<double>(),
                                                 dq.data_ptr<T>(), dk.data_ptr<T>(), dv.data_ptr<T>(), z.N, z.L, z.S,
                                                 z.E, z.Ev, scale, causal);
  });
  return {dq, dk, dv};
}

}  TT_NAMESPACE_END  // namespace tinytorch::ops

// tinytorch/autograd/functions/attention.hpp — the autograd node of the fused scaled dot-product
// attention: forward and backward are ops/attention.hpp's attention and attention_backward.
//   out = softmax(scale q k^T [causal]) v   =>   dq, dk, dv from dout, q, k, v, out and lse
// (the formulas: backend/cpu/attention.hpp). The node saves q, k, v, out and the (*, L) float64
// log-sum-exp, not the (*, L, S) attention matrix that the composite path's softmax node keeps:
// the backward recomputes it. grad_fn ScaledDotProductEfficientAttentionBackward0 (PyTorch's name
// for its memory-efficient kernel, which saves the same things).
// Chapter: chapters/12-model-parallelism.md (12.2). Reference: PyTorch
// tools/autograd/derivatives.yaml (_scaled_dot_product_efficient_attention).
#pragma once

#include "tinytorch/ops/attention.hpp"
#include "tinytorch/autograd/functions/common.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

/// out = attention(q, k, v); backward: dq, dk, dv through the fused backward kernel.
struct ScaledDotProductEfficientAttention : Node {
  Tensor q, k, v, out, lse;
  double scale = 1.0;
  bool causal = false;
  std::string name() const override { return "ScaledDotProductEfficientAttentionBackward0"; }
  static Tensor forward(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal) {
    auto [out, lse] = ops::attention(q, k, v, scale, causal);
    if (!any_requires_grad({&q, &k, &v})) return out;
    auto n = std::make_shared<ScaledDotProductEfficientAttention>();
    n->saves_tensors = true;
    n->q = n->save(q);
    n->k = n->save(k);
    n->v = n->save(v);
    n->lse = std::move(lse);
    n->scale = scale;
    n->causal = causal;
    out = record(out, n, {&q, &k, &v});
    n->out = n->save(out, /*is_output=*/true);
    return out;
  }
  std::vector<Tensor> backward(const Tensor& dout) override {
    auto [dq, dk, dv] = ops::attention_backward(dout, q, k, v, out, lse, scale, causal);
    return {dq, dk, dv};
  }
  void release_saved() override { q = k = v = out = lse = Tensor(); }
};

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

// tinytorch/nn/attention.hpp — nn::MultiheadAttention: attention with H heads over learned
// projections (Vaswani et al. 2017, "Attention Is All You Need", section 3.2.2).
//
//   q = query W_q^T + b_q,  k = key W_k^T + b_k,  v = value W_v^T + b_v     (W_q; W_k; W_v = in_proj_weight)
//   head h: softmax(q_h k_h^T / sqrt(hd) + mask) v_h                         (hd = E / H columns each)
//   out = concat_h(head h) out_proj.weight^T + out_proj.bias
// Shapes (PyTorch's; L target length, S source length, N batch, E = embed_dim):
//   query (L, N, E), key and value (S, N, E); batch_first: (N, L, E), (N, S, E); unbatched (L, E),
//   (S, E). Output (L, N, E) (or (N, L, E), or (L, E)); attention weights (N, L, S) averaged over
//   the heads, (N, H, L, S) per head with average_attn_weights = false ((L, S) / (H, L, S)
//   unbatched), undefined with need_weights = false.
// Masks, PyTorch's MultiheadAttention convention (the opposite of scaled_dot_product_attention's
// bool mask, as in PyTorch): a value of 1 in an int64 mask (PyTorch's bool True) means "may NOT
// attend"; a floating mask (the query's dtype) is added to the scores.
//   attn_mask (L, S) or (N*H, L, S); key_padding_mask (N, S) (S) unbatched: keys to ignore.
// With need_weights = false the heads go through scaled_dot_product_attention (the fused kernel
// when there is no mask and no dropout); with need_weights = true the weights are computed
// explicitly (matmul, softmax) so that they can be returned, as PyTorch 1.13's
// multi_head_attention_forward does. Dropout (training only) drops attention weights.
// Parameters (PyTorch's names): in_proj_weight (3E, E) xavier_uniform_, in_proj_bias (3E) zeros,
// out_proj (Linear E -> E, its default init, bias zeros).
// Constructor arguments in PyTorch's order (embed_dim, num_heads, dropout, bias, add_bias_kv,
// add_zero_attn, kdim, vdim, batch_first), so that a call ported from Python positionally means
// the same; add_bias_kv, add_zero_attn and a kdim or vdim other than embed_dim are not
// implemented: asking for them throws.
// Backward: the nodes of the ops above (linear, view, transpose, the attention, softmax).
// Chapter: chapters/12-model-parallelism.md (12.3). Reference: torch.nn.MultiheadAttention and
// torch.nn.functional.multi_head_attention_forward (PyTorch 1.13, the numbers of
// tests/reference/gen_mha.py).
#pragma once

#include <cmath>
#include <memory>
#include <optional>
#include <tuple>

#include "tinytorch/nn/init.hpp"
#include "tinytorch/nn/linear.hpp"
#include "tinytorch/nn/module.hpp"
#include "tinytorch/ops/same_device.hpp"  // ops::check_same_device (not dispatch.hpp: no Eigen here)
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace nn {

class MultiheadAttention : public Module {
 public:
  int64_t embed_dim, num_heads, head_dim;
  double dropout;
  bool batch_first;
  Tensor in_proj_weight, in_proj_bias;  ///< (3E, E); (3E) or undefined (bias = false)
  std::shared_ptr<Linear> out_proj;     ///< E -> E

  /// Throws tinytorch::Error unless embed_dim > 0, num_heads > 0 divides it ("embed_dim must be
  /// divisible by num_heads", PyTorch's assertion) and 0 <= dropout <= 1; and for add_bias_kv,
  /// add_zero_attn, or kdim / vdim other than embed_dim (not implemented).
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                     bool add_bias_kv = false, bool add_zero_attn = false, std::optional<int64_t> kdim = std::nullopt,
                     std::optional<int64_t> vdim = std::nullopt, bool batch_first = false)
      : embed_dim(embed_dim), num_heads(num_heads), head_dim(num_heads > 0 ? embed_dim / num_heads : 0),
        dropout(dropout), batch_first(batch_first) {
    TT_CHECK(!add_bias_kv && !add_zero_attn, "MultiheadAttention: add_bias_kv and add_zero_attn are not implemented");
    TT_CHECK(kdim.value_or(embed_dim) == embed_dim && vdim.value_or(embed_dim) == embed_dim,
             "MultiheadAttention: kdim and vdim other than embed_dim (", embed_dim, ") are not implemented, got kdim ",
             kdim.value_or(embed_dim), ", vdim ", vdim.value_or(embed_dim));
    TT_CHECK(embed_dim > 0 && num_heads > 0, "MultiheadAttention: embed_dim and num_heads must be positive, got ",
             embed_dim, " and ", num_heads);
    TT_CHECK(head_dim * num_heads == embed_dim, "MultiheadAttention: embed_dim must be divisible by num_heads (got ",
             embed_dim, " and ", num_heads, ")");
    TT_CHECK(dropout >= 0 && dropout <= 1, "MultiheadAttention: dropout probability has to be between 0 and 1, but got ",
             dropout);
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * embed_dim, embed_dim}));
    init::xavier_uniform_(in_proj_weight);
    if (bias) in_proj_bias = register_parameter("in_proj_bias", zeros({3 * embed_dim}));
    out_proj = register_module("out_proj", std::make_shared<Linear>(embed_dim, embed_dim, bias));
    if (bias) init::zeros_(out_proj->bias);
  }

  /// Self-attention as a Module: forward(x, x, x) without masks, the output only (so that it fits
  /// nn::Sequential; PyTorch's module has no one-argument form).
  Tensor forward(const Tensor& x) override { return std::get<0>(forward(x, x, x, Tensor(), false)); }

  /// (attn_output, attn_weights); shapes and masks at the top of the file. Throws
  /// tinytorch::Error naming the shapes for: inputs not 2-D or 3-D or of different ranks, a last
  /// dim other than embed_dim ("was expecting embedding dimension of E, but got X"), key and value
  /// of different shapes, batch sizes that differ, an attn_mask not (L, S) or (N*H, L, S), a
  /// key_padding_mask not (N, S) ((S) unbatched), a mask neither int64 nor of the query's dtype,
  /// inputs of another dtype than the parameters', or tensors on different devices.
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = Tensor(), bool need_weights = true,
                                     const Tensor& attn_mask = Tensor(), bool average_attn_weights = true) {
    const char* op = "MultiheadAttention";
    const int64_t rank = query.dim();
    TT_CHECK((rank == 2 || rank == 3) && key.dim() == rank && value.dim() == rank, op,
             ": expected query, key and value all 2-D (unbatched) or all 3-D (batched), got query ",
             shape_str(query.sizes()), ", key ", shape_str(key.sizes()), ", value ", shape_str(value.sizes()));
    const bool batched = rank == 3;
    for (const Tensor* t : {&query, &key, &value})
      TT_CHECK(t->dtype() == in_proj_weight.dtype(), op, ": expected query, key and value of the parameters' dtype ",
               dtype_name(in_proj_weight.dtype()), ", got ", dtype_name(t->dtype()), " (query ", shape_str(query.sizes()),
               ")");
    ops::check_same_device(op, in_proj_weight, query, key, value, key_padding_mask, attn_mask);
    Tensor q = query, k = key, v = value, kpm = key_padding_mask;
    if (!batched) {  // as PyTorch: a batch of one at dim 1 (dim 0 for the padding mask), squeezed after
      q = q.unsqueeze(1), k = k.unsqueeze(1), v = v.unsqueeze(1);
      if (kpm.defined()) kpm = kpm.unsqueeze(0);
    } else if (batch_first) {
      q = q.transpose(0, 1), k = k.transpose(0, 1), v = v.transpose(0, 1);
    }
    const int64_t L = q.sizes()[0], N = q.sizes()[1], S = k.sizes()[0], H = num_heads, hd = head_dim;
    TT_CHECK(q.sizes()[2] == embed_dim, op, ": was expecting embedding dimension of ", embed_dim, ", but got ",
             q.sizes()[2], " (query ", shape_str(query.sizes()), ")");
    TT_CHECK(k.sizes() == v.sizes(), op, ": key shape ", shape_str(key.sizes()), " does not match value shape ",
             shape_str(value.sizes()), " (kdim / vdim other than embed_dim are not implemented)");
    TT_CHECK(k.sizes()[2] == embed_dim, op, ": key and value must have embed_dim ", embed_dim,
             " features (kdim / vdim are not implemented), got key ", shape_str(key.sizes()));
    TT_CHECK(k.sizes()[1] == N, op, ": query and key must have the same batch size, got query ",
             shape_str(query.sizes()), " and key ", shape_str(key.sizes()));

    // The additive float mask (1 or N*H, L or 1, S) from attn_mask and key_padding_mask, or undefined.
    Tensor mask;
    auto as_float = [&](const Tensor& m, const char* name) {
      TT_CHECK(m.dtype() == kInt64 || m.dtype() == q.dtype(), op, ": ", name,
               " must be int64 (a 0/1 mask, PyTorch's bool: 1 = may not attend) or of the query's dtype ",
               dtype_name(q.dtype()), ", got ", dtype_name(m.dtype()));
      return m.dtype() == kInt64 ? where(m, -INFINITY, zeros(m.sizes(), TensorOptions(q.dtype()).device(m.device()))) : m;
    };
    const Shape mask2{L, S}, mask3{N * H, L, S}, padding{N, S};
    if (attn_mask.defined()) {
      const bool ok2 = attn_mask.sizes() == mask2, ok3 = attn_mask.sizes() == mask3;
      TT_CHECK(ok2 || ok3, op, ": The shape of the attn_mask is ", shape_str(attn_mask.sizes()), ", but should be ",
               shape_str(mask2), " or ", shape_str(mask3), " (L, S) or (N*num_heads, L, S)");
      mask = as_float(attn_mask, "attn_mask");
      if (ok2) mask = mask.unsqueeze(0);
    }
    if (kpm.defined()) {
      TT_CHECK(kpm.sizes() == padding, op, ": expecting key_padding_mask shape of ",
               shape_str(batched ? padding : Shape{S}),
               ", but got ", shape_str(key_padding_mask.sizes()));
      const Tensor pad = as_float(kpm, "key_padding_mask").view({N, 1, 1, S}).expand({N, H, 1, S}).reshape({N * H, 1, S});
      mask = mask.defined() ? mask + pad : pad;
    }

    // In-projections (the three row blocks of in_proj_weight), then heads: (L, N, E) -> (N*H, L, hd).
    auto project = [&](const Tensor& x, int64_t i) {
      const Tensor w = in_proj_weight.narrow(0, i * embed_dim, embed_dim);
      return linear(x, w, in_proj_bias.defined() ? in_proj_bias.narrow(0, i * embed_dim, embed_dim) : Tensor());
    };
    auto heads = [&](const Tensor& x, int64_t len) { return x.contiguous().view({len, N * H, hd}).transpose(0, 1); };
    const Tensor qh = heads(project(q, 0), L), kh = heads(project(k, 1), S), vh = heads(project(v, 2), S);
    const double p = is_training() ? dropout : 0.0;

    Tensor attn, weights;
    if (!need_weights) {
      attn = scaled_dot_product_attention(qh, kh, vh, mask, p);  // (N*H, L, hd)
    } else {  // PyTorch 1.13's order: q / sqrt(hd), then (+ mask) q k^T, softmax, dropout, @ v
      Tensor scores = matmul(qh / std::sqrt(static_cast<double>(hd)), kh.transpose(-2, -1));
      if (mask.defined()) scores = scores + mask;
      weights = softmax(scores, -1);  // (N*H, L, S)
      attn = matmul(p > 0 ? tinytorch::dropout(weights, p, true) : weights, vh);
      weights = weights.view({N, H, L, S});
      if (average_attn_weights) weights = weights.sum(1) / static_cast<double>(H);
      if (!batched) weights = weights.squeeze(0);
    }
    Tensor out = out_proj->forward(attn.transpose(0, 1).contiguous().view({L * N, embed_dim})).view({L, N, embed_dim});
    if (!batched) out = out.squeeze(1);
    else if (batch_first) out = out.transpose(0, 1);
    return {out, weights};
  }

  std::shared_ptr<Module> clone() const override {
    check_member(in_proj_weight, "in_proj_weight");
    check_member(in_proj_bias, "in_proj_bias");
    auto m = clone_as<MultiheadAttention>();
    m->in_proj_weight = m->get_parameter("in_proj_weight");
    if (in_proj_bias.defined()) m->in_proj_bias = m->get_parameter("in_proj_bias");
    m->out_proj = m->get_submodule<Linear>("out_proj");
    return m;
  }
  std::string name() const override { return "MultiheadAttention"; }
};

}  TT_NAMESPACE_END  // namespace tinytorch::nn

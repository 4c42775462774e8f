// labs/12-model-parallelism/lab.hpp — lab 12: the parts a GPT adds to what chapters 01-10 built,
// written by hand (GELU as a custom autograd function, the embedding's backward, causal multi-head
// self-attention from matmul, softmax and a mask), then how it is split: the shards of Megatron's
// column- and row-parallel layers, the tensor-parallel MLP (its P ranks simulated in one process)
// and the 1F1B pipeline order. Your file is gpt_parts.cpp.
//
// What you may use: tinytorch's differentiable ops (matmul, softmax, where, transpose, view,
// narrow, tanh, ...) and, for embedding_backward, plain loops over data_ptr<float>() (CPU,
// contiguous tensors). Not tinytorch::gelu, tinytorch::embedding or
// scaled_dot_product_attention: they are what you are writing (the checks compare with PyTorch,
// not with them).
// Chapter: chapters/12-model-parallelism.md (12.2 the parts, 12.3 attention, 12.6-12.7 splitting). The library's
// versions, to compare with once you are done: backend/functors.hpp (GeluOp, GeluBackwardOp),
// backend/cpu/embedding.hpp (embedding_backward_kernel), functional.ipp
// (scaled_dot_product_attention), examples/gpt.hpp (CausalSelfAttention),
// distributed/tensor_parallel.hpp (ColumnParallelLinear, RowParallelLinear) and
// distributed/pipeline_schedule.hpp (stage_order). Model: nanoGPT's model.py.
#pragma once

#include <tinytorch/tinytorch.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace lab12 {

using tinytorch::Tensor;
using tinytorch::autograd::AutogradContext;
using tinytorch::autograd::tensor_list;

/// Task gelu. GELU's tanh approximation (torch.nn.functional.gelu(x, approximate="tanh")),
/// elementwise, any shape, float32 or float64:
///   y = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
///   dy/dx = 0.5 (1 + tanh(u)) + 0.5 x (1 - tanh(u)^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
/// Save what backward needs (the input x: both terms need it). backward returns
/// {grad_outputs[0] * dy/dx}.
struct GeluTanh : tinytorch::autograd::Function<GeluTanh> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x);
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs);
};

/// Task embedding_backward. The gradient of y = weight[indices] (F.embedding) with respect to
/// weight: indices int64 of any shape S, each in [0, num_embeddings); dy float32 (*S, D), both
/// contiguous on the CPU. Returns dW float32 (num_embeddings, D):
///   dW[v, :] = sum of dy[s, :] over the positions s with indices[s] == v
/// and 0 for rows no index names, and for row padding_idx (padding_idx < 0: no padding row; the
/// library's embedding() counts a negative padding_idx from the end, as PyTorch, before it gets here).
/// Add the rows in the order of s (as PyTorch's CPU kernel), so that float32 sums agree.
Tensor embedding_backward(const Tensor& indices, const Tensor& dy, int64_t num_embeddings, int64_t padding_idx);

/// Task causal_attention. nanoGPT's CausalSelfAttention without biases, B batch, T positions,
/// C = width, nh = n_head, hs = C / nh:
///   qkv = x w_attn^T                          x (B, T, C), w_attn (3C, C) -> (B, T, 3C)
///   q, k, v = the three C-wide slices of qkv, each viewed (B, T, nh, hs) and transposed to (B, nh, T, hs)
///   att = q k^T / sqrt(hs)                    (B, nh, T, T)
///   att[..., i, j] = -inf where j > i         (position i sees positions 0..i only; a (T, T) 0/1
///                                             mask: arange(T).unsqueeze(0) <= arange(T).unsqueeze(1)
///                                             is 1 where j <= i, and where(mask, att, -inf) applies it)
///   att = softmax(att, -1);  y = att v        (B, nh, T, hs)
///   y -> (B, T, nh, hs) -> (B, T, C), then y w_proj^T      w_proj (C, C) -> (B, T, C)
/// Differentiable ops only: the checks also compare the gradients of x, w_attn and w_proj.
Tensor causal_self_attention(const Tensor& x, const Tensor& w_attn, const Tensor& w_proj, int64_t n_head);

/// Task tp_shards. What rank r of P keeps of a Linear's whole weight w (out, in), as
/// ColumnParallelLinear and RowParallelLinear do (12.7):
///   column_shard(w, P, r, sections)  the rows (output features): w's rows form `sections` equal
///                                    blocks (3 for attention's fused [q | k | v]); each block is
///                                    cut into P equal parts and rank r keeps part r of every
///                                    block, in order: (out / P, in). sections = 1: rows
///                                    [r out/P, (r+1) out/P).
///   row_shard(w, P, r)               the columns (input features) [r in/P, (r+1) in/P): (out, in / P)
/// Return contiguous tensors; use differentiable ops (narrow, cat) so that gradients flow back to
/// w (tp_mlp uses these). P divides the sizes (no need to check).
Tensor column_shard(const Tensor& w, int64_t P, int64_t r, int64_t sections = 1);
Tensor row_shard(const Tensor& w, int64_t P, int64_t r);

/// Task tp_mlp. Megatron's MLP y = gelu(x w_fcᵀ) w_projᵀ (x (B, T, C), w_fc (4C, C), w_proj (C, 4C),
/// exact GELU: tinytorch::gelu is allowed here) computed the way P ranks compute it, in one process:
///   rank r:  h_r = gelu(x column_shard(w_fc, P, r)ᵀ)         (B, T, 4C/P)   no communication
///            y_r = h_r row_shard(w_proj, P, r)ᵀ                (B, T, C)      a partial sum
///   y = y_0 + y_1 + ... + y_{P-1}                              (g's all-reduce)
/// The result equals the unsplit MLP (to rounding), and so do the gradients of x, w_fc and w_proj
/// that autograd computes through your shards.
Tensor tensor_parallel_mlp(const Tensor& x, const Tensor& w_fc, const Tensor& w_proj, int64_t P);

/// Task one_f_one_b. The order in which stage s of P runs the forwards ("F0", "F1", ...) and
/// backwards ("B0", ...) of M micro-batches under 1F1B (12.6): first w = min(P - 1 - s, M)
/// forwards, then one forward and one backward in turn until every forward has run, then the
/// remaining backwards. E.g. P = 4, M = 4, s = 1: F0 F1 F2 B0 F3 B1 B2 B3.
std::vector<std::string> one_f_one_b(int64_t P, int64_t M, int64_t s);

}  // namespace lab12

// labs/12-model-parallelism/lab.hpp — lab 12, part 1: the parts a GPT adds to what chapters 01-10
// built, written by hand: GELU as a custom autograd function, the embedding's backward, and causal
// multi-head self-attention from matmul, softmax and a mask. Your file is gpt_parts.cpp.
// (Tensor and pipeline parallelism, the rest of the chapter, will add tasks here.)
//
// What you may use: tinytorch's differentiable ops (matmul, softmax, where, transpose, view,
// narrow, tanh, ...) and, for embedding_backward, plain loops over data_ptr<float>() (CPU,
// contiguous tensors). Not tinytorch::gelu, tinytorch::embedding or
// scaled_dot_product_attention: they are what you are writing (the checks compare with PyTorch,
// not with them).
// Chapter: chapters/12-model-parallelism.md (12.2 the parts, 12.3 attention). The library's
// versions, to compare with once you are done: backend/functors.hpp (GeluOp, GeluBackwardOp),
// backend/cpu/embedding.hpp (embedding_backward_kernel), functional.ipp
// (scaled_dot_product_attention) and examples/gpt.hpp (CausalSelfAttention). Model: nanoGPT's
// model.py.
#pragma once

#include <tinytorch/tinytorch.hpp>

#include <cstdint>

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

}  // namespace lab12

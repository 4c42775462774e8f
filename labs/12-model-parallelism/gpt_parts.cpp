// labs/12-model-parallelism/gpt_parts.cpp — your GELU, embedding gradient and attention, and the
// pieces of the split: shards, the tensor-parallel MLP, the 1F1B order (lab 12; the tasks are in
// lab.hpp).
//
// Check your work:   scripts/lab.sh check 12, from the tinytorch clone (add the --dir you gave to start)
// Chapter: chapters/12-model-parallelism.md, sections 12.2, 12.3, 12.6 and 12.7.
// BEGIN REFERENCE ONLY
#ifndef TT_LAB_REFERENCE
#error "labs/12-model-parallelism/gpt_parts.cpp is the reference solution: a student build must compile the student's copy (scripts/lab.sh start 12)"
#endif
// END REFERENCE ONLY
#include "lab.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace lab12 {

namespace tt = tinytorch;

Tensor GeluTanh::forward(AutogradContext* ctx, const Tensor& x) {
  // BEGIN SOLUTION gelu
  ctx->save_for_backward({x});
  const double k = std::sqrt(2.0 / M_PI);
  const Tensor u = (x + x * x * x * 0.044715) * k;
  return x * 0.5 * (u.tanh() + 1.0);
  // END SOLUTION
}

tensor_list GeluTanh::backward(AutogradContext* ctx, tensor_list grad_outputs) {
  // BEGIN SOLUTION gelu
  const Tensor x = ctx->get_saved_variables()[0];
  const double k = std::sqrt(2.0 / M_PI);
  const Tensor t = ((x + x * x * x * 0.044715) * k).tanh();
  const Tensor d = (t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * k * (x * x * (3 * 0.044715) + 1.0);
  return {grad_outputs[0] * d};
  // END SOLUTION
}

Tensor embedding_backward(const Tensor& indices, const Tensor& dy, int64_t num_embeddings, int64_t padding_idx) {
  // BEGIN SOLUTION embedding_backward
  const int64_t D = dy.size(-1), n = indices.numel();
  Tensor dw = tt::zeros({num_embeddings, D});
  const int64_t* idx = indices.data_ptr<int64_t>();
  const float* g = dy.data_ptr<float>();
  float* w = dw.data_ptr<float>();
  for (int64_t s = 0; s < n; ++s) {
    if (idx[s] == padding_idx) continue;
    for (int64_t d = 0; d < D; ++d) w[idx[s] * D + d] += g[s * D + d];
  }
  return dw;
  // END SOLUTION
}

Tensor causal_self_attention(const Tensor& x, const Tensor& w_attn, const Tensor& w_proj, int64_t n_head) {
  // BEGIN SOLUTION causal_attention
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2), hs = C / n_head;
  const Tensor qkv = tt::matmul(x, w_attn.t());  // (B, T, 3C)
  auto heads = [&](int64_t i) { return qkv.narrow(2, i * C, C).view({B, T, n_head, hs}).transpose(1, 2); };
  const Tensor q = heads(0), k = heads(1), v = heads(2);
  Tensor att = tt::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hs)));
  const Tensor keep = tt::arange(T).unsqueeze(0) <= tt::arange(T).unsqueeze(1);  // (T, T): j <= i
  att = tt::where(keep, att, -std::numeric_limits<double>::infinity()).softmax(-1);
  const Tensor y = tt::matmul(att, v).transpose(1, 2).contiguous().view({B, T, C});
  return tt::matmul(y, w_proj.t());
  // END SOLUTION
}

Tensor column_shard(const Tensor& w, int64_t P, int64_t r, int64_t sections) {
  // BEGIN SOLUTION tp_shards
  const int64_t section = w.size(0) / sections, part = section / P;
  std::vector<Tensor> rows;
  for (int64_t k = 0; k < sections; ++k) rows.push_back(w.narrow(0, k * section + r * part, part));
  return tt::cat(rows, 0).contiguous();
  // END SOLUTION
}

Tensor row_shard(const Tensor& w, int64_t P, int64_t r) {
  // BEGIN SOLUTION tp_shards
  const int64_t part = w.size(1) / P;
  return w.narrow(1, r * part, part).contiguous();
  // END SOLUTION
}

Tensor tensor_parallel_mlp(const Tensor& x, const Tensor& w_fc, const Tensor& w_proj, int64_t P) {
  // BEGIN SOLUTION tp_mlp
  Tensor y;
  for (int64_t r = 0; r < P; ++r) {
    const Tensor h = tt::gelu(tt::matmul(x, column_shard(w_fc, P, r).t()));
    const Tensor partial = tt::matmul(h, row_shard(w_proj, P, r).t());
    y = r == 0 ? partial : y + partial;
  }
  return y;
  // END SOLUTION
}

std::vector<std::string> one_f_one_b(int64_t P, int64_t M, int64_t s) {
  // BEGIN SOLUTION one_f_one_b
  std::vector<std::string> order;
  const int64_t warmup = std::min(P - 1 - s, M);
  int64_t f = 0, b = 0;
  for (; f < warmup; ++f) order.push_back("F" + std::to_string(f));
  while (f < M) {
    order.push_back("F" + std::to_string(f++));
    order.push_back("B" + std::to_string(b++));
  }
  while (b < M) order.push_back("B" + std::to_string(b++));
  return order;
  // END SOLUTION
}

}  // namespace lab12

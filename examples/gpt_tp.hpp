// examples/gpt_tp.hpp — gpt.hpp's GPT split over the ranks of a tensor-parallel group (Megatron-LM).
//
// parallelize_gpt(model, tp) replaces, in every Block, the attention and the MLP by their
// tensor-parallel twins built from the same weights (P = tp.size(), r = tp.rank()):
//
//   attn.c_attn  (3C, C) ColumnParallelLinear, 3 sections: rank r keeps heads
//                [r nh/P, (r+1) nh/P) of q, of k and of v   -> weight (3C/P, C)
//   attention    on its nh/P heads only (heads never mix)   -> (B, T, C/P)
//   attn.c_proj  (C, C) RowParallelLinear: the columns of those heads -> weight (C, C/P),
//                partial sums added by g (one all-reduce)
//   mlp.c_fc     (4C, C) ColumnParallelLinear                -> weight (4C/P, C)
//   gelu         on the slice (elementwise)
//   mlp.c_proj   (C, 4C) RowParallelLinear                   -> weight (C, 4C/P), then g
//
// The embeddings, the LayerNorms and the tied output head stay whole on every rank; their
// gradients come out the same on every rank (f sums the residual stream's gradient before it
// leaves each split layer), so each rank's AdamW keeps them equal without any communication.
// Every Block costs 2 all-reduces of B*T*C elements in forward and 2 in backward
// (tensor_parallel.hpp). Parameter names are unchanged ("transformer.h.0.attn.c_attn.weight"),
// with the shard's shape. Dropout must be 0: with dropout a TP rank would have to draw the same
// masks as its peers on the whole tensors and different ones on the shards (Megatron's
// CUDA RNG tracker), which tinytorch does not do; parallelize_gpt throws instead.
//
// Errors (tinytorch::Error, on every rank of the group): n_head or 4 n_embd not divisible by P,
// dropout > 0.
// Chapter: chapters/12-model-parallelism.md. Reference: Shoeybi et al., Megatron-LM (2019),
// section 3 and figure 3; Megatron-LM megatron/core/transformer (attention with
// num_attention_heads_per_partition).
#pragma once

#include "gpt.hpp"

#include <tinytorch/distributed.hpp>

#include <memory>
#include <string>

namespace examples {

/// CausalSelfAttention on this rank's heads: (B, T, C) -> (B, T, C), the same on every rank.
class TensorParallelCausalSelfAttention : public tinytorch::nn::Module {
 public:
  TensorParallelCausalSelfAttention(const CausalSelfAttention& full, tinytorch::distributed::ProcessGroup& tp)
      : n_head(full.n_head), n_embd(full.n_embd), n_head_local(full.n_head / tp.size()) {
    namespace dist = tinytorch::distributed;
    TT_CHECK(full.n_head % tp.size() == 0, "TensorParallelCausalSelfAttention: n_head ", full.n_head,
             " is not divisible by the tensor-parallel size ", tp.size());
    c_attn = register_module("c_attn", std::make_shared<dist::ColumnParallelLinear>(*full.c_attn, tp, false, 3));
    c_proj = register_module("c_proj", std::make_shared<dist::RowParallelLinear>(*full.c_proj, tp, true));
  }
  tinytorch::Tensor forward(const tinytorch::Tensor& x) override {
    using namespace tinytorch;
    const int64_t B = x.size(0), T = x.size(1), hs = n_embd / n_head, Cl = n_head_local * hs;
    const Tensor qkv = c_attn->forward(x);  // (B, T, 3 Cl): [q | k | v] of this rank's heads
    auto heads = [&](int64_t i) { return qkv.narrow(2, i * Cl, Cl).view({B, T, n_head_local, hs}).transpose(1, 2); };
    const Tensor y = scaled_dot_product_attention(heads(0), heads(1), heads(2), Tensor(), 0.0, /*is_causal=*/true);
    return c_proj->forward(y.transpose(1, 2).contiguous().view({B, T, Cl}));
  }
  std::string name() const override { return "TensorParallelCausalSelfAttention"; }
  int64_t n_head, n_embd, n_head_local;
  std::shared_ptr<tinytorch::distributed::ColumnParallelLinear> c_attn;
  std::shared_ptr<tinytorch::distributed::RowParallelLinear> c_proj;
};

/// MLP with c_fc split by columns and c_proj by rows: (B, T, C) -> (B, T, C).
class TensorParallelMLP : public tinytorch::nn::Module {
 public:
  TensorParallelMLP(const MLP& full, tinytorch::distributed::ProcessGroup& tp) {
    namespace dist = tinytorch::distributed;
    c_fc = register_module("c_fc", std::make_shared<dist::ColumnParallelLinear>(*full.c_fc, tp));
    gelu = register_module("gelu", std::make_shared<tinytorch::nn::GELU>());
    c_proj = register_module("c_proj", std::make_shared<dist::RowParallelLinear>(*full.c_proj, tp, true));
  }
  tinytorch::Tensor forward(const tinytorch::Tensor& x) override {
    return c_proj->forward(gelu->forward(c_fc->forward(x)));
  }
  std::string name() const override { return "TensorParallelMLP"; }
  std::shared_ptr<tinytorch::distributed::ColumnParallelLinear> c_fc;
  std::shared_ptr<tinytorch::nn::GELU> gelu;
  std::shared_ptr<tinytorch::distributed::RowParallelLinear> c_proj;
};

/// Splits every Block of `model` over `tp` in place (see the file comment). Call it on every rank
/// of the group, on models built the same way (the same seed), before making the optimizer.
/// Throws tinytorch::Error when the sizes do not divide or dropout is not 0.
inline void parallelize_gpt(GPT& model, tinytorch::distributed::ProcessGroup& tp) {
  TT_CHECK(model.config.dropout == 0.0, "parallelize_gpt: dropout must be 0 (got ", model.config.dropout,
           "); tensor-parallel dropout needs per-rank random streams, which tinytorch does not have");
  TT_CHECK(model.config.n_head % tp.size() == 0, "parallelize_gpt: n_head ", model.config.n_head,
           " is not divisible by the tensor-parallel size ", tp.size());
  for (auto& block : model.transformer->blocks) {
    auto attn = std::dynamic_pointer_cast<CausalSelfAttention>(block->attn);
    auto mlp = std::dynamic_pointer_cast<MLP>(block->mlp);
    TT_CHECK(attn != nullptr && mlp != nullptr, "parallelize_gpt: the model is already split");
    block->attn = block->replace_module("attn", std::make_shared<TensorParallelCausalSelfAttention>(*attn, tp));
    block->mlp = block->replace_module("mlp", std::make_shared<TensorParallelMLP>(*mlp, tp));
  }
}

}  // namespace examples

// examples/gpt_pp.hpp — gpt.hpp's GPT cut into pipeline stages (distributed/pipeline.hpp).
//
// Stage s of P holds a run of consecutive Blocks (n_layer split as evenly as possible, the
// earlier stages taking one more when it does not divide: the last stage also runs ln_f and the
// head). Stage 0 adds the embeddings in front:
//
//   stage 0       idx (b, T) int64 -> wte(idx) + wpe(arange T) -> blocks -> (b, T, C)
//   stage s       (b, T, C) -> blocks -> (b, T, C)
//   stage P-1     (b, T, C) -> blocks -> ln_f -> x wte^T -> logits (b, T, V)
//
// The output head is tied to the token embedding (gpt.hpp): with P > 1 the first and the last
// stage each hold a copy of wte, equal at the start (every rank builds the whole model from the
// same seed). Their gradients are partial (the embedding's on stage 0, the head's on the last),
// so after each backward tie_embedding_grads() all-reduces the two over an "embedding group" of
// the two ranks and both copies take the same optimizer step (Megatron-LM's embedding group).
// Parameter names keep the whole model's ("transformer.h.2.attn.c_attn.weight"), so a stage's
// state is a part of the whole model's state_dict.
// Errors (tinytorch::Error): more stages than blocks, dropout > 0 (each stage would have to draw
// its own masks in the one-process order).
// Chapter: chapters/12-model-parallelism.md (12.7). Reference: Megatron-LM (embedding group,
// parallel_state.py); torch.distributed.pipelining (splitting a model into stages).
#pragma once

#include "gpt.hpp"

#include <tinytorch/distributed.hpp>

#include <memory>
#include <string>
#include <vector>

namespace examples {

/// The blocks of stage `stage` of `stages` for n_layer blocks: [first, last).
inline std::pair<int64_t, int64_t> stage_blocks(int64_t n_layer, int64_t stages, int64_t stage) {
  const int64_t base = n_layer / stages, extra = n_layer % stages;
  const int64_t first = stage * base + std::min(stage, extra);
  return {first, first + base + (stage < extra ? 1 : 0)};
}

class GPTStage : public tinytorch::nn::Module {
 public:
  /// Stage `stage` of `stages` of `model` (which keeps its parameters: this module shares them).
  GPTStage(const GPT& model, int64_t stage, int64_t stages) : config(model.config), stage(stage), stages(stages) {
    TT_CHECK(stages >= 1 && stage >= 0 && stage < stages, "GPTStage: stage ", stage, " of ", stages);
    TT_CHECK(stages <= model.config.n_layer, "GPTStage: ", stages, " pipeline stages for ", model.config.n_layer,
             " blocks: a stage would hold no block");
    TT_CHECK(stages == 1 || model.config.dropout == 0.0, "GPTStage: dropout must be 0 with several stages (got ",
             model.config.dropout, ")");
    auto transformer = std::make_shared<tinytorch::nn::Sequential>();  // names as the whole model's
    register_module("transformer", transformer);
    const auto& t = *model.transformer;
    if (stage == 0 || stage == stages - 1) wte = transformer->register_module("wte", t.wte);
    if (stage == 0) wpe = transformer->register_module("wpe", t.wpe);
    auto h = transformer->register_module("h", std::make_shared<tinytorch::nn::Sequential>());
    const auto [first, last] = stage_blocks(model.config.n_layer, stages, stage);
    for (int64_t i = first; i < last; ++i)
      blocks.push_back(h->register_module(std::to_string(i), t.blocks[static_cast<size_t>(i)]));
    if (stage == stages - 1) ln_f = transformer->register_module("ln_f", t.ln_f);
  }

  tinytorch::Tensor forward(const tinytorch::Tensor& input) override {
    using namespace tinytorch;
    Tensor x = input;
    if (stage == 0) {
      TT_CHECK(input.dim() == 2, "GPTStage 0: expected idx of shape (B, T), got ", shape_str(input.sizes()));
      const Tensor pos = arange(input.size(1)).to(input.device());
      x = wte->forward(input) + wpe->forward(pos);
    }
    for (auto& block : blocks) x = block->forward(x);
    if (stage == stages - 1) x = matmul(ln_f->forward(x), wte->weight.t());
    return x;
  }

  /// The tied embedding's two halves, added over the first and last stage (`embedding_group`:
  /// those two ranks; nullptr on the others and with one stage). Call after the backward.
  void tie_embedding_grads(tinytorch::distributed::ProcessGroup* embedding_group) {
    if (embedding_group == nullptr || !wte || !wte->weight.grad().defined()) return;
    tinytorch::distributed::all_reduce(wte->weight.grad(), tinytorch::distributed::ReduceOp::SUM, *embedding_group);
  }

  /// The parameters whose squares this stage adds to the gradient norm: all of its own, the tied
  /// embedding counted on stage 0 only.
  std::vector<tinytorch::Tensor> norm_parameters() const {
    std::vector<tinytorch::Tensor> out;
    for (const auto& p : parameters())
      if (stage == 0 || !wte || p.impl() != wte->weight.impl()) out.push_back(p);
    return out;
  }

  std::string name() const override { return "GPTStage"; }

  GPTConfig config;
  int64_t stage, stages;
  std::shared_ptr<tinytorch::nn::Embedding> wte, wpe;
  std::vector<std::shared_ptr<Block>> blocks;
  std::shared_ptr<tinytorch::nn::LayerNorm> ln_f;
};

}  // namespace examples

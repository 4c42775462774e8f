// tinytorch/nn/embedding.hpp — nn::Embedding: a lookup table of learned vectors, one per token.
//
//   y[s, :] = weight[x[s], :]       x: int64 indices of any shape S, each in [0, num_embeddings)
// Shapes: weight (num_embeddings, embedding_dim); y (*S, embedding_dim).
// Initialisation as PyTorch's reset_parameters(): weight ~ N(0, 1), drawn from `gen` or the
// default generator, then the padding_idx row (if any) set to 0; that row gets no gradient.
// A GPT uses two: token embeddings (vocab_size rows) and position embeddings (block_size rows),
// and ties the token table to its output head: the logits are x wte^T (examples/gpt.hpp), so the
// table is trained by both its lookups and the head.
// Backward: autograd::Embedding (EmbeddingBackward0), autograd/functions/embedding.hpp.
// Reference: torch.nn.Embedding. Chapter: chapters/12-model-parallelism.md.
#pragma once

#include <optional>

#include "tinytorch/nn/init.hpp"
#include "tinytorch/nn/module.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace nn {

class Embedding : public Module {
 public:
  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;  ///< wrapped to [0, num_embeddings) when given negative
  Tensor weight;

  /// Throws tinytorch::Error for non-positive sizes or a padding_idx outside
  /// [-num_embeddings, num_embeddings) (PyTorch's "Padding_idx must be within num_embeddings").
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt,
            Generator* gen = nullptr)
      : num_embeddings(num_embeddings), embedding_dim(embedding_dim) {
    TT_CHECK(num_embeddings > 0 && embedding_dim > 0, "Embedding: num_embeddings and embedding_dim must be positive, got ",
             num_embeddings, " and ", embedding_dim);
    if (padding_idx) {
      TT_CHECK(*padding_idx >= -num_embeddings && *padding_idx < num_embeddings,
               "Embedding: Padding_idx must be within num_embeddings (got ", *padding_idx, " for ", num_embeddings,
               " embeddings)");
      this->padding_idx = *padding_idx < 0 ? *padding_idx + num_embeddings : *padding_idx;
    }
    weight = register_parameter("weight", empty({num_embeddings, embedding_dim}));
    init::normal_(weight, 0.0, 1.0, gen);
    if (this->padding_idx) {
      NoGradGuard ng;
      weight.select(0, *this->padding_idx).zero_();
    }
  }
  /// x: int64 indices (any shape) -> (*x.shape, embedding_dim). Throws as embedding() in functional.hpp.
  Tensor forward(const Tensor& x) override { return embedding(x, weight, padding_idx); }
  /// Throws tinytorch::Error when `weight` was re-assigned after construction (Module::check_member).
  std::shared_ptr<Module> clone() const override {
    check_member(weight, "weight");
    auto m = clone_as<Embedding>();
    m->weight = m->get_parameter("weight");
    return m;
  }
  std::string name() const override { return "Embedding"; }
  /// As PyTorch: "65, 128" or "10, 3, padding_idx=0".
  std::string extra_repr() const override {
    return padding_idx ? detail::str_cat(num_embeddings, ", ", embedding_dim, ", padding_idx=", *padding_idx)
                       : detail::str_cat(num_embeddings, ", ", embedding_dim);
  }
};

}  TT_NAMESPACE_END  // namespace tinytorch::nn

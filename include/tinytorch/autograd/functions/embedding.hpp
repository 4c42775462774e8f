// tinytorch/autograd/functions/embedding.hpp — the autograd node of the embedding lookup:
// forward and backward are ops/embedding.hpp's embedding and embedding_backward.
//   y = weight[indices]  =>  dweight[v] = sum of dy[s] over the positions s with indices[s] == v,
//                           the padding_idx row 0; the indices get no gradient (they are integers)
// grad_fn EmbeddingBackward0 (PyTorch's name); the node saves the indices, as PyTorch's does.
// Chapter: chapters/02-autograd.md, chapters/12-model-parallelism.md.
// Reference: PyTorch tools/autograd/derivatives.yaml (embedding: embedding_backward).
#pragma once

#include "tinytorch/ops/embedding.hpp"
#include "tinytorch/autograd/functions/common.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

/// y = weight[indices]; backward scatters dy's rows back into a (V, D) gradient.
struct Embedding : Node {
  Tensor indices;
  int64_t num_weights = 0, padding_idx = -1;
  std::string name() const override { return "EmbeddingBackward0"; }
  static Tensor forward(const Tensor& weight, const Tensor& indices, int64_t padding_idx) {
    Tensor out = ops::embedding(weight, indices);
    if (!any_requires_grad({&weight})) return out;
    auto n = std::make_shared<Embedding>();
    n->saves_tensors = true;
    n->indices = n->save(indices);
    n->num_weights = weight.sizes()[0];
    n->padding_idx = padding_idx;
    return record(out, n, {&weight});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    return {ops::embedding_backward(dy, indices, num_weights, padding_idx)};
  }
  void release_saved() override { indices = Tensor(); }
};

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

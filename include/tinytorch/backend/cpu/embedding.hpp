// tinytorch/backend/cpu/embedding.hpp — the embedding lookup (a gather of rows) and its gradient
// (a scatter-add of rows), on raw pointers.
//
// weight (num_weights, dim) row-major; idx: n int64 indices, each in [0, num_weights) (the ops
// layer checks that before any kernel runs); out and dy: (n, dim) row-major.
//   forward:   out[i, :] = weight[idx[i], :]
//   backward:  dw[v, :]  = sum over i with idx[i] == v of dy[i, :]    (0 for v == padding_idx)
// The backward writes every element of dw (rows no index hits are 0), and sums each row's
// contributions in the order of i, as PyTorch's CPU embedding_dense_backward (an index_add_ in
// index order), so float32 results agree bit for bit. padding_idx < 0: no padding row.
// Chapter: chapters/12-model-parallelism.md (the GPT's token and position embeddings).
// Reference: torch.nn.functional.embedding; PyTorch aten/src/ATen/native/Embedding.cpp.
#pragma once

#include <cstdint>
#include <cstring>
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend::cpu {

template <class T>
void embedding_kernel(const int64_t* idx, const T* weight, T* out, int64_t n, int64_t dim) {
  for (int64_t i = 0; i < n; ++i) {
    const T* src = weight + idx[i] * dim;
    T* dst = out + i * dim;
    for (int64_t d = 0; d < dim; ++d) dst[d] = src[d];
  }
}

template <class T>
void embedding_backward_kernel(const int64_t* idx, const T* dy, T* dw, int64_t n, int64_t num_weights, int64_t dim,
                               int64_t padding_idx) {
  for (int64_t j = 0; j < num_weights * dim; ++j) dw[j] = T(0);
  for (int64_t i = 0; i < n; ++i) {
    if (idx[i] == padding_idx) continue;
    T* row = dw + idx[i] * dim;
    const T* g = dy + i * dim;
    for (int64_t d = 0; d < dim; ++d) row[d] += g[d];
  }
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cpu

// tinytorch/backend/cuda/embedding.cuh — the embedding lookup and its gradient on the GPU.
//
// The CUDA twins of backend/cpu/embedding.hpp (embedding_kernel, embedding_backward_kernel), same
// names and signatures, device pointers:
//   forward:   out[i, :] = weight[idx[i], :]                 one thread per output element
//   backward:  dw[v, :]  = sum_{i : idx[i] == v} dy[i, :]    one thread per element of dw, which
//              scans all n indices in order (0 for v == padding_idx)
// The backward needs no atomics: each dw element has one writer, and it adds its terms in the
// order of i, as the CPU twin does, so the two agree bit for bit (an atomicAdd kernel, as PyTorch's
// for large vocabularies, would add in a run-dependent order). Its cost is num_weights * dim * n
// reads: fine for a character vocabulary (65 rows), a known limit for 50,000 rows.
// Indices are range-checked by the ops layer before launch (ops/embedding.hpp).
// Chapter: chapters/10-gpu-kernels.md (one thread per output, no races), chapters/12-model-parallelism.md.
// Reference: PyTorch aten/src/ATen/native/cuda/Embedding.cu (embedding_dense_backward).
#pragma once

#include <cstdint>

#include "tinytorch/backend/cpu/embedding.hpp"  // the CPU twins
#include "tinytorch/backend/cuda/elementwise.cuh"       // TT_GRID_STRIDE_LOOP, launch_kernel, grid_1d
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend::cuda {

// ================================ kernels ========================================================
namespace kernels {

template <class T>
__global__ void embedding_gather(const int64_t* idx, const T* weight, T* out, int64_t n, int64_t dim) {
  TT_GRID_STRIDE_LOOP(j, n * dim) {
    const int64_t i = j / dim, d = j - i * dim;
    out[j] = weight[idx[i] * dim + d];
  }
}

template <class T>
__global__ void embedding_backward_scan(const int64_t* idx, const T* dy, T* dw, int64_t n, int64_t num_weights,
                                        int64_t dim, int64_t padding_idx) {
  TT_GRID_STRIDE_LOOP(j, num_weights * dim) {
    const int64_t v = j / dim, d = j - v * dim;
    T acc = T(0);
    if (v != padding_idx)
      for (int64_t i = 0; i < n; ++i)
        if (idx[i] == v) acc += dy[i * dim + d];
    dw[j] = acc;
  }
}

}  // namespace kernels

// ================================ launchers ======================================================

/// out (n, dim) = rows idx of weight (num_weights, dim) (twin of cpu::embedding_kernel).
template <class T>
void embedding_kernel(const int64_t* idx, const T* weight, T* out, int64_t n, int64_t dim) {
  if (n * dim == 0) return;
  launch_kernel("embedding_gather", kernels::embedding_gather<T>, grid_1d(n * dim), dim3(256), 0, idx, weight, out,
                n, dim);
}

/// dw (num_weights, dim) = the rows of dy (n, dim) summed by index, padding_idx's row 0 (twin of
/// cpu::embedding_backward_kernel).
template <class T>
void embedding_backward_kernel(const int64_t* idx, const T* dy, T* dw, int64_t n, int64_t num_weights, int64_t dim,
                               int64_t padding_idx) {
  if (num_weights * dim == 0) return;
  launch_kernel("embedding_backward_scan", kernels::embedding_backward_scan<T>, grid_1d(num_weights * dim), dim3(256),
                0, idx, dy, dw, n, num_weights, dim, padding_idx);
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cuda

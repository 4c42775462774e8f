// tinytorch/ops/embedding.hpp — the embedding lookup and its gradient on tensors: no autograd
// (autograd/functions/embedding.hpp records the node that calls these).
//
//   embedding(weight, indices):  weight (V, D), indices of any shape S (int64, each in [0, V))
//                                -> (*S, D), row indices[s] of weight at position s
//   embedding_backward(dy, indices, V, padding_idx):  dy (*S, D) -> dW (V, D),
//                                dW[v] = sum of dy[s] over the s with indices[s] == v, padding_idx's row 0
// Formulas and summation order: backend/cpu/embedding.hpp (the CUDA twin: backend/cuda/embedding.cuh).
// Errors (tinytorch::Error, naming the op and the offending shape or value): weight not 2-D,
// indices not int64 (PyTorch also takes int32, which tinytorch does not have), an index outside
// [0, V) (PyTorch's CPU says "index out of range in self"; here the index, V and the weight's
// shape are named), tensors on two devices. Indices on a GPU are copied to the host for that
// check (PyTorch's CUDA kernel asserts on the device instead).
// Chapter: chapters/12-model-parallelism.md. Reference: torch.nn.functional.embedding;
// PyTorch aten/src/ATen/native/Embedding.cpp.
#pragma once

#include "tinytorch/ops/dispatch.hpp"
#include "tinytorch/ops/shape.hpp"  // contiguous
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace ops {

namespace detail {
/// Throws unless every index is in [0, num_weights): names the first that is not.
inline void check_embedding_indices(const Tensor& indices, int64_t num_weights, const Shape& weight_shape) {
  const Tensor host = contiguous(to_host(indices));
  const int64_t* p = host.data_ptr<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i)
    TT_CHECK(p[i] >= 0 && p[i] < num_weights, "embedding: index ", p[i], " is out of range for a weight of ",
             num_weights, " rows (weight shape ", shape_str(weight_shape), ", indices shape ",
             shape_str(indices.sizes()), "): indices must be in [0, ", num_weights, ")");
}
}  // namespace detail

/// Rows `indices` of `weight`: (V, D) and int64 S -> (*S, D), contiguous, weight's dtype and device.
inline Tensor embedding(const Tensor& weight0, const Tensor& indices0) {
  check_device(weight0, "embedding");
  check_device(indices0, "embedding");
  check_same_device("embedding", weight0, indices0);
  TT_CHECK(weight0.dim() == 2, "embedding: 'weight' must be 2-D (num_embeddings, embedding_dim), got shape ",
           shape_str(weight0.sizes()));
  TT_CHECK(indices0.dtype() == kInt64, "embedding: Expected tensor for argument #1 'indices' to have scalar type "
           "int64, but got ", dtype_name(indices0.dtype()), " (indices shape ", shape_str(indices0.sizes()), ")");
  const int64_t V = weight0.sizes()[0], D = weight0.sizes()[1];
  detail::check_embedding_indices(indices0, V, weight0.sizes());
  const Tensor weight = contiguous(weight0), indices = contiguous(indices0);
  Shape out_shape = indices.sizes();
  out_shape.push_back(D);
  Tensor out = make_tensor(out_shape, weight.dtype(), weight.device());
  dispatch_all(weight.dtype(), [&](auto tag) {  // a row copy: float16/bfloat16 bits are copied
    using T = typename decltype(tag)::type;
    backend::dispatch::embedding_kernel(weight.device(), indices.data_ptr<int64_t>(), weight.data_ptr<T>(),
                                        out.data_ptr<T>(), indices.numel(), D);
  });
  return out;
}

/// dW (num_weights, D) from dy (*S, D) and the forward's indices S (already checked by the
/// forward); padding_idx < 0: no padding row.
inline Tensor embedding_backward(const Tensor& dy0, const Tensor& indices0, int64_t num_weights, int64_t padding_idx) {
  if (is_reduced_floating_point(dy0.dtype()))  // summed in float32, rounded once
    return to_dtype(embedding_backward(to_dtype(dy0, kFloat32), indices0, num_weights, padding_idx), dy0.dtype());
  const Tensor dy = contiguous(dy0), indices = contiguous(indices0);
  const int64_t D = dy.sizes().back();
  Tensor dw = make_tensor({num_weights, D}, dy.dtype(), dy.device());
  dispatch(dy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    backend::dispatch::embedding_backward_kernel(dy.device(), indices.data_ptr<int64_t>(), dy.data_ptr<T>(),
                                                 dw.data_ptr<T>(), indices.numel(), num_weights, D, padding_idx);
  });
  return dw;
}

}  TT_NAMESPACE_END  // namespace tinytorch::ops

// tinytorch/ops/dispatch.hpp — the single CPU/CUDA fork, and the helpers every op uses.
//
// Every op in ops/ calls check_device() before touching data: CPU tensors go to backend/cpu/;
// CUDA tensors go to backend/cuda/ in a translation unit compiled by nvcc, and raise a clear
// tinytorch::Error otherwise. (The CUDA backend arrives in a later issue; until then a CUDA
// tensor raises here in every build.)
// Type promotion follows PyTorch for the three dtypes:
//   same dtype -> that dtype; int64 with float -> the float; float32 with float64 -> float64.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>

#include "../core/check.hpp"
#include "../core/config.hpp"
#include "../tensor.hpp"

TT_NAMESPACE_BEGIN namespace ops {

/// Throws unless `t` can be computed on here (defined, on the CPU in this build).
inline void check_device(const Tensor& t, const char* op) {
  TT_CHECK(t.defined(), op, ": got an undefined tensor");
  TT_CHECK(t.device().is_cpu(), op, ": tensor on ", t.device().str(),
           " needs the CUDA backend, which this build does not have (compile with nvcc)");
}

/// A new contiguous tensor (uninitialised data).
inline Tensor make_tensor(const Shape& shape, DType dtype, Device device = Device::cpu()) {
  // numel * element_size must fit in int64 (PyTorch: "Storage size calculation overflowed"), or
  // a wrapped-around product would allocate a tiny buffer for a huge shape. As PyTorch's, the
  // sizes are multiplied left to right and an overflow is an error even when a later size is 0:
  // (2^38, 2^31, 0) is refused, (0, 2^38, 2^31) is an empty tensor.
  const int64_t esize = static_cast<int64_t>(element_size(dtype));
  int64_t numel = 1, bytes = 0;
  bool overflow = false;
  for (int64_t d : shape) {
    TT_CHECK(d >= 0, "empty: negative dimension in shape ", shape_str(shape));
    overflow |= __builtin_mul_overflow(numel, d, &numel);
  }
  overflow |= __builtin_mul_overflow(numel, esize, &bytes);
  TT_CHECK(!overflow, "empty: shape ", shape_str(shape), " of ", dtype_name(dtype),
           " needs more than 2^63 bytes");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(bytes), device);  // 0 for an empty shape
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

/// A tensor sharing `t`'s storage with another shape/strides/offset (a view).
inline Tensor make_view(const Tensor& t, Shape shape, Strides strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.impl()->storage;
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = t.dtype();
  return Tensor(std::move(impl));
}

/// torch.promote_types: the smallest dtype both convert to (int64 < float32 < float64).
inline DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == kFloat64 || b == kFloat64) return kFloat64;
  return kFloat32;
}

/// torch.result_type over the operands of one op (a binary op, clamp with tensor bounds, where).
/// As PyTorch's type promotion, 0-d tensors do not raise the dimensioned tensors' dtype within its
/// category (integral or floating): float32 (3) + float64 0-d -> float32, but int64 (3) + float64
/// 0-d -> float64 (the 0-d tensor is of a higher category). Operands of one kind (all 0-d or all
/// dimensioned) promote as promote_types. Reference: PyTorch's "Type promotion" doc
/// (https://pytorch.org/docs/stable/tensor_attributes.html#type-promotion-doc), c10's
/// ResultTypeState / combine_categories.
inline DType result_type(std::initializer_list<const Tensor*> operands) {
  std::optional<DType> dimensioned, zero_dim;
  for (const Tensor* t : operands) {
    std::optional<DType>& r = t->dim() == 0 ? zero_dim : dimensioned;
    r = r ? promote_types(*r, t->dtype()) : t->dtype();
  }
  if (!dimensioned) return *zero_dim;
  if (!zero_dim || is_floating_point(*dimensioned) || !is_floating_point(*zero_dim)) return *dimensioned;
  return promote_types(*dimensioned, *zero_dim);
}
inline DType result_type(const Tensor& a, const Tensor& b) { return result_type({&a, &b}); }

}  TT_NAMESPACE_END  // namespace tinytorch::ops

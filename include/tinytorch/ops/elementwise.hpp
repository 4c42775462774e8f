// tinytorch/ops/elementwise.hpp — elementwise math on Tensors, with broadcasting, no autograd.
//
//   binary(a, b, f):  out = f(a, b), shape = broadcast_shapes(a, b), dtype = promote(a, b)
//   compare(a, b, f): same, but out is int64 0/1 (tinytorch has no bool dtype)
//   unary(x, f):      out = f(x); float-only functions (exp, log, ...) turn int64 into float32
//   scalar(a, s, f):  out = f(a, s) for a double s (kept in a's dtype; int64 * 2.5 -> float32)
//   scalar_int64(a, s, f), scalar_int64_(self, s, f): int64 tensor with an int64 scalar, exact
//                     (functional.hpp picks these for an integral Scalar, core/scalar.hpp)
// Inputs are read through their strides (broadcast dims have stride 0): no copies.
// In place (binary_, unary_) and PyTorch's memory-overlap rules for them (ATen/MemoryOverlap.cpp),
// which Tensor's in-place methods apply before writing:
//   the written-to tensor may not repeat a location (an expanded tensor: stride 0, size > 1):
//     "unsupported operation: more than one element of the written-to tensor refers to a single
//     memory location";
//   an input may not partly overlap it (a.add_(a.t()), b[1:].copy_(b[:-1])): "unsupported
//   operation: some elements of the input tensor and the written-to tensor refer to a single
//   memory location". The same elements in the same layout (a.add_(a)) are fine; layouts too
//   irregular to decide ("too hard" for PyTorch too) are allowed, and binary_ then reads a copy of
//   the input, so the result never depends on the loop order.
// Reference: PyTorch's broadcasting and type-promotion notes, ATen/MemoryOverlap.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>
#include <type_traits>

#include "../backend/cpu/elementwise.hpp"
#include "dispatch.hpp"
#include "shape.hpp"
#include "../core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace ops {

namespace detail {
// True when t is dense, row-major, and has exactly `shape` (so a flat loop reads it).
inline bool dense_as(const Tensor& t, const Shape& shape) {
  return t.sizes() == shape && t.is_contiguous();
}
}  // namespace detail

/// out = f(a, b) elementwise with broadcasting; out dtype = result_type(a, b) (int64 for compare).
template <class F>
Tensor binary(const Tensor& a0, const Tensor& b0, F f, const char* op, bool compare = false) {
  check_device(a0, op);
  check_device(b0, op);
  DType dt = result_type(a0, b0);  // torch.result_type: a 0-d operand ranks below a dimensioned one
  const Tensor a = to_dtype(a0, dt), b = to_dtype(b0, dt);
  Shape shape = broadcast_shapes(a.sizes(), b.sizes(), op);
  Tensor out = make_tensor(shape, compare ? kInt64 : dt);
  bool dense = detail::dense_as(a, shape) && detail::dense_as(b, shape);
  Strides sa = broadcast_strides(a.sizes(), a.strides(), shape);
  Strides sb = broadcast_strides(b.sizes(), b.strides(), shape);
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (compare)
      backend::cpu::binary_kernel(a.data_ptr<T>(), sa, b.data_ptr<T>(), sb, out.data_ptr<int64_t>(),
                                  shape, dense, f);
    else
      backend::cpu::binary_kernel(a.data_ptr<T>(), sa, b.data_ptr<T>(), sb, out.data_ptr<T>(), shape,
                                  dense, [&](T x, T y) { return static_cast<T>(f(x, y)); });
  });
  return out;
}

/// out = f(x) elementwise. With float_only, int64 input is computed in float32 (as torch.exp).
template <class F>
Tensor unary(const Tensor& x0, F f, const char* op, bool float_only = false) {
  check_device(x0, op);
  const Tensor x = contiguous(float_only && x0.dtype() == kInt64 ? to_dtype(x0, kFloat32) : x0);
  Tensor out = make_tensor(x.sizes(), x.dtype());
  dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    backend::cpu::unary_kernel(x.data_ptr<T>(), out.data_ptr<T>(), x.numel(),
                               [&](T v) { return static_cast<T>(f(v)); });
  });
  return out;
}

/// out = f(a, s) for a scalar s. An int64 tensor with a non-integral s computes in float32.
template <class F>
Tensor scalar(const Tensor& a0, double s, F f, const char* op) {
  check_device(a0, op);
  bool to_float = a0.dtype() == kInt64 && s != std::floor(s);
  const Tensor a = contiguous(to_float ? to_dtype(a0, kFloat32) : a0);
  Tensor out = make_tensor(a.sizes(), a.dtype());
  dispatch(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    backend::cpu::scalar_kernel(a.data_ptr<T>(), static_cast<T>(s), out.data_ptr<T>(), a.numel(),
                                [&](T x, T y) { return static_cast<T>(f(x, y)); });
  });
  return out;
}

// ---- memory overlap (PyTorch's ATen/MemoryOverlap.cpp) ------------------------------------------

/// True when the elements fill a block of memory without gaps or repeats, in some dim order
/// (PyTorch's is_non_overlapping_and_dense: a permutation of contiguous strides).
inline bool is_non_overlapping_and_dense(const Tensor& t) {
  const Shape& sizes = t.sizes();
  const Strides& strides = t.strides();
  const size_t dim = sizes.size();
  if (dim == 1) return sizes[0] < 2 || strides[0] == 1;
  std::vector<size_t> perm(dim);
  for (size_t i = 0; i < dim; ++i) perm[i] = i;
  std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {  // size-1 dims last, then by stride
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t require_stride = 1;
  for (size_t i = 0; i < dim; ++i) {
    const int64_t size = sizes[perm[i]];
    if (size < 2) return true;
    if (strides[perm[i]] != require_stride) return false;
    require_stride *= size;
  }
  return true;
}

enum class MemOverlap { No, Yes, TooHard };
/// Whether two elements of `t` share a location: Yes only for a stride-0 dim of size > 1.
inline MemOverlap has_internal_overlap(const Tensor& t) {
  if (is_non_overlapping_and_dense(t)) return MemOverlap::No;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.strides()[d] == 0 && t.sizes()[d] > 1) return MemOverlap::Yes;
  return MemOverlap::TooHard;
}
/// Throws PyTorch's error when `t`, about to be written, repeats a location (e.g. after expand).
inline void assert_no_internal_overlap(const Tensor& t, const char* op) {
  TT_CHECK(has_internal_overlap(t) != MemOverlap::Yes, op, ": unsupported operation: more than one element of the "
           "written-to tensor refers to a single memory location. Please clone() the tensor before performing the "
           "operation. (shape ", shape_str(t.sizes()), ", strides ", shape_str(t.strides()), ")");
}

enum class MemOverlapStatus { Full, Partial, TooHard, No };
/// How the memory of a and b overlaps: Full (the same elements in the same layout), Partial,
/// No, or TooHard (one is not dense, so it is not worth deciding).
inline MemOverlapStatus get_overlap_status(const Tensor& a, const Tensor& b) {
  if (a.is_same(b)) return MemOverlapStatus::Full;
  if (a.numel() == 0 || b.numel() == 0) return MemOverlapStatus::No;
  if (!is_non_overlapping_and_dense(a) || !is_non_overlapping_and_dense(b)) return MemOverlapStatus::TooHard;
  if (a.impl()->storage != b.impl()->storage) return MemOverlapStatus::No;
  const int64_t ea = static_cast<int64_t>(element_size(a.dtype())), eb = static_cast<int64_t>(element_size(b.dtype()));
  const int64_t a_begin = a.storage_offset() * ea, a_end = a_begin + a.numel() * ea;
  const int64_t b_begin = b.storage_offset() * eb, b_end = b_begin + b.numel() * eb;
  if (a_begin == b_begin && a_end == b_end)
    return a.strides() == b.strides() ? MemOverlapStatus::Full : MemOverlapStatus::Partial;
  if (a_begin < b_end && b_begin < a_end) return MemOverlapStatus::Partial;
  return MemOverlapStatus::No;
}
/// Throws PyTorch's error when the input `in` partly overlaps `out`, which is about to be written.
inline void assert_no_partial_overlap(const Tensor& out, const Tensor& in, const char* op) {
  TT_CHECK(get_overlap_status(out, in) != MemOverlapStatus::Partial, op, ": unsupported operation: some elements "
           "of the input tensor and the written-to tensor refer to a single memory location. Please clone() the "
           "tensor before performing the operation.");
}
/// out = f(a, s) for an int64 tensor a and an int64 scalar s, computed in int64 (exact: the
/// scalar never passes through a double; f is expected to wrap modulo 2^64, as AddOp does).
template <class F>
Tensor scalar_int64(const Tensor& a0, int64_t s, F f, const char* op) {
  check_device(a0, op);
  TT_CHECK(a0.dtype() == kInt64, op, ": expected an int64 tensor, got ", dtype_name(a0.dtype()));
  const Tensor a = contiguous(a0);
  Tensor out = make_tensor(a.sizes(), kInt64);
  backend::cpu::scalar_kernel(a.data_ptr<int64_t>(), s, out.data_ptr<int64_t>(), a.numel(), f);
  return out;
}

/// In place: self = f(self, s) for an int64 self and an int64 scalar s (exact, any strides).
template <class F>
void scalar_int64_(Tensor& self, int64_t s, F f, const char* op);

/// In place: self = f(self, other) with other broadcast to self's shape (self keeps its dtype).
/// When other shares memory with self in any layout but the same one, it is read from a copy.
template <class F>
void binary_(Tensor& self, const Tensor& other0, F f, const char* op) {
  check_device(self, op);
  check_device(other0, op);
  Shape shape = broadcast_shapes(self.sizes(), other0.sizes(), op);
  TT_CHECK(shape == self.sizes(), op, ": output with shape ", shape_str(self.sizes()),
           " doesn't match the broadcast shape ", shape_str(shape));
  Tensor other = to_dtype(other0, self.dtype());
  if (other.impl()->storage == self.impl()->storage) {
    const MemOverlapStatus st = get_overlap_status(self, other);
    if (st == MemOverlapStatus::Partial || st == MemOverlapStatus::TooHard) other = clone(other);
  }
  Strides so = broadcast_strides(other.sizes(), other.strides(), shape);
  dispatch(self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* s = self.data_ptr<T>();
    const T* o = other.data_ptr<T>();
    if (self.is_contiguous() && detail::dense_as(other, shape)) {
      const int64_t n = self.numel();
      for (int64_t i = 0; i < n; ++i) s[i] = static_cast<T>(f(s[i], o[i]));
      return;
    }
    backend::cpu::strided_loop2(shape, self.strides(), so, [&](int64_t, int64_t os, int64_t oo) {
      s[os] = static_cast<T>(f(s[os], o[oo]));
    });
  });
}

/// In place: self = f(self) (any strides).
template <class F>
void unary_(Tensor& self, F f, const char* op) {
  check_device(self, op);
  dispatch(self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* s = self.data_ptr<T>();
    if (self.is_contiguous()) {
      const int64_t n = self.numel();
      for (int64_t i = 0; i < n; ++i) s[i] = static_cast<T>(f(s[i]));
      return;
    }
    Strides zero(self.dim(), 0);
    backend::cpu::strided_loop2(self.sizes(), self.strides(), zero,
                                [&](int64_t, int64_t os, int64_t) { s[os] = static_cast<T>(f(s[os])); });
  });
}

template <class F>
void scalar_int64_(Tensor& self, int64_t s, F f, const char* op) {
  TT_CHECK(self.dtype() == kInt64, op, ": expected an int64 tensor, got ", dtype_name(self.dtype()));
  unary_(self, [&](auto x) {
    if constexpr (std::is_same_v<decltype(x), int64_t>) return f(x, s);
    else return x;  // not reached: self is int64
  }, op);
}

}  TT_NAMESPACE_END  // namespace tinytorch::ops

// tinytorch/ops/elementwise.hpp — elementwise math on Tensors, with broadcasting, no autograd.
//
//   binary(a, b, f):  out = f(a, b), shape = broadcast_shapes(a, b), dtype = promote(a, b)
//   compare(a, b, f): same, but out is int64 0/1 (tinytorch has no bool dtype)
//   unary(x, f):      out = f(x); float-only functions (exp, log, ...) turn int64 into float32
//   scalar(a, s, f):  out = f(a, s) for a double s (kept in a's dtype; int64 * 2.5 -> float32)
//   scalar_int64(a, s, f), scalar_int64_(self, s, f): int64 tensor with an int64 scalar, exact
//                     (functional.hpp picks these for an integral Scalar, core/scalar.hpp)
// Inputs are read through their strides (broadcast dims have stride 0): no copies.
// Reference: PyTorch's broadcasting and type-promotion notes.
#pragma once

#include <cmath>
#include <type_traits>

#include "../backend/cpu/elementwise.hpp"
#include "dispatch.hpp"
#include "shape.hpp"

namespace tinytorch::ops {

namespace detail {
// True when t is dense, row-major, and has exactly `shape` (so a flat loop reads it).
inline bool dense_as(const Tensor& t, const Shape& shape) {
  return t.sizes() == shape && t.is_contiguous();
}
}  // namespace detail

/// out = f(a, b) elementwise with broadcasting; out dtype = out_dtype (or the promoted dtype).
template <class F>
Tensor binary(const Tensor& a0, const Tensor& b0, F f, const char* op, bool compare = false) {
  check_device(a0, op);
  check_device(b0, op);
  DType dt = promote_types(a0.dtype(), b0.dtype());
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
template <class F>
void binary_(Tensor& self, const Tensor& other0, F f, const char* op) {
  check_device(self, op);
  check_device(other0, op);
  Shape shape = broadcast_shapes(self.sizes(), other0.sizes(), op);
  TT_CHECK(shape == self.sizes(), op, ": output with shape ", shape_str(self.sizes()),
           " doesn't match the broadcast shape ", shape_str(shape));
  const Tensor other = to_dtype(other0, self.dtype());
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

}  // namespace tinytorch::ops

// tinytorch/backend/cpu/elementwise.hpp — elementwise kernels on raw pointers.
//
// Functors (TT_HOST_DEVICE, shared with the CUDA backend) compute one element; the loops here
// apply them. Inputs are read through strides so that broadcasting costs no copy: a broadcast
// dim has stride 0 (core/shape.hpp). The output is always contiguous.
//   out[i] = f(a[offset_a(i)], b[offset_b(i)])   for i in [0, numel(shape))
// Fast paths: all operands contiguous (a flat loop the compiler vectorises) and a scalar b.
// This layer never sees Tensor (DESIGN.md). Chapter: chapters/01-training-loop.md.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/shape.hpp"  // Shape, Strides
#include "../../core/scalar.hpp"  // wrapping_add/sub/mul/pow: int64 arithmetic modulo 2^64

TT_NAMESPACE_BEGIN namespace backend::cpu {

// ---- functors ---------------------------------------------------------------------------------
// int64 add, sub, mul and neg wrap modulo 2^64 as PyTorch's (INT64_MAX + 1 == INT64_MIN) without
// C++'s undefined behaviour on signed overflow (core/scalar.hpp).
struct AddOp {
  template <class T> TT_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, int64_t>) return wrapping_add(a, b);
    else return a + b;
  }
};
struct SubOp {
  template <class T> TT_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, int64_t>) return wrapping_sub(a, b);
    else return a - b;
  }
};
struct MulOp {
  template <class T> TT_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, int64_t>) return wrapping_mul(a, b);
    else return a * b;
  }
};
struct DivOp { template <class T> TT_HOST_DEVICE T operator()(T a, T b) const { return a / b; } };
struct PowOp { template <class T> TT_HOST_DEVICE T operator()(T a, T b) const { return std::pow(a, b); } };
struct MaxOp { template <class T> TT_HOST_DEVICE T operator()(T a, T b) const { return a > b ? a : b; } };
struct EqOp { template <class T> TT_HOST_DEVICE int64_t operator()(T a, T b) const { return a == b; } };
struct NeOp { template <class T> TT_HOST_DEVICE int64_t operator()(T a, T b) const { return a != b; } };
struct LtOp { template <class T> TT_HOST_DEVICE int64_t operator()(T a, T b) const { return a < b; } };
struct LeOp { template <class T> TT_HOST_DEVICE int64_t operator()(T a, T b) const { return a <= b; } };
struct GtOp { template <class T> TT_HOST_DEVICE int64_t operator()(T a, T b) const { return a > b; } };
struct GeOp { template <class T> TT_HOST_DEVICE int64_t operator()(T a, T b) const { return a >= b; } };

struct NegOp {
  template <class T> TT_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_same_v<T, int64_t>) return Scalar::wrapping_neg(x);  // -INT64_MIN == INT64_MIN
    else return -x;
  }
};
struct ExpOp { template <class T> TT_HOST_DEVICE T operator()(T x) const { return std::exp(x); } };
struct LogOp { template <class T> TT_HOST_DEVICE T operator()(T x) const { return std::log(x); } };
struct SqrtOp { template <class T> TT_HOST_DEVICE T operator()(T x) const { return std::sqrt(x); } };
struct AbsOp {  // |-0.0| = +0.0 as torch.abs (the sign bit is cleared); NaN stays NaN; |INT64_MIN| == INT64_MIN
  template <class T> TT_HOST_DEVICE T operator()(T x) const { return x < T(0) ? NegOp{}(x) : (x == T(0) ? T(0) : x); }
};
struct ReluOp {  // NaN stays NaN and -0.0 stays -0.0, as torch.relu (x < 0 is false for both)
  template <class T> TT_HOST_DEVICE T operator()(T x) const { return x < T(0) ? T(0) : x; }
};
struct TanhOp { template <class T> TT_HOST_DEVICE T operator()(T x) const { return std::tanh(x); } };
struct SigmoidOp {
  // 1/(1+e^-x) for x >= 0 and e^x/(1+e^x) otherwise: no overflow for large |x|.
  template <class T> TT_HOST_DEVICE T operator()(T x) const {
    if (x >= 0) return T(1) / (T(1) + std::exp(-x));
    T e = std::exp(x);
    return e / (T(1) + e);
  }
};
struct PowScalarOp {
  double e;  // for int64 x: integral and in [0, 2^63) (the caller checks; tinytorch::pow takes the
             // exact int64 path, wrapping_pow with an int64 exponent, for an integral Scalar)
  template <class T> TT_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_same_v<T, int64_t>) {
      return wrapping_pow(x, static_cast<int64_t>(e));
    } else {
      if (e == 2.0) return x * x;
      if (e == 1.0) return x;
      return static_cast<T>(std::pow(static_cast<double>(x), e));
    }
  }
};

// ---- loops ------------------------------------------------------------------------------------

/// y[i] = f(x[i]) over n contiguous elements.
template <class T, class U, class F>
void unary_kernel(const T* x, U* y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

/// Walks a multi-index over `shape` in row-major order, tracking each operand's offset.
/// Calls body(out_index, off_a, off_b) once per element.
template <class Body>
void strided_loop2(const Shape& shape, const Strides& sa,
                   const Strides& sb, Body body) {
  const int nd = static_cast<int>(shape.size());
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n == 0) return;
  if (nd == 0) { body(0, 0, 0); return; }
  Shape idx(nd, 0);  // the multi-index over the outer dims
  const int64_t inner = shape[nd - 1], ia = sa[nd - 1], ib = sb[nd - 1];
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < n; i += inner) {
    for (int64_t j = 0; j < inner; ++j) body(i + j, oa + j * ia, ob + j * ib);
    // advance the multi-index over the outer dims
    for (int d = nd - 2; d >= 0; --d) {
      if (++idx[d] < shape[d]) { oa += sa[d]; ob += sb[d]; break; }
      oa -= sa[d] * (shape[d] - 1);
      ob -= sb[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

/// out[i] = f(a[.], b[.]) with a and b read through (broadcast) strides; out contiguous.
/// `contiguous` says both a and b are dense with the output's shape (no broadcasting).
template <class T, class U, class F>
void binary_kernel(const T* a, const Strides& sa, const T* b,
                   const Strides& sb, U* out, const Shape& shape,
                   bool contiguous, F f) {
  if (contiguous) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
    return;
  }
  strided_loop2(shape, sa, sb, [&](int64_t i, int64_t oa, int64_t ob) { out[i] = f(a[oa], b[ob]); });
}

/// out[i] = f(a[i], s) for a scalar s.
template <class T, class U, class F>
void scalar_kernel(const T* a, T s, U* out, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], s);
}

/// Copies a strided source into a dense destination, converting the element type.
template <class S, class D>
void copy_kernel(const S* src, const Strides& ss, D* dst,
                 const Shape& shape) {
  Strides zero(shape.size(), 0);
  strided_loop2(shape, ss, zero, [&](int64_t i, int64_t os, int64_t) { dst[i] = static_cast<D>(src[os]); });
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cpu

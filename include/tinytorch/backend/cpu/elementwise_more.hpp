// tinytorch/backend/cpu/elementwise_more.hpp — the functors of the second batch of pointwise ops
// (maximum/minimum, pow of two tensors, floor_divide/remainder/fmod, clamp) and a three-operand
// strided loop (where, clamp with tensor bounds).
//
// Math, per element (a, b: the two operands; T the computation type):
//   maximum(a, b) = NaN if either is NaN, else the larger      (torch.maximum; minimum likewise)
//   pow(a, b)     = a^b; for int64 exact repeated squaring (wrapping on overflow), and a
//                   negative exponent gives 1 for a = 1, +-1 for a = -1, 0 otherwise (torch.pow)
//   floor_divide  = floor(a / b), computed as (a - fmod(a, b)) / b with Python's fix-ups, so
//                   a == floor_divide(a, b) * b + remainder(a, b) holds (c10::div_floor_floating);
//                   b == 0 gives IEEE a / b
//   remainder     = a - floor(a / b) * b: the sign of b (Python's %);   fmod = C's fmod: the sign of a
//   clamp(x)      = min(max(x, lo), hi): NaN x stays NaN, lo > hi gives hi (torch.clamp)
// Integer division by zero is not the functors' business: the ops layer refuses it first
// (PyTorch: "ZeroDivisionError"), and INT64_MIN / -1, which traps on x86, is computed without
// dividing. Functors are TT_HOST_DEVICE, shared with a future CUDA backend.
// This layer never sees Tensor (DESIGN.md). Chapter: chapters/01-training-loop.md.
// Reference: PyTorch 1.13 aten/src/ATen/native/cpu/BinaryOpsKernel.cpp, c10/util/generic_math.h.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/shape.hpp"  // Shape, Strides

TT_NAMESPACE_BEGIN namespace backend::cpu {

namespace detail {
template <class T> TT_HOST_DEVICE bool is_nan(T v) { return v != v; }  // false for integers
}  // namespace detail

/// torch.maximum: NaN wins; otherwise the larger of the two.
struct MaximumOp {
  template <class T> TT_HOST_DEVICE T operator()(T a, T b) const {
    if (detail::is_nan(a)) return a;
    if (detail::is_nan(b)) return b;
    return a > b ? a : b;
  }
};
/// torch.minimum: NaN wins; otherwise the smaller of the two.
struct MinimumOp {
  template <class T> TT_HOST_DEVICE T operator()(T a, T b) const {
    if (detail::is_nan(a)) return a;
    if (detail::is_nan(b)) return b;
    return a < b ? a : b;
  }
};

/// torch.pow(Tensor, Tensor) / pow(Scalar, Tensor) on one element.
struct PowTensorOp {
  template <class T> TT_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b < 0) {  // PyTorch's powi: only 1 and -1 have integer reciprocals
        if (a == 1) return 1;
        if (a == -1) return (b % 2) ? -1 : 1;
        return 0;
      }
      // Square-and-multiply in uint64: the same bits as PyTorch's int64 loop, without signed overflow.
      uint64_t r = 1, base = static_cast<uint64_t>(a);
      for (T e = b; e; e /= 2) {
        if (e & 1) r *= base;
        base *= base;
      }
      return static_cast<T>(r);
    } else {
      return std::pow(a, b);
    }
  }
};

/// floor(a / b) (torch.floor_divide, torch.div(rounding_mode="floor")).
struct FloorDivideOp {
  template <class T> TT_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return 0;  // refused by the ops layer before the loop runs
      if (b == -1) return static_cast<T>(0 - static_cast<uint64_t>(a));  // INT64_MIN / -1 would trap
      const T q = a / b, r = a % b;
      return (r != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    } else {
      if (b == 0) return a / b;  // IEEE: +-inf, or NaN for 0 / 0
      T mod = std::fmod(a, b);
      T div = (a - mod) / b;
      if (mod != 0 && (b < 0) != (mod < 0)) div -= T(1);
      if (div == 0) return std::copysign(T(0), a / b);
      T floordiv = std::floor(div);
      if (div - floordiv > T(0.5)) floordiv += T(1);
      return floordiv;
    }
  }
};

/// a - floor(a / b) * b, with the sign of b (torch.remainder, Python's %).
struct RemainderOp {
  template <class T> TT_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0 || b == -1) return 0;  // b == 0 is refused before the loop; INT64_MIN % -1 would trap
      T r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    } else {
      T mod = std::fmod(a, b);
      if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
      return mod;
    }
  }
};

/// a - trunc(a / b) * b, with the sign of a (torch.fmod, C's fmod).
struct FmodOp {
  template <class T> TT_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0 || b == -1) return 0;  // as RemainderOp
      return a % b;
    } else {
      return std::fmod(a, b);
    }
  }
};

/// trunc(a / b) (torch.div(rounding_mode="trunc")): fmod's derivative with respect to b is -trunc(a/b).
struct TruncDivideOp {
  template <class T> TT_HOST_DEVICE T operator()(T a, T b) const { return std::trunc(a / b); }
};

/// clamp with optional scalar bounds already converted to T (has_lo/has_hi: the bound is given).
/// min(max(x, lo), hi) as PyTorch's clamp kernel: a NaN x stays NaN, lo > hi gives hi. (A NaN
/// bound makes the whole result NaN; the ops layer handles that before the loop, as PyTorch.)
template <class T>
struct ClampScalarOp {
  bool has_lo, has_hi;
  T lo, hi;
  TT_HOST_DEVICE T operator()(T x) const {
    if (detail::is_nan(x)) return x;
    if (has_lo && x < lo) x = lo;
    if (has_hi && x > hi) x = hi;
    return x;
  }
};

/// clamp with tensor bounds on one element: NaN in x or in a given bound gives NaN (PyTorch's
/// clamp kernel returns NaN for a NaN bound; its vectorised maximum/minimum propagate NaN).
struct ClampTensorOp {
  bool has_lo, has_hi;
  template <class T> TT_HOST_DEVICE T operator()(T x, T lo, T hi) const {
    if (has_lo) x = MaximumOp{}(x, lo);
    if (has_hi) x = MinimumOp{}(x, hi);
    return x;
  }
};

/// Walks a multi-index over `shape` in row-major order tracking three operands' offsets (strides
/// s0, s1, s2; a broadcast dim has stride 0). Calls body(out_index, off0, off1, off2).
template <class Body>
void strided_loop3(const Shape& shape, const Strides& s0,
                   const Strides& s1, const Strides& s2, Body body) {
  const int nd = static_cast<int>(shape.size());
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n == 0) return;
  if (nd == 0) { body(0, 0, 0, 0); return; }
  Shape idx(nd, 0);  // the multi-index over the outer dims
  const int64_t inner = shape[nd - 1], i0 = s0[nd - 1], i1 = s1[nd - 1], i2 = s2[nd - 1];
  int64_t o0 = 0, o1 = 0, o2 = 0;
  for (int64_t i = 0; i < n; i += inner) {
    for (int64_t j = 0; j < inner; ++j) body(i + j, o0 + j * i0, o1 + j * i1, o2 + j * i2);
    for (int d = nd - 2; d >= 0; --d) {  // advance the multi-index over the outer dims
      if (++idx[d] < shape[d]) { o0 += s0[d]; o1 += s1[d]; o2 += s2[d]; break; }
      o0 -= s0[d] * (shape[d] - 1);
      o1 -= s1[d] * (shape[d] - 1);
      o2 -= s2[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

/// out[i] = f(a[.], b[.], c[.]) with the operands read through (broadcast) strides; out contiguous.
template <class A, class B, class C, class U, class F>
void ternary_kernel(const A* a, const Strides& sa, const B* b, const Strides& sb,
                    const C* c, const Strides& sc, U* out, const Shape& shape, F f) {
  strided_loop3(shape, sa, sb, sc, [&](int64_t i, int64_t oa, int64_t ob, int64_t oc) {
    out[i] = f(a[oa], b[ob], c[oc]);
  });
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cpu

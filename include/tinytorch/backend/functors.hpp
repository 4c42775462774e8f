// tinytorch/backend/functors.hpp — the per-element functions of the pointwise ops, written once
// for every backend.
// Each functor is a small struct with a TT_HOST_DEVICE operator() (core/config.hpp: __host__
// __device__ under nvcc, nothing otherwise), so the same body runs in the CPU loops
// (backend/cpu/elementwise.hpp) and in the CUDA kernels (backend/cuda/*.cuh; in the kernel
// simulator as plain host code). They are named structs, not lambdas: a kernel's arguments must be
// trivially copyable values, and nvcc would need --extended-lambda for device lambdas.
// Math, per element (a, b: the operands; T the computation type: float, double or int64_t):
//   add/sub/mul/neg      int64 wraps modulo 2^64 as PyTorch's (core/scalar.hpp's wrapping_*)
//   div, pow, exp, log, sqrt, tanh                   the C++ <cmath> functions (IEEE results)
//   abs, relu            |-0.0| = +0.0, relu keeps NaN and -0.0 (torch.abs, torch.relu)
//   sigmoid              1/(1+e^-x) for x >= 0, e^x/(1+e^x) otherwise: no overflow
//   gelu                 x/2 (1 + erf(x/sqrt 2)); tanh approximation
//                        x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (torch.nn.functional.gelu)
//   eq/ne/lt/le/gt/ge    0 or 1 as int64_t
//   maximum(a, b)        NaN if either is NaN, else the larger (torch.maximum; minimum likewise)
//   pow(a, b)            int64: exact repeated squaring (wrapping); a negative exponent gives 1
//                        for a = 1, +-1 for a = -1, 0 otherwise (torch.pow)
//   floor_divide         floor(a / b) computed as (a - fmod(a, b)) / b with Python's fix-ups
//                        (c10::div_floor_floating); b == 0 gives IEEE a / b
//   trunc_divide         trunc(a / b): C's integer division; float b == 0 gives IEEE a / b
//   trunc(x)             rounds toward zero; int64 unchanged (torch.trunc)
//   remainder            a - floor(a / b) * b: the sign of b (Python's %);   fmod: the sign of a
//   clamp(x)             min(max(x, lo), hi): NaN x stays NaN, lo > hi gives hi (torch.clamp)
// Integer division by zero is refused by the ops layer before any loop runs; INT64_MIN / -1,
// which traps on x86, is computed without dividing.
// backend/cpu/elementwise.hpp re-exports every functor into backend::cpu (backend::cpu::AddOp).
// Chapter: chapters/01-training-loop.md; chapters/10-gpu-kernels.md (shared functors).
// Reference: PyTorch 1.13 aten/src/ATen/native/cpu/BinaryOpsKernel.cpp, c10/util/generic_math.h;
// PyTorch's functors shared by its CPU and CUDA kernels (aten/src/ATen/native/cuda/Loops.cuh).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "tinytorch/core/config.hpp"
#include "tinytorch/core/half.hpp"    // is_reduced_floating_point_v (Opmath, ElementOp)
#include "tinytorch/core/scalar.hpp"  // wrapping_add/sub/mul/pow, Scalar::wrapping_neg: int64 modulo 2^64

TT_NAMESPACE_BEGIN namespace backend {

// ---- arithmetic, comparisons, unary math (ops/elementwise.hpp) --------------------------------
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
struct TruncOp {  // rounds toward zero (torch.trunc); an integer is its own trunc; NaN, inf and -0.0 stay
  template <class T> TT_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) return x;
    else return std::trunc(x);
  }
};
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
/// torch.nn.functional.gelu(x, approximate): "none" (tanh = false) x/2 (1 + erf(x / sqrt 2)), the
/// Gaussian CDF times x; "tanh" 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Computed in T with
/// PyTorch's constants and order of operations (aten/src/ATen/native/cpu/Activation.cpp, GeluKernelImpl).
struct GeluOp {
  bool tanh_approx = false;
  template <class T> TT_HOST_DEVICE T operator()(T x) const {
    if (tanh_approx) {
      const T kBeta = static_cast<T>(1.41421356237309504880 * 1.12837916709551257390 * 0.5);  // sqrt(2/pi)
      const T kKappa = static_cast<T>(0.044715);
      const T inner = kBeta * (x + kKappa * x * x * x);
      return static_cast<T>(0.5) * x * (static_cast<T>(1) + std::tanh(inner));
    }
    const T kAlpha = static_cast<T>(0.70710678118654752440);  // 1/sqrt(2)
    return x * static_cast<T>(0.5) * (static_cast<T>(1) + std::erf(x * kAlpha));
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

// ---- maximum/minimum, pow, floor_divide/remainder/fmod, clamp --------------------------------
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

/// trunc(a / b) (torch.div(rounding_mode="trunc")): the quotient rounded toward zero, C's integer
/// division; fmod's derivative with respect to b is -trunc(a/b). Float: b == 0 gives IEEE a / b.
struct TruncDivideOp {
  template <class T> TT_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return 0;  // refused by the ops layer before the loop runs
      if (b == -1) return static_cast<T>(0 - static_cast<uint64_t>(a));  // INT64_MIN / -1 would trap
      return a / b;
    } else {
      return std::trunc(a / b);
    }
  }
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

// ---- wrappers the ops layer builds around the functors above, and the ---
// ---- per-element backward formulas of the pointwise autograd nodes ----------------------------
// They replace lambdas in ops/ and autograd/ (a kernel argument must be a named, trivially
// copyable struct). Each computes exactly what the lambda it replaces computed, in the same
// types, so CPU results are unchanged.

/// True for the functors a CUDA kernel can take: class types that are default constructible. A
/// C++17 lambda's closure type has a deleted default constructor and a function pointer is not a
/// class, so neither qualifies; ops/ throws "not implemented for CUDA tensors yet" for them on a
/// CUDA tensor (their CPU path is unchanged). Named functors must be TT_HOST_DEVICE.
/// The wrappers below are kernel functors when what they wrap is (a CastTo of a function pointer
/// is not). Named functors must be TT_HOST_DEVICE.
template <class F>
struct kernel_functor : std::bool_constant<std::is_class_v<F> && std::is_default_constructible_v<F>> {};
template <class F>
inline constexpr bool is_kernel_functor_v = kernel_functor<F>::value;

/// static_cast<T>(f(args...)): the result of f converted to the output type T (ops::binary etc.).
template <class T, class F>
struct CastTo {
  F f;
  template <class... A> TT_HOST_DEVICE T operator()(A... a) const { return static_cast<T>(f(a...)); }
};
template <class T, class F> struct kernel_functor<CastTo<T, F>> : kernel_functor<F> {};
/// f computed in float on float16/bfloat16 operands and converted once to Out (the 16-bit type, or
/// int64 for a comparison): what the CUDA backend's 16-bit kernels run per element, PyTorch's
/// "opmath" rule (load 16 bits, compute in float32, round once when storing).
template <class Out, class F>
struct Opmath {
  F f;
  template <class... A> TT_HOST_DEVICE Out operator()(A... a) const {
    return static_cast<Out>(f(static_cast<float>(a)...));
  }
};
template <class Out, class F> struct kernel_functor<Opmath<Out, F>> : kernel_functor<F> {};
/// The functor a kernel over T elements runs for the op f, writing Out: CastTo<Out, F> (f in T),
/// or Opmath<Out, F> when T is Half or BFloat16 (f in float).
template <class T, class Out, class F>
using ElementOp = std::conditional_t<is_reduced_floating_point_v<T>, Opmath<Out, F>, CastTo<Out, F>>;
/// f(x), ignoring a second operand (ops::unary_ runs on the in-place binary kernel).
template <class F>
struct FirstOnly {
  F f;
  template <class T> TT_HOST_DEVICE auto operator()(T x, T) const { return f(x); }
};
template <class F> struct kernel_functor<FirstOnly<F>> : kernel_functor<F> {};
/// b (copy_, cat, slice backward: writes the second operand into the first).
struct SecondOp { template <class T> TT_HOST_DEVICE T operator()(T, T b) const { return b; } };
/// v for every element (fill_, zero_).
template <class T>
struct FillOp {
  T v;
  TT_HOST_DEVICE T operator()(T) const { return v; }
};
/// 0 for every element (CopySlices' backward).
struct ZeroOp { template <class T> TT_HOST_DEVICE T operator()(T) const { return T(0); } };
/// s - x (rsub: a number minus a tensor; int64 wraps as SubOp).
struct RsubOp { template <class T> TT_HOST_DEVICE T operator()(T x, T s) const { return SubOp{}(s, x); } };
/// a + alpha * b computed in double (add with a floating alpha; add_ / sub_ with alpha != 1).
struct AddScaledOp {
  double alpha;
  template <class T> TT_HOST_DEVICE double operator()(T a, T b) const { return a + alpha * b; }
};
/// a + k * b modulo 2^64 for int64 (add / add_ with an integral alpha); other types: a (not reached).
struct AddScaledInt64Op {
  int64_t k;
  template <class T> TT_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, int64_t>) return wrapping_add(a, wrapping_mul(k, b));
    else return a;
  }
};
/// f(double(x), v) for a double v (in-place ops with a floating number: add_(2.5), mul_(v), ...).
template <class F>
struct BindDouble {
  F f;
  double v;
  template <class T> TT_HOST_DEVICE T operator()(T x) const {
    return static_cast<T>(f(static_cast<double>(x), v));
  }
};
template <class F> struct kernel_functor<BindDouble<F>> : kernel_functor<F> {};
/// f(x, s) for an int64 x and int64 s (scalar_int64_); other types: x (not reached).
template <class F>
struct BindInt64 {
  F f;
  int64_t s;
  template <class T> TT_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_same_v<T, int64_t>) return f(x, s);
    else return x;
  }
};
template <class F> struct kernel_functor<BindInt64<F>> : kernel_functor<F> {};
/// a^e modulo 2^64 for int64 a and e >= 0 (pow of an int64 tensor with an integral exponent).
struct WrappingPowOp {
  TT_HOST_DEVICE int64_t operator()(int64_t a, int64_t e) const { return wrapping_pow(a, e); }
};
/// 1 where x is NaN, else 0, in x's type (the NaN mask of max()/min() backward).
struct IsNanOp { template <class T> TT_HOST_DEVICE T operator()(T x) const { return x != x ? T(1) : T(0); } };
/// The elements that share max()/min()'s gradient: x == y, or x is NaN when y is (int64 0/1).
struct ExtremeMaskOp {
  template <class T> TT_HOST_DEVICE int64_t operator()(T x, T y) const { return y != y ? (x != x) : (x == y); }
};
/// r = (1 - momentum) * r + momentum * v (batch_norm's running statistics, in double).
struct RunningStatOp {
  double momentum;
  template <class T> TT_HOST_DEVICE double operator()(T r, T v) const { return (1 - momentum) * r + momentum * v; }
};

/// c != 0 ? x : y (torch.where; c is the int64 0/1 condition).
struct WhereOp {
  template <class T> TT_HOST_DEVICE T operator()(int64_t c, T x, T y) const { return c != 0 ? x : y; }
};

// Backward of maximum/minimum, pow of tensors, clamp and where, per element
// (autograd/functions/elementwise.hpp).
/// maximum/minimum: the gradient of operand a (for_a) or b from (g, a, b): 0 where it lost, g/2 on
/// a tie, g otherwise (a NaN compares false, so it passes g to both).
struct MaxMinGradOp {
  bool is_max, for_a;
  template <class T> TT_HOST_DEVICE T operator()(T g, T x, T y) const {
    const T share = x == y ? g / T(2) : g;
    const bool lost = for_a ? (is_max ? x < y : x > y) : (is_max ? x > y : x < y);
    return lost ? T(0) : share;
  }
};
/// a ** b, d/da from (g, a, b): 0 where b == 0, else g * (b * a^(b-1)).
struct PowTensorGradAOp {
  template <class T> TT_HOST_DEVICE T operator()(T g, T x, T e) const {
    return e == T(0) ? T(0) : g * (e * std::pow(x, e - T(1)));
  }
};
/// a ** b, the factor of d/db from (a, b, y = a^b): 0 where a == 0 and b >= 0, else y * ln a.
struct PowTensorGradBOp {
  template <class T> TT_HOST_DEVICE T operator()(T x, T e, T r) const {
    return (x == T(0) && e >= T(0)) ? T(0) : r * std::log(x);
  }
};
/// s ** b, d/db from (g, y, b): g * (0 where s == 0 and b >= 0, else y * ln s); ln s computed in
/// double and rounded to T (PyTorch: Scalar::log()).
struct PowScalarBaseGradOp {
  double s, log_s;
  template <class T> TT_HOST_DEVICE T operator()(T g, T r, T e) const {
    return g * ((s == 0 && e >= T(0)) ? T(0) : r * static_cast<T>(log_s));
  }
};
/// clamp with number bounds, d/dx from (g, x): g where lo <= x <= hi (bounds in T), else 0.
struct ClampScalarGradOp {
  bool has_lo, has_hi;
  double lo, hi;
  template <class T> TT_HOST_DEVICE T operator()(T g, T x) const {
    const T l = static_cast<T>(lo), h = static_cast<T>(hi);
    return ((!has_lo || x >= l) && (!has_hi || x <= h)) ? g : T(0);
  }
};
/// clamp with tensor bounds: where the gradient goes, from (x, lo, hi), as int64 0/1:
/// which 0 (x): lo <= x <= hi; 1 (lo): x < lo and (lo < hi when hi is given);
/// 2 (hi): x > hi or (hi < lo when lo is given). PyTorch's clamp_backward_min_max.
struct ClampTensorMaskOp {
  bool has_lo, has_hi;
  int which;
  template <class T> TT_HOST_DEVICE int64_t operator()(T v, T l, T h) const {
    if (which == 0) return (!has_lo || v >= l) && (!has_hi || v <= h);
    if (which == 1) return v < l && (!has_hi || l < h);
    return v > h || (has_lo && h < l);
  }
};

// Pointwise backward: dx = f(g, x, y) with g = dy, x the input, y the output (autograd/functions/elementwise.hpp
// Pointwise; a value the node did not save is never read).
/// exp: dx = g * y
struct ExpBackwardOp { template <class T> TT_HOST_DEVICE T operator()(T g, T, T y) const { return g * y; } };
/// log: dx = g / x
struct LogBackwardOp { template <class T> TT_HOST_DEVICE T operator()(T g, T x, T) const { return g / x; } };
/// sqrt: dx = g / (2 y)
struct SqrtBackwardOp { template <class T> TT_HOST_DEVICE T operator()(T g, T, T y) const { return g / (2 * y); } };
/// abs: dx = g * sign(x), sign(0) = 0 (g * 0 keeps NaN g as NaN, as PyTorch's sgn(x) * g)
struct AbsBackwardOp {
  template <class T> TT_HOST_DEVICE T operator()(T g, T x, T) const { return x > 0 ? g : (x < 0 ? -g : g * 0); }
};
/// relu: dx = (y <= 0 ? 0 : g), PyTorch's threshold_backward (a NaN input passes g)
struct ReluBackwardOp {
  template <class T> TT_HOST_DEVICE T operator()(T g, T, T y) const { return y <= 0 ? g * 0 : g; }
};
/// sigmoid: dx = g * y * (1 - y)
struct SigmoidBackwardOp {
  template <class T> TT_HOST_DEVICE T operator()(T g, T, T y) const { return g * y * (1 - y); }
};
/// tanh: dx = g * (1 - y^2)
struct TanhBackwardOp {
  template <class T> TT_HOST_DEVICE T operator()(T g, T, T y) const { return g * (1 - y * y); }
};
/// gelu: "none"  dx = g (Phi(x) + x phi(x)), Phi(x) = (1 + erf(x/sqrt 2))/2, phi(x) = e^(-x^2/2)/sqrt(2 pi);
///       "tanh"  u = sqrt(2/pi)(x + 0.044715 x^3), t = tanh u:
///               dx = g (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2))
/// (PyTorch's GeluBackwardKernelImpl, aten/src/ATen/native/cpu/Activation.cpp.)
struct GeluBackwardOp {
  bool tanh_approx = false;
  template <class T> TT_HOST_DEVICE T operator()(T g, T x, T) const {
    if (tanh_approx) {
      const T kBeta = static_cast<T>(1.41421356237309504880 * 1.12837916709551257390 * 0.5);
      const T kKappa = static_cast<T>(0.044715);
      const T x_sq = x * x;
      const T inner = kBeta * (x + kKappa * x_sq * x);
      const T t = std::tanh(inner);
      const T left = static_cast<T>(0.5) * x;
      const T right = static_cast<T>(1) + t;
      const T left_derivative = static_cast<T>(0.5) * right;
      const T right_derivative = left * (static_cast<T>(1) - t * t) * kBeta * (static_cast<T>(1) + static_cast<T>(3) * kKappa * x_sq);
      return g * (left_derivative + right_derivative);
    }
    const T kAlpha = static_cast<T>(0.70710678118654752440);                           // 1/sqrt(2)
    const T kBeta = static_cast<T>(1.12837916709551257390 * 0.70710678118654752440 * 0.5);  // 1/sqrt(2 pi)
    const T cdf = static_cast<T>(0.5) * (static_cast<T>(1) + std::erf(x * kAlpha));
    const T pdf = kBeta * std::exp(x * x * static_cast<T>(-0.5));
    return g * (cdf + x * pdf);
  }
};
/// pow(x, p): dx = g * p * x^(p-1) in double (0 * g for p == 0)
struct PowBackwardOp {
  double p;
  template <class T> TT_HOST_DEVICE double operator()(T g, T x, T) const {
    return p == 0 ? g * 0 : g * p * std::pow(x, p - 1);
  }
};

}  TT_NAMESPACE_END  // namespace tinytorch::backend

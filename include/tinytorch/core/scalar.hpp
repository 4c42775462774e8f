// tinytorch/core/scalar.hpp — Scalar: a number that remembers whether it is an integer.
//
// What it implements: the argument type of the scalar overloads (t + s, t.add_(s), t.fill_(s),
// full(shape, s), t.pow(s), ...). A Scalar holds either an int64 or a double, as c10::Scalar
// does, so that
//   int64 tensor + 1     stays int64 and is exact for every int64 value (2^53 + 1 included:
//                        a double has only 53 bits of mantissa, so 2^53 + 1.0 == 2^53);
//   int64 tensor + 1.0   is float32 (PyTorch's type promotion: a floating scalar promotes an
//                        integer tensor to the default float dtype), and in place
//                        (add_(1.0) on an int64 tensor) it is PyTorch's error
//                        "result type Float can't be cast to the desired output type Long".
// Any C++ arithmetic value converts implicitly: integral types (bool, int, long, uint64_t <= 2^63-1)
// become integral Scalars, float and double become floating ones.
//
// Integer arithmetic on int64 tensors wraps around modulo 2^64 (two's complement), as PyTorch's
// does on every platform it supports: INT64_MAX + 1 == INT64_MIN. In C++ a signed overflow is
// undefined behaviour, so the wrapping_* helpers below compute in uint64_t (where overflow is
// defined modulo 2^64) and convert back (defined since C++20, and what every C++17 compiler does).
//
// Chapter: chapters/01-training-loop.md ("What a tensor is"). Reference: c10/core/Scalar.h,
// PyTorch's type promotion notes (torch.result_type).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN

class Scalar {
 public:
  /// From any arithmetic value: integral types give an integral Scalar, floating types a
  /// floating one. Throws tinytorch::Error for an unsigned value above INT64_MAX.
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Scalar(T v) {  // NOLINT: implicit on purpose, as c10::Scalar
    if constexpr (std::is_integral_v<T>) {
      if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t))
        TT_CHECK(v <= static_cast<T>(std::numeric_limits<int64_t>::max()),
                 "Scalar: value cannot be converted to type int64_t without overflow (got ", v, ")");
      integral_ = true;
      i_ = static_cast<int64_t>(v);
    } else {
      d_ = static_cast<double>(v);
    }
  }

  bool is_integral() const { return integral_; }
  bool is_floating_point() const { return !integral_; }
  /// The value as a double (rounded for integers beyond 2^53).
  double to_double() const { return integral_ ? static_cast<double>(i_) : d_; }
  /// The value as an int64. A floating value is truncated toward zero, as PyTorch's fill_(1.5)
  /// gives 1; NaN and values outside [-2^63, 2^63) throw PyTorch's error ("value cannot be
  /// converted to type int64_t without overflow"; PyTorch lets 2^63 itself through as INT64_MIN,
  /// an artefact of x86's conversion instruction, tinytorch refuses it: the C++ cast is undefined).
  int64_t to_int64(const char* op = "Scalar") const {
    if (integral_) return i_;
    TT_CHECK(d_ >= -9223372036854775808.0 && d_ < 9223372036854775808.0, op,
             ": value cannot be converted to type int64_t without overflow (got ", d_, ")");
    return static_cast<int64_t>(d_);
  }
  /// The value converted to T (double, float or int64_t; int64_t as to_int64).
  template <class T> T to(const char* op = "Scalar") const {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(to_int64(op));
    else return static_cast<T>(to_double());
  }
  Scalar operator-() const { return integral_ ? Scalar(wrapping_neg(i_)) : Scalar(-d_); }

  /// -x modulo 2^64 (so -INT64_MIN == INT64_MIN, as in PyTorch), without undefined behaviour.
  static TT_HOST_DEVICE int64_t wrapping_neg(int64_t x) { return static_cast<int64_t>(0 - static_cast<uint64_t>(x)); }

 private:
  bool integral_ = false;
  int64_t i_ = 0;
  double d_ = 0;
};

/// Integer arithmetic modulo 2^64, as int64 tensors compute in PyTorch (two's complement
/// wrapping), without C++'s undefined behaviour on signed overflow.
TT_HOST_DEVICE inline int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
TT_HOST_DEVICE inline int64_t wrapping_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
TT_HOST_DEVICE inline int64_t wrapping_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
/// a^e for e >= 0 by repeated squaring, modulo 2^64 (PyTorch's integer pow: 3^41 wraps to
/// -420491770248316829, 2^64 to 0, x^0 to 1).
TT_HOST_DEVICE inline int64_t wrapping_pow(int64_t a, int64_t e) {
  uint64_t result = 1, base = static_cast<uint64_t>(a);
  for (uint64_t k = static_cast<uint64_t>(e); k > 0; k >>= 1) {
    if (k & 1) result *= base;
    base *= base;
  }
  return static_cast<int64_t>(result);
}

TT_NAMESPACE_END  // namespace tinytorch

// tinytorch/core/half.hpp — the two 16-bit floating point formats: Half (torch.float16) and
// BFloat16 (torch.bfloat16), as storage types with exact conversions to and from float.
// Bit layouts (sign | exponent | mantissa), and what follows from them:
//   float32   1 | 8 (bias 127) | 23   max 3.4e38   eps 2^-23 = 1.19e-7   min normal 2^-126
//   float16   1 | 5 (bias 15)  | 10   max 65504    eps 2^-10 = 9.77e-4   min normal 2^-14 = 6.10e-5,
//                                                   smallest subnormal 2^-24 = 5.96e-8
//   bfloat16  1 | 8 (bias 127) | 7    max 3.39e38  eps 2^-7 = 7.81e-3    min normal 2^-126
// bfloat16 is the top half of a float32: the same range, 16 fewer mantissa bits. float16 keeps 3
// more mantissa bits and gives up range: a gradient below 2^-25 becomes 0 (the reason for loss
// scaling, chapter 11).
// Conversions follow PyTorch's c10/util/Half.h and BFloat16.h bit for bit
// (tests/test_half_conversion.cpp checks all 65,536 patterns of each type, and every rounding
// boundary, against PyTorch):
//   to float:    exact (every float16 and bfloat16 value is a float32 value). A float16 NaN keeps
//                its payload and comes out quiet (bit 22 set, as c10's); a bfloat16 NaN is unchanged.
//   from float:  round to nearest, ties to even. float16: NaN -> 0x7E00 with the sign kept,
//                |x| >= 65520 -> inf, |x| below 2^-24 rounds to a subnormal or (at most 2^-25) to 0.
//                bfloat16: NaN -> 0xFFFF, else the float's bits rounded to the top 16. 0xFFFF is
//                what PyTorch's CPU tensor conversion writes (its AVX2/AVX-512 cvtfp32_bf16 blends in
//                0xFFFF for NaN lanes; checked with 1.13); c10's scalar round_to_nearest_even, and
//                PyTorch's CUDA kernels, write 0x7FC0. Both are NaN; tinytorch writes 0xFFFF on
//                every device, and a test pins it.
//   from double or int64: through float first (as c10, which has only a float constructor: a
//                double can round twice).
// Arithmetic is not defined on these types: tinytorch computes every op on float16/bfloat16
// tensors in float32 and rounds the result once (ops/dispatch.hpp, "float16 and bfloat16"), as
// PyTorch's CPU kernels do with their "opmath" type. The functions are TT_HOST_DEVICE so the
// CUDA backend's copy kernel converts with the same code (nvcc, and the simulator).
// Chapter: chapters/11-mixed-precision.md. References: IEEE 754-2008 binary16; Google Brain's
// bfloat16; PyTorch c10/util/Half.h (fp16_ieee_from_fp32_value), c10/util/BFloat16.h.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tinytorch/core/config.hpp"  // TT_HOST_DEVICE, TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

// With the x86 F16C instructions (-mf16c, or -march=native on a CPU that has them) the float16
// conversions below use them: one instruction each way instead of the bit manipulation, the
// same results (a NaN is still written as 0x7E00 with its sign: the instruction would keep part
// of its payload). Not in CUDA device code.
#if defined(__F16C__) && !defined(__CUDA_ARCH__)
#include <immintrin.h>
#define TT_HALF_F16C 1
#else
#define TT_HALF_F16C 0
#endif

// In CUDA device code compiled by nvcc the conversions use the GPU's conversion instructions
// through cuda_fp16.h / cuda_bf16.h (__float2half_rn, __half2float, __float2bfloat16_rn: one cvt
// each, as c10::Half and c10::BFloat16 do on CUDA), the same results: round to nearest even is
// exact IEEE behaviour, and NaN (whose bits the instructions choose differently) keeps the paths
// below. The kernel simulator compiles device code as host code, so it runs the bit manipulation.
#if defined(__CUDACC__) && defined(__CUDA_ARCH__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define TT_HALF_CUDA 1
#else
#define TT_HALF_CUDA 0
#endif

TT_NAMESPACE_BEGIN

namespace detail {
TT_HOST_DEVICE inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
TT_HOST_DEVICE inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// float16 bits -> float (exact).
TT_HOST_DEVICE inline float half_bits_to_float(uint16_t h) {
#if TT_HALF_F16C
  return _cvtsh_ss(h);  // a NaN comes out quiet with its payload, as below
#endif
#if TT_HALF_CUDA
  if ((h & 0x7C00u) != 0x7C00u) return __half2float(__ushort_as_half(h));  // finite: exact
#endif
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0x1F) {  // inf; a NaN keeps its payload and comes out quiet (as c10's, whose float math quiets it)
    return bits_float(sign | 0x7F800000u | (mant ? 0x400000u : 0u) | (mant << 13));
  }
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return bits_float(sign | float_bits(v));
  }
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));  // rebias 15 -> 127
}

/// float -> float16 bits, round to nearest even.
TT_HOST_DEVICE inline uint16_t float_to_half_bits(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return sign | 0x7E00u;  // NaN
#if TT_HALF_F16C
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
#if TT_HALF_CUDA
  return __half_as_ushort(__float2half_rn(f));
#endif
  if (a >= 0x47800000u) return sign | 0x7C00u;  // >= 65536 (and inf): inf; 65520..65536 rounds up below
  const uint32_t e = a >> 23;                   // biased float exponent
  if (e >= 113) {                               // a normal float16 (>= 2^-14)
    uint32_t h = ((e - 112) << 10) | ((a & 0x7FFFFFu) >> 13);
    const uint32_t rem = a & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent: right
    return static_cast<uint16_t>(sign | h);
  }
  if (e < 102) return sign;  // below 2^-25: rounds to zero (float subnormals too)
  // A float16 subnormal: the value in units of 2^-24 is m * 2^(e - 126), m the 24-bit significand.
  const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126 - e;  // 14..24
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1u))) ++q;  // may become 0x400: the smallest normal
  return static_cast<uint16_t>(sign | q);
}

/// bfloat16 bits -> float (exact).
TT_HOST_DEVICE inline float bfloat16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

/// float -> bfloat16 bits, round to nearest even; NaN -> 0xFFFF (PyTorch's CPU tensor conversion).
TT_HOST_DEVICE inline uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0xFFFFu;
#if TT_HALF_CUDA
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
#endif
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
}  // namespace detail

/// torch.float16 (c10::Half): 16 bits in memory, converted to float to compute.
struct Half {
  uint16_t x = 0;
  Half() = default;
  TT_HOST_DEVICE explicit Half(float f) : x(detail::float_to_half_bits(f)) {}
  TT_HOST_DEVICE explicit Half(double d) : Half(static_cast<float>(d)) {}
  TT_HOST_DEVICE explicit Half(int64_t i) : Half(static_cast<float>(i)) {}
  TT_HOST_DEVICE explicit Half(int i) : Half(static_cast<float>(i)) {}  // T(0) in a kernel templated on T
  TT_HOST_DEVICE operator float() const { return detail::half_bits_to_float(x); }
  TT_HOST_DEVICE static Half from_bits(uint16_t bits) {
    Half h;
    h.x = bits;
    return h;
  }
};

/// torch.bfloat16 (c10::BFloat16): the top 16 bits of a float32.
struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  TT_HOST_DEVICE explicit BFloat16(float f) : x(detail::float_to_bfloat16_bits(f)) {}
  TT_HOST_DEVICE explicit BFloat16(double d) : BFloat16(static_cast<float>(d)) {}
  TT_HOST_DEVICE explicit BFloat16(int64_t i) : BFloat16(static_cast<float>(i)) {}
  TT_HOST_DEVICE explicit BFloat16(int i) : BFloat16(static_cast<float>(i)) {}  // T(0) in a kernel templated on T
  TT_HOST_DEVICE operator float() const { return detail::bfloat16_bits_to_float(x); }
  TT_HOST_DEVICE static BFloat16 from_bits(uint16_t bits) {
    BFloat16 b;
    b.x = bits;
    return b;
  }
};

/// True for the 16-bit float element types, Half and BFloat16 (c10's is_reduced_floating_point;
/// the DType twin is is_reduced_floating_point(DType) in core/dtype.hpp).
template <class T>
constexpr bool is_reduced_floating_point_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// The type a kernel computes a T element in (PyTorch's at::opmath_type): float for Half and
/// BFloat16 (load 16 bits, compute in float32, round once when storing), T itself otherwise.
template <class T>
using opmath_type = std::conditional_t<is_reduced_floating_point_v<T>, float, T>;

TT_NAMESPACE_END  // namespace tinytorch

// tests/test_half_conversion.cpp — float16 and bfloat16 conversions (core/half.hpp) bit for bit
// against PyTorch: all 65,536 patterns of each type, every rounding boundary and a list of specials
// (tests/reference/gen_half.py -> half_ref.hpp). Needs only core/half.hpp, so it is also built with
// -march=native as test_half_conversion_native (tests/CMakeLists.txt): there the float16
// conversions take the CPU's F16C instructions and must give the same bits.
// Chapter: chapters/11-mixed-precision.md.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <vector>

#include "reference/half_ref.hpp"
#include "tinytorch/core/half.hpp"

namespace {
namespace tt = tinytorch;

template <class W>
uint32_t crc_of(const W* words, size_t n) {
  return static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(words), static_cast<uInt>(n * sizeof(W))));
}

template <class W>
std::vector<uint32_t> bucket_crcs(const std::vector<W>& words, size_t per_bucket) {
  std::vector<uint32_t> out;
  for (size_t b = 0; b < words.size(); b += per_bucket)
    out.push_back(crc_of(words.data() + b, std::min(per_bucket, words.size() - b)));
  return out;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// One type's tables, as gen_half.py builds them.
template <class H>
void check_type(const uint32_t* to_float_crc, const uint32_t* roundtrip_crc, const uint32_t* rounding_crc,
                const uint16_t* specials, const uint16_t* from_double, int max_finite) {
  std::vector<uint32_t> to_float(65536);
  std::vector<uint16_t> roundtrip(65536);
  for (uint32_t p = 0; p < 65536; ++p) {
    const float f = H::from_bits(static_cast<uint16_t>(p));
    to_float[p] = bits(f);
    roundtrip[p] = H(f).x;
  }
  const auto tf = bucket_crcs(to_float, 4096), rt = bucket_crcs(roundtrip, 4096);
  for (size_t b = 0; b < 16; ++b) {
    INFO("patterns 0x" << std::hex << b * 4096 << "..0x" << b * 4096 + 4095);
    CHECK(tf[b] == to_float_crc[b]);
    CHECK(rt[b] == roundtrip_crc[b]);
  }

  std::vector<uint16_t> rounding;
  int inexact_midpoints = 0;
  for (int p = 0; p < max_finite; ++p) {
    const double lo = static_cast<float>(H::from_bits(static_cast<uint16_t>(p)));
    const double hi = static_cast<float>(H::from_bits(static_cast<uint16_t>(p + 1)));
    const float m = static_cast<float>((lo + hi) / 2);
    inexact_midpoints += static_cast<double>(m) != (lo + hi) / 2;
    const float below = std::nextafter(m, -INFINITY), above = std::nextafter(m, INFINITY);
    for (float x : {m, below, above, -m, -below, -above}) rounding.push_back(H(x).x);
  }
  REQUIRE(inexact_midpoints == 0);
  const auto rd = bucket_crcs(rounding, 4096 * 6);
  for (size_t b = 0; b < rd.size(); ++b) {
    INFO("rounding boundaries of patterns 0x" << std::hex << b * 4096 << "..0x" << b * 4096 + 4095);
    CHECK(rd[b] == rounding_crc[b]);
  }

  for (size_t i = 0; i < std::size(half_ref::specials_f32); ++i) {
    INFO("float32 bits 0x" << std::hex << half_ref::specials_f32[i]);
    CHECK(H(from_bits(half_ref::specials_f32[i])).x == specials[i]);
  }
  for (size_t i = 0; i < std::size(half_ref::from_double); ++i) {
    INFO("double " << half_ref::from_double[i]);
    CHECK(H(half_ref::from_double[i]).x == from_double[i]);
  }
}
}  // namespace

TEST_CASE("float16: all 65,536 patterns and every rounding boundary convert as PyTorch's", "[ch11][half]") {
  check_type<tt::Half>(half_ref::half_to_float_crc, half_ref::half_roundtrip_crc, half_ref::half_rounding_crc,
                       half_ref::half_specials, half_ref::half_from_double, half_ref::half_max_finite);
}

TEST_CASE("bfloat16: all 65,536 patterns and every rounding boundary convert as PyTorch's", "[ch11][half]") {
  check_type<tt::BFloat16>(half_ref::bfloat16_to_float_crc, half_ref::bfloat16_roundtrip_crc,
                           half_ref::bfloat16_rounding_crc, half_ref::bfloat16_specials,
                           half_ref::bfloat16_from_double, half_ref::bfloat16_max_finite);
}

TEST_CASE("float16 and bfloat16: the formats' landmarks (chapter 11's table)", "[ch11][half]") {
  // float16: max 65504, smallest normal 2^-14, smallest subnormal 2^-24; 2^-25 rounds to 0 (a tie,
  // to even); 65520 (halfway to 65536) rounds to inf.
  CHECK(static_cast<float>(tt::Half::from_bits(0x7BFF)) == 65504.0f);
  CHECK(static_cast<float>(tt::Half::from_bits(0x0400)) == std::ldexp(1.0f, -14));
  CHECK(static_cast<float>(tt::Half::from_bits(0x0001)) == std::ldexp(1.0f, -24));
  CHECK(tt::Half(std::ldexp(1.0f, -25)).x == 0x0000);
  CHECK(tt::Half(std::ldexp(1.5f, -25)).x == 0x0001);
  CHECK(std::isinf(static_cast<float>(tt::Half(65520.0f))));
  CHECK(static_cast<float>(tt::Half(65519.0f)) == 65504.0f);
  CHECK(static_cast<float>(tt::Half(1.0f + std::ldexp(1.0f, -11))) == 1.0f);  // below eps/2 of 1: lost
  // bfloat16: float32's range, 8 significant bits: 1 + 2^-8 is lost, 3e38 survives.
  CHECK(static_cast<float>(tt::BFloat16(1.0f + std::ldexp(1.0f, -8))) == 1.0f);
  CHECK(static_cast<float>(tt::BFloat16(3e38f)) == 3.00405527047391e+38f);
  CHECK(static_cast<float>(tt::BFloat16(1e-8f)) == 1.0011717677116394e-08f);
  CHECK(tt::Half(1e-8f).x == 0x0000);  // chapter 11's flushed gradient
}

// tests/test_half.cpp — float16 and bfloat16 (core/half.hpp, tt::kFloat16 / tt::kBFloat16):
// conversions bit for bit against PyTorch (all 65,536 patterns of each type and every rounding
// boundary, tests/reference/gen_half.py -> half_ref.hpp), and the tensors of those dtypes: to(),
// printing, type promotion, ops computed in float32 and rounded once.
// Chapter: chapters/11-mixed-precision.md.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.hpp>

#include "reference/half_ref.hpp"

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

/// A 1-D tensor of dtype dt holding the given 16-bit patterns.
tt::Tensor from_patterns(const uint16_t* p, size_t n, tt::DType dt) {
  tt::Tensor t = tt::empty({static_cast<int64_t>(n)}, dt);
  std::memcpy(t.raw_data(), p, n * 2);
  return t;
}
/// The 16-bit patterns of a float16/bfloat16 tensor, row-major.
std::vector<uint16_t> patterns(const tt::Tensor& t) {
  const tt::Tensor c = t.contiguous();
  std::vector<uint16_t> out(static_cast<size_t>(c.numel()));
  std::memcpy(out.data(), c.raw_data(), out.size() * 2);
  return out;
}
template <size_t N>
std::vector<uint16_t> vec(const uint16_t (&a)[N]) {
  return std::vector<uint16_t>(a, a + N);
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

TEST_CASE("float16/bfloat16 tensors: to(), values, printing as PyTorch's", "[ch11][half]") {
  const tt::Tensor x = tt::tensor({0.1, -2.5, 3.3, 1e-3});
  CHECK(x.to(tt::kFloat16).dtype() == tt::kFloat16);
  CHECK(tt::element_size(tt::kFloat16) == 2);
  CHECK(x.to(tt::kFloat16).str() == "tensor([ 9.9976e-02, -2.5000e+00,  3.3008e+00,  1.0004e-03],\n"
                                      "       dtype=torch.float16)");
  CHECK(x.to(tt::kBFloat16).str() == "tensor([ 1.0010e-01, -2.5000e+00,  3.2969e+00,  9.9945e-04],\n"
                                       "       dtype=torch.bfloat16)");
  CHECK(tt::tensor({1e-8, 65504.0, 70000.0, -1.0}, tt::Shape{2, 2}).to(tt::kFloat16).str() ==
        "tensor([[ 0.0000e+00,  6.5504e+04],\n        [        inf, -1.0000e+00]], dtype=torch.float16)");
  CHECK(tt::empty({0}, tt::kFloat16).str() == "tensor([], dtype=torch.float16)");
  CHECK(tt::tensor({1.0, 2.0}, tt::kBFloat16).requires_grad_().str() ==
        "tensor([1., 2.], dtype=torch.bfloat16, requires_grad=True)");
  CHECK(x.to(tt::kFloat16).tolist<double>() == std::vector<double>{0.0999755859375, -2.5, 3.30078125, 0.0010004043579101562});
  CHECK(x.to(tt::kBFloat16).to(tt::kFloat16)[0].item<float>() == 0.10009765625f);  // through float: exact here
  CHECK(tt::full({2}, 0.1, tt::kFloat16).tolist<double>() == std::vector<double>{0.0999755859375, 0.0999755859375});
  CHECK_THROWS_WITH(tt::full({1}, 70000.0, tt::kFloat16),
                    "full: value cannot be converted to type at::Half without overflow (got 70000)");
  CHECK(std::isinf(tt::full({1}, INFINITY, tt::kFloat16).item<double>()));
}

TEST_CASE("float16/bfloat16: type promotion as torch.promote_types and torch.result_type", "[ch11][half]") {
  using tt::kBFloat16, tt::kFloat16, tt::kFloat32, tt::kFloat64, tt::kInt64;
  CHECK(tt::ops::promote_types(kFloat16, kFloat32) == kFloat32);
  CHECK(tt::ops::promote_types(kFloat16, kBFloat16) == kFloat32);
  CHECK(tt::ops::promote_types(kInt64, kFloat16) == kFloat16);
  CHECK(tt::ops::promote_types(kInt64, kBFloat16) == kBFloat16);
  CHECK(tt::ops::promote_types(kFloat16, kFloat64) == kFloat64);
  CHECK(tt::ops::promote_types(kBFloat16, kFloat32) == kFloat32);
  const tt::Tensor h = tt::ones({2}, kFloat16);
  CHECK((h + tt::scalar_tensor(1.0, kFloat64)).dtype() == kFloat16);  // a 0-d float64 stays below
  CHECK((tt::ones({2}, kInt64) + tt::scalar_tensor(1.0, kFloat16)).dtype() == kFloat16);
  CHECK((tt::scalar_tensor(1.0, kFloat16) + tt::scalar_tensor(1.0, kBFloat16)).dtype() == kFloat32);
  CHECK((h + tt::ones({2})).dtype() == kFloat32);
  CHECK((h * 0.1).dtype() == kFloat16);
}

TEST_CASE("float16/bfloat16 ops compute in float32 and round once, as PyTorch's CPU kernels", "[ch11][half]") {
  // Bit for bit, except ops whose float32 kernels are not PyTorch's to the last bit (exp, tanh,
  // ...: std:: and Eigen functions against SLEEF's vectorized ones, another summation order in mm):
  // rounded to 16 bits they may land one unit in the last place (ulp) apart.
  struct Case {
    const char* name;
    std::vector<uint16_t> half, bf16;
    std::function<tt::Tensor(const tt::Tensor&, const tt::Tensor&)> f;
    int max_ulp = 0;
  };
  const std::vector<Case> cases = {
      {"add", vec(half_ref::half_add), vec(half_ref::bfloat16_add), [](auto& x, auto& y) { return x + y; }},
      {"sub", vec(half_ref::half_sub), vec(half_ref::bfloat16_sub), [](auto& x, auto& y) { return x - y; }},
      {"mul", vec(half_ref::half_mul), vec(half_ref::bfloat16_mul), [](auto& x, auto& y) { return x * y; }},
      {"div", vec(half_ref::half_div), vec(half_ref::bfloat16_div), [](auto& x, auto& y) { return x / y; }},
      {"mul_scalar", vec(half_ref::half_mul_scalar), vec(half_ref::bfloat16_mul_scalar),
       [](auto& x, auto&) { return x * 0.1; }},
      {"add_overflow", vec(half_ref::half_add_overflow), vec(half_ref::bfloat16_add_overflow),
       [](auto& x, auto&) { return x + 70000.0; }},
      {"exp", vec(half_ref::half_exp), vec(half_ref::bfloat16_exp), [](auto& x, auto&) { return x.exp(); }, 1},
      {"tanh", vec(half_ref::half_tanh), vec(half_ref::bfloat16_tanh), [](auto& x, auto&) { return x.tanh(); }, 1},
      {"sigmoid", vec(half_ref::half_sigmoid), vec(half_ref::bfloat16_sigmoid),
       [](auto& x, auto&) { return x.sigmoid(); }, 1},
      {"relu", vec(half_ref::half_relu), vec(half_ref::bfloat16_relu), [](auto& x, auto&) { return x.relu(); }},
      {"sqrt_abs", vec(half_ref::half_sqrt_abs), vec(half_ref::bfloat16_sqrt_abs),
       [](auto& x, auto&) { return x.abs().sqrt(); }},
      {"pow2", vec(half_ref::half_pow2), vec(half_ref::bfloat16_pow2), [](auto& x, auto&) { return x.pow(2); }},
      {"sum", vec(half_ref::half_sum), vec(half_ref::bfloat16_sum), [](auto& x, auto&) { return x.sum(); }},
      {"mean", vec(half_ref::half_mean), vec(half_ref::bfloat16_mean), [](auto& x, auto&) { return x.mean(); }},
      {"max", vec(half_ref::half_max), vec(half_ref::bfloat16_max), [](auto& x, auto&) { return x.max(); }},
      {"softmax", vec(half_ref::half_softmax), vec(half_ref::bfloat16_softmax),
       [](auto& x, auto&) { return x.softmax(0); }, 1},
      {"log_softmax", vec(half_ref::half_log_softmax), vec(half_ref::bfloat16_log_softmax),
       [](auto& x, auto&) { return x.log_softmax(0); }, 1},
      {"mm", vec(half_ref::half_mm), vec(half_ref::bfloat16_mm),
       [](auto& x, auto& y) { return x.view({2, 4}).matmul(y.view({4, 2})); }, 1},
      {"layer_norm", vec(half_ref::half_layer_norm), vec(half_ref::bfloat16_layer_norm),
       [](auto& x, auto&) { return tt::layer_norm(x, {8}); }, 1},
  };
  for (const tt::DType dt : {tt::kFloat16, tt::kBFloat16}) {
    const bool h = dt == tt::kFloat16;
    const tt::Tensor x = from_patterns(h ? half_ref::half_x : half_ref::bfloat16_x, 8, dt);
    const tt::Tensor y = from_patterns(h ? half_ref::half_y : half_ref::bfloat16_y, 8, dt);
    for (const Case& c : cases) {
      INFO(tt::dtype_name(dt) << " " << c.name);
      const tt::Tensor r = c.f(x, y);
      CHECK(r.dtype() == dt);
      const std::vector<uint16_t> got = patterns(r), want = h ? c.half : c.bf16;
      REQUIRE(got.size() == want.size());
      int worst = 0;  // patterns of one sign are ordered as their values
      for (size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, (got[i] ^ want[i]) & 0x8000 ? 0x10000 : std::abs(int(got[i]) - int(want[i])));
      CHECK(worst <= c.max_ulp);
    }
    // A reduction accumulates in float32: 4096 x 0.1 sums to 409.5 (accumulating in 16 bits, float16
    // would stop at 256: 256 + 0.1 rounds back to 256).
    INFO(tt::dtype_name(dt) << " sum of 4096 tenths");
    CHECK(patterns(tt::full({4096}, 0.1, dt).sum())[0] ==
          (h ? half_ref::half_sum_4096_tenths : half_ref::bfloat16_sum_4096_tenths));
  }
}

TEST_CASE("float16/bfloat16: autograd gives 16-bit gradients of float32 math", "[ch11][half]") {
  // loss = sum(relu(x @ w)); the float32 run of the same rounded values gives the reference:
  // each op rounds once, so the 16-bit gradient is the float32 one rounded (exact here: the
  // gradient of w is a sum of few x values).
  tt::manual_seed(0);
  const tt::Tensor x32 = tt::randn({4, 3}), w32 = tt::randn({3, 2});
  for (const tt::DType dt : {tt::kFloat16, tt::kBFloat16}) {
    INFO(tt::dtype_name(dt));
    tt::Tensor w = w32.to(dt).detach().requires_grad_();
    const tt::Tensor x = x32.to(dt);
    tt::Tensor loss = x.matmul(w).relu().sum();
    loss.backward();
    REQUIRE(w.grad().defined());
    CHECK(w.grad().dtype() == dt);
    tt::Tensor wr = w.to(tt::kFloat32).detach().requires_grad_();
    (x.to(tt::kFloat32).matmul(wr).relu().sum()).backward();
    CHECK(w.grad().to(tt::kFloat32).allclose(wr.grad().to(dt).to(tt::kFloat32), 0, 0));
    // an SGD step on a 16-bit parameter stays in its dtype (PyTorch's single-tensor loop)
    tt::optim::SGD opt({w}, tt::optim::SGDOptions{0.1, 0.9});
    opt.step();
    CHECK(w.dtype() == dt);
  }
}

TEST_CASE("float16/bfloat16: safetensors F16 and BF16 round trip", "[ch11][half][safetensors]") {
  const std::string path = "test_half.safetensors";
  const tt::Tensor h = tt::tensor({0.1, -2.5, 65504.0}).to(tt::kFloat16);
  const tt::Tensor b = tt::tensor({0.1, -2.5, 3e38}).to(tt::kBFloat16);
  tt::save({{"h", h}, {"b", b}, {"f", tt::ones({1})}}, path);
  const auto loaded = tt::load(path);
  REQUIRE(loaded.size() == 3);
  CHECK(loaded[0].first == "b");
  CHECK(loaded[0].second.dtype() == tt::kBFloat16);
  CHECK(patterns(loaded[0].second) == patterns(b));
  CHECK(loaded[2].first == "h");
  CHECK(loaded[2].second.dtype() == tt::kFloat16);
  CHECK(patterns(loaded[2].second) == patterns(h));
  std::remove(path.c_str());
}

TEST_CASE("float16/bfloat16: the operands' dtypes are checked before the float32 detour", "[ch11][half]") {
  const tt::Tensor x = tt::arange(0.0, 32.0, 1.0, tt::kFloat16).view({1, 2, 4, 4});
  CHECK_THROWS_WITH(tt::conv2d(x, tt::full({3, 2, 2, 2}, 1.0, tt::kInt64)),
                    "conv2d: Input type (torch.HalfTensor) and weight type (torch.LongTensor) should be the same");
  CHECK_THROWS_WITH(tt::conv2d(x, tt::ones({3, 2, 2, 2}, tt::kFloat16), tt::ones({3})),
                    "conv2d: Input type (c10::Half) and bias type (float) should be the same");
  CHECK(tt::conv2d(x, tt::ones({3, 2, 2, 2}, tt::kFloat16), tt::ones({3}, tt::kFloat16)).dtype() == tt::kFloat16);
  const tt::Tensor logits = tt::randn({4, 3}).to(tt::kFloat16), target = tt::tensor({0.0, 1.0, 2.0, 1.0}, tt::kInt64);
  CHECK_THROWS_WITH(tt::nll_loss(logits, target, tt::ones({3}), -100, tt::Reduction::Mean),
                    "nll_loss: expected weight of dtype torch.float16 (the input's), got torch.float32");
  CHECK(tt::nll_loss(logits, target, tt::ones({3}, tt::kFloat16), -100, tt::Reduction::Mean).dtype() == tt::kFloat16);
  tt::Tensor h = tt::zeros({2}, tt::kFloat16);
  CHECK_THROWS_WITH(h.fill_(1e6), "fill_: value cannot be converted to type at::Half without overflow (got 1e+06)");
  CHECK(std::isinf(h.fill_(INFINITY)[0].item<double>()));
}

// tests/test_half.cpp — tensors of dtype float16 and bfloat16 (tt::kFloat16 / tt::kBFloat16): to(),
// printing, type promotion, ops computed in float32 and rounded once (against PyTorch,
// tests/reference/gen_half.py -> half_ref.hpp), autograd, safetensors. The conversions themselves
// are tests/test_half_conversion.cpp.
// Chapter: chapters/11-mixed-precision.md.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <tinytorch/ops/dispatch.hpp>  // ops::promote_types (not part of the umbrella in separate compilation)
#include <tinytorch/tinytorch.hpp>

#include "reference/half_ref.hpp"

namespace {
namespace tt = tinytorch;

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
}  // namespace

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
  const std::string path = "test_half_" + std::to_string(::getpid()) + ".safetensors";  // test_half_native too
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

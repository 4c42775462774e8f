// tests/test_conv.cpp — conv2d and max_pool2d: forward values and gradients against PyTorch, the
// im2col + GEMM kernels against their direct-loop twins on odd shapes, gradcheck, bad inputs,
// nn::Conv2d (init distribution, repr, clone), nn::MaxPool2d, and a tiny CNN end to end.
// Headers under test: backend/cpu/{conv,pooling}.hpp, ops/conv.hpp, autograd/functions/conv.hpp,
// functional.hpp (conv2d, max_pool2d), nn/{conv,pooling}.hpp.
// Reference numbers: tests/reference/conv_ref.hpp (tests/reference/gen_conv.py).
// Chapter: chapters/01-training-loop.md ("A convolutional network"). Tag: [conv].
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.hpp>
#include <tinytorch/ops/conv.hpp>  // ops::conv2d and its naive twin (internals under test)

#include "reference/conv_ref.hpp"

using namespace tinytorch;
using Catch::Contains;

namespace {

Shape shape_of(const std::vector<int64_t>& s) { return Shape(s.begin(), s.end()); }
Size2 pair_of(const std::vector<int64_t>& s) { return Size2(s[0], s[1]); }

/// "" when t matches ref (|t - ref| <= atol + rtol |ref|; NaN == NaN; equal infinities), else the first mismatch.
std::string mismatch(const Tensor& t, const std::vector<double>& ref, double rtol, double atol) {
  if (!t.defined()) return "undefined tensor";
  std::vector<double> got = t.tolist<double>();
  if (got.size() != ref.size()) return "size " + std::to_string(got.size()) + " vs " + std::to_string(ref.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], b = ref[i];
    const bool ok = (std::isnan(a) && std::isnan(b)) || a == b || std::abs(a - b) <= atol + rtol * std::abs(b);
    if (!ok) {
      std::ostringstream os;
      os << "element " << i << ": " << a << " vs reference " << b;
      return os.str();
    }
  }
  return "";
}

/// Uniform values in [-1, 1) from a fixed generator, as float64.
Tensor random(const Shape& s, uint64_t seed, DType dt = kFloat64) {
  Generator g(seed);
  return rand(s, dt, &g) * 2.0 - 1.0;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  std::vector<double> x = a.tolist<double>(), y = b.tolist<double>();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

}  // namespace

// ---- conv2d -----------------------------------------------------------------------------------

TEST_CASE("conv2d: forward and gradients match PyTorch", "[conv]") {
  for (const auto& c : conv_reference::kConvCases) {
    INFO("case " << c.name);
    const DType dt = c.f64 ? kFloat64 : kFloat32;
    const double rtol = c.f64 ? 1e-12 : 1e-5, atol = c.f64 ? 1e-12 : 1e-5;
    Tensor x = tensor(c.x, shape_of(c.x_shape), TensorOptions(dt).requires_grad());
    Tensor w = tensor(c.w, shape_of(c.w_shape), TensorOptions(dt).requires_grad());
    Tensor b = c.has_bias ? tensor(c.b, {c.w_shape[0]}, TensorOptions(dt).requires_grad()) : Tensor();
    Tensor y = conv2d(x, w, b, pair_of(c.stride), pair_of(c.padding), pair_of(c.dilation), c.groups);
    REQUIRE(y.sizes() == shape_of(c.y_shape));
    CHECK(y.dtype() == dt);
    CHECK(mismatch(y, c.y, rtol, atol) == "");
    CHECK(y.grad_fn()->name() == c.grad_fn);
    y.backward(tensor(c.gy, y.sizes(), dt));
    CHECK(mismatch(x.grad(), c.gx, rtol, atol) == "");
    CHECK(mismatch(w.grad(), c.gw, rtol, atol) == "");
    if (c.has_bias) CHECK(mismatch(b.grad(), c.gb, rtol, atol) == "");
  }
}

TEST_CASE("conv2d: im2col + GEMM kernels agree with the direct loops", "[conv]") {
  struct Config {
    Shape x, w;
    Size2 stride, padding, dilation;
    int64_t groups;
    bool bias;
  };
  const std::vector<Config> configs = {
      {{2, 3, 7, 5}, {4, 3, 3, 3}, 1, 0, 1, 1, true},
      {{1, 2, 9, 11}, {3, 2, 4, 3}, {2, 3}, {1, 2}, 1, 1, true},
      {{3, 1, 10, 7}, {2, 1, 3, 2}, 3, {3, 1}, {2, 3}, 1, false},
      {{2, 6, 8, 8}, {9, 2, 3, 3}, 2, 1, 1, 3, true},             // groups
      {{1, 4, 5, 6}, {4, 1, 5, 5}, 1, 2, 1, 4, true},             // depthwise, padding = half the kernel
      {{2, 5, 6, 7}, {3, 5, 1, 1}, {1, 2}, 0, 1, 1, true},        // 1x1
      {{1, 2, 13, 4}, {2, 2, 2, 2}, {5, 1}, {0, 1}, {4, 1}, 1, false},
      {{2, 3, 3, 3}, {2, 3, 3, 3}, 2, 1, 2, 1, true},             // dilated kernel as big as the padded input
      {{0, 2, 5, 5}, {3, 2, 3, 3}, 1, 1, 1, 1, true},             // empty batch
  };
  uint64_t seed = 1;
  for (const auto& c : configs) {
    INFO("x " << shape_str(c.x) << " w " << shape_str(c.w) << " stride (" << c.stride.h << "," << c.stride.w
              << ") padding (" << c.padding.h << "," << c.padding.w << ") dilation (" << c.dilation.h << ","
              << c.dilation.w << ") groups " << c.groups);
    Tensor x = random(c.x, seed++), w = random(c.w, seed++);
    Tensor b = c.bias ? random({c.w[0]}, seed++) : Tensor();
    Tensor fast = ops::conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
    Tensor naive = ops::conv2d_naive(x, w, b, c.stride, c.padding, c.dilation, c.groups);
    CHECK(max_abs_diff(fast, naive) < 1e-12);
    Tensor dy = random(fast.sizes(), seed++);
    auto [dx, dw, db] = ops::conv2d_backward(dy, x, w, c.stride, c.padding, c.dilation, c.groups);
    auto [ndx, ndw, ndb] = ops::conv2d_backward_naive(dy, x, w, c.stride, c.padding, c.dilation, c.groups);
    CHECK(max_abs_diff(dx, ndx) < 1e-12);
    CHECK(max_abs_diff(dw, ndw) < 1e-12);
    CHECK(max_abs_diff(db, ndb) < 1e-12);
    // float32 too: the fast path accumulates in float, the naive one in double
    Tensor f32 = ops::conv2d(x.to(kFloat32), w.to(kFloat32), c.bias ? b.to(kFloat32) : b, c.stride, c.padding,
                             c.dilation, c.groups);
    CHECK(max_abs_diff(f32, naive) < 1e-5);
  }
}

TEST_CASE("conv2d: backward computes only the gradients asked for", "[conv]") {
  Tensor x = random({1, 2, 5, 5}, 3), w = random({3, 2, 3, 3}, 4);
  Tensor dy = random({1, 3, 3, 3}, 5);
  auto [dx, dw, db] = ops::conv2d_backward(dy, x, w, 1, 0, 1, 1, true, false, false);
  CHECK(dx.defined());
  CHECK_FALSE(dw.defined());
  CHECK_FALSE(db.defined());
  // through autograd: an input that does not require grad gets nothing
  Tensor wl = w.clone().requires_grad_();
  Tensor y = conv2d(x, wl);
  y.sum().backward();
  CHECK(wl.grad().defined());
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("conv2d: gradcheck in float64", "[conv]") {
  struct Config {
    Shape x, w;
    Size2 stride, padding, dilation;
    int64_t groups;
  };
  const std::vector<Config> configs = {
      {{2, 2, 5, 4}, {3, 2, 3, 2}, 1, 0, 1, 1},
      {{1, 2, 6, 5}, {2, 2, 3, 3}, {2, 1}, {1, 2}, {1, 2}, 1},
      {{1, 4, 5, 5}, {2, 2, 2, 2}, 2, 1, 1, 2},
      {{2, 4, 4}, {2, 2, 2, 2}, 1, 1, 1, 1},  // unbatched
  };
  uint64_t seed = 100;
  for (const auto& c : configs) {
    INFO("x " << shape_str(c.x) << " w " << shape_str(c.w));
    Tensor x = random(c.x, seed++).requires_grad_();
    Tensor w = random(c.w, seed++).requires_grad_();
    Tensor b = random({c.w[0]}, seed++).requires_grad_();
    auto f = [&](const std::vector<Tensor>& in) {
      return conv2d(in[0], in[1], in[2], c.stride, c.padding, c.dilation, c.groups);
    };
    CHECK(gradcheck(f, {x, w, b}));
  }
}

TEST_CASE("conv2d: unbatched input, empty batch, no bias", "[conv]") {
  Tensor x = random({2, 6, 6}, 7), w = random({3, 2, 3, 3}, 8), b = random({3}, 9);
  Tensor y = conv2d(x, w, b, 1, 1);
  REQUIRE(y.sizes() == Shape{3, 6, 6});
  CHECK(y.allclose(conv2d(x.unsqueeze(0), w, b, 1, 1).squeeze(0), 0, 0));
  Tensor e = conv2d(zeros({0, 2, 6, 6}, kFloat64), w, b);
  CHECK(e.sizes() == Shape{0, 3, 4, 4});
  // no input channels at all: the output is the bias
  Tensor z = conv2d(zeros({1, 0, 4, 4}, kFloat64), zeros({3, 0, 2, 2}, kFloat64), b);
  REQUIRE(z.sizes() == Shape{1, 3, 3, 3});
  CHECK(z.select(1, 2).allclose(full({1, 3, 3}, b.at<double>({2}), kFloat64)));
  // a non-contiguous input (a transposed view) gives the same result as its contiguous copy
  Tensor xt = random({1, 2, 6, 5}, 10).transpose(2, 3);
  CHECK(conv2d(xt, w, b).allclose(conv2d(xt.contiguous(), w, b), 0, 0));
}

TEST_CASE("conv2d: bad inputs raise PyTorch's errors", "[conv]") {
  Tensor x = randn({2, 1, 5, 5}), w = randn({4, 1, 3, 3});
  REQUIRE_THROWS_WITH(conv2d(x, randn({4, 3, 3, 3})),
                      Contains("Given groups=1, weight of size [4, 3, 3, 3], expected input[2, 1, 5, 5] to have 3 "
                               "channels, but got 1 channels instead"));
  REQUIRE_THROWS_WITH(conv2d(randn({2, 5}), w),
                      Contains("Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [2, 5]"));
  REQUIRE_THROWS_WITH(conv2d(randn({1, 2, 1, 5, 5}), w), Contains("but got input of size: [1, 2, 1, 5, 5]"));
  REQUIRE_THROWS_WITH(conv2d(x, randn({4, 1, 3})), Contains("expected a 4-D weight"));
  REQUIRE_THROWS_WITH(conv2d(x, w, randn({3})),
                      Contains("Given weight of size [4, 1, 3, 3], expected bias to be 1-dimensional with 4 elements, "
                               "but got bias of size [3] instead"));
  REQUIRE_THROWS_WITH(conv2d(x, w, randn({4, 1})), Contains("but got bias of size [4, 1] instead"));
  REQUIRE_THROWS_WITH(conv2d(randn({2, 1, 2, 2}), w),
                      Contains("Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size "
                               "can't be greater than actual input size"));
  REQUIRE_THROWS_WITH(conv2d(x, w, Tensor(), 1, 0, 3),
                      Contains("Calculated padded input size per channel: (5 x 5). Kernel size: (7 x 7)"));
  REQUIRE_THROWS_WITH(conv2d(x, w, Tensor(), 0), Contains("conv2d: non-positive stride is not supported"));
  REQUIRE_THROWS_WITH(conv2d(x, w, Tensor(), {1, -2}), Contains("non-positive stride is not supported"));
  REQUIRE_THROWS_WITH(conv2d(x, w, Tensor(), 1, -1), Contains("conv2d: negative padding is not supported"));
  REQUIRE_THROWS_WITH(conv2d(x, w, Tensor(), 1, 0, 0), Contains("conv2d: non-positive dilation is not supported"));
  REQUIRE_THROWS_WITH(conv2d(x, w, Tensor(), 1, 0, 1, 0), Contains("conv2d: non-positive groups is not supported"));
  REQUIRE_THROWS_WITH(conv2d(randn({2, 4, 5, 5}), randn({4, 2, 3, 3}), Tensor(), 1, 0, 1, 3),
                      Contains("Given groups=3, expected weight to be divisible by 3 at dimension 0, but got weight of "
                               "size [4, 2, 3, 3] instead"));
  REQUIRE_THROWS_WITH(conv2d(x, randn({0, 1, 3, 3})),
                      Contains("Given groups=1, expected weight to be at least 1 at dimension 0, but got weight of "
                               "size [0, 1, 3, 3] instead"));
  REQUIRE_THROWS_WITH(conv2d(randn({2, 4, 5, 5}), randn({6, 1, 3, 3}), Tensor(), 1, 0, 1, 2),
                      Contains("Given groups=2, weight of size [6, 1, 3, 3], expected input[2, 4, 5, 5] to have 2 "
                               "channels, but got 4 channels instead"));
  REQUIRE_THROWS_WITH(conv2d(x, w.to(kFloat64)),
                      Contains("Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) should be the same"));
  REQUIRE_THROWS_WITH(conv2d(x, w, randn({4}, kFloat64)),
                      Contains("Input type (float) and bias type (double) should be the same"));
  REQUIRE_THROWS_WITH(conv2d(ones({2, 1, 5, 5}, kInt64), ones({4, 1, 3, 3}, kInt64)),
                      Contains("conv2d: expected a floating point input"));
  REQUIRE_THROWS_WITH(conv2d(x, w, Tensor(), 1, int64_t{1} << 62), Contains("conv2d: sizes overflow int64"));
  REQUIRE_THROWS_WITH(conv2d(x, Tensor()), Contains("conv2d: got an undefined tensor"));
}

// ---- max_pool2d -------------------------------------------------------------------------------

TEST_CASE("max_pool2d: values, indices and gradients match PyTorch", "[conv]") {
  for (const auto& c : conv_reference::kPoolCases) {
    INFO("case " << c.name);
    Tensor x = tensor(c.x, shape_of(c.x_shape), TensorOptions(kFloat32).requires_grad());
    std::optional<Size2> stride;
    if (!c.stride.empty()) stride = pair_of(c.stride);
    auto [y, idx] = max_pool2d_with_indices(x, pair_of(c.kernel), stride, pair_of(c.padding), pair_of(c.dilation),
                                            c.ceil_mode);
    REQUIRE(y.sizes() == shape_of(c.y_shape));
    CHECK(mismatch(y, c.y, 0, 0) == "");
    CHECK(idx.dtype() == kInt64);
    CHECK(idx.tolist<int64_t>() == c.indices);
    CHECK(y.grad_fn()->name() == c.grad_fn);
    y.backward(tensor(c.gy, y.sizes()));
    CHECK(mismatch(x.grad(), c.gx, 1e-6, 1e-7) == "");
    // max_pool2d is the same op without the indices
    CHECK(mismatch(max_pool2d(x, pair_of(c.kernel), stride, pair_of(c.padding), pair_of(c.dilation), c.ceil_mode),
                   c.y, 0, 0) == "");
  }
}

TEST_CASE("max_pool2d: fast kernel agrees with the definition", "[conv]") {
  struct Config {
    Shape x;
    Size2 k;
    std::optional<Size2> s;
    Size2 p, d;
    bool ceil;
  };
  const std::vector<Config> configs = {
      {{2, 3, 7, 9}, 2, std::nullopt, 0, 1, false},  {{1, 2, 11, 6}, {3, 2}, Size2{2, 1}, {1, 1}, 1, true},
      {{2, 1, 9, 9}, 3, Size2{2}, 1, 2, true},       {{3, 5, 6}, {2, 4}, Size2{3, 3}, {1, 2}, {2, 1}, false},
      {{1, 1, 5, 5}, 5, Size2{1}, 2, 1, false},      {{0, 2, 4, 4}, 2, std::nullopt, 0, 1, false},
  };
  uint64_t seed = 50;
  for (const auto& c : configs) {
    INFO("x " << shape_str(c.x) << " k (" << c.k.h << "," << c.k.w << ")");
    Tensor x = random(c.x, seed++);
    auto [y, i] = ops::max_pool2d_with_indices(x, c.k, c.s, c.p, c.d, c.ceil);
    auto [ny, ni] = ops::max_pool2d_with_indices_naive(x, c.k, c.s, c.p, c.d, c.ceil);
    CHECK(y.equal(ny));
    CHECK(i.equal(ni));
  }
}

TEST_CASE("max_pool2d: gradcheck in float64", "[conv]") {
  // distinct values (a random permutation) keep every window away from ties
  Tensor x = (randperm(2 * 2 * 7 * 6, nullptr).to(kFloat64) / 10.0).view({2, 2, 7, 6}).requires_grad_();
  auto f = [](const std::vector<Tensor>& in) { return max_pool2d(in[0], {3, 2}, Size2{2, 1}, 1, 1, true); };
  CHECK(gradcheck(f, {x}));
  Tensor u = (randperm(3 * 5 * 5, nullptr).to(kFloat64) / 7.0).view({3, 5, 5}).requires_grad_();
  auto g = [](const std::vector<Tensor>& in) { return max_pool2d(in[0], 2, Size2{1}, 0, 2); };
  CHECK(gradcheck(g, {u}));
}

TEST_CASE("max_pool2d: bad inputs raise PyTorch's errors", "[conv]") {
  Tensor x = randn({2, 1, 5, 5});
  REQUIRE_THROWS_WITH(max_pool2d(x, 2, std::nullopt, 2),
                      Contains("max_pool2d: pad should be at most half of effective kernel size, but got pad=2, "
                               "kernel_size=2 and dilation=1"));
  REQUIRE_THROWS_WITH(max_pool2d(x, 3, std::nullopt, 3, 2),
                      Contains("pad should be at most half of effective kernel size, but got pad=3, kernel_size=3 and "
                               "dilation=2"));
  CHECK(max_pool2d(x, 3, Size2{1}, 2, 2).sizes() == Shape{2, 1, 5, 5});  // pad 2 <= effective 5 / 2
  REQUIRE_THROWS_WITH(max_pool2d(randn({2, 1, 2, 2}), 3),
                      Contains("Given input size: (1x2x2). Calculated output size: (1x0x0). Output size is too small"));
  REQUIRE_THROWS_WITH(max_pool2d(x, 0), Contains("kernel size should be greater than zero, but got kH: 0 kW: 0"));
  REQUIRE_THROWS_WITH(max_pool2d(x, 2, Size2{0}), Contains("max_pool2d: stride should not be zero"));
  REQUIRE_THROWS_WITH(max_pool2d(x, 2, Size2{-1}), Contains("stride should be greater than zero, but got dH: -1 dW: -1"));
  REQUIRE_THROWS_WITH(max_pool2d(x, 2, std::nullopt, -1), Contains("pad must be non-negative, but got pad: -1"));
  REQUIRE_THROWS_WITH(max_pool2d(x, 2, std::nullopt, 0, 0),
                      Contains("dilation should be greater than zero, but got dilationH: 0 dilationW: 0"));
  REQUIRE_THROWS_WITH(max_pool2d(randn({5, 5}), 2), Contains("non-empty 3D or 4D (batch mode) tensor expected for input"));
  REQUIRE_THROWS_WITH(max_pool2d(randn({1, 2, 1, 5, 5}), 2), Contains("non-empty 3D or 4D"));
  REQUIRE_THROWS_WITH(max_pool2d(randn({1, 0, 5, 5}), 2),
                      Contains("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                               "got:[1, 0, 5, 5]"));
  REQUIRE_THROWS_WITH(max_pool2d(ones({1, 1, 4, 4}, kInt64), 2), Contains("\"max_pool2d\" not implemented for 'Long'"));
  REQUIRE_THROWS_WITH(max_pool2d(x, 3, std::nullopt, 0, int64_t{1} << 62), Contains("max_pool2d: sizes overflow int64"));
  CHECK(max_pool2d(randn({0, 1, 5, 5}), 2).sizes() == Shape{0, 1, 2, 2});
}

// ---- modules ----------------------------------------------------------------------------------

TEST_CASE("nn::Conv2d: shapes, PyTorch's default init bounds, repr, clone", "[conv]") {
  manual_seed(0);
  nn::Conv2d conv(6, 8, {5, 3}, 1, {2, 1}, 1, 2);
  REQUIRE(conv.weight.sizes() == Shape{8, 3, 5, 3});
  REQUIRE(conv.bias.sizes() == Shape{8});
  // fan_in = 3 * 5 * 3 = 45: kaiming_uniform_(a = sqrt 5) and the bias are both U(-1/sqrt 45, 1/sqrt 45)
  const double bound = 1.0 / std::sqrt(45.0);
  std::vector<double> wv = conv.weight.tolist<double>();
  double lo = 1, hi = -1, mean = 0;
  for (double v : wv) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    mean += v / static_cast<double>(wv.size());
  }
  CHECK(lo >= -bound);
  CHECK(hi <= bound);
  CHECK(hi - lo > 1.8 * bound);         // 360 draws fill the interval
  CHECK(std::abs(mean) < 0.1 * bound);  // and centre on 0
  for (double v : conv.bias.tolist<double>()) CHECK(std::abs(v) <= bound);
  CHECK(conv.named_parameters().size() == 2);
  CHECK(conv.repr() == "Conv2d(6, 8, kernel_size=(5, 3), stride=(1, 1), padding=(2, 1), groups=2)");
  CHECK(nn::Conv2d(1, 8, 3, 1, 1).repr() == "Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))");
  CHECK(nn::Conv2d(2, 4, {3, 5}, 2, 0, {1, 2}, 2, false).repr() ==
        "Conv2d(2, 4, kernel_size=(3, 5), stride=(2, 2), dilation=(1, 2), groups=2, bias=False)");

  Tensor x = randn({2, 6, 7, 7});
  Tensor y = conv(x);
  CHECK(y.sizes() == Shape{2, 8, 7, 7});
  CHECK(y.allclose(conv2d(x, conv.weight, conv.bias, 1, {2, 1}, 1, 2), 0, 0));
  auto copy = std::static_pointer_cast<nn::Conv2d>(conv.clone());
  CHECK_FALSE(copy->weight.is_same(conv.weight));
  CHECK(copy->forward(x).allclose(y, 0, 0));

  nn::Conv2d nobias(3, 2, 3, 1, 0, 1, 1, false);
  CHECK_FALSE(nobias.bias.defined());
  CHECK(nobias.named_parameters().size() == 1);
  REQUIRE_THROWS_WITH(nn::Conv2d(3, 4, 3, 1, 0, 1, 2), Contains("in_channels must be divisible by groups"));
  REQUIRE_THROWS_WITH(nn::Conv2d(4, 3, 3, 1, 0, 1, 2), Contains("out_channels must be divisible by groups"));
  REQUIRE_THROWS_WITH(nn::Conv2d(4, 4, 3, 1, 0, 1, 0), Contains("groups must be a positive integer"));
  REQUIRE_THROWS_WITH(nn::Conv2d(0, 4, 3), Contains("in_channels and out_channels must be positive"));
  REQUIRE_THROWS_WITH(nn::Conv2d(1, 4, {3, 0}), Contains("kernel_size must be positive, got (3, 0)"));
}

TEST_CASE("nn::Conv2d: the same generator seed gives the same weights", "[conv]") {
  Generator g1(7), g2(7);
  nn::Conv2d a(2, 3, 3, 1, 0, 1, 1, true, &g1), b(2, 3, 3, 1, 0, 1, 1, true, &g2);
  CHECK(a.weight.equal(b.weight));
  CHECK(a.bias.equal(b.bias));
}

TEST_CASE("nn::MaxPool2d: forward and repr", "[conv]") {
  nn::MaxPool2d pool(2);
  CHECK(pool.repr() == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  CHECK(nn::MaxPool2d({2, 3}, Size2{1}, 1, 1, true).repr() ==
        "MaxPool2d(kernel_size=(2, 3), stride=1, padding=1, dilation=1, ceil_mode=True)");
  Tensor x = randn({2, 3, 6, 6});
  CHECK(pool(x).allclose(max_pool2d(x, 2), 0, 0));
  CHECK(pool(x).sizes() == Shape{2, 3, 3, 3});
  CHECK(max_pool2d(x, 3, 2, 1).allclose(nn::MaxPool2d(3, 2, 1)(x), 0, 0));  // stride as a plain int
  CHECK(max_pool2d(x, 3, 2, 1).sizes() == Shape{2, 3, 3, 3});
  CHECK(pool.parameters().empty());
}

TEST_CASE("a tiny CNN (Conv2d-ReLU-MaxPool2d-Flatten-Linear) matches PyTorch's loss and gradients", "[conv]") {
  using namespace conv_reference;
  auto conv = std::make_shared<nn::Conv2d>(1, 2, 3, 1, 1);
  auto fc = std::make_shared<nn::Linear>(32, 3);
  nn::Sequential model(conv, std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
                       std::make_shared<nn::Flatten>(), fc);
  model.load_state_dict({{"0.weight", tensor(kCnn_cw, {2, 1, 3, 3})},
                         {"0.bias", tensor(kCnn_cb, {2})},
                         {"4.weight", tensor(kCnn_lw, {3, 32})},
                         {"4.bias", tensor(kCnn_lb, {3})}});
  Tensor x = tensor(kCnnX, {2, 1, 8, 8});
  Tensor target = tensor({static_cast<double>(kCnnTarget[0]), static_cast<double>(kCnnTarget[1])}, kInt64);
  Tensor loss = cross_entropy(model(x), target);
  CHECK(loss.item<double>() == Approx(kCnnLoss).epsilon(1e-6));
  loss.backward();
  CHECK(mismatch(conv->weight.grad(), kCnn_cw_grad, 1e-5, 1e-6) == "");
  CHECK(mismatch(conv->bias.grad(), kCnn_cb_grad, 1e-5, 1e-6) == "");
  CHECK(mismatch(fc->weight.grad(), kCnn_lw_grad, 1e-5, 1e-6) == "");
  CHECK(mismatch(fc->bias.grad(), kCnn_lb_grad, 1e-5, 1e-6) == "");
}

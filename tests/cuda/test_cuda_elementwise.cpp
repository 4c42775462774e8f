// tests/cuda/test_cuda_elementwise.cpp — backend/cuda/elementwise.cuh against backend/cpu.
//
// Every launcher runs on the same inputs as its CPU twin (cpu::unary_kernel, binary_kernel,
// scalar_kernel, ternary_kernel, copy_kernel) and the results must agree (kernels_test::close:
// a few ulps for floating types, exact for int64); the fast (dense) and naive (strided) kernels
// must agree with each other. Sizes 1, 7, 33, 129, 1000; float32, float64 and int64; NaN, +-inf
// and -0.0 planted in floating inputs; broadcast (stride 0) and transposed operands.
// The same source builds for the simulator (g++, TINYTORCH_CUDA_SIM=1) and for nvcc.
// Chapter: chapters/10-gpu-kernels.md.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include <tinytorch/backend/cuda/elementwise.cuh>

#include "cuda_test_util.hpp"
#include "kernels_test_util.hpp"

// File-local names live in a namespace named after the file: nvcc compiles every
// tests/cuda/test_cuda_*.cpp in one TU (tests/cuda/tests.cmake, TINYTORCH_CUDA_TESTS_ONE_TU).
namespace test_cuda_elementwise {

namespace cpu = tinytorch::backend::cpu;
namespace gpu = tinytorch::backend::cuda;
using cuda_test::DeviceArray;
using kernels_test::make_values;
using kernels_test::require_close;
using tinytorch::Shape;
using tinytorch::Strides;

const int64_t kSizes[] = {1, 7, 33, 129, 1000};

/// cuda::unary_kernel and the strided naive kernel vs cpu::unary_kernel on n values.
template <class T, class U, class F>
void check_unary(const std::vector<T>& x, F f, const char* what) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<U> want(x.size());
  cpu::unary_kernel(x.data(), want.data(), n, f);
  DeviceArray<T> dx(x);
  DeviceArray<U> dy(x.size()), dy2(x.size());
  gpu::unary_kernel(dx.data(), dy.data(), n, f);
  gpu::unary_kernel_strided(dx.data(), Strides{1}, dy2.data(), Shape{n}, f);
  require_close(dy.download(), want, std::string(what) + " fast");
  require_close(dy2.download(), want, std::string(what) + " naive");
}

/// cuda::binary_kernel (fast when dense, strided otherwise) and binary_kernel_naive vs the CPU.
template <class T, class U, class F>
void check_binary(const std::vector<T>& a, const Strides& sa, const std::vector<T>& b, const Strides& sb,
                  const Shape& shape, bool contiguous, F f, const std::string& what) {
  const int64_t n = tinytorch::numel_of(shape);
  std::vector<U> want(static_cast<size_t>(n));
  cpu::binary_kernel(a.data(), sa, b.data(), sb, want.data(), shape, contiguous, f);
  DeviceArray<T> da(a), db(b);
  DeviceArray<U> out(want.size()), out_naive(want.size());
  gpu::binary_kernel(da.data(), sa, db.data(), sb, out.data(), shape, contiguous, f);
  gpu::binary_kernel_naive(da.data(), sa, db.data(), sb, out_naive.data(), shape, f);
  require_close(out.download(), want, what + " (launcher)");
  require_close(out_naive.download(), want, what + " (naive)");
}

/// The binary functors valid for T, each checked dense, broadcast (n,1) x (1,m) and transposed.
template <class T, class F, class U = decltype(F{}(T(), T()))>
void check_binary_shapes(F f, const char* name, bool specials) {
  for (int64_t n : kSizes) {
    const auto a = make_values<T>(n, 1 + n, -3, 3, specials), b = make_values<T>(n, 2 + n, -3, 3, specials);
    check_binary<T, U>(a, Strides{1}, b, Strides{1}, Shape{n}, true, f, std::string(name) + " dense n=" + std::to_string(n));
  }
  for (int64_t r : {1, 7, 33}) {
    const int64_t c = r == 1 ? 129 : 5;
    const auto col = make_values<T>(r, 3 + r, -3, 3, specials), row = make_values<T>(c, 4 + r, -3, 3, specials);
    // (r, 1) op (1, c) -> (r, c): both operands broadcast (stride 0)
    check_binary<T, U>(col, Strides{1, 0}, row, Strides{0, 1}, Shape{r, c}, false, f,
                       std::string(name) + " broadcast r=" + std::to_string(r));
    // a transposed: a is stored (c, r) and read as (r, c) with strides (1, r); b dense
    const auto at = make_values<T>(r * c, 5 + r, -3, 3, specials), bd = make_values<T>(r * c, 6 + r, -3, 3, specials);
    check_binary<T, U>(at, Strides{1, r}, bd, Strides{c, 1}, Shape{r, c}, false, f,
                       std::string(name) + " transposed r=" + std::to_string(r));
  }
}


TEMPLATE_TEST_CASE("cuda unary kernels match the CPU twins", "[cuda][cuda_elementwise]", float, double) {
  using T = TestType;
  for (int64_t n : kSizes) {
    const auto x = make_values<T>(n, 10 + n, -4, 4, true);
    check_unary<T, T>(x, cpu::NegOp{}, "neg");
    check_unary<T, T>(x, cpu::AbsOp{}, "abs");
    check_unary<T, T>(x, cpu::ReluOp{}, "relu");
    check_unary<T, T>(x, cpu::ExpOp{}, "exp");
    check_unary<T, T>(x, cpu::LogOp{}, "log");
    check_unary<T, T>(x, cpu::SqrtOp{}, "sqrt");
    check_unary<T, T>(x, cpu::TanhOp{}, "tanh");
    check_unary<T, T>(x, cpu::SigmoidOp{}, "sigmoid");
    check_unary<T, T>(x, cpu::GeluOp{false}, "gelu");
    check_unary<T, T>(x, cpu::GeluOp{true}, "gelu tanh");
    check_unary<T, T>(x, cpu::PowScalarOp{2.0}, "pow 2");
    check_unary<T, T>(x, cpu::PowScalarOp{0.5}, "pow 0.5");
    check_unary<T, T>(x, cpu::ClampScalarOp<T>{true, true, T(-1), T(2)}, "clamp");
    check_unary<T, T>(x, cpu::TruncOp{}, "trunc");
  }
}

TEST_CASE("cuda unary kernels on int64 wrap as the CPU twins", "[cuda][cuda_elementwise]") {
  for (int64_t n : kSizes) {
    auto x = make_values<int64_t>(n, 20 + n, -100, 100);
    x[0] = INT64_MIN;
    check_unary<int64_t, int64_t>(x, cpu::NegOp{}, "neg int64");
    check_unary<int64_t, int64_t>(x, cpu::AbsOp{}, "abs int64");
    check_unary<int64_t, int64_t>(x, cpu::ReluOp{}, "relu int64");
    check_unary<int64_t, int64_t>(x, cpu::PowScalarOp{3.0}, "pow 3 int64");
    check_unary<int64_t, int64_t>(x, cpu::TruncOp{}, "trunc int64");
  }
}

TEMPLATE_TEST_CASE("cuda binary kernels match the CPU twins, dense, broadcast and transposed",
                   "[cuda][cuda_elementwise]", float, double) {
  using T = TestType;
  check_binary_shapes<T>(cpu::AddOp{}, "add", true);
  check_binary_shapes<T>(cpu::SubOp{}, "sub", true);
  check_binary_shapes<T>(cpu::MulOp{}, "mul", true);
  check_binary_shapes<T>(cpu::DivOp{}, "div", true);
  check_binary_shapes<T>(cpu::PowTensorOp{}, "pow", false);
  check_binary_shapes<T>(cpu::MaximumOp{}, "maximum", true);
  check_binary_shapes<T>(cpu::MinimumOp{}, "minimum", true);
  check_binary_shapes<T>(cpu::FloorDivideOp{}, "floor_divide", true);
  check_binary_shapes<T>(cpu::RemainderOp{}, "remainder", true);
  check_binary_shapes<T>(cpu::FmodOp{}, "fmod", true);
  check_binary_shapes<T>(cpu::TruncDivideOp{}, "div trunc", true);
  check_binary_shapes<T>(cpu::EqOp{}, "eq", true);
  check_binary_shapes<T>(cpu::LtOp{}, "lt", true);
  check_binary_shapes<T>(cpu::GeOp{}, "ge", true);
}

TEST_CASE("cuda binary kernels on int64 match the CPU twins", "[cuda][cuda_elementwise]") {
  check_binary_shapes<int64_t>(cpu::AddOp{}, "add int64", false);
  check_binary_shapes<int64_t>(cpu::SubOp{}, "sub int64", false);
  check_binary_shapes<int64_t>(cpu::MulOp{}, "mul int64", false);
  check_binary_shapes<int64_t>(cpu::MaximumOp{}, "maximum int64", false);
  check_binary_shapes<int64_t>(cpu::NeOp{}, "ne int64", false);
  check_binary_shapes<int64_t>(cpu::LeOp{}, "le int64", false);
  check_binary_shapes<int64_t>(cpu::GtOp{}, "gt int64", false);
  // wrapping: INT64_MAX + 1 == INT64_MIN, as the CPU's AddOp
  const std::vector<int64_t> a{INT64_MAX, INT64_MIN, 5}, b{1, -1, -7};
  check_binary<int64_t, int64_t>(a, Strides{1}, b, Strides{1}, Shape{3}, true, cpu::AddOp{}, "add int64 wraps");
}

TEMPLATE_TEST_CASE("cuda scalar kernels match the CPU twins", "[cuda][cuda_elementwise]", float, double, int64_t) {
  using T = TestType;
  for (int64_t n : kSizes) {
    const auto a = make_values<T>(n, 30 + n, -3, 3, true);
    const T s = T(2);
    std::vector<T> want(a.size());
    std::vector<int64_t> want_lt(a.size());
    cpu::scalar_kernel(a.data(), s, want.data(), n, cpu::MulOp{});
    cpu::scalar_kernel(a.data(), s, want_lt.data(), n, cpu::LtOp{});
    DeviceArray<T> da(a), out(a.size());
    DeviceArray<int64_t> out_lt(a.size());
    gpu::scalar_kernel(da.data(), s, out.data(), n, cpu::MulOp{});
    gpu::scalar_kernel(da.data(), s, out_lt.data(), n, cpu::LtOp{});
    require_close(out.download(), want, "mul scalar");
    require_close(out_lt.download(), want_lt, "lt scalar");
  }
}

TEMPLATE_TEST_CASE("cuda ternary kernel (clamp with tensor bounds) matches the CPU twin", "[cuda][cuda_elementwise]",
                   float, double) {
  using T = TestType;
  for (int64_t r : {1, 7, 33}) {
    const int64_t c = 9;
    const auto x = make_values<T>(r * c, 40 + r, -3, 3, true);
    const auto lo = make_values<T>(c, 41 + r, -2, 0), hi = make_values<T>(r, 42 + r, 0, 2);
    const Shape shape{r, c};
    const Strides sx{c, 1}, slo{0, 1}, shi{1, 0};  // lo broadcast over rows, hi over columns
    std::vector<T> want(static_cast<size_t>(r * c));
    cpu::ternary_kernel(x.data(), sx, lo.data(), slo, hi.data(), shi, want.data(), shape, cpu::ClampTensorOp{true, true});
    DeviceArray<T> dx(x), dlo(lo), dhi(hi), out(want.size());
    gpu::ternary_kernel(dx.data(), sx, dlo.data(), slo, dhi.data(), shi, out.data(), shape,
                        cpu::ClampTensorOp{true, true});
    require_close(out.download(), want, "clamp(x, lo, hi) r=" + std::to_string(r));
  }
}

TEMPLATE_TEST_CASE("cuda ternary kernel with gelu's backward (dy, x) matches the CPU twin", "[cuda][cuda_elementwise]",
                   float, double) {
  using T = TestType;
  for (int64_t n : kSizes)
    for (bool tanh_approx : {false, true}) {
      const auto dy = make_values<T>(n, 60 + n, -2, 2), x = make_values<T>(n, 61 + n, -6, 6, true);
      const Shape shape{n};
      const Strides s{1};
      std::vector<T> want(static_cast<size_t>(n));
      cpu::ternary_kernel(dy.data(), s, x.data(), s, x.data(), s, want.data(), shape,
                          tinytorch::backend::GeluBackwardOp{tanh_approx});
      DeviceArray<T> ddy(dy), dx(x), out(want.size());
      gpu::ternary_kernel(ddy.data(), s, dx.data(), s, dx.data(), s, out.data(), shape,
                          tinytorch::backend::GeluBackwardOp{tanh_approx});
      require_close(out.download(), want, std::string("gelu backward") + (tanh_approx ? " tanh" : "") +
                                              " n=" + std::to_string(n));
    }
}

TEMPLATE_TEST_CASE("cuda copy kernel: contiguous, transposed and cast, as the CPU twin", "[cuda][cuda_elementwise]",
                   float, double) {
  using T = TestType;
  for (int64_t n : kSizes) {  // dense: memcpy for the same type, the flat kernel for a cast
    const auto src = make_values<T>(n, 50 + n, -100, 100);
    std::vector<T> want(src.size());
    std::vector<int64_t> want_i(src.size());
    cpu::copy_kernel(src.data(), Strides{1}, want.data(), Shape{n});
    cpu::copy_kernel(src.data(), Strides{1}, want_i.data(), Shape{n});
    DeviceArray<T> ds(src), out(src.size()), out_naive(src.size());
    DeviceArray<int64_t> out_i(src.size());
    gpu::copy_kernel(ds.data(), Strides{1}, out.data(), Shape{n});
    gpu::copy_kernel_naive(ds.data(), Strides{1}, out_naive.data(), Shape{n});
    gpu::copy_kernel(ds.data(), Strides{1}, out_i.data(), Shape{n});
    require_close(out.download(), want, "copy dense");
    require_close(out_naive.download(), want, "copy dense naive");
    require_close(out_i.download(), want_i, "cast to int64");
  }
  for (int64_t r : {1, 7, 33, 129}) {  // contiguous() of a transposed (c, r) buffer, and of a broadcast
    const int64_t c = 5;
    const auto src = make_values<T>(r * c, 60 + r, -3, 3, true);
    std::vector<T> want(src.size());
    std::vector<double> want_d(src.size());
    cpu::copy_kernel(src.data(), Strides{1, r}, want.data(), Shape{r, c});
    cpu::copy_kernel(src.data(), Strides{1, r}, want_d.data(), Shape{r, c});
    DeviceArray<T> ds(src), out(src.size());
    DeviceArray<double> out_d(src.size());
    gpu::copy_kernel(ds.data(), Strides{1, r}, out.data(), Shape{r, c});
    gpu::copy_kernel(ds.data(), Strides{1, r}, out_d.data(), Shape{r, c});
    require_close(out.download(), want, "contiguous of a transpose r=" + std::to_string(r));
    require_close(out_d.download(), want_d, "contiguous + cast to double r=" + std::to_string(r));

    std::vector<T> want_b(static_cast<size_t>(r * c));  // expand (1, c) -> (r, c)
    cpu::copy_kernel(src.data(), Strides{0, 1}, want_b.data(), Shape{r, c});
    DeviceArray<T> out_b(want_b.size());
    gpu::copy_kernel(ds.data(), Strides{0, 1}, out_b.data(), Shape{r, c});
    require_close(out_b.download(), want_b, "contiguous of an expand r=" + std::to_string(r));
  }
}

TEST_CASE("cuda fill", "[cuda][cuda_elementwise]") {
  for (int64_t n : kSizes) {
    DeviceArray<float> f(static_cast<size_t>(n));
    gpu::fill_kernel(f.data(), n, 2.5f);
    require_close(f.download(), std::vector<float>(static_cast<size_t>(n), 2.5f), "fill float");
  }
  DeviceArray<int64_t> fi(129);
  gpu::fill_kernel(fi.data(), 129, INT64_MIN);
  require_close(fi.download(), std::vector<int64_t>(129, INT64_MIN), "fill int64");
  DeviceArray<double> fd(33);
  gpu::fill_kernel(fd.data(), 33, -0.0);
  for (double v : fd.download()) REQUIRE(std::signbit(v));  // -0.0 stays -0.0
  gpu::fill_kernel(static_cast<float*>(nullptr), 0, 1.0f);  // empty: launches nothing
}

TEST_CASE("cuda copy kernel casts int64 to float and double as the CPU twin", "[cuda][cuda_elementwise]") {
  for (int64_t n : kSizes) {
    auto src = make_values<int64_t>(n, 70 + n, -1e6, 1e6);
    src[0] = (int64_t(1) << 53) + 1;  // not a float64: rounds
    std::vector<float> want_f(src.size());
    std::vector<double> want_d(src.size());
    cpu::copy_kernel(src.data(), Strides{1}, want_f.data(), Shape{n});
    cpu::copy_kernel(src.data(), Strides{1}, want_d.data(), Shape{n});
    DeviceArray<int64_t> ds(src);
    DeviceArray<float> out_f(src.size());
    DeviceArray<double> out_d(src.size());
    gpu::copy_kernel(ds.data(), Strides{1}, out_f.data(), Shape{n});
    gpu::copy_kernel(ds.data(), Strides{1}, out_d.data(), Shape{n});
    require_close(out_f.download(), want_f, "int64 -> float", 0.0);
    require_close(out_d.download(), want_d, "int64 -> double", 0.0);
  }
}

TEST_CASE("cuda elementwise: more than 25 dims is a clear error", "[cuda][cuda_elementwise]") {
  const Shape shape(26, 1);
  const Strides s(26, 1);
  DeviceArray<float> a(1), out(1);
  REQUIRE_THROWS_WITH(gpu::binary_kernel(a.data(), s, a.data(), s, out.data(), shape, false, cpu::AddOp{}),
                      Catch::Contains("binary: tensors of at most 25 dimensions are supported, got 26"));
  // 25 dims work
  const Shape shape8(25, 1);
  const Strides s8(25, 0);
  a.upload({3.0f});
  gpu::binary_kernel(a.data(), s8, a.data(), s8, out.data(), shape8, false, cpu::AddOp{});
  REQUIRE(out.download()[0] == 6.0f);
}

}  // namespace test_cuda_elementwise

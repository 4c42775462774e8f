// tests/cuda/test_cuda_softmax.cpp — backend/cuda/softmax.cuh against backend/cpu/softmax.hpp.
//
// softmax / log_softmax forward and backward on the same (outer, n, inner) inputs as the CPU twins,
// n in {1, 7, 33, 129, 1000}, inner 1 (the last dim) and 3 (a middle dim); float32 and float64.
// The fast (warp per row) and naive (thread per row) kernels are both checked against the CPU.
// Edge rows: large logits (1000: no overflow), an all -inf row (NaN, as the CPU and PyTorch), a
// row with a NaN (all NaN), a row with +inf.
// Chapter: chapters/10-gpu-kernels.md.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <tinytorch/backend/cuda/softmax.cuh>

#include "cuda_test_util.hpp"
#include "kernels_test_util.hpp"

// File-local names live in a namespace named after the file: nvcc compiles every
// tests/cuda/test_cuda_*.cpp in one TU (tests/cuda/tests.cmake, TINYTORCH_CUDA_TESTS_ONE_TU).
namespace test_cuda_softmax {

namespace cpu = tinytorch::backend::cpu;
namespace gpu = tinytorch::backend::cuda;
using cuda_test::DeviceArray;
using kernels_test::make_values;
using kernels_test::require_close;

const int64_t kSizes[] = {1, 7, 33, 129, 1000};

template <class T>
void check_forward(const std::vector<T>& x, int64_t outer, int64_t n, int64_t inner, bool log, const std::string& what) {
  std::vector<T> want(x.size());
  cpu::softmax_kernel(x.data(), want.data(), outer, n, inner, log);
  DeviceArray<T> dx(x), y(x.size()), y_naive(x.size());
  gpu::softmax_kernel(dx.data(), y.data(), outer, n, inner, log);
  gpu::softmax_kernel_naive(dx.data(), y_naive.data(), outer, n, inner, log);
  require_close(y.download(), want, what + " (fast)");
  require_close(y_naive.download(), want, what + " (naive)");
}

template <class T>
void check_backward(const std::vector<T>& x, const std::vector<T>& dy, int64_t outer, int64_t n, int64_t inner,
                    bool log, const std::string& what) {
  std::vector<T> y(x.size()), want(x.size());
  cpu::softmax_kernel(x.data(), y.data(), outer, n, inner, log);
  cpu::softmax_backward_kernel(dy.data(), y.data(), want.data(), outer, n, inner, log);
  DeviceArray<T> ddy(dy), dy_(y), dx(x.size()), dx_naive(x.size());
  gpu::softmax_backward_kernel(ddy.data(), dy_.data(), dx.data(), outer, n, inner, log);
  gpu::softmax_backward_kernel_naive(ddy.data(), dy_.data(), dx_naive.data(), outer, n, inner, log);
  require_close(dx.download(), want, what + " (fast)");
  require_close(dx_naive.download(), want, what + " (naive)");
}


TEMPLATE_TEST_CASE("cuda softmax / log_softmax forward and backward match the CPU twins", "[cuda][cuda_softmax]",
                   float, double) {
  using T = TestType;
  for (int64_t n : kSizes)
    for (int64_t inner : {1, 3}) {
      const int64_t outer = n == 1000 ? 2 : 5;
      const auto x = make_values<T>(outer * n * inner, 700 + n + inner, -5, 5);
      const auto dy = make_values<T>(outer * n * inner, 800 + n + inner, -1, 1);
      const std::string shape = " (" + std::to_string(outer) + ", " + std::to_string(n) + ", " + std::to_string(inner) + ")";
      for (bool log : {false, true}) {
        const std::string name = log ? "log_softmax" : "softmax";
        check_forward(x, outer, n, inner, log, name + shape);
        check_backward(x, dy, outer, n, inner, log, name + " backward" + shape);
      }
    }
}

TEMPLATE_TEST_CASE("cuda softmax edge rows: large logits, all -inf, NaN, +inf", "[cuda][cuda_softmax]", float, double) {
  using T = TestType;
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const int64_t n = 37;
  std::vector<T> x = make_values<T>(5 * n, 900, -5, 5);
  for (int64_t k = 0; k < n; ++k) x[static_cast<size_t>(k)] += T(1000);  // row 0: logits near 1000
  for (int64_t k = 0; k < n; ++k) x[static_cast<size_t>(n + k)] = -inf;   // row 1: all -inf
  x[static_cast<size_t>(2 * n + 20)] = nan;                                // row 2: one NaN
  x[static_cast<size_t>(3 * n + 33)] = inf;                                // row 3: one +inf
  x[static_cast<size_t>(4 * n + 3)] = -inf;                                // row 4: one -inf
  for (bool log : {false, true}) {
    check_forward(x, 5, n, 1, log, log ? "log_softmax edge rows" : "softmax edge rows");
    std::vector<T> y(x.size());
    cpu::softmax_kernel(x.data(), y.data(), 5, n, 1, log);
    REQUIRE(std::isnan(y[static_cast<size_t>(n)]));  // the CPU twin (and PyTorch): all -inf gives NaN
    REQUIRE(std::isfinite(y[0]));                      // 1000 does not overflow
  }
}

}  // namespace test_cuda_softmax

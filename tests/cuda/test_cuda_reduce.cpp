// tests/cuda/test_cuda_reduce.cpp — backend/cuda/reduce.cuh against backend/cpu/reduce.hpp.
//
// sum/mean (sum_dim_kernel) and max/min with their indices (max_dim_kernel,
// min_dim_kernel, extreme_dim_kernel) on the same (outer, n, inner) inputs as the
// CPU twins, n in {1, 7, 33, 129, 1000}, inner 1 (rows) and 5 (strided columns); float32, float64
// and int64. The fast (block per row, warp shuffles) and naive (thread per output) kernels are
// both checked against the CPU. Sums agree within rounding (another order of additions); max/min
// values and indices agree exactly: first index on ties, the first NaN wins.
// Chapter: chapters/10-gpu-kernels.md.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <tinytorch/backend/cuda/reduce.cuh>

#include "cuda_test_util.hpp"
#include "kernels_test_util.hpp"

// File-local names live in a namespace named after the file: nvcc compiles every
// tests/cuda/test_cuda_*.cpp in one TU (tests/cuda/tests.cmake, TINYTORCH_CUDA_TESTS_ONE_TU).
namespace test_cuda_reduce {

namespace cpu = tinytorch::backend::cpu;
namespace gpu = tinytorch::backend::cuda;
using cuda_test::DeviceArray;
using kernels_test::make_values;
using kernels_test::require_close;

const int64_t kSizes[] = {1, 7, 33, 129, 1000};

template <class T> double sum_tol() { return std::is_same_v<T, float> ? 1e-4 : 1e-11; }

template <class T>
void check_sum(const std::vector<T>& x, int64_t outer, int64_t n, int64_t inner, double scale, const std::string& what) {
  std::vector<T> want(static_cast<size_t>(outer * inner));
  cpu::sum_dim_kernel(x.data(), want.data(), outer, n, inner, scale);
  DeviceArray<T> dx(x), out(want.size()), out_fast(want.size()), out_naive(want.size());
  gpu::sum_dim_kernel(dx.data(), out.data(), outer, n, inner, scale);
  gpu::sum_dim_kernel_fast(dx.data(), out_fast.data(), outer, n, inner, scale);
  gpu::sum_dim_kernel_naive(dx.data(), out_naive.data(), outer, n, inner, scale);
  require_close(out.download(), want, what + " (launcher)", sum_tol<T>());
  require_close(out_fast.download(), want, what + " (fast)", sum_tol<T>());
  require_close(out_naive.download(), want, what + " (naive)", sum_tol<T>());
}

template <class T, class Better>
void check_extreme(const std::vector<T>& x, int64_t outer, int64_t n, int64_t inner, Better better,
                   const std::string& what) {
  const size_t m = static_cast<size_t>(outer * inner);
  std::vector<T> want_v(m);
  std::vector<int64_t> want_i(m);
  cpu::extreme_dim_kernel(x.data(), want_v.data(), want_i.data(), outer, n, inner, better);
  DeviceArray<T> dx(x), v(m), v_fast(m), v_naive(m);
  DeviceArray<int64_t> i(m), i_fast(m), i_naive(m);
  gpu::extreme_dim_kernel(dx.data(), v.data(), i.data(), outer, n, inner, better);
  gpu::extreme_dim_kernel_fast(dx.data(), v_fast.data(), i_fast.data(), outer, n, inner, better);
  gpu::extreme_dim_kernel_naive(dx.data(), v_naive.data(), i_naive.data(), outer, n, inner, better);
  require_close(v.download(), want_v, what + " values (launcher)", 0.0);
  require_close(i.download(), want_i, what + " indices (launcher)");
  require_close(v_fast.download(), want_v, what + " values (fast)", 0.0);
  require_close(i_fast.download(), want_i, what + " indices (fast)");
  require_close(v_naive.download(), want_v, what + " values (naive)", 0.0);
  require_close(i_naive.download(), want_i, what + " indices (naive)");
}


TEMPLATE_TEST_CASE("cuda sum_dim / mean match the CPU twin, rows and strided columns", "[cuda][cuda_reduce]", float,
                   double, int64_t) {
  using T = TestType;
  for (int64_t n : kSizes)
    for (int64_t inner : {1, 5}) {
      const int64_t outer = n == 1000 ? 2 : 3;
      const auto x = make_values<T>(outer * n * inner, 100 + n + inner, -3, 3);
      const std::string shape = " (" + std::to_string(outer) + ", " + std::to_string(n) + ", " + std::to_string(inner) + ")";
      check_sum(x, outer, n, inner, 1.0, "sum" + shape);
      if constexpr (!std::is_integral_v<T>) check_sum(x, outer, n, inner, 1.0 / static_cast<double>(n), "mean" + shape);
    }
}

TEMPLATE_TEST_CASE("cuda sum: NaN and inf propagate as on the CPU, an empty dim sums to 0", "[cuda][cuda_reduce]",
                   float, double) {
  using T = TestType;
  for (int64_t n : {7, 33, 129}) {
    const auto x = make_values<T>(2 * n, 200 + n, -3, 3, true);  // NaN, inf, -inf planted
    check_sum(x, 2, n, 1, 1.0, "sum with specials n=" + std::to_string(n));
    check_sum(x, 1, 2 * n, 1, 1.0, "sum_all with specials n=" + std::to_string(n));
  }
  std::vector<T> inf_only{T(1), std::numeric_limits<T>::infinity(), T(2)};
  check_sum(inf_only, 1, 3, 1, 1.0, "sum with +inf");
  const std::vector<T> empty(1, T(0));  // (3, 0, 1): a buffer of 1 keeps DeviceArray non-null
  std::vector<T> want(3, T(7));
  cpu::sum_dim_kernel(empty.data(), want.data(), 3, 0, 1, 1.0);
  DeviceArray<T> dx(empty), out(3), out_naive(3);
  gpu::sum_dim_kernel_fast(dx.data(), out.data(), 3, 0, 1, 1.0);
  gpu::sum_dim_kernel_naive(dx.data(), out_naive.data(), 3, 0, 1, 1.0);
  require_close(out.download(), want, "sum over an empty dim (fast)");
  require_close(out_naive.download(), want, "sum over an empty dim (naive)");
}

TEST_CASE("cuda sum of int64 wraps modulo 2^64 as the CPU twin", "[cuda][cuda_reduce]") {
  std::vector<int64_t> x = make_values<int64_t>(129, 300, -1000, 1000);
  x[3] = INT64_MAX;
  x[77] = INT64_MAX;
  check_sum(x, 1, 129, 1, 1.0, "int64 sum wraps");
}

TEMPLATE_TEST_CASE("cuda max/min with indices match the CPU twin: ties take the first index", "[cuda][cuda_reduce]",
                   float, double, int64_t) {
  using T = TestType;
  for (int64_t n : kSizes)
    for (int64_t inner : {1, 5}) {
      const int64_t outer = n == 1000 ? 2 : 3;
      // values in a few integers: many ties
      auto x = make_values<T>(outer * n * inner, 500 + n + inner, -3, 3);
      for (auto& v : x) v = static_cast<T>(std::floor(static_cast<double>(v)));
      const std::string shape = " (" + std::to_string(outer) + ", " + std::to_string(n) + ", " + std::to_string(inner) + ")";
      check_extreme(x, outer, n, inner, std::greater<T>(), "max" + shape);
      check_extreme(x, outer, n, inner, std::less<T>(), "min" + shape);
    }
}

TEMPLATE_TEST_CASE("cuda max/min: the first NaN wins, infinities order as numbers", "[cuda][cuda_reduce]", float,
                   double) {
  using T = TestType;
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  for (int64_t n : {7, 33, 129, 1000}) {
    auto x = make_values<T>(2 * n, 600 + n, -3, 3);
    x[static_cast<size_t>(n / 2)] = nan;      // row 0: one NaN mid-row
    x[static_cast<size_t>(n - 1)] = nan;      // and a second, later one
    x[static_cast<size_t>(n + 1)] = inf;      // row 1: +inf and -inf, no NaN
    x[static_cast<size_t>(2 * n - 1)] = -inf;
    check_extreme(x, 2, n, 1, std::greater<T>(), "max with NaN/inf n=" + std::to_string(n));
    check_extreme(x, 2, n, 1, std::less<T>(), "min with NaN/inf n=" + std::to_string(n));
    check_extreme(x, 1, n, 2, std::greater<T>(), "max with NaN/inf, strided n=" + std::to_string(n));
  }
  // the launchers named as the CPU twins
  const std::vector<T> x{T(1), nan, T(3), nan};
  DeviceArray<T> dx(x), v(1);
  DeviceArray<int64_t> i(1);
  gpu::max_dim_kernel(dx.data(), v.data(), i.data(), 1, 4, 1);
  REQUIRE(std::isnan(v.download()[0]));
  REQUIRE(i.download()[0] == 1);
  gpu::min_dim_kernel(dx.data(), static_cast<T*>(nullptr), i.data(), 1, 4, 1);  // values may be null
  REQUIRE(i.download()[0] == 1);
}

TEST_CASE("cuda max over an empty dim is a clear error", "[cuda][cuda_reduce]") {
  DeviceArray<float> x(1), v(2);
  REQUIRE_THROWS_WITH(gpu::max_dim_kernel(x.data(), v.data(), static_cast<int64_t*>(nullptr), 2, 0, 1),
                      Catch::Contains("cannot reduce a dimension of size 0"));
}

}  // namespace test_cuda_reduce

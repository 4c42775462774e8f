// tests/cuda/test_cuda_runtime.cpp — the raw device-memory API round trip on every device.
//
// What it checks: core/cuda_runtime.hpp's raw_malloc / memcpy_h2d / memcpy_d2d / memcpy_d2h /
// synchronize / raw_free on devices 0 .. device_count()-1, through tests/cuda/cuda_test_util.hpp's
// DeviceArray: the bytes that go up come back unchanged (odd sizes 1, 7, 33, 129; NaN and inf
// included, compared bit for bit), and a zero-byte allocation is a null pointer.
// Built twice by tests/cuda/tests.cmake: test_cuda_runtime_sim (g++, TINYTORCH_CUDA_SIM=1: simulator
// memory) and, with nvcc, ctest test_cuda_runtime (a real GPU; Skipped without one).
// Chapter: chapters/10-gpu-kernels.md. Reference: CUDA Runtime API, "Memory Management".
// Catch2 tags: [cuda][runtime].
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <tinytorch/core/cuda_runtime.hpp>

#include "cuda_test_util.hpp"

namespace test_cuda_runtime {

namespace cuda = tinytorch::backend::cuda;

// n floats: i * 0.5 - 3, with NaN, +inf and -inf in the first slots when they fit.
std::vector<float> pattern(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.5f - 3.0f;
  if (n > 0) v[0] = std::numeric_limits<float>::quiet_NaN();
  if (n > 1) v[1] = std::numeric_limits<float>::infinity();
  if (n > 2) v[2] = -std::numeric_limits<float>::infinity();
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace test_cuda_runtime

TEST_CASE("cuda runtime: host -> device -> device -> host round trip on every device", "[cuda][runtime]") {
  using namespace test_cuda_runtime;
  const int devices = cuda::device_count();
  REQUIRE(devices >= 1);
  for (int device = 0; device < devices; ++device) {
    for (size_t n : {size_t{1}, size_t{7}, size_t{33}, size_t{129}}) {
      INFO("device " << device << ", n = " << n);
      const std::vector<float> host = pattern(n);
      cuda_test::DeviceArray<float> a(host, device);
      cuda_test::DeviceArray<float> b(n, device);
      REQUIRE(a.data() != nullptr);
      REQUIRE(a.size() == n);
      cuda::memcpy_d2d(b.data(), a.data(), n * sizeof(float));
      cuda::synchronize(device);
      CHECK(same_bits(a.download(), host));
      CHECK(same_bits(b.download(), host));
    }
    cuda_test::DeviceArray<int64_t> big(std::vector<int64_t>{INT64_MIN, -1, 0, 1, INT64_MAX}, device);
    CHECK(big.download() == std::vector<int64_t>{INT64_MIN, -1, 0, 1, INT64_MAX});
  }
}

TEST_CASE("cuda runtime: zero bytes is a null pointer, and freeing null is a no-op", "[cuda][runtime]") {
  using namespace test_cuda_runtime;
  CHECK(cuda::raw_malloc(0, 0) == nullptr);
  cuda::raw_free(0, nullptr);
  cuda_test::DeviceArray<float> empty(size_t{0});
  CHECK(empty.download().empty());
}

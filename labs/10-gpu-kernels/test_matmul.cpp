// labs/10-gpu-kernels/test_matmul.cpp — the checks of lab 10, one Catch2 tag per task.
//
// Run with the simulator's checks on (lab.json: TINYTORCH_SIM_CHECK=memcheck,racecheck,initcheck),
// so an out-of-bounds access, a missing __syncthreads() or a read of unwritten memory fails the
// launch with the simulator's report. The reference is the naive twin on the CPU: the triple loop
// in double; results must agree to 1e-5 relative. Shapes cover a single element, shapes that are
// not multiples of the tile (17 x 33 x 9, 5 x 70 x 3), a K larger than several tiles, and 64^3.
#include <catch2/catch.hpp>

#include "lab.hpp"

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace ttc = tinytorch::backend::cuda;

namespace {

struct Shape3 {
  int M, N, K;
};
const std::vector<Shape3> shapes{{1, 1, 1}, {17, 33, 9}, {5, 70, 3}, {20, 7, 45}, {64, 64, 64}};

std::vector<float> values(size_t n, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(((i * 37 + seed * 11) % 23) - 11) / 8.0f;
  return v;
}

// Runs `launch` on device copies of A and B; "" when C matches the CPU's triple loop, else the
// first wrong element.
std::string check_product(const std::function<void(const float*, const float*, float*, int, int, int)>& launch,
                          const Shape3& s) {
  const std::vector<float> A = values(static_cast<size_t>(s.M) * s.K, 1), B = values(static_cast<size_t>(s.K) * s.N, 2);
  float* dA = static_cast<float*>(ttc::raw_malloc(0, A.size() * sizeof(float)));
  float* dB = static_cast<float*>(ttc::raw_malloc(0, B.size() * sizeof(float)));
  float* dC = static_cast<float*>(ttc::raw_malloc(0, static_cast<size_t>(s.M) * s.N * sizeof(float)));
  ttc::memcpy_h2d(dA, A.data(), A.size() * sizeof(float));
  ttc::memcpy_h2d(dB, B.data(), B.size() * sizeof(float));
  std::string problem;
  try {
    launch(dA, dB, dC, s.M, s.N, s.K);
    std::vector<float> C(static_cast<size_t>(s.M) * s.N);
    ttc::memcpy_d2h(C.data(), dC, C.size() * sizeof(float));
    for (int i = 0; i < s.M && problem.empty(); ++i)
      for (int j = 0; j < s.N; ++j) {
        double want = 0;
        for (int k = 0; k < s.K; ++k) want += static_cast<double>(A[i * s.K + k]) * B[k * s.N + j];
        const double got = C[static_cast<size_t>(i) * s.N + j];
        if (!(std::abs(got - want) <= 1e-5 * std::abs(want) + 1e-5)) {
          std::ostringstream os;
          os << "C[" << i << "][" << j << "] = " << got << ", expected " << want;
          problem = os.str();
          break;
        }
      }
    // memcheck finds a write into the last few bytes past an allocation (its rounding) here
    ttc::raw_free(0, dA);
    ttc::raw_free(0, dB);
    ttc::raw_free(0, dC);
  } catch (const tinytorch::NotImplemented&) {
    throw;
  } catch (const tinytorch::Error& e) {
    problem = std::string("the simulator's checks stopped it: ") + e.what();
  }
  return problem;
}

void check_all(const char* which, const std::function<void(const float*, const float*, float*, int, int, int)>& launch) {
  for (const Shape3& s : shapes) {
    std::ostringstream what;
    what << which << ", M = " << s.M << ", N = " << s.N << ", K = " << s.K;
    const std::string p = check_product(launch, s);
    if (p.empty())
      SUCCEED(what.str());
    else
      FAIL_CHECK(what.str() << ": " << p);
  }
}

}  // namespace

TEST_CASE("matmul_naive: one thread per element, any shape, under the simulator's checks", "[task:naive]") {
  check_all("launch_naive", lab10::launch_naive);
}

TEST_CASE("matmul_tiled: shared-memory tiles, any shape, under the simulator's checks", "[task:tiled]") {
  check_all("launch_tiled", lab10::launch_tiled);
}

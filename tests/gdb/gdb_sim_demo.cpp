// tests/gdb/gdb_sim_demo.cpp — a CUDA kernel in the simulator, for stepping one GPU thread under gdb.
//
// Built with g++ -O0 -g -DTINYTORCH_CUDA_SIM=1 (tests/gdb/CMakeLists.txt): backend/cuda/gemm.cuh's
// tiled kernel computes C (40 x 70) = A (40 x 33) B (33 x 70), A[i, k] = i + k, B[k, j] = k - j, on a grid
// of 3 x 2 blocks of 32 x 32 threads, so that blockIdx.x = 1 and threadIdx.x = 5 exist and the last
// tiles are partial. Then it checks C against the CPU's triple loop and prints "gdb_sim_demo: C[0, 37] = -8096, ok".
// ctest gdb_sim_kernel (tests/gdb/run_gdb_sim_test.sh) stops in one thread of it with the commands in
// tests/gdb/sim_session.gdb: a breakpoint on gemm_tiled_kernel<float, 32> whose condition names all four
// of threadIdx.x/.y and blockIdx.x/.y (one thread of the grid), then print threadIdx, blockIdx, ...
// Chapter: chapters/10-gpu-kernels.md ("Stepping through one GPU thread"). Reference: the recipe in
// backend/cuda/sim.hpp's header.
#include <cstdio>
#include <vector>

#include <tinytorch/backend/cuda/gemm.cuh>
#include <tinytorch/core/cuda_runtime.hpp>

namespace cu = tinytorch::backend::cuda;

int main() {
  const int64_t M = 40, K = 33, N = 70;
  std::vector<float> a(M * K), b(K * N), c(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) a[i * K + k] = static_cast<float>(i + k);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) b[k * N + j] = static_cast<float>(k - j);

  float* dA = static_cast<float*>(cu::raw_malloc(0, a.size() * sizeof(float)));
  float* dB = static_cast<float*>(cu::raw_malloc(0, b.size() * sizeof(float)));
  float* dC = static_cast<float*>(cu::raw_malloc(0, c.size() * sizeof(float)));
  cu::memcpy_h2d(dA, a.data(), a.size() * sizeof(float));
  cu::memcpy_h2d(dB, b.data(), b.size() * sizeof(float));
  cu::gemm_tiled<float>(M, N, K, 1.0f, dA, K, false, dB, N, false, 0.0f, dC, N);
  cu::memcpy_d2h(c.data(), dC, c.size() * sizeof(float));
  cu::raw_free(0, dA);
  cu::raw_free(0, dB);
  cu::raw_free(0, dC);

  int wrong = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double want = 0;
      for (int64_t k = 0; k < K; ++k) want += static_cast<double>(a[i * K + k]) * b[k * N + j];
      wrong += c[i * N + j] != static_cast<float>(want);  // small integers: exact in float
    }
  std::printf("gdb_sim_demo: C[0, 37] = %g, %s\n", c[37], wrong ? "WRONG" : "ok");
  return wrong ? 1 : 0;
}

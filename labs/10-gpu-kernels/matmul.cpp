// labs/10-gpu-kernels/matmul.cpp — your matrix-multiply kernels (lab 10; the tasks are in lab.hpp).
//
// Check your work:   scripts/lab.sh check 10, from the tinytorch clone (add the --dir you gave to start);
// the simulator's checks are on.
// Chapter: chapters/10-gpu-kernels.md, sections 10.2-10.3 and 10.7.
// BEGIN REFERENCE ONLY
#ifndef TT_LAB_REFERENCE
#error "labs/10-gpu-kernels/matmul.cpp is the reference solution: a student build must compile the student's copy (scripts/lab.sh start 10)"
#endif
// END REFERENCE ONLY
#include "lab.hpp"

namespace lab10 {

namespace ttc = tinytorch::backend::cuda;

__global__ void matmul_naive(const float* A, const float* B, float* C, int M, int N, int K) {
  // BEGIN SOLUTION naive
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (row >= M || col >= N) return;
  float acc = 0;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = acc;
  // END SOLUTION
}

void launch_naive(const float* A, const float* B, float* C, int M, int N, int K) {
  // BEGIN SOLUTION naive
  const dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
  ttc::launch_kernel("matmul_naive", matmul_naive, grid, dim3(TILE, TILE), 0, A, B, C, M, N, K);
  // END SOLUTION
}

__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
  // BEGIN SOLUTION tiled
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int row = static_cast<int>(blockIdx.y) * TILE + ty, col = static_cast<int>(blockIdx.x) * TILE + tx;
  float acc = 0;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();  // both tiles complete before anyone reads them
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();  // everyone done reading before the next step overwrites them
  }
  if (row < M && col < N) C[row * N + col] = acc;
  // END SOLUTION
}

void launch_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
  // BEGIN SOLUTION tiled
  const dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
  ttc::launch_kernel("matmul_tiled", matmul_tiled, grid, dim3(TILE, TILE), 0, A, B, C, M, N, K);
  // END SOLUTION
}

}  // namespace lab10

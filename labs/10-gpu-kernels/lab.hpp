// labs/10-gpu-kernels/lab.hpp — lab 10: a matrix-multiply CUDA kernel, first one thread per
// output element, then with tiles in shared memory. Your file is matmul.cpp.
//
// C = A B with A (M, K), B (K, N), C (M, N), float32, row-major (A[i][k] is A[i * K + k]), all in
// device memory. Thread (tx, ty) of block (bx, by) owns C[row][col] with
//   row = by * blockDim.y + ty,  col = bx * blockDim.x + tx     (x runs along N, y along M)
// and the grid is ceil(N / TILE) x ceil(M / TILE) blocks of TILE x TILE threads; threads outside
// C (row >= M or col >= N) write nothing.
// Tiled (chapter 10.3): the block walks K in steps of TILE; each step every thread copies one
// element of a TILE x TILE tile of A and one of B into __shared__ arrays (0 past the edges), all
// wait (__syncthreads()), each adds TILE products out of shared memory, and all wait again before
// the next step overwrites the tiles. Each element loaded from global memory is used TILE times.
// The kernels run in tinytorch's CUDA simulator (each CUDA thread a fiber on the CPU: the same
// source compiles with nvcc for a GPU). The lab runs them with the simulator's checks on
// (TINYTORCH_SIM_CHECK=memcheck,racecheck,initcheck): an out-of-bounds access, a result that
// depends on the order threads run in (a missing __syncthreads()), or a read of memory nobody
// wrote makes the launch throw a tinytorch::Error naming the kernel, the block and the thread.
// Launch:  tinytorch::backend::cuda::launch_kernel("name", kernel, dim3(gx, gy), dim3(TILE, TILE),
//                                                 /*dynamic_smem_bytes=*/0, args...);
// Chapter: chapters/10-gpu-kernels.md (10.2 one thread per element, 10.3 tiles in shared memory,
// 10.5 the simulator, 10.7 its checks). The library's kernel, to compare with once you are done:
// include/tinytorch/backend/cuda/gemm.cuh (gemm_tiled_kernel). Reference: the CUDA C++
// Programming Guide, "Shared Memory" (its matrix multiplication example); Kirk & Hwu,
// "Programming Massively Parallel Processors", chapter 5.
#pragma once

#include <tinytorch/tinytorch.hpp>
#include <tinytorch/backend/cuda/launch.hpp>

namespace lab10 {

constexpr int TILE = 16;  ///< block edge and tile edge

/// Task naive. One thread per element of C: C[row][col] = sum_k A[row][k] B[k][col].
__global__ void matmul_naive(const float* A, const float* B, float* C, int M, int N, int K);
/// Task naive. Launches matmul_naive on the grid above (TILE x TILE blocks) for C = A B.
void launch_naive(const float* A, const float* B, float* C, int M, int N, int K);

/// Task tiled. The same product, the block's TILE x TILE tiles of A and B staged in shared memory.
__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K);
/// Task tiled. Launches matmul_tiled on the grid above.
void launch_tiled(const float* A, const float* B, float* C, int M, int N, int K);

}  // namespace lab10

// tinytorch/backend/cuda/gemm.cuh — C = alpha * op(A) op(B) + beta * C on the GPU: the matmul ladder.
// Same BLAS-style interface as backend/cpu/gemm.hpp, on row-major *device* pointers: op(A) (M, K),
// op(B) (K, N), C (M, N) with leading dimensions lda, ldb, ldc; trans_a / trans_b: A is stored
// (K, M) and op(A) = A^T (likewise B); beta = 0 never reads C (it may hold NaN). T is float,
// double, or Half / BFloat16 (read and written in 16 bits, computed in float).
// Three kernels, each one idea more than the last (siboehm's SGEMM worklog numbers them 1, 3, 6):
//  1. gemm_naive_kernel: one thread per C element, a dot product accumulated in double; the
//     oracle, backend::cpu::gemm_naive's arithmetic; two global loads per multiply-add.
//  2. gemm_tiled_kernel: a 32x32 block of threads owns a 32x32 tile of C and walks K in 32-wide
//     steps through shared memory (each thread loads one element of each tile, coalesced):
//     global traffic falls 32x. Any M, N, K, trans flags, leading dimensions and T.
//  3. gemm_register_blocked_kernel: 256 threads own a 128x128 tile of C, step over K by 8, and
//     each computes an 8x8 sub-tile in registers (shared memory read 16 times per 64 FMAs instead
//     of twice per FMA), with float4 global loads and A's tile transposed in shared memory. float
//     only, untransposed, M and N multiples of 128, K of 8, 16-byte aligned pointers and leading
//     dimensions multiples of 4. Reported at n = 4096: 78% of cuBLAS on an A6000 (siboehm), 50-62%
//     on an H100; the target is half of cuBLAS.
// Launchers: gemm (kernel 3 when gemm_register_blocked_applies, else 2), gemm_naive, gemm_tiled,
// gemm_register_blocked (throws tinytorch::Error when its conditions do not hold).
// 16-bit T (chapter 11.2): kernels 1 and 2 multiply as float, accumulate in opmath_type<T> =
// float (kernel 1 in double) and round C once: the bits of kernel 2 on float32 copies, with half
// the bytes (PyTorch's CUDA matmul and cublasGemmEx with CUBLAS_COMPUTE_32F accumulate the same).
// Kernels 2 and 3 sum each C element over k = 0..K-1 in one accumulator: the same bits.
// Chapter: chapters/10-gpu-kernels.md. Reference: Simon Boehm, "How to Optimize a CUDA Matmul
// Kernel for cuBLAS-like Performance: a Worklog" (kernels 1, 3, 6); ours add bounds checks,
// transposes, leading dimensions and a beta = 0 that does not read C.
#pragma once

#include <cstdint>
#include <type_traits>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"
#include "tinytorch/core/half.hpp"  // Half, BFloat16, opmath_type
#include "tinytorch/backend/cuda/launch.hpp"

#if !TINYTORCH_WITH_CUDA
#error "backend/cuda/gemm.cuh holds CUDA kernels: compile with nvcc, or with -DTINYTORCH_CUDA_SIM=1 (the simulator)"
#endif

TT_NAMESPACE_BEGIN namespace backend::cuda {

// ------------------------------------------------------------------------------------------------
// kernels
// ------------------------------------------------------------------------------------------------

/// Kernel 1 (naive, the oracle). Thread (x, y) of the grid computes C[i, j] for i along y and j
/// along x: consecutive threads of a warp take consecutive columns j, so their reads of B (when
/// not transposed) and their writes of C are coalesced (siboehm kernel 2's point). Grid-stride
/// loops in both directions, so any M, N fit in a capped grid.
template <class T>
__global__ void gemm_naive_kernel(int64_t M, int64_t N, int64_t K, opmath_type<T> alpha, const T* A, int64_t lda,
                                  bool trans_a, const T* B, int64_t ldb, bool trans_b, opmath_type<T> beta, T* C,
                                  int64_t ldc) {
  for (int64_t i = blockIdx.y * (int64_t)blockDim.y + threadIdx.y; i < M; i += gridDim.y * (int64_t)blockDim.y) {
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < N; j += gridDim.x * (int64_t)blockDim.x) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        const T a = trans_a ? A[k * lda + i] : A[i * lda + k];  // op(A)[i, k]
        const T b = trans_b ? B[j * ldb + k] : B[k * ldb + j];  // op(B)[k, j]
        acc += static_cast<double>(a) * static_cast<double>(b);
      }
      T& c = C[i * ldc + j];
      c = static_cast<T>(static_cast<double>(alpha) * acc + (beta == T(0) ? 0.0 : static_cast<double>(beta) * c));
    }
  }
}

/// The ladder's tile shapes (the kernels take them as template parameters; these are the values the
/// launchers use).
///   TILE              kernel 2: side of its square tiles of C, op(A), op(B); blocks of TILE x TILE threads
///   BM x BN, step BK  kernel 3: the tile of C a block computes, and its step along K
///   TM x TN           kernel 3: the sub-tile of C one thread computes in registers
namespace gemm_shape {
constexpr int TILE = 32;
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
}  // namespace gemm_shape

/// Kernel 2 (shared-memory tiled). Block (bx, by) owns C[by*TILE : +TILE, bx*TILE : +TILE];
/// thread (tx, ty) = (threadIdx.x, threadIdx.y) owns C[row, col] with row = by*TILE + ty,
/// col = bx*TILE + tx. For each k0 = 0, TILE, 2*TILE, ... the block fills
///   As[r][k] = op(A)[by*TILE + r, k0 + k]      Bs[k][c] = op(B)[k0 + k, bx*TILE + c]
/// (0 outside the matrices), then thread (tx, ty) adds  sum_k As[ty][k] * Bs[k][tx].
/// Loads are coalesced whatever the trans flags: consecutive tx always read consecutive
/// addresses, and a transposed operand's element is written to the tile transposed. The tiles
/// have TILE + 1 columns so that such a transposed write (As[tx][ty]: a warp writes a column)
/// hits 32 different shared-memory banks instead of one bank 32 times.
template <class T, int TILE>
__global__ void gemm_tiled_kernel(int64_t M, int64_t N, int64_t K, opmath_type<T> alpha, const T* A, int64_t lda,
                                  bool trans_a, const T* B, int64_t ldb, bool trans_b, opmath_type<T> beta, T* C,
                                  int64_t ldc) {
  __shared__ T As[TILE][TILE + 1];
  __shared__ T Bs[TILE][TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t row0 = blockIdx.y * (int64_t)TILE, col0 = blockIdx.x * (int64_t)TILE;  // the block's C tile
  const int64_t row = row0 + ty, col = col0 + tx;                                       // this thread's C element
  opmath_type<T> acc = 0;  // T, or float for a 16-bit T
  for (int64_t k0 = 0; k0 < K; k0 += TILE) {
    // Tile of op(A). Not transposed: A[i, k] at i*lda + k, consecutive tx take consecutive k.
    // Transposed: op(A)[i, k] = A[k, i] at k*lda + i, consecutive tx take consecutive i.
    if (!trans_a) {
      const int64_t i = row0 + ty, k = k0 + tx;
      As[ty][tx] = (i < M && k < K) ? A[i * lda + k] : T(0);
    } else {
      const int64_t i = row0 + tx, k = k0 + ty;
      As[tx][ty] = (i < M && k < K) ? A[k * lda + i] : T(0);
    }
    // Tile of op(B). Not transposed: B[k, j] at k*ldb + j, consecutive tx take consecutive j.
    // Transposed: op(B)[k, j] = B[j, k] at j*ldb + k, consecutive tx take consecutive k.
    if (!trans_b) {
      const int64_t k = k0 + ty, j = col0 + tx;
      Bs[ty][tx] = (k < K && j < N) ? B[k * ldb + j] : T(0);
    } else {
      const int64_t k = k0 + tx, j = col0 + ty;
      Bs[tx][ty] = (k < K && j < N) ? B[j * ldb + k] : T(0);
    }
    __syncthreads();  // both tiles complete before anyone reads them
    // A warp (32 consecutive tx, one ty) reads one As value (a broadcast) and 32 consecutive Bs.
    // Past K both tiles hold 0, so the last, partial step adds exact zeros.
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();  // everyone done with the tiles before the next step overwrites them
  }
  if (row < M && col < N) {
    T& c = C[row * ldc + col];
    c = static_cast<T>(beta == T(0) ? alpha * acc : alpha * acc + beta * c);
  }
}

/// Kernel 3 (register-blocked, float4 loads, A transposed in shared memory). A block computes a
/// BM x BN tile of C, stepping over K by BK; each of its (BM / TM) * (BN / TN) threads (256 with
/// gemm_shape's 128, 128, 8, 8, 8) computes a TM x TN sub-tile in registers. Preconditions
/// (checked by the launcher): float, untransposed, M % BM == 0, N % BN == 0, K % BK == 0, A, B, C
/// 16-byte aligned, lda, ldb, ldc multiples of 4. Block (bx, by) owns
/// C[by*BM : +BM, bx*BN : +BN]; thread t (0..255) owns the TM x TN sub-tile at
///   rows  by*BM + thread_row*TM + [0, TM),   thread_row = t / (BN / TN)   (0..15)
///   cols  bx*BN + thread_col*TN + [0, TN),   thread_col = t % (BN / TN)   (0..15)
/// Per step k0 the block loads A[rows of the tile, k0 : k0 + BK] (BM x BK = 1024 floats) and
/// B[k0 : k0 + BK, cols of the tile] (BK x BN = 1024 floats): 256 float4 each, one per thread.
template <int BM, int BN, int BK, int TM, int TN>
__global__ void gemm_register_blocked_kernel(int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                                             int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                                             int64_t ldc) {
  constexpr int threads = (BM / TM) * (BN / TN);
  static_assert(BM * BK == 4 * threads && BK * BN == 4 * threads, "one float4 of A and of B per thread per step");
  static_assert(BK % 4 == 0 && BN % 4 == 0 && TN % 4 == 0, "float4 loads and stores");
  (void)M;  // the grid covers M exactly (M % BM == 0)
  (void)N;
  // As is A's tile transposed: As[k * BM + m] = A[tile row m, k0 + k]. Bs[k * BN + n] = B[k0 + k, tile col n].
  // Bs receives float4 stores, so it must be 16-byte aligned (a float array need only be 4).
  alignas(16) __shared__ float As[BK * BM];
  alignas(16) __shared__ float Bs[BK * BN];

  const int t = threadIdx.x;
  const int thread_row = t / (BN / TN), thread_col = t % (BN / TN);
  // Move A, B, C to the block's tile: A to row by*BM, B to column bx*BN, C to both.
  A += blockIdx.y * (int64_t)BM * lda;
  B += blockIdx.x * (int64_t)BN;
  C += blockIdx.y * (int64_t)BM * ldc + blockIdx.x * (int64_t)BN;
  // Which float4 this thread loads. A's tile is BM rows of BK floats = BK/4 float4 per row:
  // thread t takes row t / (BK/4), float4 number t % (BK/4) of it. B's tile is BK rows of BN/4 float4.
  const int a_row = t / (BK / 4), a_col4 = t % (BK / 4);
  const int b_row = t / (BN / 4), b_col4 = t % (BN / 4);

  float acc[TM * TN] = {};  // this thread's C sub-tile, acc[m * TN + n]
  float reg_m[TM];           // op(A)[thread's rows, k] for one k
  float reg_n[TN];           // op(B)[k, thread's cols] for one k
  for (int64_t k0 = 0; k0 < K; k0 += BK) {
    // A: one float4 = A[a_row, k0 + 4*a_col4 + 0..3], scattered into As transposed (four scalar stores).
    const float4 a4 = *reinterpret_cast<const float4*>(&A[a_row * lda + 4 * a_col4]);
    As[(4 * a_col4 + 0) * BM + a_row] = a4.x;
    As[(4 * a_col4 + 1) * BM + a_row] = a4.y;
    As[(4 * a_col4 + 2) * BM + a_row] = a4.z;
    As[(4 * a_col4 + 3) * BM + a_row] = a4.w;
    // B: one float4 = B[b_row, 4*b_col4 + 0..3], copied as is (one 16-byte store).
    *reinterpret_cast<float4*>(&Bs[b_row * BN + 4 * b_col4]) =
        *reinterpret_cast<const float4*>(&B[b_row * ldb + 4 * b_col4]);
    __syncthreads();  // both tiles complete
    A += BK;        // next BK columns of A
    B += BK * ldb;  // next BK rows of B

    for (int k = 0; k < BK; ++k) {
      // TM contiguous values of As's row k (this is why A is transposed) and TN of Bs's row k.
      for (int m = 0; m < TM; ++m) reg_m[m] = As[k * BM + thread_row * TM + m];
      for (int n = 0; n < TN; ++n) reg_n[n] = Bs[k * BN + thread_col * TN + n];
      // The outer product of the two register vectors: TM * TN multiply-adds, no memory traffic.
      for (int m = 0; m < TM; ++m)
        for (int n = 0; n < TN; ++n) acc[m * TN + n] += reg_m[m] * reg_n[n];
    }
    __syncthreads();  // everyone done with the tiles before the next step overwrites them
  }

  // Write the sub-tile, a float4 at a time: C[thread_row*TM + m, thread_col*TN + n .. n+3].
  for (int m = 0; m < TM; ++m) {
    for (int n = 0; n < TN; n += 4) {
      float4* c4 = reinterpret_cast<float4*>(&C[(thread_row * TM + m) * ldc + thread_col * TN + n]);
      const float* r = &acc[m * TN + n];
      float4 out;
      if (beta == 0.0f) {  // never read C
        out = make_float4(alpha * r[0], alpha * r[1], alpha * r[2], alpha * r[3]);
      } else {
        const float4 c = *c4;
        out = make_float4(alpha * r[0] + beta * c.x, alpha * r[1] + beta * c.y, alpha * r[2] + beta * c.z,
                          alpha * r[3] + beta * c.w);
      }
      *c4 = out;
    }
  }
}

// ------------------------------------------------------------------------------------------------
// launchers (device pointers; the same names and signatures as backend/cpu/gemm.hpp)
// ------------------------------------------------------------------------------------------------

namespace detail {

template <class T>
void gemm_check_args(const char* name, int64_t M, int64_t N, int64_t K, int64_t lda, bool trans_a, int64_t ldb,
                     bool trans_b, int64_t ldc) {
  static_assert(std::is_floating_point_v<opmath_type<T>>, "CUDA gemm: T must be float, double, Half or BFloat16");
  TT_CHECK(M >= 0 && N >= 0 && K >= 0, name, ": negative size M=", M, " N=", N, " K=", K);
  // The smallest leading dimension each stored array allows (BLAS's lda >= max(1, rows' length)).
  const int64_t min_lda = trans_a ? M : K, min_ldb = trans_b ? K : N;
  TT_CHECK(lda >= min_lda && ldb >= min_ldb && ldc >= N, name, ": leading dimensions lda=", lda, " ldb=", ldb,
           " ldc=", ldc, " too small for M=", M, " N=", N, " K=", K, " trans_a=", trans_a, " trans_b=", trans_b);
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace detail

/// Whether gemm_register_blocked (kernel 3) can run these arguments: T = float, no transposes,
/// M % 128 == 0, N % 128 == 0, K % 8 == 0, A, B, C 16-byte aligned and lda, ldb, ldc multiples of
/// 4 (every row 16-byte aligned, for float4). gemm uses kernel 3 exactly when this is true.
template <class T>
bool gemm_register_blocked_applies(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, bool trans_a,
                                   const T* B, int64_t ldb, bool trans_b, const T* C, int64_t ldc) {
  using namespace gemm_shape;
  return std::is_same_v<T, float> && !trans_a && !trans_b && M % BM == 0 && N % BN == 0 && K % BK == 0 &&
         detail::aligned16(A) && detail::aligned16(B) && detail::aligned16(C) && lda % 4 == 0 && ldb % 4 == 0 &&
         ldc % 4 == 0;
}

/// Kernel 1: C = alpha * op(A) op(B) + beta * C, one thread per C element, accumulated in double
/// (= backend::cpu::gemm_naive). Shapes as backend::cpu::gemm; pointers on the current device.
/// Throws tinytorch::Error for negative sizes or too small leading dimensions.
template <class T>
void gemm_naive(int64_t M, int64_t N, int64_t K, opmath_type<T> alpha, const T* A, int64_t lda, bool trans_a,
                const T* B, int64_t ldb, bool trans_b, opmath_type<T> beta, T* C, int64_t ldc) {
  detail::gemm_check_args<T>("gemm_naive", M, N, K, lda, trans_a, ldb, trans_b, ldc);
  if (M == 0 || N == 0) return;  // an empty grid is an invalid launch
  const dim3 block(32, 8);       // 32 consecutive columns per warp
  const int64_t gx = (N + block.x - 1) / block.x, gy = (M + block.y - 1) / block.y;
  const dim3 grid(static_cast<unsigned>(gx < 65535 ? gx : 65535), static_cast<unsigned>(gy < 65535 ? gy : 65535));
  launch_kernel("gemm_naive_kernel", gemm_naive_kernel<T>, grid, block, 0, M, N, K, alpha, A, lda, trans_a, B, ldb,
                trans_b, beta, C, ldc);
}

/// Kernel 2: C = alpha * op(A) op(B) + beta * C with 32x32 shared-memory tiles; any shape, trans
/// flags and leading dimensions. Throws tinytorch::Error for negative sizes, too small leading
/// dimensions, or M > 65535 * 32 (grid.y's limit).
template <class T>
void gemm_tiled(int64_t M, int64_t N, int64_t K, opmath_type<T> alpha, const T* A, int64_t lda, bool trans_a,
                const T* B, int64_t ldb, bool trans_b, opmath_type<T> beta, T* C, int64_t ldc) {
  detail::gemm_check_args<T>("gemm_tiled", M, N, K, lda, trans_a, ldb, trans_b, ldc);
  using gemm_shape::TILE;
  if (M == 0 || N == 0) return;
  const int64_t tiles_n = (N + TILE - 1) / TILE, tiles_m = (M + TILE - 1) / TILE;
  TT_CHECK(tiles_m <= 65535 && tiles_n <= 0x7fffffff, "gemm_tiled: M=", M, " N=", N, " needs more than the grid's ",
           "65535 x 2^31-1 blocks of ", TILE, "x", TILE);
  launch_kernel("gemm_tiled_kernel", gemm_tiled_kernel<T, TILE>, dim3(static_cast<unsigned>(tiles_n), static_cast<unsigned>(tiles_m)),
                dim3(TILE, TILE), 0, M, N, K, alpha, A, lda, trans_a, B, ldb, trans_b, beta, C, ldc);
}

/// Kernel 3: C = alpha * A B + beta * C, 128x128x8 register-blocked with float4 loads. Throws
/// tinytorch::Error unless gemm_register_blocked_applies(...) (float, untransposed, M and N
/// multiples of 128, K of 8, aligned) or if M / 128 > 65535.
template <class T>
void gemm_register_blocked(int64_t M, int64_t N, int64_t K, opmath_type<T> alpha, const T* A, int64_t lda,
                           bool trans_a, const T* B, int64_t ldb, bool trans_b, opmath_type<T> beta, T* C,
                           int64_t ldc) {
  detail::gemm_check_args<T>("gemm_register_blocked", M, N, K, lda, trans_a, ldb, trans_b, ldc);
  using namespace gemm_shape;
  TT_CHECK(gemm_register_blocked_applies(M, N, K, A, lda, trans_a, B, ldb, trans_b, C, ldc),
           "gemm_register_blocked: needs float, no transposes, M % ", BM, " == 0, N % ", BN, " == 0, K % ", BK,
           " == 0, 16-byte aligned pointers and lda, ldb, ldc multiples of 4; got M=", M, " N=", N, " K=", K,
           " trans_a=", trans_a, " trans_b=", trans_b, " lda=", lda, " ldb=", ldb, " ldc=", ldc);
  if constexpr (std::is_same_v<T, float>) {
    if (M == 0 || N == 0) return;
    TT_CHECK(M / BM <= 65535, "gemm_register_blocked: M=", M, " needs more than 65535 blocks of ", BM, " rows");
    launch_kernel("gemm_register_blocked_kernel", gemm_register_blocked_kernel<BM, BN, BK, TM, TN>,
                  dim3(static_cast<unsigned>(N / BN), static_cast<unsigned>(M / BM)), dim3((BM / TM) * (BN / TN)), 0,
                  M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

/// C = alpha * op(A) op(B) + beta * C (see the top of this file): kernel 3 when
/// gemm_register_blocked_applies(...), else kernel 2. Shapes, trans flags, leading dimensions and
/// beta = 0 as backend::cpu::gemm; pointers on the current device. Errors as gemm_tiled.
template <class T>
void gemm(int64_t M, int64_t N, int64_t K, opmath_type<T> alpha, const T* A, int64_t lda, bool trans_a, const T* B,
          int64_t ldb, bool trans_b, opmath_type<T> beta, T* C, int64_t ldc) {
  if (gemm_register_blocked_applies(M, N, K, A, lda, trans_a, B, ldb, trans_b, C, ldc) && M / gemm_shape::BM <= 65535)
    gemm_register_blocked(M, N, K, alpha, A, lda, trans_a, B, ldb, trans_b, beta, C, ldc);
  else
    gemm_tiled(M, N, K, alpha, A, lda, trans_a, B, ldb, trans_b, beta, C, ldc);
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cuda

// tinytorch/backend/cpu/gemm.hpp — C = alpha * op(A) op(B) + beta * C, through Eigen.
// BLAS-style interface on row-major raw pointers:
//   op(A): (M, K), op(B): (K, N), C: (M, N) with leading dimension ldc.
//   trans_a: A is stored (K, M) row-major with leading dim lda, and op(A) = A^T.
// A transposed *view* (x.t()) of a row-major matrix is a row-major matrix read transposed, so
// the autograd's  dA = dC B^T  and  dB = A^T dC  need no copies.
// gemm_naive is the triple loop the fast kernel is tested against (every fast kernel has a
// naive twin and a test comparing the two).
// Threads (core/parallel.hpp): Eigen itself runs single-threaded (its own threading needs OpenMP,
// which busy-waits; see parallel.hpp). gemm splits C into blocks of whole rows (when M >= N) or
// whole columns, one single-threaded Eigen product per block, through parallel_for:
//   rows [r0, r1):  C[r0:r1, :] = alpha * op(A)[r0:r1, :] op(B) + beta * C[r0:r1, :]
//   cols [c0, c1):  C[:, c0:c1] = alpha * op(A) op(B)[:, c0:c1] + beta * C[:, c0:c1]
// Splitting the longer side means each thread re-reads (packs) the smaller operand only. A block
// gets at least kGemmGrain = 2^18 multiply-adds (OpenBLAS's threshold, GEMM_MULTITHREAD_THRESHOLD
// x 65536), so small products never pay a worker's wake-up. Results do not depend on the number
// of threads, bit for bit (tests/test_threads.cpp): Eigen picks its k-blocking from K alone, and
// the split points are multiples of the block sizes of Eigen's kernels (8 rows of C, and
// gebp_traits::mr columns, 24 floats with AVX), so every element is summed in the same order.
// Same bits on every CPU of one instruction set: Eigen sums each C[i, j] over k in panels of kc
// elements, and derives kc (and the panel sizes) from the L1/L2/L3 sizes it reads from the CPU
// (cpuid): a 48 KiB L1 and a 32 KiB one sum a 784-deep product in different orders. Every product
// here first pins them to kEigenCacheSizes, Eigen's own x86 defaults (pin_eigen_cache_sizes; gemm
// sets them again if a program changed them), so the blocking depends on M, N and K alone
// (tests/test_threads.cpp forces other sizes).
// Compile time: only Eigen's GEMM kernel is instantiated (eigen_gemm_kernel), not its product
// expressions, and int64 has a loop of its own: about 40% less template work in every translation
// unit that includes tinytorch than four Eigen product forms per transpose pair and dtype.
// Chapter: chapters/01-training-loop.md. Reference: BLAS sgemm; Eigen 3.4's GeneralBlockPanelKernel.h.
#pragma once

#include "tinytorch/core/config.hpp"  // before Eigen: EIGEN_NO_CUDA under nvcc

#include <Eigen/Core>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "tinytorch/core/half.hpp"  // opmath_type (alpha and beta)
#include "tinytorch/core/parallel.hpp"

TT_NAMESPACE_BEGIN namespace backend::cpu {

/// Fewest multiply-adds worth a thread of their own in gemm (OpenBLAS: 4 x 65536).
constexpr int64_t kGemmGrain = int64_t(1) << 18;

/// int64 gemm: our own loop, in the order i, k, j (unit stride over B's and C's rows), summed
/// modulo 2^64 in uint64 as PyTorch's integer matmul wraps, without signed-overflow undefined
/// behaviour. Integer products are rare (indices, counts) and need no Eigen kernel; leaving them
/// out of Eigen also leaves a third of its GEMM templates out of every translation unit.
inline void gemm_serial_int64(int64_t M, int64_t N, int64_t K, int64_t alpha, const int64_t* A, int64_t lda,
                              bool trans_a, const int64_t* B, int64_t ldb, bool trans_b, int64_t beta,
                              int64_t* C, int64_t ldc) {
  using U = uint64_t;
  for (int64_t i = 0; i < M; ++i) {
    U* c = reinterpret_cast<U*>(C + i * ldc);
    for (int64_t j = 0; j < N; ++j) c[j] = beta == 0 ? U(0) : c[j] * U(beta);
    for (int64_t k = 0; k < K; ++k) {
      const U a = U(trans_a ? A[k * lda + i] : A[i * lda + k]) * U(alpha);
      if (trans_b)
        for (int64_t j = 0; j < N; ++j) c[j] += a * U(B[j * ldb + k]);
      else
        for (int64_t j = 0; j < N; ++j) c[j] += a * U(B[k * ldb + j]);
    }
  }
}

/// Small products (M + N + K < 20, Eigen's own EIGEN_GEMM_TO_COEFFBASED_THRESHOLD): each C[i, j]
/// += alpha * (its dot product, summed over k in order). Packing panels would cost more than the
/// arithmetic.
template <class T>
void gemm_small(int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, bool trans_a, const T* B,
                int64_t ldb, bool trans_b, T* C, int64_t ldc) {
  const int64_t a_i = trans_a ? 1 : lda, a_k = trans_a ? lda : 1;  // element steps along i and k
  const int64_t b_k = trans_b ? 1 : ldb, b_j = trans_b ? ldb : 1;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      T acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += A[i * a_i + k * a_k] * B[k * b_k + j * b_j];
      C[i * ldc + j] += alpha * acc;
    }
}

/// The L1, L2 and L3 sizes Eigen's GEMM blocking is computed from: Eigen's defaults for x86
/// (Eigen/src/Core/products/GeneralBlockPanelKernel.h), in bytes.
constexpr std::ptrdiff_t kEigenCacheSizes[3] = {32 * 1024, 256 * 1024, 2 * 1024 * 1024};

/// Sets Eigen's cache sizes (Eigen::setCpuCacheSizes, process-wide) to kEigenCacheSizes, once:
/// every Eigen product calls it first (under a function-local static's lock, so threads that start
/// products at once do not race on it).
inline void pin_eigen_cache_sizes() {
  static const bool pinned = [] {
    Eigen::setCpuCacheSizes(kEigenCacheSizes[0], kEigenCacheSizes[1], kEigenCacheSizes[2]);
    return true;
  }();
  (void)pinned;
}

/// pin_eigen_cache_sizes, and sets them again if the program changed them since (its own
/// Eigen::setCpuCacheSizes). gemm() calls it on the calling thread before it hands blocks to other
/// threads, so no worker reads the sizes while they are written.
inline void repin_eigen_cache_sizes() {
  pin_eigen_cache_sizes();
  if (Eigen::l1CacheSize() != kEigenCacheSizes[0] || Eigen::l2CacheSize() != kEigenCacheSizes[1] ||
      Eigen::l3CacheSize() != kEigenCacheSizes[2])
    Eigen::setCpuCacheSizes(kEigenCacheSizes[0], kEigenCacheSizes[1], kEigenCacheSizes[2]);
}

/// Eigen's GEMM kernel itself (Eigen/src/Core/products/GeneralMatrixMatrix.h: packing into
/// cache-sized panels, then the gebp micro-kernel), called the way Eigen's own product evaluator
/// calls it for a row-major destination: C += alpha * op(A) op(B). LhsOrder/RhsOrder say how
/// op(A) and op(B) are stored: RowMajor as given, ColMajor when transposed (a (K, M) row-major
/// array read as op(A) is (M, K) column-major). This internal entry point instantiates only the
/// kernel, not Eigen's expression machinery (coefficient products, GEMV fallbacks, evaluators),
/// which cost every translation unit that includes tinytorch seconds of compile time.
template <class T, int LhsOrder, int RhsOrder>
void eigen_gemm_kernel(int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B, int64_t ldb,
                       T* C, int64_t ldc) {
  namespace ei = Eigen::internal;
  pin_eigen_cache_sizes();
  ei::gemm_blocking_space<Eigen::RowMajor, T, T, Eigen::Dynamic, Eigen::Dynamic, Eigen::Dynamic> blocking(M, N, K, 1,
                                                                                                           true);
  ei::general_matrix_matrix_product<Eigen::Index, T, LhsOrder, false, T, RhsOrder, false, Eigen::RowMajor, 1>::run(
      M, N, K, A, lda, B, ldb, C, 1, ldc, alpha, blocking, nullptr);
}

/// gemm on the calling thread only. beta is applied first (beta = 0 writes zeros and never reads
/// C, as BLAS), then C += alpha * op(A) op(B): gemm_small for tiny products, else Eigen's kernel.
template <class T>
void gemm_serial(int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, bool trans_a,
          const T* B, int64_t ldb, bool trans_b, T beta, T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, int64_t>) {
    gemm_serial_int64(M, N, K, alpha, A, lda, trans_a, B, ldb, trans_b, beta, C, ldc);
  } else {
    if (M == 0 || N == 0) return;
    for (int64_t i = 0; i < M; ++i) {
      T* c = C + i * ldc;
      if (beta == T(0)) std::fill(c, c + N, T(0));
      else if (beta != T(1)) for (int64_t j = 0; j < N; ++j) c[j] *= beta;
    }
    if (K == 0) return;
    constexpr int R = Eigen::RowMajor, Cm = Eigen::ColMajor;
    if (M + N + K < 20) gemm_small(M, N, K, alpha, A, lda, trans_a, B, ldb, trans_b, C, ldc);
    else if (!trans_a && !trans_b) eigen_gemm_kernel<T, R, R>(M, N, K, alpha, A, lda, B, ldb, C, ldc);
    else if (!trans_a) eigen_gemm_kernel<T, R, Cm>(M, N, K, alpha, A, lda, B, ldb, C, ldc);
    else if (!trans_b) eigen_gemm_kernel<T, Cm, R>(M, N, K, alpha, A, lda, B, ldb, C, ldc);
    else eigen_gemm_kernel<T, Cm, Cm>(M, N, K, alpha, A, lda, B, ldb, C, ldc);
  }
}

/// C = alpha * op(A) op(B) + beta * C (see the top of this file), on up to get_num_threads()
/// threads.
template <class T>
void gemm(int64_t M, int64_t N, int64_t K, opmath_type<T> alpha, const T* A, int64_t lda, bool trans_a,
          const T* B, int64_t ldb, bool trans_b, opmath_type<T> beta, T* C, int64_t ldc) {
  if (!in_parallel_region()) repin_eigen_cache_sizes();
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const int threads = get_num_threads();
  if (threads <= 1 || work < 2.0 * kGemmGrain || in_parallel_region()) {
    gemm_serial(M, N, K, alpha, A, lda, trans_a, B, ldb, trans_b, beta, C, ldc);
    return;
  }
  // Block sizes of Eigen's kernels along our rows and columns (C row-major is Eigen's transposed
  // product: our rows are its nr = 4 columns, and its GEMV handles 8 rows at a time; our columns
  // are its mr rows).
  constexpr int64_t kRowAlign = 8;
  constexpr int64_t kColAlign = Eigen::internal::gebp_traits<T, T>::mr;
  const bool rows_ok = M >= 2 * kRowAlign, cols_ok = N >= 2 * kColAlign;
  const bool split_rows = rows_ok && (M >= N || !cols_ok);
  if (!split_rows && !cols_ok) {
    gemm_serial(M, N, K, alpha, A, lda, trans_a, B, ldb, trans_b, beta, C, ldc);
    return;
  }
  const int64_t dim = split_rows ? M : N, align = split_rows ? kRowAlign : kColAlign;
  const int64_t units = dim / align;  // the last block also takes the dim % align leftovers
  const int64_t blocks = std::min<int64_t>({threads, units, static_cast<int64_t>(std::min(work / kGemmGrain, 1e9))});
  const int64_t per_block = (units + blocks - 1) / blocks;
  const int64_t used = (units + per_block - 1) / per_block;
  const bool split = ::tinytorch::detail::try_parallel_tasks(used, [&](int64_t t) {
    const int64_t u0 = t * per_block, u1 = std::min(units, u0 + per_block);
    const int64_t i0 = u0 * align, i1 = u1 == units ? dim : u1 * align;
    if (split_rows)
      gemm_serial(i1 - i0, N, K, alpha, trans_a ? A + i0 : A + i0 * lda, lda, trans_a, B, ldb, trans_b, beta,
                  C + i0 * ldc, ldc);
    else
      gemm_serial(M, i1 - i0, K, alpha, A, lda, trans_a, trans_b ? B + i0 * ldb : B + i0, ldb, trans_b, beta,
                  C + i0, ldc);
  });
  if (!split) gemm_serial(M, N, K, alpha, A, lda, trans_a, B, ldb, trans_b, beta, C, ldc);
}

/// The reference triple loop (accumulates in double).
template <class T>
void gemm_naive(int64_t M, int64_t N, int64_t K, opmath_type<T> alpha, const T* A, int64_t lda, bool trans_a,
                const T* B, int64_t ldb, bool trans_b, opmath_type<T> beta, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        T a = trans_a ? A[k * lda + i] : A[i * lda + k];
        T b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
        acc += static_cast<double>(a) * static_cast<double>(b);
      }
      T& c = C[i * ldc + j];
      c = static_cast<T>(alpha * acc + (beta == T(0) ? 0.0 : static_cast<double>(beta) * c));
    }
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cpu

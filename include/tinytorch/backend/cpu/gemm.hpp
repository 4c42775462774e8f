// tinytorch/backend/cpu/gemm.hpp — C = alpha * op(A) op(B) + beta * C, through Eigen.
//
// BLAS-style interface on row-major raw pointers:
//   op(A): (M, K), op(B): (K, N), C: (M, N) with leading dimension ldc.
//   trans_a: A is stored (K, M) row-major with leading dim lda, and op(A) = A^T.
// A transposed *view* (x.t()) of a row-major matrix is a row-major matrix read transposed, so
// the autograd's  dA = dC B^T  and  dB = A^T dC  need no copies.
// gemm_naive is the triple loop the fast kernel is tested against (DESIGN.md: every fast kernel
// has a naive twin).
//
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
// Reference: BLAS sgemm; Eigen's Map and noalias() documentation; Eigen 3.4's
// GeneralBlockPanelKernel.h (evaluateProductBlockingSizesHeuristic, gebp_kernel).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "../../core/parallel.hpp"

namespace tinytorch::backend::cpu {

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

/// gemm on the calling thread only (one Eigen product).
/// beta is applied first (beta = 0 writes zeros and never reads C, as BLAS), then one form,
/// C += alpha * op(A) op(B), for every alpha: Eigen folds alpha into its kernel (and alpha = 1
/// multiplies exactly), so one instantiation per transpose combination serves all calls; four
/// forms each would cost every translation unit four times the template work for no other result.
template <class T>
void gemm_serial(int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, bool trans_a,
          const T* B, int64_t ldb, bool trans_b, T beta, T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, int64_t>) {
    gemm_serial_int64(M, N, K, alpha, A, lda, trans_a, B, ldb, trans_b, beta, C, ldc);
  } else {
    using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using ColMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
    using Stride = Eigen::OuterStride<>;
    Eigen::Map<RowMat, 0, Stride> c(C, M, N, Stride(ldc));
    if (M == 0 || N == 0) return;
    if (beta == T(0)) c.setZero();
    else if (beta != T(1)) c *= beta;
    if (K == 0) return;
    // A stored row-major (M,K) reads as op(A) directly; stored (K,M) row-major is (M,K) col-major.
    auto run = [&](const auto& a, const auto& b) { c.noalias() += alpha * (a * b); };
    auto with_b = [&](const auto& a) {
      if (trans_b) run(a, Eigen::Map<const ColMat, 0, Stride>(B, K, N, Stride(ldb)));
      else run(a, Eigen::Map<const RowMat, 0, Stride>(B, K, N, Stride(ldb)));
    };
    if (trans_a) with_b(Eigen::Map<const ColMat, 0, Stride>(A, M, K, Stride(lda)));
    else with_b(Eigen::Map<const RowMat, 0, Stride>(A, M, K, Stride(lda)));
  }
}

/// C = alpha * op(A) op(B) + beta * C (see the top of this file), on up to get_num_threads()
/// threads.
template <class T>
void gemm(int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, bool trans_a,
          const T* B, int64_t ldb, bool trans_b, T beta, T* C, int64_t ldc) {
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
void gemm_naive(int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, bool trans_a,
                const T* B, int64_t ldb, bool trans_b, T beta, T* C, int64_t ldc) {
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

}  // namespace tinytorch::backend::cpu

// tinytorch/backend/cpu/gemm.hpp — C = alpha * op(A) op(B) + beta * C, through Eigen.
//
// BLAS-style interface on row-major raw pointers:
//   op(A): (M, K), op(B): (K, N), C: (M, N) with leading dimension ldc.
//   trans_a: A is stored (K, M) row-major with leading dim lda, and op(A) = A^T.
// A transposed *view* (x.t()) of a row-major matrix is a row-major matrix read transposed, so
// the autograd's  dA = dC B^T  and  dB = A^T dC  need no copies.
// gemm_naive is the triple loop the fast kernel is tested against (DESIGN.md: every fast kernel
// has a naive twin). Eigen runs single-threaded unless the program enables its threads.
// Reference: BLAS sgemm; Eigen's Map and noalias() documentation.
#pragma once

#include <Eigen/Core>
#include <cstdint>

namespace tinytorch::backend::cpu {

template <class T>
void gemm(int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, bool trans_a,
          const T* B, int64_t ldb, bool trans_b, T beta, T* C, int64_t ldc) {
  using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ColMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
  using Stride = Eigen::OuterStride<>;
  Eigen::Map<RowMat, 0, Stride> c(C, M, N, Stride(ldc));
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (beta == T(0)) c.setZero(); else c *= beta;
    return;
  }
  // A stored row-major (M,K) reads as op(A) directly; stored (K,M) row-major is (M,K) col-major.
  auto run = [&](const auto& a, const auto& b) {
    if (beta == T(0)) {
      if (alpha == T(1)) c.noalias() = a * b;
      else c.noalias() = alpha * (a * b);
    } else {
      if (beta != T(1)) c *= beta;
      if (alpha == T(1)) c.noalias() += a * b;
      else c.noalias() += alpha * (a * b);
    }
  };
  auto with_b = [&](const auto& a) {
    if (trans_b) run(a, Eigen::Map<const ColMat, 0, Stride>(B, K, N, Stride(ldb)));
    else run(a, Eigen::Map<const RowMat, 0, Stride>(B, K, N, Stride(ldb)));
  };
  if (trans_a) with_b(Eigen::Map<const ColMat, 0, Stride>(A, M, K, Stride(lda)));
  else with_b(Eigen::Map<const RowMat, 0, Stride>(A, M, K, Stride(lda)));
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

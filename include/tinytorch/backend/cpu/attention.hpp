// tinytorch/backend/cpu/attention.hpp — fused scaled dot-product attention, forward and backward,
// on raw pointers: the memory-efficient kernel behind scaled_dot_product_attention.
//
// N independent (batch x head) problems; per problem n, row-major and contiguous:
//   q (L, E), k (S, E), v (S, Ev)  ->  out (L, Ev), lse (L) in double
//   s_ij = scale * q_i . k_j          (j <= i only when causal: top-left aligned, as PyTorch)
//   lse_i = log sum_j exp(s_ij)       (computed as m_i + log sum_j exp(s_ij - m_i), m_i = max_j s_ij)
//   P_ij = exp(s_ij - lse_i),  out_i = sum_j P_ij v_j
// The backward recomputes P from q, k and lse instead of keeping it (the point of a fused kernel:
// the composite formula keeps the whole (N, L, S) attention matrix for its backward; this keeps
// lse, N x L doubles), then with D_i = dout_i . out_i:
//   dv = P^T dout,   dP = dout v^T,   dS_ij = P_ij (dP_ij - D_i),
//   dq = scale dS k,  dk = scale dS^T q
// (the softmax backward row by row: D_i = sum_j P_ij dP_ij, since out_i = sum_j P_ij v_j).
// The CPU kernel works one problem at a time: its (L, S) scores live in a scratch buffer of the
// thread (never N of them), the four products are backend/cpu/gemm.hpp's gemm_serial (Eigen's
// kernel), and parallel_for spreads the N problems over the threads. The CUDA twins
// (backend/cuda/attention.cuh) never hold a row of scores at all (online softmax).
// attention_naive / attention_backward_naive are the oracles: one query row at a time, every sum
// in double, the formulas above written out loop by loop.
// Masks: none or causal (scale, is_causal); an explicit attn_mask or dropout takes the composite
// path (functional.ipp, scaled_dot_product_attention), as PyTorch's flash kernel also refuses them.
// A causal row always sees key 0, so no row is empty when L, S >= 1 (the callers ensure that).
// Chapter: chapters/12-model-parallelism.md (12.2, attention). Reference: Rabe & Staats 2021,
// "Self-attention Does Not Need O(n^2) Memory"; Dao et al. 2022, "FlashAttention" (the backward
// with D and recomputed P, Algorithm 4); PyTorch aten/src/ATen/native/transformers/attention.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tinytorch/backend/cpu/gemm.hpp"  // gemm_serial; core/parallel.hpp's parallel_for
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend::cpu {

namespace detail {
/// Grain of the problem loop: problems of fewer multiply-adds than this share a thread.
inline int64_t attention_grain(int64_t L, int64_t S, int64_t E, int64_t Ev) {
  const int64_t work = L * S * (E + Ev);
  return work >= (int64_t{1} << 18) ? 1 : std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(work, 1));
}
/// s (L, S) = scale q k^T, then -inf above the diagonal when causal.
template <class T>
void attention_scores(const T* q, const T* k, T* s, int64_t L, int64_t S, int64_t E, double scale, bool causal) {
  gemm_serial<T>(L, S, E, static_cast<T>(scale), q, E, false, k, E, true, T(0), s, S);
  if (causal)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = i + 1; j < S; ++j) s[i * S + j] = -std::numeric_limits<T>::infinity();
}
}  // namespace detail

/// out (N, L, Ev) and lse (N, L) of softmax(scale q k^T [causal]) v (see the top of the file).
template <class T>
void attention_kernel(const T* q, const T* k, const T* v, T* out, double* lse, int64_t N, int64_t L, int64_t S,
                      int64_t E, int64_t Ev, double scale, bool causal) {
  parallel_for(0, N, detail::attention_grain(L, S, E, Ev), [&](int64_t n0, int64_t n1) {
    std::vector<T> p(static_cast<size_t>(L * S));
    for (int64_t n = n0; n < n1; ++n) {
      detail::attention_scores(q + n * L * E, k + n * S * E, p.data(), L, S, E, scale, causal);
      for (int64_t i = 0; i < L; ++i) {  // softmax of row i in place; its log-sum-exp
        T* row = p.data() + i * S;
        T m = -std::numeric_limits<T>::infinity();
        for (int64_t j = 0; j < S; ++j) m = row[j] > m ? row[j] : m;
        double sum = 0;
        for (int64_t j = 0; j < S; ++j) sum += std::exp(static_cast<double>(row[j] - m));
        const T inv = static_cast<T>(1.0 / sum);
        for (int64_t j = 0; j < S; ++j) row[j] = std::exp(row[j] - m) * inv;
        lse[n * L + i] = static_cast<double>(m) + std::log(sum);
      }
      gemm_serial<T>(L, Ev, S, T(1), p.data(), S, false, v + n * S * Ev, Ev, false, T(0), out + n * L * Ev, Ev);
    }
  });
}

/// dq (N, L, E), dk (N, S, E), dv (N, S, Ev) from dout (N, L, Ev), the inputs, the forward's out
/// and lse (see the top of the file).
template <class T>
void attention_backward_kernel(const T* dout, const T* q, const T* k, const T* v, const T* out, const double* lse,
                               T* dq, T* dk, T* dv, int64_t N, int64_t L, int64_t S, int64_t E, int64_t Ev,
                               double scale, bool causal) {
  parallel_for(0, N, detail::attention_grain(L, S, E, Ev), [&](int64_t n0, int64_t n1) {
    std::vector<T> p(static_cast<size_t>(L * S)), ds(static_cast<size_t>(L * S));
    for (int64_t n = n0; n < n1; ++n) {
      const T *qn = q + n * L * E, *kn = k + n * S * E, *vn = v + n * S * Ev;
      const T *don = dout + n * L * Ev, *on = out + n * L * Ev;
      detail::attention_scores(qn, kn, p.data(), L, S, E, scale, causal);
      for (int64_t i = 0; i < L; ++i)  // P recomputed from the saved log-sum-exp
        for (int64_t j = 0; j < S; ++j)
          p[i * S + j] = static_cast<T>(std::exp(static_cast<double>(p[i * S + j]) - lse[n * L + i]));
      gemm_serial<T>(S, Ev, L, T(1), p.data(), S, true, don, Ev, false, T(0), dv + n * S * Ev, Ev);  // P^T dout
      gemm_serial<T>(L, S, Ev, T(1), don, Ev, false, vn, Ev, true, T(0), ds.data(), S);            // dP
      for (int64_t i = 0; i < L; ++i) {
        double d = 0;  // D_i = dout_i . out_i
        for (int64_t e = 0; e < Ev; ++e) d += static_cast<double>(don[i * Ev + e]) * on[i * Ev + e];
        for (int64_t j = 0; j < S; ++j)
          ds[i * S + j] = static_cast<T>(p[i * S + j] * (static_cast<double>(ds[i * S + j]) - d));
      }
      gemm_serial<T>(L, E, S, static_cast<T>(scale), ds.data(), S, false, kn, E, false, T(0), dq + n * L * E, E);
      gemm_serial<T>(S, E, L, static_cast<T>(scale), ds.data(), S, true, qn, E, false, T(0), dk + n * S * E, E);
    }
  });
}

// ---- the oracles: one query (or key) row at a time, sums in double --------------------------------

namespace detail {
/// s_ij in double (the naive kernels' only product), -inf where causal masks it.
template <class T>
double attention_score(const T* q, const T* k, int64_t i, int64_t j, int64_t E, double scale, bool causal) {
  if (causal && j > i) return -std::numeric_limits<double>::infinity();
  double acc = 0;
  for (int64_t e = 0; e < E; ++e) acc += static_cast<double>(q[i * E + e]) * static_cast<double>(k[j * E + e]);
  return scale * acc;
}
}  // namespace detail

template <class T>
void attention_naive(const T* q, const T* k, const T* v, T* out, double* lse, int64_t N, int64_t L, int64_t S,
                     int64_t E, int64_t Ev, double scale, bool causal) {
  using detail::attention_score;
  for (int64_t n = 0; n < N; ++n) {
    const T *qn = q + n * L * E, *kn = k + n * S * E, *vn = v + n * S * Ev;
    for (int64_t i = 0; i < L; ++i) {
      double m = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t j = 0; j < S; ++j) m = std::max(m, attention_score(qn, kn, i, j, E, scale, causal));
      for (int64_t j = 0; j < S; ++j) sum += std::exp(attention_score(qn, kn, i, j, E, scale, causal) - m);
      const double l = m + std::log(sum);
      lse[n * L + i] = l;
      for (int64_t e = 0; e < Ev; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < S; ++j)
          acc += std::exp(attention_score(qn, kn, i, j, E, scale, causal) - l) * vn[j * Ev + e];
        out[(n * L + i) * Ev + e] = static_cast<T>(acc);
      }
    }
  }
}

template <class T>
void attention_backward_naive(const T* dout, const T* q, const T* k, const T* v, const T* out, const double* lse,
                              T* dq, T* dk, T* dv, int64_t N, int64_t L, int64_t S, int64_t E, int64_t Ev,
                              double scale, bool causal) {
  using detail::attention_score;
  for (int64_t n = 0; n < N; ++n) {
    const T *qn = q + n * L * E, *kn = k + n * S * E, *vn = v + n * S * Ev;
    const T *don = dout + n * L * Ev, *on = out + n * L * Ev;
    const double* ln = lse + n * L;
    auto P = [&](int64_t i, int64_t j) { return std::exp(attention_score(qn, kn, i, j, E, scale, causal) - ln[i]); };
    auto D = [&](int64_t i) {
      double d = 0;
      for (int64_t e = 0; e < Ev; ++e) d += static_cast<double>(don[i * Ev + e]) * on[i * Ev + e];
      return d;
    };
    auto dP = [&](int64_t i, int64_t j) {
      double d = 0;
      for (int64_t e = 0; e < Ev; ++e) d += static_cast<double>(don[i * Ev + e]) * vn[j * Ev + e];
      return d;
    };
    for (int64_t i = 0; i < L; ++i)  // dq_i = scale sum_j dS_ij k_j
      for (int64_t e = 0; e < E; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < S; ++j) acc += P(i, j) * (dP(i, j) - D(i)) * kn[j * E + e];
        dq[(n * L + i) * E + e] = static_cast<T>(scale * acc);
      }
    for (int64_t j = 0; j < S; ++j) {  // dk_j = scale sum_i dS_ij q_i,  dv_j = sum_i P_ij dout_i
      for (int64_t e = 0; e < E; ++e) {
        double acc = 0;
        for (int64_t i = 0; i < L; ++i) acc += P(i, j) * (dP(i, j) - D(i)) * qn[i * E + e];
        dk[(n * S + j) * E + e] = static_cast<T>(scale * acc);
      }
      for (int64_t e = 0; e < Ev; ++e) {
        double acc = 0;
        for (int64_t i = 0; i < L; ++i) acc += P(i, j) * don[i * Ev + e];
        dv[(n * S + j) * Ev + e] = static_cast<T>(acc);
      }
    }
  }
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cpu

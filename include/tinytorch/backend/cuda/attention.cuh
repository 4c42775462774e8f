// tinytorch/backend/cuda/attention.cuh — fused scaled dot-product attention on the GPU, forward
// and backward.
//
// The CUDA twins of backend/cpu/attention.hpp (attention_kernel, attention_backward_kernel), same
// names and signatures, device pointers; formulas there: q (N, L, E), k (N, S, E), v (N, S, Ev)
// -> out (N, L, Ev) and lse (N, L) in double; the backward recomputes P_ij = exp(s_ij - lse_i).
// Two kernels per direction, as every kernel of this backend (chapters/10-gpu-kernels.md):
//   fast   one warp per row, no row of scores kept anywhere. Forward: a warp owns query row i,
//          walks the keys j in order, each score a warp all-reduce of the lanes' partial dot
//          products, and keeps a running max m, sum l and output accumulator, rescaled by
//          exp(m_old - m_new) when the max grows ("online softmax", Milakov & Gimelshein 2018;
//          FlashAttention's inner loop): out_i = acc / l, lse_i = m + log l at the end. Lane t
//          holds the output columns t, t + 32, ..., so head dims are limited to
//          32 x kAttentionMaxPerLane = 256 (PyTorch's flash kernel has the same limit; the ops
//          layer takes the composite path beyond it). Backward: a warp per query row for dq
//          (dq_i = scale sum_j dS_ij k_j), and a warp per key row for dk and dv (sums over the
//          queries i that see key j), so every output row has one writer and needs no atomics;
//          D_i = dout_i . out_i is recomputed where needed rather than kept in a workspace.
//   naive  (the oracle) one thread per row, backend/cpu/attention.hpp's naive loops: three
//          passes (max, sum, output) with every score recomputed, sums in double.
// Chapter: chapters/12-model-parallelism.md (12.2), chapters/10-gpu-kernels.md.
// Reference: Dao et al. 2022, "FlashAttention" (Algorithms 1 and 4: online softmax, the backward
// from lse and D); Milakov & Gimelshein 2018, "Online normalizer calculation for softmax".
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "tinytorch/backend/cpu/attention.hpp"   // the CPU twins
#include "tinytorch/backend/cuda/elementwise.cuh"        // TT_GRID_STRIDE_LOOP, launch_kernel, grid_1d
#include "tinytorch/backend/cuda/softmax.cuh"            // kernels::warp_sum_allreduce, detail::softmax_grid (warps per block)
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend::cuda {

// ================================ kernels ========================================================
namespace kernels {

/// Head dims (E, Ev) up to 32 lanes x this many columns each in the warp kernels.
constexpr int kAttentionMaxPerLane = 8;
constexpr int64_t kAttentionMaxHeadDim = 32 * kAttentionMaxPerLane;

/// a . b over n elements, split over the warp's lanes, summed in double; every lane gets it.
template <class T>
__device__ __forceinline__ double warp_dot(const T* a, const T* b, int64_t n, int lane) {
  double d = 0;
  for (int64_t e = lane; e < n; e += 32) d += static_cast<double>(a[e]) * static_cast<double>(b[e]);
  return warp_sum_allreduce(d);
}
/// a . b over n elements on one thread, in double.
template <class T>
__device__ __forceinline__ double thread_dot(const T* a, const T* b, int64_t n) {
  double d = 0;
  for (int64_t e = 0; e < n; ++e) d += static_cast<double>(a[e]) * static_cast<double>(b[e]);
  return d;
}

template <class T>
__global__ void attention_warp(const T* q, const T* k, const T* v, T* out, double* lse, int64_t N, int64_t L,
                               int64_t S, int64_t E, int64_t Ev, double scale, bool causal) {
  const int lane = threadIdx.x % 32;
  const int64_t warp = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = warp; r < N * L; r += nwarps) {  // r = n * L + i; uniform across the warp
    const int64_t n = r / L, i = r - n * L;
    const T* kn = k + n * S * E;
    const T* vn = v + n * S * Ev;
    const int64_t keys = causal ? (i + 1 < S ? i + 1 : S) : S;
    double m = -std::numeric_limits<double>::infinity(), l = 0, acc[kAttentionMaxPerLane] = {};
    for (int64_t j = 0; j < keys; ++j) {
      const double s = scale * warp_dot(q + r * E, kn + j * E, E, lane);
      const double m_new = s > m ? s : m;
      // -inf scores (a -inf in q or k) add nothing; (-inf) - (-inf) would make NaN of them
      const double corr = m == m_new ? 1.0 : std::exp(m - m_new);
      const double p = std::isinf(s) && s < 0 ? 0.0 : std::exp(s - m_new);
      l = l * corr + p;
      for (int t = 0; t < kAttentionMaxPerLane; ++t) {
        const int64_t e = lane + 32 * t;
        if (e < Ev) acc[t] = acc[t] * corr + p * static_cast<double>(vn[j * Ev + e]);
      }
      m = m_new;
    }
    for (int t = 0; t < kAttentionMaxPerLane; ++t) {
      const int64_t e = lane + 32 * t;
      if (e < Ev) out[r * Ev + e] = static_cast<T>(acc[t] / l);
    }
    if (lane == 0) lse[r] = m + std::log(l);
  }
}

/// s_ij in double, -inf where causal masks it (the naive kernels recompute every score).
template <class T>
__device__ double attention_score(const T* qn, const T* kn, int64_t i, int64_t j, int64_t E, double scale,
                                  bool causal) {
  if (causal && j > i) return -std::numeric_limits<double>::infinity();
  return scale * thread_dot(qn + i * E, kn + j * E, E);
}

template <class T>
__global__ void attention_naive(const T* q, const T* k, const T* v, T* out, double* lse, int64_t N, int64_t L,
                                int64_t S, int64_t E, int64_t Ev, double scale, bool causal) {
  TT_GRID_STRIDE_LOOP(r, N * L) {
    const int64_t n = r / L, i = r - n * L;
    const T *qn = q + n * L * E, *kn = k + n * S * E, *vn = v + n * S * Ev;
    double m = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t j = 0; j < S; ++j) {
      const double s = attention_score(qn, kn, i, j, E, scale, causal);
      m = s > m ? s : m;
    }
    for (int64_t j = 0; j < S; ++j) sum += std::exp(attention_score(qn, kn, i, j, E, scale, causal) - m);
    const double lr = m + std::log(sum);
    lse[r] = lr;
    for (int64_t e = 0; e < Ev; ++e) {
      double acc = 0;
      for (int64_t j = 0; j < S; ++j)
        acc += std::exp(attention_score(qn, kn, i, j, E, scale, causal) - lr) * static_cast<double>(vn[j * Ev + e]);
      out[r * Ev + e] = static_cast<T>(acc);
    }
  }
}

/// dq: a warp per query row i: dq_i = scale sum_j P_ij (dout_i . v_j - D_i) k_j.
template <class T>
__global__ void attention_backward_dq_warp(const T* dout, const T* q, const T* k, const T* v, const T* out,
                                           const double* lse, T* dq, int64_t N, int64_t L, int64_t S, int64_t E,
                                           int64_t Ev, double scale, bool causal) {
  const int lane = threadIdx.x % 32;
  const int64_t warp = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = warp; r < N * L; r += nwarps) {
    const int64_t n = r / L, i = r - n * L;
    const T *kn = k + n * S * E, *vn = v + n * S * Ev;
    const double D = warp_dot(dout + r * Ev, out + r * Ev, Ev, lane);
    const int64_t keys = causal ? (i + 1 < S ? i + 1 : S) : S;
    double acc[kAttentionMaxPerLane] = {};
    for (int64_t j = 0; j < keys; ++j) {
      const double p = std::exp(scale * warp_dot(q + r * E, kn + j * E, E, lane) - lse[r]);
      const double ds = p * (warp_dot(dout + r * Ev, vn + j * Ev, Ev, lane) - D);
      for (int t = 0; t < kAttentionMaxPerLane; ++t) {
        const int64_t e = lane + 32 * t;
        if (e < E) acc[t] += ds * static_cast<double>(kn[j * E + e]);
      }
    }
    for (int t = 0; t < kAttentionMaxPerLane; ++t) {
      const int64_t e = lane + 32 * t;
      if (e < E) dq[r * E + e] = static_cast<T>(scale * acc[t]);
    }
  }
}

/// dk, dv: a warp per key row j: dk_j = scale sum_i dS_ij q_i, dv_j = sum_i P_ij dout_i.
template <class T>
__global__ void attention_backward_dkdv_warp(const T* dout, const T* q, const T* k, const T* v, const T* out,
                                             const double* lse, T* dk, T* dv, int64_t N, int64_t L, int64_t S,
                                             int64_t E, int64_t Ev, double scale, bool causal) {
  const int lane = threadIdx.x % 32;
  const int64_t warp = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t c = warp; c < N * S; c += nwarps) {  // c = n * S + j
    const int64_t n = c / S, j = c - n * S;
    const T *qn = q + n * L * E, *don = dout + n * L * Ev, *on = out + n * L * Ev;
    double acc_k[kAttentionMaxPerLane] = {}, acc_v[kAttentionMaxPerLane] = {};
    for (int64_t i = causal ? j : 0; i < L; ++i) {  // the queries that see key j
      const double p = std::exp(scale * warp_dot(qn + i * E, k + c * E, E, lane) - lse[n * L + i]);
      const double D = warp_dot(don + i * Ev, on + i * Ev, Ev, lane);
      const double ds = p * (warp_dot(don + i * Ev, v + c * Ev, Ev, lane) - D);
      for (int t = 0; t < kAttentionMaxPerLane; ++t) {
        const int64_t e = lane + 32 * t;
        if (e < E) acc_k[t] += ds * static_cast<double>(qn[i * E + e]);
        if (e < Ev) acc_v[t] += p * static_cast<double>(don[i * Ev + e]);
      }
    }
    for (int t = 0; t < kAttentionMaxPerLane; ++t) {
      const int64_t e = lane + 32 * t;
      if (e < E) dk[c * E + e] = static_cast<T>(scale * acc_k[t]);
      if (e < Ev) dv[c * Ev + e] = static_cast<T>(acc_v[t]);
    }
  }
}

template <class T>
__global__ void attention_backward_dq_naive(const T* dout, const T* q, const T* k, const T* v, const T* out,
                                            const double* lse, T* dq, int64_t N, int64_t L, int64_t S, int64_t E,
                                            int64_t Ev, double scale, bool causal) {
  TT_GRID_STRIDE_LOOP(r, N * L) {
    const int64_t n = r / L, i = r - n * L;
    const T *qn = q + n * L * E, *kn = k + n * S * E, *vn = v + n * S * Ev;
    const double D = thread_dot(dout + r * Ev, out + r * Ev, Ev);
    for (int64_t e = 0; e < E; ++e) {
      double acc = 0;
      for (int64_t j = 0; j < S; ++j) {
        const double p = std::exp(attention_score(qn, kn, i, j, E, scale, causal) - lse[r]);
        acc += p * (thread_dot(dout + r * Ev, vn + j * Ev, Ev) - D) * static_cast<double>(kn[j * E + e]);
      }
      dq[r * E + e] = static_cast<T>(scale * acc);
    }
  }
}

template <class T>
__global__ void attention_backward_dkdv_naive(const T* dout, const T* q, const T* k, const T* v, const T* out,
                                              const double* lse, T* dk, T* dv, int64_t N, int64_t L, int64_t S,
                                              int64_t E, int64_t Ev, double scale, bool causal) {
  TT_GRID_STRIDE_LOOP(c, N * S) {
    const int64_t n = c / S, j = c - n * S;
    const T *qn = q + n * L * E, *kn = k + n * S * E, *don = dout + n * L * Ev, *on = out + n * L * Ev;
    for (int64_t e = 0; e < E; ++e) {
      double acc = 0;
      for (int64_t i = 0; i < L; ++i) {
        const double p = std::exp(attention_score(qn, kn, i, j, E, scale, causal) - lse[n * L + i]);
        const double D = thread_dot(don + i * Ev, on + i * Ev, Ev);
        acc += p * (thread_dot(don + i * Ev, v + c * Ev, Ev) - D) * static_cast<double>(qn[i * E + e]);
      }
      dk[c * E + e] = static_cast<T>(scale * acc);
    }
    for (int64_t e = 0; e < Ev; ++e) {
      double acc = 0;
      for (int64_t i = 0; i < L; ++i)
        acc += std::exp(attention_score(qn, kn, i, j, E, scale, causal) - lse[n * L + i]) *
               static_cast<double>(don[i * Ev + e]);
      dv[c * Ev + e] = static_cast<T>(acc);
    }
  }
}

}  // namespace kernels

// ================================ launchers ======================================================

namespace detail {
inline void check_attention_sizes(const char* op, int64_t N, int64_t L, int64_t S, int64_t E, int64_t Ev) {
  TT_CHECK(N >= 0 && L >= 0 && S >= 0 && E >= 0 && Ev >= 0, op, ": negative sizes (N=", N, ", L=", L, ", S=", S,
           ", E=", E, ", Ev=", Ev, ")");
}
inline void check_attention_head_dims(const char* op, int64_t E, int64_t Ev) {
  TT_CHECK(E <= kernels::kAttentionMaxHeadDim && Ev <= kernels::kAttentionMaxHeadDim, op,
           ": the warp kernels take head dims up to ", kernels::kAttentionMaxHeadDim, ", got E=", E, ", Ev=", Ev);
}
}  // namespace detail

/// out, lse: the warp-per-query-row online-softmax kernel (E, Ev <= 256).
template <class T>
void attention_kernel_fast(const T* q, const T* k, const T* v, T* out, double* lse, int64_t N, int64_t L, int64_t S,
                           int64_t E, int64_t Ev, double scale, bool causal) {
  detail::check_attention_sizes("attention_kernel", N, L, S, E, Ev);
  detail::check_attention_head_dims("attention_kernel", E, Ev);
  if (N * L == 0) return;
  launch_kernel("attention_warp", kernels::attention_warp<T>, detail::softmax_grid(N * L),
                dim3(32 * kernels::kSoftmaxWarpsPerBlock), 0, q, k, v, out, lse, N, L, S, E, Ev, scale, causal);
}
/// out, lse: one thread per query row (the oracle).
template <class T>
void attention_naive(const T* q, const T* k, const T* v, T* out, double* lse, int64_t N, int64_t L, int64_t S,
                            int64_t E, int64_t Ev, double scale, bool causal) {
  detail::check_attention_sizes("attention_kernel", N, L, S, E, Ev);
  if (N * L == 0) return;
  launch_kernel("attention_naive", kernels::attention_naive<T>, grid_1d(N * L), dim3(128), 0, q, k, v, out, lse, N,
                L, S, E, Ev, scale, causal);
}
/// Twin of cpu::attention_kernel: the warp kernel.
template <class T>
void attention_kernel(const T* q, const T* k, const T* v, T* out, double* lse, int64_t N, int64_t L, int64_t S,
                      int64_t E, int64_t Ev, double scale, bool causal) {
  attention_kernel_fast(q, k, v, out, lse, N, L, S, E, Ev, scale, causal);
}

/// dq, dk, dv: a warp per query row, then a warp per key row (E, Ev <= 256).
template <class T>
void attention_backward_kernel_fast(const T* dout, const T* q, const T* k, const T* v, const T* out, const double* lse,
                                    T* dq, T* dk, T* dv, int64_t N, int64_t L, int64_t S, int64_t E, int64_t Ev,
                                    double scale, bool causal) {
  detail::check_attention_sizes("attention_backward_kernel", N, L, S, E, Ev);
  detail::check_attention_head_dims("attention_backward_kernel", E, Ev);
  const dim3 block(32 * kernels::kSoftmaxWarpsPerBlock);
  if (N * L > 0)
    launch_kernel("attention_backward_dq_warp", kernels::attention_backward_dq_warp<T>, detail::softmax_grid(N * L),
                  block, 0, dout, q, k, v, out, lse, dq, N, L, S, E, Ev, scale, causal);
  if (N * S > 0)
    launch_kernel("attention_backward_dkdv_warp", kernels::attention_backward_dkdv_warp<T>,
                  detail::softmax_grid(N * S), block, 0, dout, q, k, v, out, lse, dk, dv, N, L, S, E, Ev, scale,
                  causal);
}
/// dq, dk, dv: one thread per query row, then one per key row (the oracle).
template <class T>
void attention_backward_naive(const T* dout, const T* q, const T* k, const T* v, const T* out,
                                     const double* lse, T* dq, T* dk, T* dv, int64_t N, int64_t L, int64_t S,
                                     int64_t E, int64_t Ev, double scale, bool causal) {
  detail::check_attention_sizes("attention_backward_kernel", N, L, S, E, Ev);
  if (N * L > 0)
    launch_kernel("attention_backward_dq_naive", kernels::attention_backward_dq_naive<T>, grid_1d(N * L), dim3(128),
                  0, dout, q, k, v, out, lse, dq, N, L, S, E, Ev, scale, causal);
  if (N * S > 0)
    launch_kernel("attention_backward_dkdv_naive", kernels::attention_backward_dkdv_naive<T>, grid_1d(N * S),
                  dim3(128), 0, dout, q, k, v, out, lse, dk, dv, N, L, S, E, Ev, scale, causal);
}
/// Twin of cpu::attention_backward_kernel: the warp kernels.
template <class T>
void attention_backward_kernel(const T* dout, const T* q, const T* k, const T* v, const T* out, const double* lse,
                               T* dq, T* dk, T* dv, int64_t N, int64_t L, int64_t S, int64_t E, int64_t Ev,
                               double scale, bool causal) {
  attention_backward_kernel_fast(dout, q, k, v, out, lse, dq, dk, dv, N, L, S, E, Ev, scale, causal);
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cuda

// tinytorch/backend/cuda/reduce.cuh — reductions along one dim (and over everything): sum, mean,
// max/argmax, min/argmin.
//
// The CUDA twins of backend/cpu/reduce.hpp, same names and signatures, device
// pointers. A contiguous tensor reduced over dim d is viewed as (outer, n, inner):
//   outer = prod(shape[:d]), n = shape[d], inner = prod(shape[d+1:]);   out: (outer, inner)
//   sum:  out[o, i] = scale * sum_k x[o, k, i]       (scale 1 for sum, 1/n for mean)
//   max:  values[o, i] = max_k x[o, k, i], indices[o, i] = the first k attaining it; a NaN wins
//         (the first NaN), as PyTorch and the CPU twin (extreme_dim_kernel); min likewise.
// "Over everything" is the same with outer = inner = 1.
// Sums accumulate in cpu::acc_t<T> (double for float32, the type itself otherwise; int64 wraps
// modulo 2^64 through cpu::AddOp), so results equal the CPU's within rounding, not bitwise (the
// order of additions differs).
// Two kernels per reduction, as every kernel of this backend (chapters/10-gpu-kernels.md):
//   fast   one block per output row: each thread reduces a strided slice of the row, then a
//          warp-shuffle tree (__shfl_down_sync) and shared memory across the block's warps
//   naive  (the oracle) one thread per output, the CPU's sequential loop
// The launchers named as the CPU twins take the block-per-row kernel when inner == 1 (a row is
// contiguous: coalesced reads) and the thread-per-output kernel otherwise (neighbouring threads
// read neighbouring i: coalesced too). `_fast` / `_naive` launchers force one kernel (tests).
// Chapter: chapters/10-gpu-kernels.md. Reference: PyTorch aten/src/ATen/native/cuda/Reduce.cuh,
// block_reduce.cuh (warp shuffles then shared memory); NVIDIA blog "Faster Parallel Reductions on
// Kepler" (shuffle trees).
#pragma once

#include <cstdint>
#include <functional>

#include "tinytorch/backend/cpu/reduce.hpp"  // acc_t and the CPU twins
#include "tinytorch/backend/cuda/elementwise.cuh"         // TT_GRID_STRIDE_LOOP, launch_kernel
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend::cuda {

// ================================ kernels ========================================================
namespace kernels {

constexpr unsigned kFullMask = 0xffffffffu;

/// Lane 0 gets the sum of v over the warp (the other lanes partial sums).
template <class Acc>
__device__ __forceinline__ Acc warp_sum(Acc v) {
  for (int offset = 16; offset > 0; offset /= 2) v = cpu::AddOp{}(v, __shfl_down_sync(kFullMask, v, offset));
  return v;
}
/// Thread 0 gets the sum of v over the block (blockDim.x a multiple of 32, at most 1024);
/// `partials` is __shared__ Acc[32]. Every thread of the block must call it.
template <class Acc>
__device__ Acc block_sum(Acc v, Acc* partials) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  v = warp_sum(v);
  if (lane == 0) partials[warp] = v;
  __syncthreads();
  v = threadIdx.x < static_cast<unsigned>(nwarps) ? partials[lane] : Acc(0);
  if (warp == 0) v = warp_sum(v);
  __syncthreads();  // partials may be reused by the next row
  return v;
}

/// y = acc * scale as the CPU twin rounds it (scale == 1 never multiplies: int64 sums stay exact).
template <class T, class Acc>
__device__ __forceinline__ T finish_sum(Acc acc, double scale) {
  if (scale == 1.0) return static_cast<T>(acc);
  return static_cast<T>(acc * scale);
}

/// Fast sum: a block per output (o, i) of the (outer, n, inner) view.
template <class T>
__global__ void sum_dim_block(const T* x, T* out, int64_t outer, int64_t n, int64_t inner, double scale) {
  using Acc = cpu::acc_t<T>;
  __shared__ Acc partials[32];
  const int64_t rows = outer * inner;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {  // uniform across the block
    const int64_t o = r / inner, i = r - o * inner;
    const T* p = x + o * n * inner + i;
    Acc acc = 0;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) acc = cpu::AddOp{}(acc, static_cast<Acc>(p[k * inner]));
    acc = block_sum(acc, partials);
    if (threadIdx.x == 0) out[r] = finish_sum<T>(acc, scale);
  }
}
/// Naive sum: one thread per output, the CPU's sequential loop.
template <class T>
__global__ void sum_dim_naive(const T* x, T* out, int64_t outer, int64_t n, int64_t inner, double scale) {
  using Acc = cpu::acc_t<T>;
  TT_GRID_STRIDE_LOOP(r, outer * inner) {
    const int64_t o = r / inner, i = r - o * inner;
    const T* p = x + o * n * inner + i;
    Acc acc = 0;
    for (int64_t k = 0; k < n; ++k) acc = cpu::AddOp{}(acc, static_cast<Acc>(p[k * inner]));
    out[r] = finish_sum<T>(acc, scale);
  }
}

/// The better of two (value, index) candidates; index < 0 is "no candidate". A NaN wins, then
/// better(), then the smaller index on ties: associative and commutative, so the shuffle tree
/// gives the sequential loop's answer (first NaN, else first best).
template <class T, class Better>
__device__ __forceinline__ void pick(T& v, int64_t& i, T v2, int64_t i2, Better better) {
  if (i2 < 0) return;
  if (i < 0) { v = v2; i = i2; return; }
  const bool nan1 = v != v, nan2 = v2 != v2;
  bool take;
  if (nan1 || nan2) take = nan1 && nan2 ? i2 < i : nan2;
  else if (better(v2, v)) take = true;
  else if (better(v, v2)) take = false;
  else take = i2 < i;
  if (take) { v = v2; i = i2; }
}

/// Fast max/min: a block per output; per thread then a shuffle tree of (value, index) pairs.
template <class T, class Better>
__global__ void extreme_dim_block(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n,
                                  int64_t inner, Better better) {
  __shared__ T part_v[32];
  __shared__ int64_t part_i[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  const int64_t rows = outer * inner;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t o = r / inner, i = r - o * inner;
    const T* p = x + o * n * inner + i;
    T best = T(0);
    int64_t arg = -1;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) pick(best, arg, p[k * inner], k, better);
    for (int offset = 16; offset > 0; offset /= 2) {
      const T v2 = __shfl_down_sync(kFullMask, best, offset);
      const int64_t i2 = __shfl_down_sync(kFullMask, arg, offset);
      pick(best, arg, v2, i2, better);
    }
    if (lane == 0) { part_v[warp] = best; part_i[warp] = arg; }
    __syncthreads();
    if (warp == 0) {
      best = lane < nwarps ? part_v[lane] : T(0);
      arg = lane < nwarps ? part_i[lane] : -1;
      for (int offset = 16; offset > 0; offset /= 2) {
        const T v2 = __shfl_down_sync(kFullMask, best, offset);
        const int64_t i2 = __shfl_down_sync(kFullMask, arg, offset);
        pick(best, arg, v2, i2, better);
      }
      if (lane == 0) {
        if (values) values[r] = best;
        if (indices) indices[r] = arg;
      }
    }
    __syncthreads();
  }
}
/// Naive max/min: one thread per output, exactly cpu::extreme_dim_kernel's loop.
template <class T, class Better>
__global__ void extreme_dim_naive(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n,
                                  int64_t inner, Better better) {
  TT_GRID_STRIDE_LOOP(r, outer * inner) {
    const int64_t o = r / inner, i = r - o * inner;
    const T* p = x + o * n * inner + i;
    T best = p[0];
    int64_t arg = 0;
    for (int64_t k = 1; k < n; ++k) {
      const T v = p[k * inner];
      const bool best_nan = best != best;
      if (!best_nan && (better(v, best) || v != v)) { best = v; arg = k; }
    }
    if (values) values[r] = best;
    if (indices) indices[r] = arg;
  }
}

}  // namespace kernels

// ================================ launchers ======================================================

namespace detail {
/// Threads for a block per row of n elements: the next power of two >= n, within [32, 256].
inline int row_threads(int64_t n) {
  int t = 32;
  while (t < 256 && t < n) t *= 2;
  return t;
}
inline dim3 row_grid(int64_t rows) { return dim3(static_cast<unsigned>(rows < 65535 ? rows : 65535)); }
inline void check_reduce_sizes(const char* op, int64_t outer, int64_t n, int64_t inner) {
  TT_CHECK(outer >= 0 && n >= 0 && inner >= 0, op, ": negative sizes (outer=", outer, ", n=", n, ", inner=",
           inner, ")");
}
}  // namespace detail

/// sum_dim_kernel with the block-per-row kernel (tests; any inner).
template <class T>
void sum_dim_kernel_fast(const T* x, T* out, int64_t outer, int64_t n, int64_t inner, double scale) {
  detail::check_reduce_sizes("sum_dim_kernel", outer, n, inner);
  if (outer * inner == 0) return;
  launch_kernel("sum_dim_block", kernels::sum_dim_block<T>, detail::row_grid(outer * inner),
                dim3(detail::row_threads(n)), 0, x, out, outer, n, inner, scale);
}
/// sum_dim_kernel with the thread-per-output kernel (the oracle).
template <class T>
void sum_dim_kernel_naive(const T* x, T* out, int64_t outer, int64_t n, int64_t inner, double scale) {
  detail::check_reduce_sizes("sum_dim_kernel", outer, n, inner);
  if (outer * inner == 0) return;
  launch_kernel("sum_dim_naive", kernels::sum_dim_naive<T>, grid_1d(outer * inner), dim3(256), 0, x, out, outer, n,
                inner, scale);
}
/// out[o, i] = scale * sum_k x[o, k, i] (twin of cpu::sum_dim_kernel; mean: scale = 1/n).
template <class T>
void sum_dim_kernel(const T* x, T* out, int64_t outer, int64_t n, int64_t inner, double scale) {
  if (inner == 1) sum_dim_kernel_fast(x, out, outer, n, inner, scale);
  else sum_dim_kernel_naive(x, out, outer, n, inner, scale);
}

/// extreme_dim_kernel with the block-per-row kernel (tests; any inner).
template <class T, class Better>
void extreme_dim_kernel_fast(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
                             Better better) {
  detail::check_reduce_sizes("extreme_dim_kernel", outer, n, inner);
  if (outer * inner == 0) return;
  TT_CHECK(n > 0, "max/min: cannot reduce a dimension of size 0 (outer=", outer, ", inner=", inner, ")");
  launch_kernel("extreme_dim_block", kernels::extreme_dim_block<T, Better>, detail::row_grid(outer * inner),
                dim3(detail::row_threads(n)), 0, x, values, indices, outer, n, inner, better);
}
/// extreme_dim_kernel with the thread-per-output kernel (the oracle).
template <class T, class Better>
void extreme_dim_kernel_naive(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
                              Better better) {
  detail::check_reduce_sizes("extreme_dim_kernel", outer, n, inner);
  if (outer * inner == 0) return;
  TT_CHECK(n > 0, "max/min: cannot reduce a dimension of size 0 (outer=", outer, ", inner=", inner, ")");
  launch_kernel("extreme_dim_naive", kernels::extreme_dim_naive<T, Better>, grid_1d(outer * inner), dim3(256), 0, x,
                values, indices, outer, n, inner, better);
}
/// values/indices = the best x[o, k, i] over k by better (std::greater: max, std::less: min), first
/// index, NaN wins; either output may be null (twin of cpu::extreme_dim_kernel).
template <class T, class Better>
void extreme_dim_kernel(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
                        Better better) {
  if (inner == 1) extreme_dim_kernel_fast(x, values, indices, outer, n, inner, better);
  else extreme_dim_kernel_naive(x, values, indices, outer, n, inner, better);
}
/// max and argmax along a dim (twin of cpu::max_dim_kernel).
template <class T>
void max_dim_kernel(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner) {
  extreme_dim_kernel(x, values, indices, outer, n, inner, std::greater<T>());
}
/// min and argmin along a dim (twin of cpu::min_dim_kernel).
template <class T>
void min_dim_kernel(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner) {
  extreme_dim_kernel(x, values, indices, outer, n, inner, std::less<T>());
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cuda

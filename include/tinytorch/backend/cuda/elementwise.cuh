// tinytorch/backend/cuda/elementwise.cuh — elementwise CUDA kernels: unary, binary (with
// broadcasting), scalar, compare, ternary, copy/cast/contiguous and fill.
//
// The CUDA twins of backend/cpu/elementwise.hpp: the launchers below have
// the SAME names and signatures as the CPU loops (unary_kernel, binary_kernel, scalar_kernel,
// copy_kernel, ternary_kernel) and take device pointers. One element per thread-iteration, with the
// functor structs of the CPU backend (backend::cpu::AddOp, ExpOp, ... are TT_HOST_DEVICE; never copied):
//   out[i] = f(a[offset_a(i)], b[offset_b(i)])   for i in [0, numel(shape)),  out dense row-major
//   offset_k(i) = sum_d idx_d(i) * strides_k[d],  idx(i) the row-major multi-index of i in `shape`
// A broadcast dim has stride 0, a transposed view permuted strides: the strided path reads any
// view without a copy. Comparisons return int64 (0/1), as the CPU functors do.
// Two kernels per op, as every kernel of this backend (chapters/10-gpu-kernels.md):
//   fast   all operands dense: a flat grid-stride loop, out[i] = f(a[i], b[i]) (coalesced)
//   naive  (the oracle) the same loop through Indexer::offset (backend/indexer.hpp), any strides
// Both are grid-stride loops over int64 indices, so any n runs on a capped grid (grid_1d).
// Shapes reach the kernels by value in a backend::Indexer, the index-math struct the CPU's strided
// loop walks too (trivially copyable; at most 25 dims).
// float16/bfloat16 (T = Half, BFloat16) use the same kernels: the ops wrap the functor in
// backend::Opmath, so each element is loaded in 16 bits, computed in float and stored rounded once
// (chapter 11.2); the CPU computes these dtypes through float32 copies instead.
// Chapter: chapters/10-gpu-kernels.md. Reference: PyTorch aten/src/ATen/native/cuda/Loops.cuh and
// OffsetCalculator.cuh (the same split: contiguous fast path, offset calculator otherwise).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"
#include "tinytorch/core/shape.hpp"
#include "tinytorch/backend/cpu/elementwise.hpp"       // the functors (AddOp, ExpOp, ...) and the CPU twins
#include "tinytorch/backend/indexer.hpp"               // Indexer: shape and strides by value
#include "tinytorch/backend/cuda/launch.hpp"                   // launch_kernel, grid_1d (and sim.hpp in the simulator)
#include "tinytorch/core/cuda_runtime.hpp"

#if !TINYTORCH_WITH_CUDA
#error "the backend/cuda .cuh files hold CUDA kernels: compile with nvcc, or with -DTINYTORCH_CUDA_SIM=1 (the simulator)"
#endif

TT_NAMESPACE_BEGIN namespace backend::cuda {

// ================================ kernels ========================================================
namespace kernels {

/// for (int64 i = this thread's first index; i < n; i += the grid's thread count): a grid-stride
/// loop (shared by the backend/cuda .cuh kernels).
#define TT_GRID_STRIDE_LOOP(i, n)                                                         \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

template <class T, class U, class F>
__global__ void unary_contiguous(const T* x, U* y, int64_t n, F f) {
  TT_GRID_STRIDE_LOOP(i, n) y[i] = f(x[i]);
}
template <class T, class U, class F>
__global__ void unary_strided(const T* x, U* y, Indexer ix, int64_t n, F f) {
  TT_GRID_STRIDE_LOOP(i, n) y[i] = f(x[ix.offset(0, i)]);
}

template <class T, class U, class F>
__global__ void binary_contiguous(const T* a, const T* b, U* out, int64_t n, F f) {
  TT_GRID_STRIDE_LOOP(i, n) out[i] = f(a[i], b[i]);
}
template <class T, class U, class F>
__global__ void binary_strided(const T* a, const T* b, U* out, Indexer ix, int64_t n, F f) {
  TT_GRID_STRIDE_LOOP(i, n) out[i] = f(a[ix.offset(0, i)], b[ix.offset(1, i)]);
}

template <class T, class U, class F>
__global__ void scalar_contiguous(const T* a, T s, U* out, int64_t n, F f) {
  TT_GRID_STRIDE_LOOP(i, n) out[i] = f(a[i], s);
}

template <class A, class B, class C, class U, class F>
__global__ void ternary_strided(const A* a, const B* b, const C* c, U* out, Indexer ix, int64_t n, F f) {
  TT_GRID_STRIDE_LOOP(i, n) out[i] = f(a[ix.offset(0, i)], b[ix.offset(1, i)], c[ix.offset(2, i)]);
}

template <class S, class D>
__global__ void copy_contiguous(const S* src, D* dst, int64_t n) {
  TT_GRID_STRIDE_LOOP(i, n) dst[i] = static_cast<D>(src[i]);
}
template <class S, class D>
__global__ void copy_strided(const S* src, D* dst, Indexer ix, int64_t n) {
  TT_GRID_STRIDE_LOOP(i, n) dst[i] = static_cast<D>(src[ix.offset(0, i)]);
}

template <class T>
__global__ void fill(T* out, int64_t n, T value) {
  TT_GRID_STRIDE_LOOP(i, n) out[i] = value;
}

}  // namespace kernels

// ================================ launchers ======================================================
// Device pointers in, nothing returned; an empty range launches nothing. Twins of backend/cpu.

namespace detail {
constexpr int kElementwiseThreads = 256;
inline bool is_dense(const Shape& shape, const Strides& s) {
  int64_t expect = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1 && s[d] != expect) return false;
    expect *= shape[d];
  }
  return true;
}
}  // namespace detail

/// y[i] = f(x[i]) over n dense elements (twin of cpu::unary_kernel).
template <class T, class U, class F>
void unary_kernel(const T* x, U* y, int64_t n, F f) {
  if (n <= 0) return;
  launch_kernel("unary_contiguous", kernels::unary_contiguous<T, U, F>, grid_1d(n), dim3(detail::kElementwiseThreads),
                0, x, y, n, f);
}
/// y[i] = f(x[offset(i)]) with x read through strides `sx`, y dense (the strided naive twin; no CPU twin).
template <class T, class U, class F>
void unary_kernel_strided(const T* x, const Strides& sx, U* y, const Shape& shape, F f) {
  const int64_t n = numel_of(shape);
  if (n <= 0) return;
  const Indexer ix = Indexer::make(shape, {sx}, "unary");
  launch_kernel("unary_strided", kernels::unary_strided<T, U, F>, grid_1d(n), dim3(detail::kElementwiseThreads), 0,
                x, y, ix, n, f);
}

/// out[i] = f(a[.], b[.]) through (broadcast) strides, out dense (twin of cpu::binary_kernel).
/// `contiguous`: both operands dense with the output's shape: the flat fast kernel; otherwise the
/// strided one.
template <class T, class U, class F>
void binary_kernel(const T* a, const Strides& sa, const T* b, const Strides& sb, U* out, const Shape& shape,
                   bool contiguous, F f) {
  const int64_t n = numel_of(shape);
  if (n <= 0) return;
  if (contiguous) {
    launch_kernel("binary_contiguous", kernels::binary_contiguous<T, U, F>, grid_1d(n),
                  dim3(detail::kElementwiseThreads), 0, a, b, out, n, f);
    return;
  }
  const Indexer ix = Indexer::make(shape, {sa, sb}, "binary");
  launch_kernel("binary_strided", kernels::binary_strided<T, U, F>, grid_1d(n), dim3(detail::kElementwiseThreads),
                0, a, b, out, ix, n, f);
}
/// The naive twin of binary_kernel: always the strided kernel (the oracle the tests compare with).
template <class T, class U, class F>
void binary_kernel_naive(const T* a, const Strides& sa, const T* b, const Strides& sb, U* out, const Shape& shape,
                         F f) {
  // qualified: an unqualified call would also find cpu::binary_kernel by ADL (F is a cpu:: functor)
  cuda::binary_kernel(a, sa, b, sb, out, shape, false, f);
}

/// out[i] = f(a[i], s) for a scalar s (twin of cpu::scalar_kernel).
template <class T, class U, class F>
void scalar_kernel(const T* a, T s, U* out, int64_t n, F f) {
  if (n <= 0) return;
  launch_kernel("scalar_contiguous", kernels::scalar_contiguous<T, U, F>, grid_1d(n),
                dim3(detail::kElementwiseThreads), 0, a, s, out, n, f);
}

/// out[i] = f(a[.], b[.], c[.]) through (broadcast) strides (twin of cpu::ternary_kernel: where, clamp).
template <class A, class B, class C, class U, class F>
void ternary_kernel(const A* a, const Strides& sa, const B* b, const Strides& sb, const C* c, const Strides& sc,
                    U* out, const Shape& shape, F f) {
  const int64_t n = numel_of(shape);
  if (n <= 0) return;
  const Indexer ix = Indexer::make(shape, {sa, sb, sc}, "ternary");
  launch_kernel("ternary_strided", kernels::ternary_strided<A, B, C, U, F>, grid_1d(n),
                dim3(detail::kElementwiseThreads), 0, a, b, c, out, ix, n, f);
}

/// dst (dense) = src read through strides `ss`, converted to D (twin of cpu::copy_kernel: copy,
/// cast, contiguous). Dense src: one memcpy_d2d for the same type, the flat kernel for a cast.
template <class S, class D>
void copy_kernel(const S* src, const Strides& ss, D* dst, const Shape& shape) {
  const int64_t n = numel_of(shape);
  if (n <= 0) return;
  if (detail::is_dense(shape, ss)) {
    if constexpr (std::is_same_v<S, D>) {
      memcpy_d2d(dst, src, static_cast<size_t>(n) * sizeof(D));
    } else {
      launch_kernel("copy_contiguous", kernels::copy_contiguous<S, D>, grid_1d(n), dim3(detail::kElementwiseThreads),
                    0, src, dst, n);
    }
    return;
  }
  const Indexer ix = Indexer::make(shape, {ss}, "copy");
  launch_kernel("copy_strided", kernels::copy_strided<S, D>, grid_1d(n), dim3(detail::kElementwiseThreads), 0, src,
                dst, ix, n);
}
/// The naive twin of copy_kernel: always the strided kernel.
template <class S, class D>
void copy_kernel_naive(const S* src, const Strides& ss, D* dst, const Shape& shape) {
  const int64_t n = numel_of(shape);
  if (n <= 0) return;
  const Indexer ix = Indexer::make(shape, {ss}, "copy");
  launch_kernel("copy_strided", kernels::copy_strided<S, D>, grid_1d(n), dim3(detail::kElementwiseThreads), 0, src,
                dst, ix, n);
}

/// out[i] = value for i < n (twin of cpu::fill_kernel: full, zeros, ones, zero_).
template <class T>
void fill_kernel(T* out, int64_t n, T value) {
  if (n <= 0) return;
  launch_kernel("fill", kernels::fill<T>, grid_1d(n), dim3(detail::kElementwiseThreads), 0, out, n, value);
}

// ---- the in-place kernel (twin of cpu::binary_inplace_kernel) -----------
namespace kernels {
/// self[offset0(i)] = f(self[offset0(i)], o[offset1(i)]): each thread owns distinct elements of
/// self (the ops layer refuses a self that repeats a location), so there is no race.
template <class T, class F>
__global__ void binary_inplace_strided(T* self, const T* o, Indexer ix, int64_t n, F f) {
  TT_GRID_STRIDE_LOOP(i, n) {
    T* p = self + ix.offset(0, i);
    *p = f(*p, o[ix.offset(1, i)]);
  }
}
}  // namespace kernels
/// self[.] = f(self[.], o[.]) through self's strides `ss` and o's broadcast strides `so`, in place
/// (twin of cpu::binary_inplace_kernel: ops::binary_, unary_, copy_).
template <class T, class F>
void binary_inplace_kernel(T* self, const Strides& ss, const T* o, const Strides& so, const Shape& shape, F f) {
  const int64_t n = numel_of(shape);
  if (n <= 0) return;
  const Indexer ix = Indexer::make(shape, {ss, so}, "binary_");
  launch_kernel("binary_inplace_strided", kernels::binary_inplace_strided<T, F>, grid_1d(n),
                dim3(detail::kElementwiseThreads), 0, self, o, ix, n, f);
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cuda

// tinytorch/ops/dispatch.hpp — the single CPU/CUDA fork, and the helpers every op uses.
// Every op in ops/ calls check_device() (and check_same_device() for several operands) before
// touching data, allocates its output on the inputs' device (make_tensor(shape, dtype, device)),
// and runs its data work through backend::dispatch:: below, never through backend::cpu:: or
// backend::cuda:: directly. One function per backend primitive, with the SAME name and arguments
// as the backend functions plus the device first:
//   backend::dispatch::unary_kernel(Device d, x, y, n, f)
//     d on the CPU  -> backend::cpu::unary_kernel(x, y, n, f)
//     d on cuda:i   -> backend::cuda::unary_kernel(x, y, n, f) under a DeviceGuard for cuda:i, in a
//                      translation unit with the CUDA backend (nvcc, or the kernel simulator:
//                      TINYTORCH_CUDA_SIM); a tinytorch::Error in a CPU build (check_device throws
//                      earlier with a clearer message).
// (backend::dispatch, because tinytorch::dispatch is core/dtype.hpp's dtype dispatch.) Primitives
// with no CUDA twin (conv, pooling) throw "<op>: not implemented for CUDA tensors yet".
// Pointers passed with a CUDA device are device pointers: nothing here reads them on the host.
// copy_bytes() moves raw bytes between any two devices; ops::to_host() gives a CPU copy of a tensor
// (item, tolist, printing and at() read through it).
// Type promotion follows PyTorch (promote_types, result_type below):
//   same dtype -> that dtype; int64 with float -> the float; float32 with float64 -> float64;
//   float16 or bfloat16 with float32 -> float32; float16 with bfloat16 -> float32.
// float16 and bfloat16 are storage formats: each op on them computes in float32 and rounds the
// result once to the 16-bit dtype, as PyTorch's kernels compute them in float (their "opmath" type).
// On the CPU, and for most ops on CUDA, the op converts its operands to float32, runs the float32
// kernel and converts the result, so no CPU kernel is compiled for them (has_cpu_twin). On CUDA
// the elementwise ops, matrix products and sums run kernels compiled for Half and BFloat16 that
// load 16 bits and compute in float (backend::Opmath), bit for bit the same, half the traffic.
// Ops that only move elements (copies, casts, where, embedding's gather, fill) handle them
// directly (dispatch_all).
// Chapter: chapters/10-gpu-kernels.md. Reference: PyTorch's dispatcher (one kernel per backend,
// chosen by the tensors' device), c10::cuda::CUDAGuard.
#pragma once

#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <type_traits>

#include "tinytorch/backend/cpu/attention.hpp"
#include "tinytorch/backend/cpu/conv.hpp"
#include "tinytorch/backend/cpu/elementwise.hpp"
#include "tinytorch/backend/cpu/embedding.hpp"
#include "tinytorch/backend/cpu/gemm.hpp"
#include "tinytorch/backend/cpu/layer_norm.hpp"
#include "tinytorch/backend/cpu/optim.hpp"
#include "tinytorch/backend/cpu/pooling.hpp"
#include "tinytorch/backend/cpu/reduce.hpp"
#include "tinytorch/backend/cpu/softmax.hpp"
#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"
#include "tinytorch/tensor.hpp"
#include "tinytorch/ops/same_device.hpp"
#if TINYTORCH_WITH_CUDA
#include "tinytorch/backend/cuda/attention.cuh"
#include "tinytorch/backend/cuda/elementwise.cuh"
#include "tinytorch/backend/cuda/embedding.cuh"
#include "tinytorch/backend/cuda/gemm.cuh"
#include "tinytorch/backend/cuda/layer_norm.cuh"
#include "tinytorch/backend/cuda/optim.cuh"
#include "tinytorch/backend/cuda/reduce.cuh"
#include "tinytorch/core/cuda_runtime.hpp"
#include "tinytorch/backend/cuda/softmax.cuh"
#endif

TT_NAMESPACE_BEGIN namespace backend::dispatch {

/// Throws the error of a CUDA device reaching a primitive in a translation unit without the CUDA
/// backend (check_device normally throws first, naming the op).
[[noreturn]] inline void throw_no_cuda_backend(const char* fn, Device d) {
  throw Error(::tinytorch::detail::str_cat(
      fn, ": tensor on ", d.str(), " needs the CUDA backend, which this build does not have (compile with nvcc, "
      "or with -DTINYTORCH_CUDA_SIM=1 for the kernel simulator)"));
}
/// Throws for a primitive that has no CUDA twin yet.
[[noreturn]] inline void throw_not_on_cuda(const char* op, Device d) {
  throw Error(::tinytorch::detail::str_cat(op, ": not implemented for CUDA tensors yet (got a tensor on ", d.str(),
                                           "); copy it to the CPU with .cpu() first"));
}

#if TINYTORCH_WITH_CUDA
/// Makes `d` the current CUDA device for the calling thread while it lives and restores the previous
/// one after (c10::cuda::CUDAGuard). In the simulator there is no current device (kernels run on
/// the pointers they get): the guard only checks the ordinal ("invalid device ordinal").
class DeviceGuard {
 public:
  explicit DeviceGuard(Device d)
#if !TINYTORCH_CUDA_SIM
      : guard_(d.index)
#endif
  {
#if TINYTORCH_CUDA_SIM
    backend::cuda::detail::check_sim_device("cudaSetDevice", d.index);
#endif
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
#if !TINYTORCH_CUDA_SIM
  backend::cuda::detail::ScopedDevice guard_;
#endif
};
#endif

// Each primitive below: `if (d.is_cpu()) cpu twin; else (under a DeviceGuard) the cuda twin`.
// float16/bfloat16 elements (T = Half, BFloat16) reach the elementwise, gemm and sum primitives
// on CUDA devices only: there the CUDA backend's 16-bit kernels run them (backend::Opmath), while
// the CPU computes them through float32 copies (the ops convert first). So those primitives never
// compile a CPU twin for a 16-bit T (has_cpu_twin), and a CPU device there is a caller's bug.
template <class T>
inline constexpr bool has_cpu_twin = !is_reduced_floating_point_v<T>;
[[noreturn]] inline void throw_16bit_on_cpu(const char* fn) {
  throw Error(::tinytorch::detail::str_cat(fn, ": float16/bfloat16 kernels run on CUDA devices only; on the CPU "
                                           "the op computes in float32 (internal error: the op did not convert)"));
}
// TT_DISPATCH_CUDA(name, call) is the CUDA branch: the call in a CUDA build, an Error otherwise.
#if TINYTORCH_WITH_CUDA
#define TT_DISPATCH_CUDA(name, d, ...) \
  do {                                 \
    DeviceGuard tt_guard_(d);          \
    __VA_ARGS__;                       \
  } while (0)
#else
#define TT_DISPATCH_CUDA(name, d, ...) throw_no_cuda_backend(name, d)
#endif

// ---- elementwise (backend/cpu/elementwise.hpp, backend/cuda/elementwise.cuh) -------------------

/// y[i] = f(x[i]) over n dense elements.
template <class T, class U, class F>
void unary_kernel(Device d, const T* x, U* y, int64_t n, F f) {
  if constexpr (has_cpu_twin<T>) {
    if (d.is_cpu()) return backend::cpu::unary_kernel(x, y, n, f);
  } else if (d.is_cpu()) {
    throw_16bit_on_cpu("unary_kernel");
  }
  TT_DISPATCH_CUDA("unary_kernel", d, backend::cuda::unary_kernel(x, y, n, f));
}
/// out[i] = f(a[.], b[.]) through (broadcast) strides, out dense; comparisons are this with EqOp, ...
template <class T, class U, class F>
void binary_kernel(Device d, const T* a, const Strides& sa, const T* b, const Strides& sb, U* out,
                   const Shape& shape, bool contiguous, F f) {
  if constexpr (has_cpu_twin<T>) {
    if (d.is_cpu()) return backend::cpu::binary_kernel(a, sa, b, sb, out, shape, contiguous, f);
  } else if (d.is_cpu()) {
    throw_16bit_on_cpu("binary_kernel");
  }
  TT_DISPATCH_CUDA("binary_kernel", d, backend::cuda::binary_kernel(a, sa, b, sb, out, shape, contiguous, f));
}
/// out[i] = f(a[i], s) for a scalar s.
template <class T, class U, class F>
void scalar_kernel(Device d, const T* a, T s, U* out, int64_t n, F f) {
  if constexpr (has_cpu_twin<T>) {
    if (d.is_cpu()) return backend::cpu::scalar_kernel(a, s, out, n, f);
  } else if (d.is_cpu()) {
    throw_16bit_on_cpu("scalar_kernel");
  }
  TT_DISPATCH_CUDA("scalar_kernel", d, backend::cuda::scalar_kernel(a, s, out, n, f));
}
/// out[i] = f(a[.], b[.], c[.]) through (broadcast) strides (where, clamp with tensor bounds).
template <class A, class B, class C, class U, class F>
void ternary_kernel(Device d, const A* a, const Strides& sa, const B* b, const Strides& sb, const C* c,
                    const Strides& sc, U* out, const Shape& shape, F f) {
  if (d.is_cpu()) return backend::cpu::ternary_kernel(a, sa, b, sb, c, sc, out, shape, f);
  TT_DISPATCH_CUDA("ternary_kernel", d, backend::cuda::ternary_kernel(a, sa, b, sb, c, sc, out, shape, f));
}
/// dst (dense over `shape`) = src read through strides `ss`, converted to D (copy, cast, contiguous).
/// Both pointers on `d`.
template <class S, class D>
void copy_kernel(Device d, const S* src, const Strides& ss, D* dst, const Shape& shape) {
  if (d.is_cpu()) return backend::cpu::copy_kernel(src, ss, dst, shape);
  TT_DISPATCH_CUDA("copy_kernel", d, backend::cuda::copy_kernel(src, ss, dst, shape));
}
// The in-place loop of ops::binary_ / unary_ / copy_: self[.] = f(self[.], o[.]) through
// self's own strides and o's broadcast strides.
template <class T, class F>
void binary_inplace_kernel(Device d, T* self, const Strides& ss, const T* o, const Strides& so, const Shape& shape,
                           F f) {
  if constexpr (has_cpu_twin<T>) {
    if (d.is_cpu()) return backend::cpu::binary_inplace_kernel(self, ss, o, so, shape, f);
  } else if (d.is_cpu()) {
    throw_16bit_on_cpu("binary_inplace_kernel");
  }
  TT_DISPATCH_CUDA("binary_inplace_kernel", d, backend::cuda::binary_inplace_kernel(self, ss, o, so, shape, f));
}
/// out[i] = value for i < n (zeros, ones, full, fill_, zero_).
template <class T>
void fill_kernel(Device d, T* out, int64_t n, T value) {
  if (d.is_cpu()) return backend::cpu::fill_kernel(out, n, value);
  TT_DISPATCH_CUDA("fill_kernel", d, backend::cuda::fill_kernel(out, n, value));
}

// ---- reductions (backend/cpu/reduce.hpp, backend/cuda/reduce.cuh) ------------------------------
// A contiguous x viewed as (outer, n, inner), reduced over n; see backend/cpu/reduce.hpp.

/// out[o, i] = scale * sum_k x[o, k, i].
template <class T>
void sum_dim_kernel(Device d, const T* x, T* out, int64_t outer, int64_t n, int64_t inner, double scale) {
  if constexpr (has_cpu_twin<T>) {
    if (d.is_cpu()) return backend::cpu::sum_dim_kernel(x, out, outer, n, inner, scale);
  } else if (d.is_cpu()) {
    throw_16bit_on_cpu("sum_dim_kernel");
  }
  TT_DISPATCH_CUDA("sum_dim_kernel", d, backend::cuda::sum_dim_kernel(x, out, outer, n, inner, scale));
}
/// values/indices[o, i] = the best x[o, k, i] by `better` (std::greater: max, std::less: min), first
/// index, NaN wins; either output may be null.
template <class T, class Better>
void extreme_dim_kernel(Device d, const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
                        Better better) {
  if (d.is_cpu()) return backend::cpu::extreme_dim_kernel(x, values, indices, outer, n, inner, better);
  TT_DISPATCH_CUDA("extreme_dim_kernel", d,
                   backend::cuda::extreme_dim_kernel(x, values, indices, outer, n, inner, better));
}
/// max and argmax along a dim.
template <class T>
void max_dim_kernel(Device d, const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner) {
  if (d.is_cpu()) return backend::cpu::max_dim_kernel(x, values, indices, outer, n, inner);
  TT_DISPATCH_CUDA("max_dim_kernel", d, backend::cuda::max_dim_kernel(x, values, indices, outer, n, inner));
}
/// min and argmin along a dim.
template <class T>
void min_dim_kernel(Device d, const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner) {
  if (d.is_cpu()) return backend::cpu::min_dim_kernel(x, values, indices, outer, n, inner);
  TT_DISPATCH_CUDA("min_dim_kernel", d, backend::cuda::min_dim_kernel(x, values, indices, outer, n, inner));
}

// ---- softmax (backend/cpu/softmax.hpp, backend/cuda/softmax.cuh) --------------------------------

template <class T>
void softmax_kernel(Device d, const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  if (d.is_cpu()) return backend::cpu::softmax_kernel(x, y, outer, n, inner, log);
  TT_DISPATCH_CUDA("softmax_kernel", d, backend::cuda::softmax_kernel(x, y, outer, n, inner, log));
}
template <class T>
void softmax_backward_kernel(Device d, const T* dy, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner,
                             bool log) {
  if (d.is_cpu()) return backend::cpu::softmax_backward_kernel(dy, y, dx, outer, n, inner, log);
  TT_DISPATCH_CUDA("softmax_backward_kernel", d,
                   backend::cuda::softmax_backward_kernel(dy, y, dx, outer, n, inner, log));
}

// ---- embedding (backend/cpu/embedding.hpp, backend/cuda/embedding.cuh) ---------------------------

/// out (n, dim) = rows idx[0..n) of weight (num_weights, dim); indices already range-checked.
template <class T>
void embedding_kernel(Device d, const int64_t* idx, const T* weight, T* out, int64_t n, int64_t dim) {
  if (d.is_cpu()) return backend::cpu::embedding_kernel(idx, weight, out, n, dim);
  TT_DISPATCH_CUDA("embedding_kernel", d, backend::cuda::embedding_kernel(idx, weight, out, n, dim));
}
/// dw (num_weights, dim) = rows of dy summed by index in index order; padding_idx's row 0.
template <class T>
void embedding_backward_kernel(Device d, const int64_t* idx, const T* dy, T* dw, int64_t n, int64_t num_weights,
                               int64_t dim, int64_t padding_idx) {
  if (d.is_cpu()) return backend::cpu::embedding_backward_kernel(idx, dy, dw, n, num_weights, dim, padding_idx);
  TT_DISPATCH_CUDA("embedding_backward_kernel", d,
                   backend::cuda::embedding_backward_kernel(idx, dy, dw, n, num_weights, dim, padding_idx));
}

// ---- layer_norm (backend/cpu/layer_norm.hpp, backend/cuda/layer_norm.cuh) -----------------------

/// y (M, K), mean and rstd (M, double) of layer_norm over the rows of x; w, b: K or nullptr.
template <class T>
void layer_norm_kernel(Device d, const T* x, const T* w, const T* b, T* y, double* mean, double* rstd, int64_t M,
                       int64_t K, double eps) {
  if (d.is_cpu()) return backend::cpu::layer_norm_kernel(x, w, b, y, mean, rstd, M, K, eps);
  TT_DISPATCH_CUDA("layer_norm_kernel", d, backend::cuda::layer_norm_kernel(x, w, b, y, mean, rstd, M, K, eps));
}
/// dx (M, K), dw, db (K) of layer_norm from dy and the forward's mean and rstd; each may be nullptr.
template <class T>
void layer_norm_backward_kernel(Device d, const T* dy, const T* x, const T* w, const double* mean, const double* rstd,
                                T* dx, T* dw, T* db, int64_t M, int64_t K) {
  if (d.is_cpu()) return backend::cpu::layer_norm_backward_kernel(dy, x, w, mean, rstd, dx, dw, db, M, K);
  TT_DISPATCH_CUDA("layer_norm_backward_kernel", d,
                   backend::cuda::layer_norm_backward_kernel(dy, x, w, mean, rstd, dx, dw, db, M, K));
}

// ---- fused attention (backend/cpu/attention.hpp, backend/cuda/attention.cuh) -------------------

/// out (N, L, Ev), lse (N, L, double) of softmax(scale q k^T [causal]) v; q (N, L, E), k (N, S, E),
/// v (N, S, Ev) contiguous.
template <class T>
void attention_kernel(Device d, const T* q, const T* k, const T* v, T* out, double* lse, int64_t N, int64_t L,
                      int64_t S, int64_t E, int64_t Ev, double scale, bool causal) {
  if (d.is_cpu()) return backend::cpu::attention_kernel(q, k, v, out, lse, N, L, S, E, Ev, scale, causal);
  TT_DISPATCH_CUDA("attention_kernel", d,
                   backend::cuda::attention_kernel(q, k, v, out, lse, N, L, S, E, Ev, scale, causal));
}
/// dq, dk, dv of the fused attention from dout and the forward's out and lse.
template <class T>
void attention_backward_kernel(Device d, const T* dout, const T* q, const T* k, const T* v, const T* out,
                               const double* lse, T* dq, T* dk, T* dv, int64_t N, int64_t L, int64_t S, int64_t E,
                               int64_t Ev, double scale, bool causal) {
  if (d.is_cpu())
    return backend::cpu::attention_backward_kernel(dout, q, k, v, out, lse, dq, dk, dv, N, L, S, E, Ev, scale, causal);
  TT_DISPATCH_CUDA("attention_backward_kernel", d,
                   backend::cuda::attention_backward_kernel(dout, q, k, v, out, lse, dq, dk, dv, N, L, S, E, Ev,
                                                            scale, causal));
}

// ---- gemm (backend/cpu/gemm.hpp, backend/cuda/gemm.cuh) ----------------------------------------

/// C = alpha * op(A) op(B) + beta * C (row-major, leading dimensions; see backend/cpu/gemm.hpp).
/// CUDA: float, double, and float16/bfloat16 (accumulated in float32, alpha and beta float32);
/// int64 throws PyTorch's "addmm_cuda" not implemented for 'Long'.
template <class T>
void gemm(Device d, int64_t M, int64_t N, int64_t K, opmath_type<T> alpha, const T* A, int64_t lda, bool trans_a,
          const T* B, int64_t ldb, bool trans_b, opmath_type<T> beta, T* C, int64_t ldc) {
  if constexpr (has_cpu_twin<T>) {
    if (d.is_cpu()) return backend::cpu::gemm(M, N, K, alpha, A, lda, trans_a, B, ldb, trans_b, beta, C, ldc);
  } else if (d.is_cpu()) {
    throw_16bit_on_cpu("gemm");
  }
  if constexpr (!std::is_same_v<T, int64_t>) {
    TT_DISPATCH_CUDA("gemm", d, backend::cuda::gemm(M, N, K, alpha, A, lda, trans_a, B, ldb, trans_b, beta, C, ldc));
  } else {
    throw Error("gemm: \"addmm_cuda\" not implemented for 'Long' (int64 matrix products on CUDA tensors)");
  }
}

// ---- optimizers (backend/cpu/optim.hpp, backend/cuda/optim.cuh) -------------------------------

template <class T>
void sgd_kernel(Device d, T* param, const T* grad, T* momentum_buffer, int64_t n, double lr, double momentum,
                double dampening, double weight_decay, bool nesterov, bool first_step) {
  if (d.is_cpu())
    return backend::cpu::sgd_kernel<T>(param, grad, momentum_buffer, n, lr, momentum, dampening, weight_decay, nesterov,
                                first_step);
  TT_DISPATCH_CUDA("sgd_kernel", d,
                   backend::cuda::sgd_kernel<T>(param, grad, momentum_buffer, n, lr, momentum, dampening,
                                                weight_decay, nesterov, first_step));
}
template <class T>
void adam_kernel(Device d, T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, int64_t n,
                 int64_t step, double lr, double beta1, double beta2, double eps, double weight_decay, bool amsgrad,
                 bool decoupled_weight_decay) {
  if (d.is_cpu())
    return backend::cpu::adam_kernel<T>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, step, lr, beta1, beta2, eps,
                                 weight_decay, amsgrad, decoupled_weight_decay);
  TT_DISPATCH_CUDA("adam_kernel", d,
                   backend::cuda::adam_kernel<T>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, step, lr, beta1,
                                                 beta2, eps, weight_decay, amsgrad, decoupled_weight_decay));
}

// ---- CPU only so far: conv and pooling (backend/cpu/conv.hpp, pooling.hpp) ---------------------
// On a CUDA device these throw "<op>: not implemented for CUDA tensors yet".

template <class T>
void conv2d_kernel(Device d, const T* x, const T* w, const T* b, T* y, const backend::cpu::Conv2dGeometry& g) {
  if (!d.is_cpu()) throw_not_on_cuda("conv2d", d);
  backend::cpu::conv2d_kernel(x, w, b, y, g);
}
template <class T>
void conv2d_backward_kernel(Device d, const T* x, const T* w, const T* dy, T* dx, T* dw, T* db,
                            const backend::cpu::Conv2dGeometry& g) {
  if (!d.is_cpu()) throw_not_on_cuda("conv2d_backward", d);
  backend::cpu::conv2d_backward_kernel(x, w, dy, dx, dw, db, g);
}
template <class T>
void max_pool2d_kernel(Device d, const T* x, T* y, int64_t* indices, const backend::cpu::Pool2dGeometry& g) {
  if (!d.is_cpu()) throw_not_on_cuda("max_pool2d", d);
  backend::cpu::max_pool2d_kernel(x, y, indices, g);
}
template <class T>
void max_pool2d_backward_kernel(Device d, const T* dy, const int64_t* indices, T* dx,
                                const backend::cpu::Pool2dGeometry& g) {
  if (!d.is_cpu()) throw_not_on_cuda("max_pool2d_backward", d);
  backend::cpu::max_pool2d_backward_kernel(dy, indices, dx, g);
}

#undef TT_DISPATCH_CUDA

// ---- raw copies between devices --------------------------------------------------------------

/// Copies `bytes` bytes from `src` on `src_device` to `dst` on `dst_device` (any pair of cpu and
/// cuda:i; synchronous with respect to the host, as cudaMemcpy). Throws without the CUDA backend
/// when either side is a GPU.
inline void copy_bytes(Device dst_device, void* dst, Device src_device, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
#if TINYTORCH_WITH_CUDA
  if (src_device.is_cpu()) {
    DeviceGuard g(dst_device);
    backend::cuda::memcpy_h2d(dst, src, bytes);
  } else if (dst_device.is_cpu()) {
    DeviceGuard g(src_device);
    backend::cuda::memcpy_d2h(dst, src, bytes);
  } else {
    DeviceGuard g(src_device);
    backend::cuda::memcpy_d2d(dst, src, bytes);  // also between two GPUs (unified addressing)
  }
#else
  throw_no_cuda_backend("copy_bytes", dst_device.is_cpu() ? src_device : dst_device);
#endif
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::dispatch

TT_NAMESPACE_BEGIN namespace ops {

/// Throws unless device `d` can be computed on here: the CPU, or (in a build with the CUDA
/// backend: nvcc or TINYTORCH_CUDA_SIM) a GPU. A CUDA device in a CPU-only build throws a clear
/// error naming the op and the device.
inline void check_device(Device d, const char* op) {
#if !TINYTORCH_WITH_CUDA
  TT_CHECK(d.is_cpu(), op, ": tensor on ", d.str(),
           " needs the CUDA backend, which this build does not have (compile with nvcc, or with "
           "-DTINYTORCH_CUDA_SIM=1 for the kernel simulator)");
#else
  (void)d, (void)op;
#endif
}
/// check_device for a tensor: also throws for an undefined one.
inline void check_device(const Tensor& t, const char* op) {
  TT_CHECK(t.defined(), op, ": got an undefined tensor");
  check_device(t.device(), op);
}

/// check_device for an op that has no CUDA kernel yet (conv2d, max_pool2d, ...): a GPU tensor throws
/// "<op>: not implemented for CUDA tensors yet" (instead of reading device memory on the host).
inline void check_cpu_only(const Tensor& t, const char* op) {
  check_device(t, op);
  if (!t.device().is_cpu()) backend::dispatch::throw_not_on_cuda(op, t.device());
}

// check_same_device(op, tensors...): ops/same_device.hpp.



/// A new contiguous tensor (uninitialised data).
inline Tensor make_tensor(const Shape& shape, DType dtype, Device device = Device::cpu()) {
  // numel * element_size must fit in int64 (PyTorch: "Storage size calculation overflowed"), or
  // a wrapped-around product would allocate a tiny buffer for a huge shape. As PyTorch's, the
  // sizes are multiplied left to right and an overflow is an error even when a later size is 0:
  // (2^38, 2^31, 0) is refused, (0, 2^38, 2^31) is an empty tensor.
  const int64_t esize = static_cast<int64_t>(element_size(dtype));
  int64_t numel = 1, bytes = 0;
  bool overflow = false;
  for (int64_t d : shape) {
    TT_CHECK(d >= 0, "empty: negative dimension in shape ", shape_str(shape));
    overflow |= __builtin_mul_overflow(numel, d, &numel);
  }
  overflow |= __builtin_mul_overflow(numel, esize, &bytes);
  TT_CHECK(!overflow, "empty: shape ", shape_str(shape), " of ", dtype_name(dtype),
           " needs more than 2^63 bytes");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(bytes), device);  // 0 for an empty shape
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

/// A tensor sharing `t`'s storage with another shape/strides/offset (a view).
inline Tensor make_view(const Tensor& t, Shape shape, Strides strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.impl()->storage;
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = t.dtype();
  return Tensor(std::move(impl));
}

/// torch.promote_types: the smallest dtype both convert to. int64 with any float -> that float;
/// float64 with any float -> float64; float32 with float16 or bfloat16 -> float32; float16 with
/// bfloat16 -> float32 (neither holds the other: bfloat16 has the range, float16 the precision).
inline DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == kInt64) return b;
  if (b == kInt64) return a;
  if (a == kFloat64 || b == kFloat64) return kFloat64;
  return kFloat32;
}

/// torch.result_type over the operands of one op (a binary op, clamp with tensor bounds, where).
/// As PyTorch's type promotion, 0-d tensors do not raise the dimensioned tensors' dtype within its
/// category (integral or floating): float32 (3) + float64 0-d -> float32, but int64 (3) + float64
/// 0-d -> float64 (the 0-d tensor is of a higher category). Operands of one kind (all 0-d or all
/// dimensioned) promote as promote_types. Reference: PyTorch's "Type promotion" doc
/// (https://pytorch.org/docs/stable/tensor_attributes.html#type-promotion-doc), c10's
/// ResultTypeState / combine_categories.
inline DType result_type(std::initializer_list<const Tensor*> operands) {
  std::optional<DType> dimensioned, zero_dim;
  for (const Tensor* t : operands) {
    std::optional<DType>& r = t->dim() == 0 ? zero_dim : dimensioned;
    r = r ? promote_types(*r, t->dtype()) : t->dtype();
  }
  if (!dimensioned) return *zero_dim;
  if (!zero_dim || is_floating_point(*dimensioned) || !is_floating_point(*zero_dim)) return *dimensioned;
  return promote_types(*dimensioned, *zero_dim);
}
inline DType result_type(const Tensor& a, const Tensor& b) { return result_type({&a, &b}); }

/// True when an op of dtype `dt` on device `d` computes through float32 copies of its operands
/// (the branch at the top of a 16-bit op, see "float16 and bfloat16" above): a float16/bfloat16 op
/// on the CPU, or one with an operand of another dtype (a 0-d float32 operand joins unrounded, as
/// in the float32 op). Otherwise, on a CUDA device, the ops that have 16-bit kernels (elementwise,
/// gemm, sum) run them in place of the copies.
inline bool via_float32(Device d, DType dt, std::initializer_list<const Tensor*> operands = {}) {
  if (!is_reduced_floating_point(dt)) return false;
  if (d.is_cpu()) return true;
  for (const Tensor* t : operands)
    if (t->dtype() != dt) return true;
  return false;
}

/// A CPU tensor with `t`'s shape and values: `t` itself when it is on the CPU (any strides), else a
/// dense copy (made contiguous on its GPU by the copy kernel, then one device-to-host memcpy).
/// item(), tolist(), at() and printing read CUDA tensors through it. Not differentiable (see
/// Tensor::to(Device) for the autograd-aware copy).
inline Tensor to_host(const Tensor& t) {
  check_device(t, "to_host");
  if (t.device().is_cpu()) return t;
  const Device d = t.device();
  Tensor src = t;
  if (!t.is_contiguous()) {
    src = make_tensor(t.sizes(), t.dtype(), d);
    dispatch_all(t.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      backend::dispatch::copy_kernel(d, t.data_ptr<T>(), t.strides(), src.data_ptr<T>(), t.sizes());
    });
  }
  Tensor out = make_tensor(t.sizes(), t.dtype(), Device::cpu());
  backend::dispatch::copy_bytes(Device::cpu(), out.raw_data(), d, src.raw_data(),
                                static_cast<size_t>(t.numel()) * element_size(t.dtype()));
  return out;
}

}  TT_NAMESPACE_END  // namespace tinytorch::ops

// tinytorch/backend/cpu/elementwise.hpp — elementwise kernels on raw pointers.
//
// Functors (TT_HOST_DEVICE, in backend/functors.hpp, shared with the CUDA backend; re-exported
// here as backend::cpu::AddOp etc.) compute one element; the loops here apply them. Inputs are
// read through strides so that broadcasting costs no copy: a broadcast dim has stride 0
// (core/shape.hpp). The output is always contiguous.
//   out[i] = f(a[offset_a(i)], b[offset_b(i)])            for i in [0, numel(shape))
//   out[i] = f(a[offset_a(i)], b[offset_b(i)], c[offset_c(i)])   (ternary_kernel: where, clamp
//                                                          with tensor bounds)
// Fast paths: all operands contiguous (a flat loop the compiler vectorises) and a scalar b.
// Otherwise one strided loop walks a backend::Indexer (backend/indexer.hpp, the struct the CUDA
// kernels take too), carrying each operand's offset from one element to the next.
//
// Math of the binary functors beyond + - * / (backend/functors.hpp), per element:
//   maximum(a, b) = NaN if either is NaN, else the larger      (torch.maximum; minimum likewise)
//   pow(a, b)     = a^b; for int64 exact repeated squaring (wrapping on overflow), and a
//                   negative exponent gives 1 for a = 1, +-1 for a = -1, 0 otherwise (torch.pow)
//   floor_divide  = floor(a / b), computed as (a - fmod(a, b)) / b with Python's fix-ups, so
//                   a == floor_divide(a, b) * b + remainder(a, b) holds (c10::div_floor_floating);
//                   b == 0 gives IEEE a / b
//   remainder     = a - floor(a / b) * b: the sign of b (Python's %);   fmod = C's fmod: the sign of a
//   clamp(x)      = min(max(x, lo), hi): NaN x stays NaN, lo > hi gives hi (torch.clamp)
// Integer division by zero is not the functors' business: the ops layer refuses it first
// (PyTorch: "ZeroDivisionError"), and INT64_MIN / -1, which traps on x86, is computed without
// dividing.
// This layer never sees Tensor (docs/architecture.md). Chapter: chapters/01-training-loop.md.
// Reference: PyTorch 1.13 aten/src/ATen/native/cpu/BinaryOpsKernel.cpp, c10/util/generic_math.h.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "tinytorch/core/config.hpp"
#include "tinytorch/backend/functors.hpp"  // AddOp, ExpOp, ...: the per-element functions
#include "tinytorch/backend/indexer.hpp"   // Indexer: the shape and strides the strided loop walks
#include "tinytorch/core/shape.hpp"  // Shape, Strides
#include "tinytorch/core/scalar.hpp"  // wrapping_add/sub/mul/pow: int64 arithmetic modulo 2^64

TT_NAMESPACE_BEGIN namespace backend::cpu {

// ---- functors: backend/functors.hpp, shared with backend/cuda, under backend::cpu too --------
using ::tinytorch::backend::AddOp;
using ::tinytorch::backend::SubOp;
using ::tinytorch::backend::MulOp;
using ::tinytorch::backend::DivOp;
using ::tinytorch::backend::EqOp;
using ::tinytorch::backend::NeOp;
using ::tinytorch::backend::LtOp;
using ::tinytorch::backend::LeOp;
using ::tinytorch::backend::GtOp;
using ::tinytorch::backend::GeOp;
using ::tinytorch::backend::NegOp;
using ::tinytorch::backend::ExpOp;
using ::tinytorch::backend::LogOp;
using ::tinytorch::backend::SqrtOp;
using ::tinytorch::backend::AbsOp;
using ::tinytorch::backend::TruncOp;
using ::tinytorch::backend::ReluOp;
using ::tinytorch::backend::TanhOp;
using ::tinytorch::backend::SigmoidOp;
using ::tinytorch::backend::GeluOp;
using ::tinytorch::backend::PowScalarOp;
namespace detail {
using ::tinytorch::backend::detail::is_nan;
}  // namespace detail
using ::tinytorch::backend::MaximumOp;
using ::tinytorch::backend::MinimumOp;
using ::tinytorch::backend::PowTensorOp;
using ::tinytorch::backend::FloorDivideOp;
using ::tinytorch::backend::RemainderOp;
using ::tinytorch::backend::FmodOp;
using ::tinytorch::backend::TruncDivideOp;
using ::tinytorch::backend::ClampScalarOp;
using ::tinytorch::backend::ClampTensorOp;

// ---- loops ------------------------------------------------------------------------------------

/// y[i] = f(x[i]) over n contiguous elements.
template <class T, class U, class F>
void unary_kernel(const T* x, U* y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

/// Walks ix's elements in row-major order, carrying each operand's offset: calls
/// body(i, off0, off1, off2) for i = 0 .. ix.numel - 1, off_k = ix.offset(k, i) (0 for an operand
/// ix does not have). The innermost dim is a plain loop; stepping an outer dim adds its stride and
/// rewinds the dims after it, so no element costs a division (Indexer::offset, what a CUDA thread
/// runs, divides once per dim).
template <class Body>
void strided_loop(const Indexer& ix, Body body) {
  if (ix.numel == 0) return;
  const int nd = ix.ndim;
  if (nd == 0) { body(0, 0, 0, 0); return; }
  const int64_t* s0 = ix.strides[0];
  const int64_t* s1 = ix.strides[1];
  const int64_t* s2 = ix.strides[2];
  const int64_t inner = ix.sizes[nd - 1], i0 = s0[nd - 1], i1 = s1[nd - 1], i2 = s2[nd - 1];
  int64_t idx[Indexer::kMaxDims] = {};  // the multi-index over the outer dims
  int64_t o0 = 0, o1 = 0, o2 = 0;
  for (int64_t i = 0; i < ix.numel; i += inner) {
    for (int64_t j = 0; j < inner; ++j) body(i + j, o0 + j * i0, o1 + j * i1, o2 + j * i2);
    for (int d = nd - 2; d >= 0; --d) {  // advance the multi-index over the outer dims
      if (++idx[d] < ix.sizes[d]) { o0 += s0[d]; o1 += s1[d]; o2 += s2[d]; break; }
      o0 -= s0[d] * (ix.sizes[d] - 1);
      o1 -= s1[d] * (ix.sizes[d] - 1);
      o2 -= s2[d] * (ix.sizes[d] - 1);
      idx[d] = 0;
    }
  }
}

/// out[i] = f(a[.], b[.]) with a and b read through (broadcast) strides; out contiguous.
/// `contiguous` says both a and b are dense with the output's shape (no broadcasting).
template <class T, class U, class F>
void binary_kernel(const T* a, const Strides& sa, const T* b,
                   const Strides& sb, U* out, const Shape& shape,
                   bool contiguous, F f) {
  if (contiguous) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
    return;
  }
  strided_loop(Indexer::make(shape, {sa, sb}, "binary"),
               [&](int64_t i, int64_t oa, int64_t ob, int64_t) { out[i] = f(a[oa], b[ob]); });
}

/// out[i] = f(a[i], s) for a scalar s.
template <class T, class U, class F>
void scalar_kernel(const T* a, T s, U* out, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], s);
}

/// out[i] = value for i < n (full, zeros, ones, zero_).
template <class T>
void fill_kernel(T* out, int64_t n, T value) {
  for (int64_t i = 0; i < n; ++i) out[i] = value;
}

/// Copies a strided source into a dense destination, converting the element type.
template <class S, class D>
void copy_kernel(const S* src, const Strides& ss, D* dst,
                 const Shape& shape) {
  strided_loop(Indexer::make(shape, {ss}, "copy"),
               [&](int64_t i, int64_t os, int64_t, int64_t) { dst[i] = static_cast<D>(src[os]); });
}

// ---- the in-place loop ------------------------------------------------------------------------
/// self[os(i)] = f(self[os(i)], o[oo(i)]) with both read through strides (`ss`: self's own
/// strides, `so`: o's broadcast strides); the flat loop when both are dense (ops::binary_, unary_).
/// o may alias self in the same layout (unary_ passes self twice); each element is read before
/// it is written.
template <class T, class F>
void binary_inplace_kernel(T* self, const Strides& ss, const T* o, const Strides& so, const Shape& shape, F f) {
  int64_t n = 1;
  bool dense = true;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1 && (ss[d] != n || so[d] != n)) dense = false;
    n *= shape[d];
  }
  if (dense) {
    for (int64_t i = 0; i < n; ++i) self[i] = f(self[i], o[i]);
    return;
  }
  strided_loop(Indexer::make(shape, {ss, so}, "binary_"),
               [&](int64_t, int64_t os, int64_t oo, int64_t) { self[os] = f(self[os], o[oo]); });
}

// ---- the three-operand loop (where, clamp with tensor bounds) --------------------------------
/// out[i] = f(a[.], b[.], c[.]) with the operands read through (broadcast) strides; out contiguous.
template <class A, class B, class C, class U, class F>
void ternary_kernel(const A* a, const Strides& sa, const B* b, const Strides& sb,
                    const C* c, const Strides& sc, U* out, const Shape& shape, F f) {
  strided_loop(Indexer::make(shape, {sa, sb, sc}, "ternary"), [&](int64_t i, int64_t oa, int64_t ob, int64_t oc) {
    out[i] = f(a[oa], b[ob], c[oc]);
  });
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cpu

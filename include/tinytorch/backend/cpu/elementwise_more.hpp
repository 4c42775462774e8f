// tinytorch/backend/cpu/elementwise_more.hpp — the second batch of pointwise ops (maximum/minimum,
// pow of two tensors, floor_divide/remainder/fmod, clamp): their functors, re-exported from
// backend/functors.hpp (shared with backend/cuda, where the math is written out), and a
// three-operand strided loop (where, clamp with tensor bounds).
//
// Math, per element (a, b: the two operands; T the computation type):
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
// dividing. Functors are TT_HOST_DEVICE, shared with the CUDA backend.
// This layer never sees Tensor (DESIGN.md). Chapter: chapters/01-training-loop.md.
// Reference: PyTorch 1.13 aten/src/ATen/native/cpu/BinaryOpsKernel.cpp, c10/util/generic_math.h.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../../core/config.hpp"
#include "../functors.hpp"  // MaximumOp, ..., ClampTensorOp
#include "../../core/shape.hpp"  // Shape, Strides

TT_NAMESPACE_BEGIN namespace backend::cpu {

// The functors live in backend/functors.hpp (shared with backend/cuda); the old names stay valid.
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

/// Walks a multi-index over `shape` in row-major order tracking three operands' offsets (strides
/// s0, s1, s2; a broadcast dim has stride 0). Calls body(out_index, off0, off1, off2).
template <class Body>
void strided_loop3(const Shape& shape, const Strides& s0,
                   const Strides& s1, const Strides& s2, Body body) {
  const int nd = static_cast<int>(shape.size());
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n == 0) return;
  if (nd == 0) { body(0, 0, 0, 0); return; }
  Shape idx(nd, 0);  // the multi-index over the outer dims
  const int64_t inner = shape[nd - 1], i0 = s0[nd - 1], i1 = s1[nd - 1], i2 = s2[nd - 1];
  int64_t o0 = 0, o1 = 0, o2 = 0;
  for (int64_t i = 0; i < n; i += inner) {
    for (int64_t j = 0; j < inner; ++j) body(i + j, o0 + j * i0, o1 + j * i1, o2 + j * i2);
    for (int d = nd - 2; d >= 0; --d) {  // advance the multi-index over the outer dims
      if (++idx[d] < shape[d]) { o0 += s0[d]; o1 += s1[d]; o2 += s2[d]; break; }
      o0 -= s0[d] * (shape[d] - 1);
      o1 -= s1[d] * (shape[d] - 1);
      o2 -= s2[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

/// out[i] = f(a[.], b[.], c[.]) with the operands read through (broadcast) strides; out contiguous.
template <class A, class B, class C, class U, class F>
void ternary_kernel(const A* a, const Strides& sa, const B* b, const Strides& sb,
                    const C* c, const Strides& sc, U* out, const Shape& shape, F f) {
  strided_loop3(shape, sa, sb, sc, [&](int64_t i, int64_t oa, int64_t ob, int64_t oc) {
    out[i] = f(a[oa], b[ob], c[oc]);
  });
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cpu

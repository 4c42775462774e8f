// tinytorch/ops/linalg.hpp — matrix products through backend::dispatch::gemm (backend/cpu/gemm.hpp
// on the CPU, backend/cuda/gemm.cuh on cuda:i), no autograd.
//
//   mm(a, b):           (M, K) @ (K, N) -> (M, N)
//   addmm(c, a, b):     c + a @ b, c broadcast to (M, N) (nn.Linear: x @ W^T + b)
//   bmm(a, b):          (B, M, K) @ (B, K, N) -> (B, M, N)
// Operands are read in place when one of their two strides is 1 (a row-major matrix or a
// transposed view of one); anything else is made contiguous first.
// Devices: both operands (and addmm's c) must be on one device; the output is allocated there.
// On CUDA, float and double run backend::cuda::gemm (the register-blocked kernel when the shapes
// allow it, else the 32x32 tiled one), float16/bfloat16 its tiled kernel in 16 bits; int64 has no CUDA kernel (as PyTorch, whose CUDA addmm has
// none either) and throws PyTorch's message: mm: "addmm_cuda" not implemented for 'Long'.
// Reference: torch.mm / torch.addmm / torch.bmm.
// Chapter: chapters/01-training-loop.md.
#pragma once

#include "tinytorch/backend/cpu/gemm.hpp"
#include "tinytorch/ops/dispatch.hpp"
#include "tinytorch/ops/shape.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace ops {

namespace detail {
/// How gemm should read a 2-D tensor: pointer, leading dimension, transposed or not.
struct GemmOperand {
  Tensor keep;  // holds a contiguous copy alive when one was needed
  int64_t ld = 0;
  bool trans = false;
};
inline GemmOperand gemm_operand(const Tensor& t) {
  const int64_t r = t.sizes()[0], c = t.sizes()[1];
  const int64_t s0 = t.strides()[0], s1 = t.strides()[1];
  if ((s1 == 1 || c == 1) && (s0 >= c || r == 1)) return {t, r == 1 ? c : s0, false};
  if ((s0 == 1 || r == 1) && (s1 >= r || c == 1)) return {t, c == 1 ? r : s1, true};
  Tensor cont = contiguous(t);
  return {cont, c, false};
}
}  // namespace detail

/// out = beta * out + alpha * a @ b for 2-D a (M, K), b (K, N) and a dense out (M, N).
/// float16/bfloat16: computed in float32 (accumulated in float32) and rounded once into out: on a
/// CUDA device by the 16-bit gemm kernel itself (backend/cuda/gemm.cuh), on the CPU through float32
/// copies of a, b (and out when beta != 0); the same bits either way on one device.
inline void gemm_into(const Tensor& a, const Tensor& b, Tensor& out, double alpha = 1.0, double beta = 0.0) {
  if (via_float32(out.device(), out.dtype())) {
    // out is read only when beta != 0 (with beta 0 it may be uninitialised: never convert it)
    Tensor out32 = beta != 0.0 ? to_dtype(out, kFloat32) : make_tensor(out.sizes(), kFloat32, out.device());
    gemm_into(to_dtype(a, kFloat32), to_dtype(b, kFloat32), out32, alpha, beta);
    copy_into_dense(out32, out);
    return;
  }
  auto A = detail::gemm_operand(a), B = detail::gemm_operand(b);
  const int64_t M = a.sizes()[0], K = a.sizes()[1], N = b.sizes()[1];
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = opmath_type<T>;  // float for float16/bfloat16
    backend::dispatch::gemm<T>(out.device(), M, N, K, static_cast<Acc>(alpha), A.keep.template data_ptr<T>(), A.ld,
                               A.trans, B.keep.template data_ptr<T>(), B.ld, B.trans, static_cast<Acc>(beta),
                               out.data_ptr<T>(), N);
  });
}

inline void check_mm(const Tensor& a, const Tensor& b, const char* op) {
  check_device(a, op);
  check_device(b, op);
  check_same_device(op, a, b);
  TT_CHECK(a.dim() == 2 && b.dim() == 2, op, ": expected 2-D tensors, got shapes ", shape_str(a.sizes()),
           " and ", shape_str(b.sizes()));
  TT_CHECK(a.sizes()[1] == b.sizes()[0], op, ": mat1 and mat2 shapes cannot be multiplied (",
           a.sizes()[0], "x", a.sizes()[1], " and ", b.sizes()[0], "x", b.sizes()[1], ")");
  TT_CHECK(a.dtype() == b.dtype(), op, ": expected both operands to have the same dtype, but got ",
           dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  TT_CHECK(!(a.device().is_cuda() && a.dtype() == kInt64), op, ": \"addmm_cuda\" not implemented for 'Long'");
}

inline Tensor mm(const Tensor& a, const Tensor& b) {
  check_mm(a, b, "mm");
  Tensor out = make_tensor({a.sizes()[0], b.sizes()[1]}, a.dtype(), a.device());
  gemm_into(a, b, out);
  return out;
}

/// c + a @ b with c broadcastable to (M, N).
inline Tensor addmm(const Tensor& c, const Tensor& a, const Tensor& b) {
  check_mm(a, b, "addmm");
  check_device(c, "addmm");
  check_same_device("addmm", a, c);
  Shape shape{a.sizes()[0], b.sizes()[1]};
  Tensor out = make_tensor(shape, a.dtype(), a.device());
  Tensor cb = expand(c, shape);  // checks broadcastability
  copy_into_dense(cb, out);
  gemm_into(a, b, out, 1.0, 1.0);
  return out;
}

inline Tensor bmm(const Tensor& a, const Tensor& b) {
  check_device(a, "bmm");
  check_device(b, "bmm");
  check_same_device("bmm", a, b);
  TT_CHECK(a.dim() == 3 && b.dim() == 3, "bmm: expected 3-D tensors, got shapes ", shape_str(a.sizes()),
           " and ", shape_str(b.sizes()));
  TT_CHECK(a.sizes()[0] == b.sizes()[0] && a.sizes()[2] == b.sizes()[1], "bmm: shapes ",
           shape_str(a.sizes()), " and ", shape_str(b.sizes()), " cannot be multiplied");
  TT_CHECK(a.dtype() == b.dtype(), "bmm: expected both operands to have the same dtype, but got ",
           dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  TT_CHECK(!(a.device().is_cuda() && a.dtype() == kInt64), "bmm: \"bmm_cuda\" not implemented for 'Long'");
  const int64_t B = a.sizes()[0];
  Tensor out = make_tensor({B, a.sizes()[1], b.sizes()[2]}, a.dtype(), a.device());
  for (int64_t i = 0; i < B; ++i) {
    Tensor oi = select(out, 0, i);
    gemm_into(select(a, 0, i), select(b, 0, i), oi);
  }
  return out;
}

}  TT_NAMESPACE_END  // namespace tinytorch::ops

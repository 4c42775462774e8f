// tinytorch/autograd/functions/common.hpp — what the node files of the op families share: record()
// and the few tensor operations backward formulas use without autograd (grad_math).
//
// record(out, node, inputs) attaches `node` to `out` as its grad_fn, with one edge per input that
// requires grad (set_history, autograd/node.hpp). grad_math::mul/div/neg/scale are ops/ calls
// named for the formulas; grad_math::pointwise3 runs a three-operand functor per element (the
// backward of maximum/minimum, pow and clamp with tensor bounds read three tensors at once).
// conv.hpp and normalization.hpp compute their backward with kernels of their own and call
// set_history directly.
// The nodes themselves are in the other files of this folder, one per op family (the index is
// autograd/functions.hpp). Chapter: chapters/02-autograd.md.
#pragma once

#include <optional>

#include "tinytorch/ops/creation.hpp"
#include "tinytorch/ops/elementwise.hpp"
#include "tinytorch/ops/reduce.hpp"
#include "tinytorch/ops/shape.hpp"
#include "tinytorch/autograd/engine.hpp"
#include "tinytorch/autograd/node.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

namespace cpu = backend::cpu;

// Arithmetic for backward formulas, without autograd. (Tensor's operators are defined in
// functional.ipp, a layer above: a node uses ops/ and these, never Tensor's operators.)
namespace grad_math {
inline Tensor mul(const Tensor& a, const Tensor& b) { return ops::binary(a, b, cpu::MulOp{}, "backward"); }
inline Tensor div(const Tensor& a, const Tensor& b) { return ops::binary(a, b, cpu::DivOp{}, "backward"); }
inline Tensor neg(const Tensor& a) { return ops::unary(a, cpu::NegOp{}, "backward"); }
inline Tensor scale(const Tensor& a, double s) { return ops::scalar(a, s, cpu::MulOp{}, "backward"); }
}  // namespace grad_math

/// Records `node` on `out` when any input requires grad. Returns out.
template <class N>
Tensor record(Tensor out, std::shared_ptr<N> node, std::initializer_list<const Tensor*> inputs) {
  return set_history(std::move(out), std::move(node), inputs);
}

namespace grad_math {
/// out[i] = f(a[.], b[.], c[.]) over `shape` (default: a's) with each operand broadcast to it, on
/// the operands' device; out has dtype `out_dtype` (default: a's). The backward formulas below that
/// read several tensors per element run through it.
template <class F>
Tensor pointwise3(const Tensor& a, const Tensor& b, const Tensor& c, F f, const char* op,
                  std::optional<Shape> shape0 = std::nullopt, std::optional<DType> out_dtype = std::nullopt) {
  const Device dev = ops::detail::common_device(op, {&a, &b, &c});
  const Shape shape = shape0 ? *shape0 : a.sizes();
  const DType odt = out_dtype ? *out_dtype : a.dtype();
  if (is_reduced_floating_point(a.dtype())) {  // float16/bfloat16: computed in float32, rounded once
    using ops::to_float32;
    const Tensor r = pointwise3(to_float32(a), to_float32(b), to_float32(c), f, op, shape, odt == kInt64 ? kInt64 : kFloat32);
    return odt == kInt64 ? r : ops::to_dtype(r, odt);
  }
  Tensor out = ops::make_tensor(shape, odt, dev);
  dispatch_floating(a.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto sa = broadcast_strides(a.sizes(), a.strides(), shape);
    const auto sb = broadcast_strides(b.sizes(), b.strides(), shape);
    const auto sc = broadcast_strides(c.sizes(), c.strides(), shape);
    if (odt == kInt64)
      backend::dispatch::ternary_kernel(dev, a.data_ptr<T>(), sa, b.data_ptr<T>(), sb, c.data_ptr<T>(), sc,
                                        out.data_ptr<int64_t>(), shape, backend::CastTo<int64_t, F>{f});
    else
      backend::dispatch::ternary_kernel(dev, a.data_ptr<T>(), sa, b.data_ptr<T>(), sb, c.data_ptr<T>(), sc,
                                        out.data_ptr<T>(), shape, backend::CastTo<T, F>{f});
  });
  return out;
}
}  // namespace grad_math

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

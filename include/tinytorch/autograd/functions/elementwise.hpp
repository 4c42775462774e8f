// tinytorch/autograd/functions/elementwise.hpp — the autograd nodes of the elementwise ops:
// + - * / (with tensors and numbers), neg, the unary functions (exp, log, sqrt, abs, relu,
// sigmoid, tanh, gelu, pow with a number), maximum / minimum, pow with a tensor exponent,
// floor_divide, div with a rounding mode, trunc, remainder / fmod, clamp with optional or tensor
// bounds, where.
//
// Each struct is a Node: a static forward() computes with ops/elementwise.hpp and records the
// node when an input requires grad; backward() maps dy = d loss/d out to d loss/d input_i.
// Broadcast inputs get their gradient summed back to their own shape (ops::sum_to). Derivatives,
// as PyTorch's tools/autograd/derivatives.yaml and FunctionsManual.cpp (1.13), are written above
// each node; those of the second group:
//   maximum(a, b)       da = dy where a > b, dy/2 where a == b, 0 where a < b
//                       (a NaN passes dy to both), db mirrored                   MaximumBackward0
//   a ** b              da = dy * b * a^(b-1) (0 where b == 0)
//                       db = dy * a^b * ln a  (0 where a == 0 and b >= 0)         PowBackward1
//   s ** b (s a number) db = dy * s^b * ln s  (0 where s == 0 and b >= 0)         PowBackward2
//   remainder(a, b)     da = dy, db = -dy * floor(a / b)                          RemainderBackward1
//   fmod(a, b)          da = dy, db = -dy * trunc(a / b)                          FmodBackward1
//   remainder/fmod(a, s) da = dy                                      RemainderBackward0 / FmodBackward0
//   floor_divide        no derivative: backward throws, as PyTorch  (torch::autograd::NotImplemented)
//   div(a, b, rounding_mode), trunc(x)   piecewise constant: da = db = 0, dx = 0
//                                                                  DivBackward2/3, TruncBackward0
//   clamp(x, lo, hi)    dx = dy where lo <= x <= hi (the bounds included), else 0   ClampBackward1
//     tensor bounds     dlo = dy where x < lo and lo < hi; dhi = dy where x > hi or hi < lo
//                                                                                 ClampBackward0
//   where(c, a, b)      da = dy where c, db = dy where not c                      WhereBackward0
// Chapter: chapters/02-autograd.md. Reference: PyTorch tools/autograd/derivatives.yaml.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tinytorch/ops/elementwise.hpp"
#include "tinytorch/autograd/functions/common.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

// ---------------------------------------------------------------------------------------------
// Binary arithmetic
// ---------------------------------------------------------------------------------------------

/// y = a + alpha * b  =>  da = dy,  db = alpha * dy   (each summed to its input's shape)
struct Add : Node {
  Shape a_shape, b_shape;
  double alpha = 1;
  std::string name() const override { return "AddBackward0"; }
  static Tensor forward(const Tensor& a, const Tensor& b, double alpha = 1) {
    Tensor out = alpha == 1 ? ops::binary(a, b, cpu::AddOp{}, "add")
                            : ops::binary(a, b, backend::AddScaledOp{alpha}, "add");
    if (!any_requires_grad({&a, &b})) return out;
    auto n = std::make_shared<Add>();
    n->a_shape = a.sizes();
    n->b_shape = b.sizes();
    n->alpha = alpha;
    return record(out, n, {&a, &b});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    Tensor db = ops::sum_to(dy, b_shape);
    return {ops::sum_to(dy, a_shape), alpha == 1 ? db : grad_math::scale(db, alpha)};
  }
};

/// y = a - b  =>  da = dy,  db = -dy
struct Sub : Node {
  Shape a_shape, b_shape;
  std::string name() const override { return "SubBackward0"; }
  static Tensor forward(const Tensor& a, const Tensor& b) {
    Tensor out = ops::binary(a, b, cpu::SubOp{}, "sub");
    if (!any_requires_grad({&a, &b})) return out;
    auto n = std::make_shared<Sub>();
    n->a_shape = a.sizes();
    n->b_shape = b.sizes();
    return record(out, n, {&a, &b});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    return {ops::sum_to(dy, a_shape), ops::sum_to(grad_math::neg(dy), b_shape)};
  }
};

/// y = a * b  =>  da = dy * b,  db = dy * a
struct Mul : Node {
  Tensor a, b;
  Shape sa, sb;
  std::string name() const override { return "MulBackward0"; }
  static Tensor forward(const Tensor& a, const Tensor& b) {
    Tensor out = ops::binary(a, b, cpu::MulOp{}, "mul");
    if (!any_requires_grad({&a, &b})) return out;
    auto n = std::make_shared<Mul>();
    if (b.requires_grad()) n->a = n->save(a);
    if (a.requires_grad()) n->b = n->save(b);
    n->sa = a.sizes();
    n->sb = b.sizes();
    return record(out, n, {&a, &b});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    Tensor da, db;
    if (b.defined()) da = ops::sum_to(grad_math::mul(dy, b), sa);
    if (a.defined()) db = ops::sum_to(grad_math::mul(dy, a), sb);
    return {da, db};
  }
  void release_saved() override { a = b = Tensor(); }
};

/// y = a / b  =>  da = dy / b,  db = -dy * a / b^2
/// (DivBackward0; DivBackward2 when called as div(a, b, rounding_mode=None), as PyTorch records.)
struct Div : Node {
  Tensor a, b;
  Shape sa, sb;
  const char* node_name = "DivBackward0";
  std::string name() const override { return node_name; }
  static Tensor forward(const Tensor& a, const Tensor& b, const char* node_name = "DivBackward0") {
    const Tensor af = a.is_floating_point() || b.is_floating_point() ? a : ops::to_dtype(a, kFloat32);
    Tensor out = ops::binary(af, b, cpu::DivOp{}, "div");
    if (!any_requires_grad({&a, &b})) return out;
    auto n = std::make_shared<Div>();
    n->node_name = node_name;
    if (b.requires_grad()) n->a = n->save(a);  // as PyTorch: self only when other needs a gradient
    n->b = n->save(b);
    n->sa = a.sizes();
    n->sb = b.sizes();
    return record(out, n, {&a, &b});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    Tensor da = ops::sum_to(grad_math::div(dy, b), sa), db;
    if (a.defined()) db = ops::sum_to(grad_math::div(grad_math::mul(grad_math::neg(dy), a), grad_math::mul(b, b)), sb);
    return {da, db};
  }
  void release_saved() override { a = b = Tensor(); }
};

/// y = a * s (s a number)  =>  da = dy * s
struct MulScalar : Node {
  double s = 1;
  std::string name() const override { return "MulBackward1"; }
  static Tensor forward(const Tensor& a, double s) {
    Tensor out = ops::scalar(a, s, cpu::MulOp{}, "mul");
    if (!any_requires_grad({&a})) return out;
    auto n = std::make_shared<MulScalar>();
    n->s = s;
    return record(out, n, {&a});
  }
  std::vector<Tensor> backward(const Tensor& dy) override { return {grad_math::scale(dy, s)}; }
};

/// y = a / s (s a number)  =>  da = dy / s   (DivBackward1; DivBackward3 as div(a, s, None))
struct DivScalar : Node {
  double s = 1;
  const char* node_name = "DivBackward1";
  std::string name() const override { return node_name; }
  static Tensor forward(const Tensor& a, double s, const char* node_name = "DivBackward1") {
    const Tensor af = a.is_floating_point() ? a : ops::to_dtype(a, kFloat32);
    Tensor out = ops::scalar(af, s, cpu::DivOp{}, "div");
    if (!any_requires_grad({&a})) return out;
    auto n = std::make_shared<DivScalar>();
    n->node_name = node_name;
    n->s = s;
    return record(out, n, {&a});
  }
  std::vector<Tensor> backward(const Tensor& dy) override { return {ops::scalar(dy, s, cpu::DivOp{}, "div")}; }
};

/// y = a + s  =>  da = dy   (AddBackward1; also a - s)
struct AddScalar : Node {
  const char* node_name = "AddBackward1";
  std::string name() const override { return node_name; }
  static Tensor forward(const Tensor& a, double s, const char* node_name = "AddBackward1") {
    Tensor out = ops::scalar(a, s, cpu::AddOp{}, "add");
    if (!any_requires_grad({&a})) return out;
    auto n = std::make_shared<AddScalar>();
    n->node_name = node_name;
    return record(out, n, {&a});
  }
  std::vector<Tensor> backward(const Tensor& dy) override { return {dy}; }
};

/// y = s - a  =>  da = -dy
struct RsubScalar : Node {
  std::string name() const override { return "RsubBackward1"; }
  static Tensor forward(const Tensor& a, double s) {
    Tensor out = ops::scalar(a, s, backend::RsubOp{}, "rsub");
    if (!any_requires_grad({&a})) return out;
    return record(out, std::make_shared<RsubScalar>(), {&a});
  }
  std::vector<Tensor> backward(const Tensor& dy) override { return {grad_math::neg(dy)}; }
};

// ---------------------------------------------------------------------------------------------
// Unary functions
// ---------------------------------------------------------------------------------------------

/// y = -x  =>  dx = -dy
struct Neg : Node {
  std::string name() const override { return "NegBackward0"; }
  static Tensor forward(const Tensor& x) {
    Tensor out = ops::unary(x, cpu::NegOp{}, "neg");
    if (!any_requires_grad({&x})) return out;
    return record(out, std::make_shared<Neg>(), {&x});
  }
  std::vector<Tensor> backward(const Tensor& dy) override { return {ops::unary(dy, cpu::NegOp{}, "neg")}; }
};

/// Which tensors a Pointwise node keeps: what its derivative reads (PyTorch saves exactly those, so
/// an in-place change of the other one is no error there either).
enum class Saves { Input, Output, Both };

/// A unary op whose derivative needs its input x and/or output y. `Derivative` computes
/// dx from (dy, x, y) elementwise (a value not saved reads as 0).
template <class Fwd, class Deriv>
struct Pointwise : Node {
  const char* node_name;
  Tensor x, y;
  Deriv deriv;
  Pointwise(const char* n, Deriv d) : node_name(n), deriv(d) {}
  std::string name() const override { return node_name; }
  static Tensor forward(const Tensor& in, Fwd f, Deriv d, const char* op, const char* node_name,
                        bool float_only, Saves saves = Saves::Both) {
    Tensor out = ops::unary(in, f, op, float_only);
    if (!any_requires_grad({&in})) return out;
    auto n = std::make_shared<Pointwise>(node_name, d);
    n->saves_tensors = true;
    if (saves != Saves::Output) n->x = ops::contiguous(n->save(in));
    out = record(out, n, {&in});
    if (saves != Saves::Input) n->y = n->save(out, /*is_output=*/true);
    return out;
  }
  std::vector<Tensor> backward(const Tensor& dy0) override {
    if (is_reduced_floating_point(dy0.dtype()))  // float16/bfloat16: computed in float32, rounded once
      return {ops::to_dtype(backward_in(ops::to_dtype(dy0, kFloat32), kFloat32), dy0.dtype())};
    return {backward_in(dy0, dy0.dtype())};
  }
  /// dx = Deriv(dy, x, y) with every operand in dtype dt.
  Tensor backward_in(const Tensor& dy0, DType dt) {
    const Tensor dy = ops::contiguous(dy0);
    Tensor dx = ops::make_tensor(dy.sizes(), dy.dtype(), dy.device());
    // A value the node did not save is never read by its Deriv: dy stands in for it.
    const Tensor xs = x.defined() ? ops::to_dtype(x, dt) : dy;
    const Tensor ys = y.defined() ? ops::to_dtype(y, dt) : dy;
    const Strides st = contiguous_strides(dy.sizes());
    dispatch(dy.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      backend::dispatch::ternary_kernel(dy.device(), dy.data_ptr<T>(), st, xs.template data_ptr<T>(), st,
                                        ys.template data_ptr<T>(), st, dx.data_ptr<T>(), dy.sizes(),
                                        backend::CastTo<T, Deriv>{deriv});
    });
    return dx;
  }
  void release_saved() override { x = y = Tensor(); }
};

template <class Fwd, class Deriv>
Tensor pointwise(const Tensor& in, Fwd f, Deriv d, const char* op, const char* node_name, bool float_only,
                 Saves saves = Saves::Both) {
  return Pointwise<Fwd, Deriv>::forward(in, f, d, op, node_name, float_only, saves);
}

// y = e^x         =>  dx = dy * y
inline Tensor exp(const Tensor& x) {
  return pointwise(x, cpu::ExpOp{}, backend::ExpBackwardOp{}, "exp", "ExpBackward0", true,
                   Saves::Output);
}
// y = ln x        =>  dx = dy / x
inline Tensor log(const Tensor& x) {
  return pointwise(x, cpu::LogOp{}, backend::LogBackwardOp{}, "log", "LogBackward0", true,
                   Saves::Input);
}
// y = sqrt(x)     =>  dx = dy / (2 y)
inline Tensor sqrt(const Tensor& x) {
  return pointwise(x, cpu::SqrtOp{}, backend::SqrtBackwardOp{}, "sqrt",
                   "SqrtBackward0", true, Saves::Output);
}
// y = |x|         =>  dx = dy * sign(x)   (sign(0) = 0, as PyTorch)
inline Tensor abs(const Tensor& x) {
  return pointwise(x, cpu::AbsOp{}, backend::AbsBackwardOp{}, "abs", "AbsBackward0", false, Saves::Input);
}
// y = max(x, 0)   =>  dx = dy * (y > 0)
// Written as PyTorch's threshold_backward (y <= 0 ? 0 : dy), so a NaN input passes dy, as there.
inline Tensor relu(const Tensor& x) {
  return pointwise(x, cpu::ReluOp{}, backend::ReluBackwardOp{}, "relu",
                   "ReluBackward0", false, Saves::Output);
}
// y = 1/(1+e^-x)  =>  dx = dy * y * (1 - y)
inline Tensor sigmoid(const Tensor& x) {
  return pointwise(x, cpu::SigmoidOp{}, backend::SigmoidBackwardOp{}, "sigmoid",
                   "SigmoidBackward0", true, Saves::Output);
}
// y = tanh x      =>  dx = dy * (1 - y^2)
inline Tensor tanh(const Tensor& x) {
  return pointwise(x, cpu::TanhOp{}, backend::TanhBackwardOp{}, "tanh",
                   "TanhBackward0", true, Saves::Output);
}
// y = gelu(x)     =>  dx = dy * (Phi(x) + x phi(x)), or the tanh form's derivative
//                      (backend/functors.hpp: GeluBackwardOp; PyTorch saves the input)
inline Tensor gelu(const Tensor& x, bool tanh_approx) {
  return pointwise(x, backend::GeluOp{tanh_approx}, backend::GeluBackwardOp{tanh_approx}, "gelu", "GeluBackward0",
                   true, Saves::Input);
}
// y = x^p         =>  dx = dy * p * x^(p-1)
// An int64 x with a fractional or negative p computes in float32 (as a scalar op: int64 * 2.5).
inline Tensor pow(const Tensor& x, double p) {
  return pointwise(x, cpu::PowScalarOp{p}, backend::PowBackwardOp{p}, "pow",
                   "PowBackward0", x.dtype() == kInt64 && (p < 0 || p != std::floor(p)), Saves::Input);
}

// ---------------------------------------------------------------------------------------------
// maximum / minimum
// ---------------------------------------------------------------------------------------------

/// y = maximum(a, b) / minimum(a, b)  =>  (maximum) da = dy where a > b, dy/2 where a == b, 0 where
/// a < b; db the mirror image. Comparisons with a NaN are false, so a NaN passes dy to both.
struct MaximumMinimum : Node {
  Tensor a, b;
  Shape sa, sb;
  bool is_max = true;
  std::string name() const override { return is_max ? "MaximumBackward0" : "MinimumBackward0"; }
  static Tensor forward(const Tensor& a, const Tensor& b, bool is_max) {
    Tensor out = is_max ? ops::binary(a, b, cpu::MaximumOp{}, "maximum")
                        : ops::binary(a, b, cpu::MinimumOp{}, "minimum");
    if (!any_requires_grad({&a, &b})) return out;
    auto n = std::make_shared<MaximumMinimum>();
    n->is_max = is_max;
    n->a = n->save(a);
    n->b = n->save(b);
    n->sa = a.sizes();
    n->sb = b.sizes();
    return record(out, n, {&a, &b});
  }
  std::vector<Tensor> backward(const Tensor& dy0) override {
    const Tensor dy = ops::contiguous(dy0);
    const Tensor ac = ops::to_dtype(a, dy.dtype()), bc = ops::to_dtype(b, dy.dtype());
    const Tensor da = grad_math::pointwise3(dy, ac, bc, backend::MaxMinGradOp{is_max, true}, "maximum_backward");
    const Tensor db = grad_math::pointwise3(dy, ac, bc, backend::MaxMinGradOp{is_max, false}, "maximum_backward");
    return {ops::sum_to(da, sa), ops::sum_to(db, sb)};
  }
  void release_saved() override { a = b = Tensor(); }
};

// ---------------------------------------------------------------------------------------------
// pow with a tensor exponent
// ---------------------------------------------------------------------------------------------

/// y = a ** b  =>  da = dy * b * a^(b-1) (0 where b == 0),  db = dy * y * ln a (0 where a == 0 and b >= 0)
struct PowTensor : Node {
  Tensor a, b, y;
  Shape sa, sb;
  std::string name() const override { return "PowBackward1"; }
  static Tensor forward(const Tensor& a, const Tensor& b) {
    Tensor out = ops::pow_tensor(a, b);
    if (!any_requires_grad({&a, &b})) return out;
    auto n = std::make_shared<PowTensor>();
    n->a = n->save(a);
    n->b = n->save(b);
    n->sa = a.sizes();
    n->sb = b.sizes();
    out = record(out, n, {&a, &b});
    n->y = n->save(out, /*is_output=*/true);
    return out;
  }
  std::vector<Tensor> backward(const Tensor& dy0) override {
    const Tensor dy = ops::contiguous(dy0), yc = ops::contiguous(ops::to_dtype(y, dy.dtype()));
    const Tensor ac = ops::to_dtype(a, dy.dtype()), bc = ops::to_dtype(b, dy.dtype());
    const Tensor da = grad_math::pointwise3(dy, ac, bc, backend::PowTensorGradAOp{}, "pow_backward");
    const Tensor db = grad_math::mul(dy, grad_math::pointwise3(ac, bc, yc, backend::PowTensorGradBOp{}, "pow_backward",
                                                            dy.sizes()));
    return {ops::sum_to(da, sa), ops::sum_to(db, sb)};
  }
  void release_saved() override { a = b = y = Tensor(); }
};

/// y = s ** b (s a number)  =>  db = dy * y * ln s  (0 where s == 0 and b >= 0)
struct PowScalarBase : Node {
  double s = 0;
  Tensor b, y;
  std::string name() const override { return "PowBackward2"; }
  static Tensor forward(double s, const Tensor& b) {
    ops::check_device(b, "pow");
    Tensor out = ops::pow_tensor(ops::scalar_as_tensor(s, ops::scalar_result_type(b.dtype(), s), b.device()), b);
    if (!any_requires_grad({&b})) return out;
    auto n = std::make_shared<PowScalarBase>();
    n->s = s;
    n->b = n->save(b);
    out = record(out, n, {&b});
    n->y = n->save(out, /*is_output=*/true);
    return out;
  }
  std::vector<Tensor> backward(const Tensor& dy0) override {
    const Tensor dy = ops::contiguous(dy0);
    const Tensor yc = ops::contiguous(ops::to_dtype(y, dy.dtype())), bc = ops::contiguous(ops::to_dtype(b, dy.dtype()));
    const Tensor db = grad_math::pointwise3(dy, yc, bc, backend::PowScalarBaseGradOp{s, std::log(s)}, "pow_backward");
    return {db};
  }
  void release_saved() override { b = y = Tensor(); }
};

// ---------------------------------------------------------------------------------------------
// floor_divide, remainder, fmod
// ---------------------------------------------------------------------------------------------

/// The grad_fn of an op PyTorch gives no derivative (floor_divide): the output requires grad, and
/// backward through it throws "derivative for aten::<op> is not implemented", as in PyTorch.
struct NotImplemented : Node {
  std::string op;
  std::string name() const override { return "torch::autograd::NotImplemented"; }
  std::vector<Tensor> backward(const Tensor&) override {
    throw Error(tinytorch::detail::str_cat(op, ": derivative for aten::", op, " is not implemented"));
  }
};

inline Tensor floor_divide(const Tensor& a, const Tensor& b) {
  Tensor out = ops::integer_division(a, b, cpu::FloorDivideOp{}, "floor_divide", true);
  if (!any_requires_grad({&a, &b})) return out;
  auto n = std::make_shared<NotImplemented>();
  n->op = "floor_divide";
  return record(out, n, {&a, &b});
}
inline Tensor floor_divide(const Tensor& a, double s) {
  Tensor out = ops::integer_division(a, s, cpu::FloorDivideOp{}, "floor_divide", true);
  if (!any_requires_grad({&a})) return out;
  auto n = std::make_shared<NotImplemented>();
  n->op = "floor_divide";
  return record(out, n, {&a});
}

/// y = div(a, b, rounding_mode="trunc" | "floor") (torch.div with a rounding mode): the rounded
/// quotient is piecewise constant  =>  da = 0, db = 0 (PyTorch's derivatives.yaml: grad.zero_()
/// when rounding_mode is given). grad_fn DivBackward2 (tensor divisor) or DivBackward3 (a number:
/// aten's div.Scalar_mode, as libtorch's C++ torch::div(Tensor, Scalar, mode) records).
struct DivRounding : Node {
  Shape sa, sb;
  DType ta = kFloat32, tb = kFloat32;
  Device da = Device::cpu(), db = Device::cpu();
  bool scalar = false;
  std::string name() const override { return scalar ? "DivBackward3" : "DivBackward2"; }
  /// The quotient: floor_divide's kernel ("floor") or TruncDivideOp ("trunc"); a mode other than
  /// those two is PyTorch's error. Integer operands stay integer (exact; a zero divisor throws
  /// "ZeroDivisionError"); with a number, the dtype rule of ops::scalar.
  static Tensor quotient(const Tensor& a, const Tensor* b, double s, const std::string& mode) {
    TT_CHECK(mode == "trunc" || mode == "floor",
             "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", mode, "'");
    const bool floor = mode == "floor";
    if (b) return floor ? ops::integer_division(a, *b, cpu::FloorDivideOp{}, "div", true)
                        : ops::integer_division(a, *b, cpu::TruncDivideOp{}, "div", true);
    return floor ? ops::integer_division(a, s, cpu::FloorDivideOp{}, "div", true)
                 : ops::integer_division(a, s, cpu::TruncDivideOp{}, "div", true);
  }
  static Tensor forward(const Tensor& a, const Tensor& b, const std::string& mode) {
    Tensor out = quotient(a, &b, 0, mode);
    if (!any_requires_grad({&a, &b})) return out;
    auto n = std::make_shared<DivRounding>();
    n->sa = a.sizes(), n->sb = b.sizes(), n->ta = a.dtype(), n->tb = b.dtype(), n->da = a.device(), n->db = b.device();
    return record(out, n, {&a, &b});
  }
  static Tensor forward(const Tensor& a, double s, const std::string& mode) {
    Tensor out = quotient(a, nullptr, s, mode);
    if (!any_requires_grad({&a})) return out;
    auto n = std::make_shared<DivRounding>();
    n->scalar = true;
    n->sa = a.sizes(), n->ta = a.dtype(), n->da = a.device();
    return record(out, n, {&a});
  }
  std::vector<Tensor> backward(const Tensor&) override {
    std::vector<Tensor> g{zeros(sa, TensorOptions(ta).device(da))};
    if (!scalar) g.push_back(zeros(sb, TensorOptions(tb).device(db)));
    return g;
  }
};

/// y = trunc(x)  =>  dx = 0 (PyTorch: zeros_like(grad); it saves nothing). int64 x: a copy.
struct Trunc : Node {
  std::string name() const override { return "TruncBackward0"; }
  static Tensor forward(const Tensor& x) {
    Tensor out = ops::unary(x, cpu::TruncOp{}, "trunc");
    if (!any_requires_grad({&x})) return out;
    return record(out, std::make_shared<Trunc>(), {&x});
  }
  std::vector<Tensor> backward(const Tensor& dy) override { return {zeros(dy.sizes(), TensorOptions(dy.dtype()).device(dy.device()))}; }
};

/// y = remainder(a, b) = a - floor(a/b) b  or  fmod(a, b) = a - trunc(a/b) b
///   =>  da = dy,  db = -dy * floor(a/b)  (trunc(a/b) for fmod);  with a number b: da = dy only.
struct RemainderFmod : Node {
  Tensor a, b;  // tensor divisor only
  Shape sa, sb;
  bool fmod = false, scalar = false;
  std::string name() const override {
    return std::string(fmod ? "FmodBackward" : "RemainderBackward") + (scalar ? "0" : "1");
  }
  static Tensor forward(const Tensor& a, const Tensor& b, bool fmod) {
    const char* op = fmod ? "fmod" : "remainder";
    Tensor out = fmod ? ops::integer_division(a, b, cpu::FmodOp{}, op, false)
                      : ops::integer_division(a, b, cpu::RemainderOp{}, op, false);
    if (!any_requires_grad({&a, &b})) return out;
    auto n = std::make_shared<RemainderFmod>();
    n->saves_tensors = true;
    n->fmod = fmod;
    if (b.requires_grad()) {
      n->a = n->save(a);
      n->b = n->save(b);
    }
    n->sa = a.sizes();
    n->sb = b.sizes();
    return record(out, n, {&a, &b});
  }
  static Tensor forward(const Tensor& a, double s, bool fmod) {
    const char* op = fmod ? "fmod" : "remainder";
    Tensor out = fmod ? ops::integer_division(a, s, cpu::FmodOp{}, op, false)
                      : ops::integer_division(a, s, cpu::RemainderOp{}, op, false);
    if (!any_requires_grad({&a})) return out;
    auto n = std::make_shared<RemainderFmod>();
    n->fmod = fmod;
    n->scalar = true;
    n->sa = a.sizes();
    return record(out, n, {&a});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    Tensor da = ops::sum_to(dy, sa);
    if (scalar || !b.defined()) return {da, Tensor()};
    const Tensor ac = ops::to_dtype(a, dy.dtype()), bc = ops::to_dtype(b, dy.dtype());
    Tensor q = fmod ? ops::binary(ac, bc, cpu::TruncDivideOp{}, "fmod_backward")
                    : ops::binary(ac, bc, cpu::FloorDivideOp{}, "remainder_backward");
    return {da, ops::sum_to(grad_math::neg(grad_math::mul(dy, q)), sb)};
  }
  void release_saved() override { a = b = Tensor(); }
};

// ---------------------------------------------------------------------------------------------
// clamp
// ---------------------------------------------------------------------------------------------

/// y = clamp(x, lo, hi) with number bounds (either may be absent)
///   =>  dx = dy where lo <= x <= hi (bounds included, compared in y's dtype), else 0
struct ClampScalar : Node {
  Tensor x;  // in the output's dtype
  std::optional<double> lo, hi;
  const char* node_name = "ClampBackward1";
  std::string name() const override { return node_name; }
  static Tensor forward(const Tensor& x, std::optional<double> lo, std::optional<double> hi,
                        const char* node_name = "ClampBackward1", const char* op = "clamp") {
    Tensor out = ops::clamp_scalar(x, lo, hi, op);
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<ClampScalar>();
    n->x = ops::contiguous(ops::to_dtype(n->save(x), out.dtype()));
    n->lo = lo;
    n->hi = hi;
    n->node_name = node_name;
    return record(out, n, {&x});
  }
  std::vector<Tensor> backward(const Tensor& dy0) override {
    const Tensor dy = ops::contiguous(dy0), xc = ops::contiguous(ops::to_dtype(x, dy.dtype()));
    if (!is_reduced_floating_point(dy.dtype()))
      dispatch_floating(dy.dtype(), "clamp_backward", [](auto) {});  // float only (int64 has no gradient)
    const Tensor dx = ops::binary(dy, xc, backend::ClampScalarGradOp{lo.has_value(), hi.has_value(), lo ? *lo : 0.0,
                                                                     hi ? *hi : 0.0}, "clamp_backward");
    return {dx};
  }
  void release_saved() override { x = Tensor(); }
};

/// y = clamp(x, lo, hi) with tensor bounds (either may be undefined = absent), broadcast
///   =>  dx  = dy where lo <= x <= hi
///       dlo = dy where x < lo (and lo < hi when hi is given)
///       dhi = dy where x > hi (or hi < lo when lo is given)       (PyTorch's clamp_backward_min_max)
struct ClampTensor : Node {
  Tensor x, lo, hi;  // as given (detached); undefined when absent
  Shape sx, slo, shi;
  const char* node_name = "ClampBackward0";
  std::string name() const override { return node_name; }
  static Tensor forward(const Tensor& x, const Tensor& lo, const Tensor& hi, const char* node_name) {
    Tensor out = ops::clamp_tensor(x, lo, hi);
    if (!any_requires_grad({&x, &lo, &hi})) return out;
    auto n = std::make_shared<ClampTensor>();
    n->saves_tensors = true;
    n->node_name = node_name;
    n->x = n->save(x);
    n->sx = x.sizes();
    if (lo.defined()) n->lo = n->save(lo), n->slo = lo.sizes();
    if (hi.defined()) n->hi = n->save(hi), n->shi = hi.sizes();
    if (!lo.defined()) return record(out, n, {&x, &hi});
    if (!hi.defined()) return record(out, n, {&x, &lo});
    return record(out, n, {&x, &lo, &hi});
  }
  std::vector<Tensor> backward(const Tensor& dy0) override {
    const Tensor dy = ops::contiguous(dy0);
    const Shape& shape = dy.sizes();
    const bool has_lo = lo.defined(), has_hi = hi.defined();
    const Tensor xc = ops::to_dtype(x, dy.dtype());
    const Tensor lc = ops::to_dtype(has_lo ? lo : x, dy.dtype()), hc = ops::to_dtype(has_hi ? hi : x, dy.dtype());
    const Tensor zero = ops::scalar_as_tensor(0.0, dy.dtype(), dy.device());
    auto grad_where = [&](int which) {  // dy where the mask says so, else 0
      const Tensor mask = grad_math::pointwise3(xc, lc, hc, backend::ClampTensorMaskOp{has_lo, has_hi, which},
                                             "clamp_backward", shape, kInt64);
      return ops::where(mask, dy, zero);
    };
    const Tensor dx = grad_where(0), dl = has_lo ? grad_where(1) : Tensor(), dh = has_hi ? grad_where(2) : Tensor();
    std::vector<Tensor> out{ops::sum_to(dx, sx)};
    if (has_lo) out.push_back(ops::sum_to(dl, slo));
    if (has_hi) out.push_back(ops::sum_to(dh, shi));
    return out;
  }
  void release_saved() override { x = lo = hi = Tensor(); }
};

// ---------------------------------------------------------------------------------------------
// where
// ---------------------------------------------------------------------------------------------

/// y = where(c, a, b)  =>  da = dy where c (else 0),  db = dy where not c   (each summed to its shape)
struct Where : Node {
  Tensor cond;
  Shape sa, sb;
  std::string name() const override { return "WhereBackward0"; }
  static Tensor forward(const Tensor& cond, const Tensor& a, const Tensor& b) {
    Tensor out = ops::where(cond, a, b);
    if (!any_requires_grad({&a, &b})) return out;
    auto n = std::make_shared<Where>();
    n->cond = n->save(cond);
    n->sa = a.sizes();
    n->sb = b.sizes();
    return record(out, n, {&a, &b});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    const Tensor zero = ops::scalar_as_tensor(0.0, dy.dtype(), dy.device());
    return {ops::sum_to(ops::where(cond, dy, zero), sa), ops::sum_to(ops::where(cond, zero, dy), sb)};
  }
  void release_saved() override { cond = Tensor(); }
};

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

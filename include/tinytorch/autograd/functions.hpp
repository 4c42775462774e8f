// tinytorch/autograd/functions.hpp — one struct per differentiable op: forward and backward side
// by side.
//
// Each struct is a Node. Its static forward() computes the result with ops/ and, when an input
// requires grad, records the node with the tensors backward needs; apply() maps
// d loss/d output to d loss/d input_i. The derivative is written above each apply():
//   y = a * b   =>  da = dy * b,  db = dy * a
// Broadcast inputs receive their gradient summed back to their own shape (ops::sum_to).
// apply() runs with grad mode off, so it may use Tensor's operators freely.
// Tensors backward reads are kept through Node::save(t) (node.hpp), not t.detach(): save also
// remembers t's version, so that an in-place change of t before backward raises, as in PyTorch.
// Save exactly what PyTorch's derivatives.yaml saves (Pointwise: Saves::Input / Output).
// Node names are PyTorch's (MulBackward0, ...). Where tinytorch fuses what PyTorch records as
// two nodes (Linear's addmm with W^T), the docstring says so.
// Chapter: chapters/02-autograd.md. Reference: PyTorch tools/autograd/derivatives.yaml.
#pragma once

#include <cmath>
#include <limits>

#include "../backend/cpu/softmax.hpp"
#include "../ops/creation.hpp"
#include "../ops/elementwise.hpp"
#include "../ops/elementwise_more.hpp"  // where, scalar_as_tensor (max / nll backward)
#include "../ops/linalg.hpp"
#include "../ops/reduce.hpp"
#include "../ops/shape.hpp"
#include "engine.hpp"
#include "node.hpp"
#include "reduction.hpp"
#include "../core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

namespace cpu = backend::cpu;

// Arithmetic for backward formulas, without autograd. (Tensor's operators are defined in
// functional.hpp, a layer above; using ops/ directly keeps this header self-contained.)
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
  std::vector<Tensor> apply(const Tensor& dy) override {
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
  std::vector<Tensor> apply(const Tensor& dy) override {
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
  std::vector<Tensor> apply(const Tensor& dy) override {
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
  std::vector<Tensor> apply(const Tensor& dy) override {
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
  std::vector<Tensor> apply(const Tensor& dy) override { return {grad_math::scale(dy, s)}; }
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
  std::vector<Tensor> apply(const Tensor& dy) override { return {ops::scalar(dy, s, cpu::DivOp{}, "div")}; }
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
  std::vector<Tensor> apply(const Tensor& dy) override { return {dy}; }
};

/// y = s - a  =>  da = -dy
struct RsubScalar : Node {
  std::string name() const override { return "RsubBackward1"; }
  static Tensor forward(const Tensor& a, double s) {
    Tensor out = ops::scalar(a, s, backend::RsubOp{}, "rsub");
    if (!any_requires_grad({&a})) return out;
    return record(out, std::make_shared<RsubScalar>(), {&a});
  }
  std::vector<Tensor> apply(const Tensor& dy) override { return {grad_math::neg(dy)}; }
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
  std::vector<Tensor> apply(const Tensor& dy) override { return {ops::unary(dy, cpu::NegOp{}, "neg")}; }
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
  std::vector<Tensor> apply(const Tensor& dy0) override {
    const Tensor dy = ops::contiguous(dy0);
    Tensor dx = ops::make_tensor(dy.sizes(), dy.dtype(), dy.device());
    // A value the node did not save is never read by its Deriv: dy stands in for it.
    const Tensor& xs = x.defined() ? x : dy;
    const Tensor& ys = y.defined() ? y : dy;
    const Strides st = contiguous_strides(dy.sizes());
    dispatch(dy.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      backend::dispatch::ternary_kernel(dy.device(), dy.data_ptr<T>(), st, xs.template data_ptr<T>(), st,
                                        ys.template data_ptr<T>(), st, dx.data_ptr<T>(), dy.sizes(),
                                        backend::CastTo<T, Deriv>{deriv});
    });
    return {dx};
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
// y = x^p         =>  dx = dy * p * x^(p-1)
// An int64 x with a fractional or negative p computes in float32 (as a scalar op: int64 * 2.5).
inline Tensor pow(const Tensor& x, double p) {
  return pointwise(x, cpu::PowScalarOp{p}, backend::PowBackwardOp{p}, "pow",
                   "PowBackward0", x.dtype() == kInt64 && (p < 0 || p != std::floor(p)), Saves::Input);
}
// clamp (optional and tensor bounds): autograd/functions_more.hpp

// ---------------------------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------------------------

/// y = sum(x) or mean(x) over all elements or one dim  =>  dx = dy broadcast back (/ n for mean)
struct SumMean : Node {
  Shape in_shape;
  std::vector<int64_t> dims;  // the reduced dims, wrapped and ascending (all: every dim)
  bool keepdim = false, mean = false, all = true;
  double scale = 1;
  std::string name() const override {
    return std::string(mean ? "MeanBackward" : "SumBackward") + (all ? "0" : "1");
  }
  /// sum / mean of every element (no dim), or over one dim.
  static Tensor forward(const Tensor& x, std::optional<int64_t> dim, bool keepdim, bool mean) {
    Tensor out = dim ? ops::sum_dim(x, *dim, keepdim, mean) : ops::sum_all(x, mean);
    if (!any_requires_grad({&x})) return out;
    std::vector<int64_t> dims;
    if (dim) dims.push_back(wrap_dim(*dim, x.dim(), mean ? "mean" : "sum"));
    return record_node(x, out, std::move(dims), !dim.has_value(), keepdim, mean);
  }
  /// sum / mean over a list of dims (torch.sum(x, dim=(0, 2))); an empty list: every dim, the
  /// result shaped by keepdim (PyTorch's SumBackward1 too).
  static Tensor forward(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, bool mean) {
    Tensor out = ops::sum_dims(x, dims, keepdim, mean);
    if (!any_requires_grad({&x})) return out;
    return record_node(x, out, ops::reduction_dims(dims, x.dim(), mean ? "mean" : "sum"), false, keepdim, mean);
  }
  // y = sum over dims of x  =>  dx = dy with the reduced dims put back (size 1) and expanded;
  // mean: times 1/n, n the number of elements summed into each output.
  std::vector<Tensor> apply(const Tensor& dy) override {
    Tensor g = dy;
    if (!all && !keepdim && !in_shape.empty())
      for (int64_t d : dims) g = ops::unsqueeze(g, d);  // ascending: each lands at its place
    Tensor dx = ops::contiguous(ops::expand(g, in_shape));
    if (mean) dx = ops::scalar(dx, scale, cpu::MulOp{}, "mean_backward");
    return {dx};
  }

 private:
  static Tensor record_node(const Tensor& x, const Tensor& out, std::vector<int64_t> dims, bool all, bool keepdim,
                            bool mean) {
    auto n = std::make_shared<SumMean>();
    n->in_shape = x.sizes();
    n->all = all;
    n->keepdim = keepdim;
    n->mean = mean;
    double count = 1;
    if (all || x.dim() == 0) count = static_cast<double>(x.numel());
    else for (int64_t d : dims) count *= static_cast<double>(x.sizes()[static_cast<size_t>(d)]);
    n->dims = std::move(dims);
    n->scale = mean ? 1.0 / count : 1.0;
    return record(out, n, {&x});
  }
};

/// values, indices = max(x, dim)  =>  dx[index] = dy, 0 elsewhere.
/// max(x) over all elements      =>  dy shared evenly among all maximal elements (among the NaNs
///                                    when the max is NaN), as PyTorch. min reuses this node (Min).
struct Max : Node {
  Tensor indices;  // for the dim form
  Tensor x, y;     // for the all-elements form
  Shape in_shape;
  int64_t dim = -1;
  bool keepdim = false, all = false;
  std::string name() const override { return all ? "MaxBackward1" : "MaxBackward0"; }
  static std::tuple<Tensor, Tensor> forward_dim(const Tensor& x, int64_t dim, bool keepdim) {
    auto [values, indices] = ops::max_dim(x, dim, keepdim);
    if (!any_requires_grad({&x})) return {values, indices};
    auto n = std::make_shared<Max>();
    n->indices = n->save(indices, /*is_output=*/true, /*output_nr=*/1);
    n->in_shape = x.sizes();
    n->dim = x.dim() ? wrap_dim(dim, x.dim(), "max") : 0;
    n->keepdim = keepdim;
    return {record(values, n, {&x}), indices};
  }
  static Tensor forward_all(const Tensor& x) {
    TT_CHECK(x.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() == 0. "
             "Specify the reduction dim with the 'dim' argument.");
    Tensor values = std::get<0>(ops::max_dim(ops::reshape(x, {x.numel()}), 0, false));
    if (!any_requires_grad({&x})) return values;
    auto n = std::make_shared<Max>();
    n->all = true;
    n->x = n->save(x);
    values = record(values, n, {&x});
    n->y = n->save(values, /*is_output=*/true);  // a detached handle: `values` itself would be a cycle
    return values;
  }
  std::vector<Tensor> apply(const Tensor& dy) override {
    if (all) {
      // PyTorch's evenly_distribute_backward: the elements equal to the result share dy; when the
      // result is NaN, the NaNs share it (x == NaN would match nothing and make 0/0).
      // (ExtremeMaskOp: x == y, or isnan(x) when y is NaN; no host read of y)
      Tensor mask = ops::to_dtype(ops::binary(x, y, backend::ExtremeMaskOp{}, "max_backward", true), dy.dtype());
      Tensor count = ops::sum_all(mask);
      return {grad_math::mul(mask, grad_math::div(dy, count))};
    }
    if (in_shape.empty()) return {ops::clone(dy)};
    // The scatter dx[.., k, ..] = dy[.., 0, ..] where k == index, as an elementwise op on any
    // device: positions 0..n-1 along dim, compared with the (kept-dim) indices, select dy or 0.
    Tensor g = keepdim ? dy : ops::unsqueeze(dy, dim);
    Tensor idx = keepdim ? indices : ops::unsqueeze(indices, dim);
    Shape pos_shape(in_shape.size(), 1);
    pos_shape[dim] = in_shape[dim];
    Tensor pos = ops::reshape(arange(0, static_cast<double>(in_shape[dim]), 1, kInt64), pos_shape);
    if (!dy.device().is_cpu()) pos = ops::to_device(pos, dy.device());
    const Tensor hit = ops::binary(pos, idx, cpu::EqOp{}, "max_backward", true);  // in_shape, 0/1
    return {ops::where(hit, g, ops::scalar_as_tensor(0.0, dy.dtype(), dy.device()))};
  }
  void release_saved() override { indices = x = y = Tensor(); }
};

// ---------------------------------------------------------------------------------------------
// Views and copies
// ---------------------------------------------------------------------------------------------

/// y = x viewed/reshaped  =>  dx = dy reshaped to x's shape
struct Reshape : Node {
  Shape in_shape;
  const char* node_name = "ViewBackward0";
  std::string name() const override { return node_name; }
  static Tensor forward(const Tensor& x, const Shape& shape, bool must_view) {
    Tensor out = must_view ? ops::view(x, shape) : ops::reshape(x, shape);
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<Reshape>();
    n->in_shape = x.sizes();
    if (!must_view && out.impl()->storage != x.impl()->storage) n->node_name = "UnsafeViewBackward0";
    return record(out, n, {&x});
  }
  std::vector<Tensor> apply(const Tensor& dy) override { return {ops::reshape(dy, in_shape)}; }
};

/// y = x with dims d0, d1 swapped  =>  dx = dy with them swapped back
struct Transpose : Node {
  int64_t d0 = 0, d1 = 0;
  const char* node_name = "TransposeBackward0";
  std::string name() const override { return node_name; }
  static Tensor forward(const Tensor& x, int64_t d0, int64_t d1, const char* node_name) {
    Tensor out = ops::transpose(x, d0, d1);
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<Transpose>();
    n->d0 = d0;
    n->d1 = d1;
    n->node_name = node_name;
    return record(out, n, {&x});
  }
  std::vector<Tensor> apply(const Tensor& dy) override { return {ops::transpose(dy, d0, d1)}; }
};

/// y = x.permute(p)  =>  dx = dy.permute(p^-1)
struct Permute : Node {
  std::vector<int64_t> inverse;
  std::string name() const override { return "PermuteBackward0"; }
  static Tensor forward(const Tensor& x, const std::vector<int64_t>& dims) {
    Tensor out = ops::permute(x, dims);
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<Permute>();
    n->inverse.resize(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) n->inverse[wrap_dim(dims[i], x.dim(), "permute")] = i;
    return record(out, n, {&x});
  }
  std::vector<Tensor> apply(const Tensor& dy) override { return {ops::permute(dy, inverse)}; }
};

/// unsqueeze / squeeze / expand: y has x's data in another shape  =>  dx = sum_to(dy, x.shape)
struct ShapeOnly : Node {
  Shape in_shape;
  const char* node_name;
  explicit ShapeOnly(const char* n) : node_name(n) {}
  std::string name() const override { return node_name; }
  static Tensor wrap(const Tensor& x, Tensor out, const char* node_name) {
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<ShapeOnly>(node_name);
    n->in_shape = x.sizes();
    return record(out, n, {&x});
  }
  std::vector<Tensor> apply(const Tensor& dy) override {
    // expand: sum the broadcast dims; (un)squeeze: same numel, a reshape suffices
    if (dy.numel() == numel_of(in_shape)) return {ops::reshape(dy, in_shape)};
    return {ops::sum_to(dy, in_shape)};
  }
};

/// y = x.narrow(dim, start, len) or x.select(dim, i)  =>  dx = zeros with dy written at the slice
struct Slice : Node {
  Shape in_shape;
  int64_t dim = 0, start = 0, length = 0;
  bool select = false;
  std::string name() const override { return select ? "SelectBackward0" : "SliceBackward0"; }
  static Tensor forward(const Tensor& x, int64_t dim, int64_t start, int64_t length, bool select) {
    Tensor out = select ? ops::select(x, dim, start) : ops::narrow(x, dim, start, length);
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<Slice>();
    n->in_shape = x.sizes();
    n->dim = wrap_dim(dim, x.dim(), select ? "select" : "narrow");
    int64_t size = x.sizes()[n->dim];
    n->start = start < 0 ? start + size : start;
    n->length = length;
    n->select = select;
    return record(out, n, {&x});
  }
  std::vector<Tensor> apply(const Tensor& dy) override {
    Tensor dx = zeros(in_shape, TensorOptions(dy.dtype()).device(dy.device()));
    Tensor part = select ? ops::select(dx, dim, start) : ops::narrow(dx, dim, start, length);
    ops::binary_(part, dy, backend::SecondOp{}, "slice_backward");
    return {dx};
  }
};

/// y = copy of x (clone, contiguous, to(dtype), to(device))
///   =>  dx = dy (converted back to x's dtype, copied back to x's device)
struct Copy : Node {
  DType in_dtype = kFloat32;
  Device in_device = Device::cpu();
  const char* node_name = "CloneBackward0";
  std::string name() const override { return node_name; }
  static Tensor wrap(const Tensor& x, Tensor out, const char* node_name) {
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<Copy>();
    n->in_dtype = x.dtype();
    n->in_device = x.device();
    n->node_name = node_name;
    return record(out, n, {&x});
  }
  std::vector<Tensor> apply(const Tensor& dy) override {
    return {ops::to_device(ops::to_dtype(dy, in_dtype), in_device)};
  }
};

/// y = cat(xs, dim)  =>  dx_i = dy narrowed to x_i's range along dim. stack = cat of unsqueezed.
struct Cat : Node {
  std::vector<int64_t> sizes;
  int64_t dim = 0;
  std::string name() const override { return "CatBackward0"; }
  std::vector<Tensor> apply(const Tensor& dy) override {
    std::vector<Tensor> out;
    int64_t start = 0;
    for (int64_t s : sizes) {
      out.push_back(ops::narrow(dy, dim, start, s));
      start += s;
    }
    return out;
  }
};

inline Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  TT_CHECK(!xs.empty(), "cat: expected a non-empty list of Tensors");
  const Tensor& first = xs[0];
  dim = wrap_dim(dim, first.dim(), "cat");
  TT_CHECK(first.dim() > 0, "cat: zero-dimensional tensor (at position 0) cannot be concatenated");
  Shape shape = first.sizes();
  DType dt = first.dtype();
  shape[dim] = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    ops::check_device(xs[i], "cat");
    TT_CHECK(xs[i].dim() == first.dim(), "cat: Tensors must have same number of dimensions: got ",
             first.dim(), " and ", xs[i].dim(), " (tensor ", i, ")");
    for (int64_t d = 0; d < first.dim(); ++d)
      TT_CHECK(d == dim || xs[i].sizes()[d] == first.sizes()[d], "cat: Sizes of tensors must match except in "
               "dimension ", dim, ". Expected size ", first.sizes()[d], " but got size ", xs[i].sizes()[d],
               " for tensor number ", i, " in the list (shapes ", shape_str(first.sizes()), " and ",
               shape_str(xs[i].sizes()), ")");
    shape[dim] += xs[i].sizes()[dim];
    dt = ops::promote_types(dt, xs[i].dtype());
  }
  for (const Tensor& x : xs) ops::check_same_device("cat", first, x);
  Tensor out = ops::make_tensor(shape, dt, first.device());
  int64_t start = 0;
  bool grad = false;
  for (const Tensor& x : xs) {
    Tensor part = ops::narrow(out, dim, start, x.sizes()[dim]);
    ops::binary_(part, x, backend::SecondOp{}, "cat");
    start += x.sizes()[dim];
    grad = grad || any_requires_grad({&x});
  }
  if (!grad) return out;
  auto n = std::make_shared<Cat>();
  n->dim = dim;
  for (const Tensor& x : xs) {
    n->sizes.push_back(x.sizes()[dim]);
    n->next_edges.push_back(gradient_edge(x));
  }
  out.impl()->grad_fn = n;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Matrix products
// ---------------------------------------------------------------------------------------------

/// Y = A @ B (2-D)  =>  dA = dY @ B^T,  dB = A^T @ dY
struct Mm : Node {
  Tensor a, b;
  std::string name() const override { return "MmBackward0"; }
  static Tensor forward(const Tensor& a, const Tensor& b) {
    Tensor out = ops::mm(a, b);
    if (!any_requires_grad({&a, &b})) return out;
    auto n = std::make_shared<Mm>();
    if (b.requires_grad()) n->a = n->save(a);
    if (a.requires_grad()) n->b = n->save(b);
    return record(out, n, {&a, &b});
  }
  std::vector<Tensor> apply(const Tensor& dy) override {
    Tensor da, db;
    if (b.defined()) da = ops::mm(dy, ops::transpose(b, 0, 1));
    if (a.defined()) db = ops::mm(ops::transpose(a, 0, 1), dy);
    return {da, db};
  }
  void release_saved() override { a = b = Tensor(); }
};

/// Y = X @ W^T + b  (nn.Linear; X: (N, in), W: (out, in), b: (out))
///   =>  dX = dY @ W,  dW = dY^T @ X,  db = sum over rows of dY
/// PyTorch records addmm(b, X, W.t()) as AddmmBackward0 -> TBackward0 -> W; tinytorch fuses
/// the transpose into this one node (same numbers, one node fewer per layer).
struct Linear : Node {
  Tensor x, w;
  bool has_bias = false;
  std::string name() const override { return "AddmmBackward0"; }
  static Tensor forward(const Tensor& x, const Tensor& w, const Tensor& b) {
    TT_CHECK(x.dim() == 2 && w.dim() == 2, "linear: expected input (N, in) and weight (out, in), got ",
             shape_str(x.sizes()), " and ", shape_str(w.sizes()));
    TT_CHECK(x.sizes()[1] == w.sizes()[1], "linear: mat1 and mat2 shapes cannot be multiplied (",
             x.sizes()[0], "x", x.sizes()[1], " and ", w.sizes()[1], "x", w.sizes()[0],
             "): input has ", x.sizes()[1], " features but weight expects ", w.sizes()[1]);
    if (b.defined())
      TT_CHECK(b.dim() == 1 && b.sizes()[0] == w.sizes()[0], "linear: bias of shape ", shape_str(b.sizes()),
               " does not match weight of shape ", shape_str(w.sizes()));
    Tensor wt = ops::transpose(w, 0, 1);
    Tensor out = b.defined() ? ops::addmm(b, x, wt) : ops::mm(x, wt);
    if (!any_requires_grad({&x, &w, &b})) return out;
    auto n = std::make_shared<Linear>();
    if (w.requires_grad()) n->x = n->save(x);
    if (x.requires_grad()) n->w = n->save(w);
    n->has_bias = b.defined();
    return b.defined() ? record(out, n, {&x, &w, &b}) : record(out, n, {&x, &w});
  }
  std::vector<Tensor> apply(const Tensor& dy) override {
    Tensor dx, dw, db;
    if (w.defined()) dx = ops::mm(dy, w);
    if (x.defined()) dw = ops::mm(ops::transpose(dy, 0, 1), x);
    if (has_bias) db = ops::sum_dim(dy, 0, false);
    return {dx, dw, db};
  }
  void release_saved() override { x = w = Tensor(); }
};

/// Y = A @ B batched (3-D)  =>  dA = dY @ B^T,  dB = A^T @ dY  (per batch)
struct Bmm : Node {
  Tensor a, b;
  std::string name() const override { return "BmmBackward0"; }
  static Tensor forward(const Tensor& a, const Tensor& b) {
    Tensor out = ops::bmm(a, b);
    if (!any_requires_grad({&a, &b})) return out;
    auto n = std::make_shared<Bmm>();
    if (b.requires_grad()) n->a = n->save(a);
    if (a.requires_grad()) n->b = n->save(b);
    return record(out, n, {&a, &b});
  }
  std::vector<Tensor> apply(const Tensor& dy) override {
    Tensor da, db;
    if (b.defined()) da = ops::bmm(dy, ops::transpose(b, 1, 2));
    if (a.defined()) db = ops::bmm(ops::transpose(a, 1, 2), dy);
    return {da, db};
  }
  void release_saved() override { a = b = Tensor(); }
};

// ---------------------------------------------------------------------------------------------
// Softmax and losses
// ---------------------------------------------------------------------------------------------

/// y = softmax(x) or log_softmax(x) along dim (backward formulas in backend/cpu/softmax.hpp)
struct Softmax : Node {
  Tensor y;
  int64_t dim = 0;
  bool log = false;
  std::string name() const override { return log ? "LogSoftmaxBackward0" : "SoftmaxBackward0"; }
  static Tensor forward(const Tensor& x0, int64_t dim, bool log) {
    const char* op = log ? "log_softmax" : "softmax";
    ops::check_device(x0, op);
    const Tensor x = ops::contiguous(x0.dtype() == kInt64 ? ops::to_dtype(x0, kFloat32) : x0);
    Tensor out = ops::make_tensor(x.sizes(), x.dtype(), x.device());
    int64_t d = x.dim() ? wrap_dim(dim, x.dim(), op) : 0;
    auto sp = ops::detail::split_dim(x.sizes(), x.dim() ? d : -1, true);
    dispatch_floating(x.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      backend::dispatch::softmax_kernel(x.device(), x.data_ptr<T>(), out.data_ptr<T>(), sp.outer, sp.n, sp.inner, log);
    });
    if (!any_requires_grad({&x0})) return out;
    auto n = std::make_shared<Softmax>();
    n->saves_tensors = true;
    n->dim = d;
    n->log = log;
    out = record(out, n, {&x0});
    n->y = n->save(out, /*is_output=*/true);
    return out;
  }
  std::vector<Tensor> apply(const Tensor& dy0) override {
    const Tensor dy = ops::contiguous(dy0);
    Tensor dx = ops::make_tensor(dy.sizes(), dy.dtype(), dy.device());
    auto sp = ops::detail::split_dim(dy.sizes(), dy.dim() ? dim : -1, true);
    dispatch_floating(dy.dtype(), "softmax_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      backend::dispatch::softmax_backward_kernel(dy.device(), dy.data_ptr<T>(), y.data_ptr<T>(), dx.data_ptr<T>(), sp.outer, sp.n,
                                   sp.inner, log);
    });
    return {dx};
  }
  void release_saved() override { y = Tensor(); }
};

/// loss = reduce((x - t)^2)  =>  dx = 2 (x - t) * dloss (/ N for mean),  dt = -dx
struct MseLoss : Node {
  Tensor diff;
  Reduction reduction = Reduction::Mean;
  std::string name() const override { return "MseLossBackward0"; }
  static Tensor forward(const Tensor& x, const Tensor& t, Reduction reduction) {
    TT_CHECK(x.sizes() == t.sizes(), "mse_loss: input shape ", shape_str(x.sizes()),
             " does not match target shape ", shape_str(t.sizes()),
             ". PyTorch only warns here and broadcasts (e.g. (N, 1) against (N) becomes (N, N)), which "
             "silently trains on the wrong loss; tinytorch raises. Reshape one of them (e.g. target.view({-1, 1})).");
    TT_CHECK(x.is_floating_point() && t.is_floating_point(), "mse_loss: expected floating point input and "
             "target, got ", dtype_name(x.dtype()), " and ", dtype_name(t.dtype()));
    Tensor diff = ops::binary(x, t, cpu::SubOp{}, "mse_loss");
    Tensor sq = ops::binary(diff, diff, cpu::MulOp{}, "mse_loss");
    Tensor out = reduction == Reduction::None ? sq : ops::sum_all(sq, reduction == Reduction::Mean);
    if (!any_requires_grad({&x, &t})) return out;
    auto n = std::make_shared<MseLoss>();
    n->watch(x);  // PyTorch keeps input and target; tinytorch keeps x - t, but watches both
    n->watch(t);
    n->diff = diff;
    n->reduction = reduction;
    return record(out, n, {&x, &t});
  }
  std::vector<Tensor> apply(const Tensor& dy) override {
    double scale = reduction == Reduction::Mean ? 2.0 / static_cast<double>(diff.numel()) : 2.0;
    Tensor dx = reduction == Reduction::None ? grad_math::scale(grad_math::mul(diff, dy), 2.0)
                                              : grad_math::mul(diff, grad_math::scale(dy, scale));
    Tensor dt = next_edges[1].fn ? grad_math::neg(dx) : Tensor();  // only when the target needs it
    return {dx, dt};
  }
  void release_saved() override { diff = Tensor(); }
};

/// Throws PyTorch's "Target 7 is out of bounds" (prefixed with `op`) unless every target is
/// ignore_index or in [0, C). The labels are read on the host (a CUDA target is copied there first):
/// a device-side assert would be asynchronous and opaque (CUDA.md section 5). Returns them.
inline std::vector<int64_t> checked_targets(const Tensor& t, int64_t C, int64_t ignore_index, const char* op) {
  const std::vector<int64_t> tp = t.tolist<int64_t>();
  for (size_t i = 0; i < tp.size(); ++i)
    TT_CHECK(tp[i] == ignore_index || (tp[i] >= 0 && tp[i] < C), op, ": Target ", tp[i], " is out of bounds (", C,
             " classes; sample ", i, ")");
  return tp;
}

/// loss_i = -w[t_i] * x[i, t_i], 0 where t_i == ignore_index (x holds log-probabilities: (N, C);
/// t: (N) int64; w: (C) class weights, 1 when undefined).
/// Reductions: none -> loss (N); sum -> sum_i loss_i; mean -> sum_i loss_i / sum_i w[t_i] over the
/// non-ignored i (the weighted mean; 0/0 = nan when every target is ignored, as PyTorch).
///   =>  dx[i, t_i] = -w[t_i] * dloss_i   (dloss / total_weight for mean, dloss for sum), 0
///       elsewhere and on ignored rows. The weight gets no gradient (as PyTorch).   (nn.NLLLoss)
/// On any device: the targets and weights are read on the host (checked, and turned into the
/// per-sample factors -w[t_i], 0 when ignored); the pick x[i, t_i] and the scatter of the
/// gradient are elementwise ops with the mask hit[i, c] = (c == t_i).
struct NllLoss : Node {
  Tensor hit;       // (N, C) int64 0/1: c == t_i (never for an ignored sample)
  Tensor neg_w;     // (N, 1) in x's dtype: -w[t_i], 0 for an ignored sample
  Reduction reduction = Reduction::Mean;
  double total_weight = 0;
  std::string name() const override { return "NllLossBackward0"; }
  static Tensor forward(const Tensor& x, const Tensor& t, Reduction reduction, const Tensor& weight = Tensor(),
                        int64_t ignore_index = -100) {
    ops::check_device(x, "nll_loss");
    TT_CHECK(x.dim() == 2, "nll_loss: expected input of shape (N, C), got ", shape_str(x.sizes()));
    TT_CHECK(t.dtype() == kInt64, "nll_loss: expected target of dtype torch.int64 (class indices), got ",
             dtype_name(t.dtype()));
    TT_CHECK(t.dim() == 1 && t.sizes()[0] == x.sizes()[0], "nll_loss: expected target of shape (",
             x.sizes()[0], "), got ", shape_str(t.sizes()), " for input of shape ", shape_str(x.sizes()));
    const Device dev = ops::detail::common_device("nll_loss", {&x, &t, &weight});
    const int64_t N = x.sizes()[0], C = x.sizes()[1];
    std::vector<double> w;
    if (weight.defined()) {
      ops::check_device(weight, "nll_loss");
      TT_CHECK(weight.dim() == 1 && weight.numel() == C, "nll_loss: weight tensor should be defined either for all ",
               C, " classes or no classes but got weight tensor of shape: ", shape_str(weight.sizes()));
      TT_CHECK(weight.dtype() == x.dtype(), "nll_loss: expected weight of dtype ", dtype_name(x.dtype()),
               " (the input's), got ", dtype_name(weight.dtype()));
      TT_CHECK(!(GradMode::is_enabled() && weight.requires_grad()), "nll_loss: The function 'nll_loss_forward' is "
               "not differentiable with respect to argument 'weight'. This input cannot have requires_grad True.");
      dispatch_floating(weight.dtype(), "nll_loss", [&](auto tag) {
        using T = typename decltype(tag)::type;
        for (T v : weight.tolist<T>()) w.push_back(static_cast<double>(v));
      });
    }
    const std::vector<int64_t> tp = checked_targets(t, C, ignore_index, "nll_loss");
    std::vector<double> neg_w(static_cast<size_t>(N));  // -w[t_i] rounded to x's dtype, 0 when ignored
    std::vector<double> kept(static_cast<size_t>(N), -1.0);  // t_i, or -1 (no class) when ignored
    double total_weight = 0;  // sum of w[t_i] over the non-ignored samples
    dispatch_floating(x.dtype(), "nll_loss", [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < N; ++i) {
        if (tp[i] == ignore_index) continue;
        kept[i] = static_cast<double>(tp[i]);
        const T wi = w.empty() ? T(1) : static_cast<T>(w[tp[i]]);
        neg_w[i] = static_cast<double>(-wi);
        total_weight += static_cast<double>(wi);
      }
    });
    Tensor nw = ops::reshape(tensor(neg_w, Shape{N}, x.dtype()), {N, 1});
    Tensor classes = ops::reshape(arange(0, static_cast<double>(C), 1, kInt64), {1, C});
    Tensor kept_t = ops::reshape(tensor(kept, Shape{N}, kInt64), {N, 1});
    if (!dev.is_cpu()) {
      nw = ops::to_device(nw, dev);
      classes = ops::to_device(classes, dev);
      kept_t = ops::to_device(kept_t, dev);
    }
    // hit[i, c] = (c == t_i), all 0 on an ignored row: its gradient is exactly 0 even when the
    // mean's 1 / total_weight is inf (every target ignored; PyTorch skips those rows)
    const Tensor hit = ops::binary(classes, kept_t, cpu::EqOp{}, "nll_loss", true);  // (N, C)
    // x[i, t_i] (exact: one value plus zeros), times -w[t_i]: -x[i, t_i] * w[t_i], 0 when ignored
    const Tensor picked = ops::sum_dim(ops::where(hit, x, ops::scalar_as_tensor(0.0, x.dtype(), dev)), 1, true);
    Tensor per = ops::reshape(grad_math::mul(picked, nw), {N});
    Tensor out = per;
    if (reduction != Reduction::None) {
      out = ops::sum_all(per);
      if (reduction == Reduction::Mean) out = ops::scalar(out, total_weight, cpu::DivOp{}, "nll_loss");
    }
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<NllLoss>();
    n->watch(x);  // PyTorch keeps it; only the target is read back
    n->hit = hit;
    n->neg_w = nw;
    n->watch(t);
    n->reduction = reduction;
    n->total_weight = total_weight;
    return record(out, n, {&x});
  }
  std::vector<Tensor> apply(const Tensor& dy) override {
    // dx[i, c] = hit[i, c] ? g_i * -w[t_i] : 0, with g_i = dy[i] (none), dy (sum), dy / total_weight (mean)
    const int64_t N = hit.sizes()[0];
    Tensor g = reduction == Reduction::None ? ops::reshape(dy, {N, 1})
               : reduction == Reduction::Mean ? ops::scalar(dy, total_weight, cpu::DivOp{}, "nll_loss_backward")
                                              : dy;
    const Tensor gw = grad_math::mul(g, neg_w);  // (N, 1)
    return {ops::where(hit, gw, ops::scalar_as_tensor(0.0, dy.dtype(), dy.device()))};
  }
  void release_saved() override { hit = neg_w = Tensor(); }
};

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

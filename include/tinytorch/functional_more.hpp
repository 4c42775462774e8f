// tinytorch/functional_more.hpp — the second batch of differentiable tensor ops, their Tensor
// methods and operators:
//   min, argmin, amax, amin, maximum, minimum (and max/min of two tensors), pow(Tensor, Tensor),
//   pow(number, Tensor), floor_divide, div with a rounding mode, trunc, remainder (operator%), fmod,
//   eq/ne/lt/le/gt/ge with tensors
//   and numbers (operators == != < <= > >=), clamp / clamp_min / clamp_max with optional number
//   bounds or tensor bounds, where.
// Shapes broadcast as PyTorch (core/shape.hpp); dtypes promote as PyTorch for tensor operands, and
// a number meets a tensor as in the rest of tinytorch (ops/elementwise_more.hpp: an int64 tensor
// stays int64 with an integral number, turns float32 with a fractional one).
// Differences from PyTorch, each for a reason given where it is declared:
//   - comparisons return int64 0/1 tensors (no bool dtype), and where() takes one as condition;
//   - INT64_MIN // -1 throws (PyTorch dies of SIGFPE).
// Every op records the node of autograd/functions_more.hpp with PyTorch's grad_fn name.
// This header is included at the end of functional.hpp (and includes it), so either include
// gives the whole API. Chapter: chapters/01-training-loop.md, chapters/02-autograd.md.
// Reference: PyTorch 1.13 / 2.x documentation of each function; derivatives.yaml for gradients.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "autograd/functions_more.hpp"
#include "functional.hpp"
#include "core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN

// ---- min / max family -------------------------------------------------------------------------
/// The smallest element, 0-d (NaN if any element is NaN). Backward shares the gradient evenly
/// among all minimal elements (torch.min(input), MinBackward1). Throws for an empty tensor.
inline Tensor min(const Tensor& x) { return autograd::Min::forward_all(x); }
/// (values, indices) of the min along dim; indices int64, the first on ties (a NaN wins);
/// the gradient goes to the returned index (torch.min(input, dim), MinBackward0).
inline std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false) {
  return autograd::Min::forward_dim(x, dim, keepdim);
}
/// Index of the min in the flattened tensor (first on ties, a NaN wins), int64 0-d. Not differentiable.
inline Tensor argmin(const Tensor& x) {
  TT_CHECK(x.numel() > 0, "argmin(): Expected reduction dim to be specified for input.numel() == 0.");
  return std::get<1>(ops::min_dim(ops::reshape(x, {x.numel()}), 0, false, "argmin"));
}
inline Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false) {
  return std::get<1>(ops::min_dim(x, dim, keepdim, "argmin"));
}
/// Max over the dims in `dim` (all dims when empty); (A, B, C).amax({0, 2}) -> (B), keepdim -> (1, B, 1).
/// Backward shares the gradient evenly among ties in each slice (torch.amax, AmaxBackward0).
/// Throws for a dim out of range, a dim listed twice, or an empty reduced dim.
inline Tensor amax(const Tensor& x, const std::vector<int64_t>& dim = {}, bool keepdim = false) {
  return autograd::AmaxAmin::forward(x, dim, keepdim, true);
}
/// Min over the dims in `dim` (torch.amin, AminBackward0); as amax.
inline Tensor amin(const Tensor& x, const std::vector<int64_t>& dim = {}, bool keepdim = false) {
  return autograd::AmaxAmin::forward(x, dim, keepdim, false);
}
/// Elementwise max of a and b with broadcasting; NaN if either is NaN. On equal elements each
/// input gets half the gradient (torch.maximum, MaximumBackward0).
inline Tensor maximum(const Tensor& a, const Tensor& b) { return autograd::MaximumMinimum::forward(a, b, true); }
/// Elementwise min of a and b (torch.minimum, MinimumBackward0); as maximum.
inline Tensor minimum(const Tensor& a, const Tensor& b) { return autograd::MaximumMinimum::forward(a, b, false); }
/// torch.max(input, other) = maximum; torch.min(input, other) = minimum.
inline Tensor max(const Tensor& a, const Tensor& b) { return maximum(a, b); }
inline Tensor min(const Tensor& a, const Tensor& b) { return minimum(a, b); }

// ---- pow --------------------------------------------------------------------------------------
/// a ** b elementwise with broadcasting; dtype = promote(a, b). int64 ** int64 is exact integer
/// power (wrapping on overflow as PyTorch); a negative int64 exponent gives 0 except for a base of
/// 1 or -1. Gradients (PowBackward1): d/da = b a^(b-1) (0 where b == 0), d/db = a^b ln a (0 where
/// a == 0 and b >= 0), so 0 ** 0 has zero gradients, as PyTorch. (torch.pow(Tensor, Tensor))
inline Tensor pow(const Tensor& a, const Tensor& b) { return autograd::PowTensor::forward(a, b); }
/// s ** b for a number s (torch.pow(Scalar, Tensor), PowBackward2): d/db = s^b ln s (0 where s == 0
/// and b >= 0). An int64 b stays int64 when s is integral, as `2 ** int_tensor` in PyTorch.
inline Tensor pow(double s, const Tensor& b) { return autograd::PowScalarBase::forward(s, b); }

// ---- floor_divide, remainder, fmod ------------------------------------------------------------
/// floor(a / b) elementwise with broadcasting (torch.floor_divide: floor rounding, as PyTorch
/// 1.13+). Float: b == 0 gives +-inf or NaN. int64: a zero divisor throws "ZeroDivisionError" (as
/// PyTorch); INT64_MIN // -1 throws (PyTorch crashes with SIGFPE; 2^63 does not fit in int64).
/// Not differentiable: as in PyTorch, the result of an input that requires grad has grad_fn
/// torch::autograd::NotImplemented and backward through it throws.
inline Tensor floor_divide(const Tensor& a, const Tensor& b) { return autograd::floor_divide(a, b); }
inline Tensor floor_divide(const Tensor& a, double b) { return autograd::floor_divide(a, b); }
/// torch.div(a, b, rounding_mode): std::nullopt is true division (div(a, b), a / b); "trunc"
/// rounds the quotient toward zero (C's integer division), "floor" toward -inf (floor_divide's
/// kernel). int64 / int64 stays int64 with a mode, exact; a zero divisor throws
/// "ZeroDivisionError" and INT64_MIN / -1 throws (PyTorch crashes with SIGFPE). Float: b == 0
/// gives +-inf or NaN, as PyTorch. Another mode throws PyTorch's "div expected rounding_mode to be
/// one of None, 'trunc', or 'floor' but found '<mode>'". With a mode the gradients are zero; the
/// grad_fn is DivBackward2 (with a number b, DivBackward3) with or without a mode, as PyTorch's.
inline Tensor div(const Tensor& a, const Tensor& b, const std::optional<std::string>& rounding_mode) {
  return rounding_mode ? autograd::DivRounding::forward(a, b, *rounding_mode)
                       : autograd::Div::forward(a, b, "DivBackward2");  // aten's div.Tensor_mode
}
inline Tensor div(const Tensor& a, double b, const std::optional<std::string>& rounding_mode) {
  return rounding_mode ? autograd::DivRounding::forward(a, b, *rounding_mode)
                       : autograd::DivScalar::forward(a, b, "DivBackward3");  // div.Scalar_mode
}
/// Rounds toward zero elementwise (torch.trunc); int64 is returned unchanged (a copy). NaN, +-inf
/// and -0.0 stay. Gradient zero (TruncBackward0).
inline Tensor trunc(const Tensor& x) { return autograd::Trunc::forward(x); }
/// a - floor(a / b) * b: the result has the sign of b, as Python's % (torch.remainder). Float b == 0
/// gives NaN; int64 b == 0 throws "ZeroDivisionError". Gradients: d/da = 1, d/db = -floor(a / b)
/// (RemainderBackward1; with a number b, RemainderBackward0).
inline Tensor remainder(const Tensor& a, const Tensor& b) { return autograd::RemainderFmod::forward(a, b, false); }
inline Tensor remainder(const Tensor& a, double b) { return autograd::RemainderFmod::forward(a, b, false); }
/// a - trunc(a / b) * b: the result has the sign of a, as C's fmod (torch.fmod). Zero divisors as
/// remainder. Gradients: d/da = 1, d/db = -trunc(a / b) (FmodBackward1; with a number, FmodBackward0).
inline Tensor fmod(const Tensor& a, const Tensor& b) { return autograd::RemainderFmod::forward(a, b, true); }
inline Tensor fmod(const Tensor& a, double b) { return autograd::RemainderFmod::forward(a, b, true); }

// ---- comparisons ------------------------------------------------------------------------------
// torch.eq/ne/lt/le/gt/ge with broadcasting. PyTorch returns bool tensors; tinytorch, which has no
// bool dtype, returns int64 0/1 (x.gt(0.5).sum() counts, as in PyTorch). NaN compares unequal to
// everything. With a number: see the file comment for the dtype the comparison runs in.
inline Tensor eq(const Tensor& a, const Tensor& b) { return a.eq(b); }
inline Tensor ne(const Tensor& a, const Tensor& b) { return a.ne(b); }
inline Tensor lt(const Tensor& a, const Tensor& b) { return a.lt(b); }
inline Tensor le(const Tensor& a, const Tensor& b) { return a.le(b); }
inline Tensor gt(const Tensor& a, const Tensor& b) { return a.gt(b); }
inline Tensor ge(const Tensor& a, const Tensor& b) { return a.ge(b); }
inline Tensor eq(const Tensor& a, double b) { return ops::compare_scalar(a, b, backend::cpu::EqOp{}, "eq"); }
inline Tensor ne(const Tensor& a, double b) { return ops::compare_scalar(a, b, backend::cpu::NeOp{}, "ne"); }
inline Tensor lt(const Tensor& a, double b) { return ops::compare_scalar(a, b, backend::cpu::LtOp{}, "lt"); }
inline Tensor le(const Tensor& a, double b) { return ops::compare_scalar(a, b, backend::cpu::LeOp{}, "le"); }
inline Tensor gt(const Tensor& a, double b) { return ops::compare_scalar(a, b, backend::cpu::GtOp{}, "gt"); }
inline Tensor ge(const Tensor& a, double b) { return ops::compare_scalar(a, b, backend::cpu::GeOp{}, "ge"); }

// ---- clamp ------------------------------------------------------------------------------------
/// min(max(x, min), max) elementwise (torch.clamp). Either bound may be std::nullopt, not both
/// ("At least one of 'min' or 'max' must not be None"). As PyTorch: min > max sets every element to
/// max; a NaN x stays NaN; a NaN bound makes every element NaN when both bounds are given and is
/// ignored when it is the only one (PyTorch's kernels; clamp_min / clamp_max with NaN give NaN);
/// an int64 x with a fractional bound computes in float32. The gradient passes where
/// min <= x <= max, the bounds included, and is 0 everywhere for a NaN bound (ClampBackward1).
inline Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max = std::nullopt) {
  return autograd::ClampScalar::forward(x, min, max, "ClampBackward1");
}
/// clamp with tensor bounds, broadcast with x (an undefined Tensor() is an absent bound; not both);
/// dtype = promote(x, min, max); a NaN anywhere gives NaN. Gradients (ClampBackward0): x where
/// min <= x <= max; min where x < min and min < max; max where x > max or max < min.
inline Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max = Tensor()) {
  return autograd::ClampTensor::forward(x, min, max, "ClampBackward0");
}
/// max(x, min) (torch.clamp_min, ClampMinBackward0; the gradient passes where x >= min).
inline Tensor clamp_min(const Tensor& x, double min) {
  return autograd::ClampScalar::forward(x, min, std::nullopt, "ClampMinBackward0", "clamp_min");
}
/// max(x, min) with a tensor min (ClampMinBackward1): d/dx where x >= min, d/dmin where x < min.
inline Tensor clamp_min(const Tensor& x, const Tensor& min) {
  TT_CHECK(min.defined(), "clamp_min: expected a defined min tensor");
  return autograd::ClampTensor::forward(x, min, Tensor(), "ClampMinBackward1");
}
/// min(x, max) (torch.clamp_max, ClampMaxBackward0; the gradient passes where x <= max).
inline Tensor clamp_max(const Tensor& x, double max) {
  return autograd::ClampScalar::forward(x, std::nullopt, max, "ClampMaxBackward0", "clamp_max");
}
/// min(x, max) with a tensor max (ClampMaxBackward1): d/dx where x <= max, d/dmax where x > max.
inline Tensor clamp_max(const Tensor& x, const Tensor& max) {
  TT_CHECK(max.defined(), "clamp_max: expected a defined max tensor");
  return autograd::ClampTensor::forward(x, Tensor(), max, "ClampMaxBackward1");
}

// ---- where ------------------------------------------------------------------------------------
/// a where condition is nonzero, else b; condition, a and b broadcast together, dtype = promote(a, b)
/// (torch.where). PyTorch requires a bool condition; tinytorch has no bool dtype and takes the
/// int64 0/1 tensors its comparisons return (any nonzero is true). A floating point condition
/// throws, as in PyTorch. Gradients (WhereBackward0): a gets dy where condition, b elsewhere.
inline Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  return autograd::Where::forward(condition, a, b);
}
/// where with a number for `other` (or `input`); the number's dtype as in the file comment.
inline Tensor where(const Tensor& condition, const Tensor& a, double b) {
  ops::check_device(a, "where");
  return where(condition, a, ops::scalar_as_tensor(b, ops::scalar_result_type(a.dtype(), b), a.device()));
}
inline Tensor where(const Tensor& condition, double a, const Tensor& b) {
  ops::check_device(b, "where");
  return where(condition, ops::scalar_as_tensor(a, ops::scalar_result_type(b.dtype(), a), b.device()), b);
}

// =============================================================================================
// Tensor's methods (declared in tensor.hpp)
// =============================================================================================

inline Tensor Tensor::min() const { return tinytorch::min(*this); }
inline std::tuple<Tensor, Tensor> Tensor::min(int64_t d, bool keepdim) const { return tinytorch::min(*this, d, keepdim); }
inline Tensor Tensor::argmin() const { return tinytorch::argmin(*this); }
inline Tensor Tensor::argmin(int64_t d, bool keepdim) const { return tinytorch::argmin(*this, d, keepdim); }
inline Tensor Tensor::amax(const std::vector<int64_t>& d, bool keepdim) const { return tinytorch::amax(*this, d, keepdim); }
inline Tensor Tensor::amin(const std::vector<int64_t>& d, bool keepdim) const { return tinytorch::amin(*this, d, keepdim); }
inline Tensor Tensor::maximum(const Tensor& o) const { return tinytorch::maximum(*this, o); }
inline Tensor Tensor::minimum(const Tensor& o) const { return tinytorch::minimum(*this, o); }
inline Tensor Tensor::max(const Tensor& o) const { return tinytorch::maximum(*this, o); }
inline Tensor Tensor::min(const Tensor& o) const { return tinytorch::minimum(*this, o); }
inline Tensor Tensor::pow(const Tensor& e) const { return tinytorch::pow(*this, e); }
inline Tensor Tensor::floor_divide(const Tensor& o) const { return tinytorch::floor_divide(*this, o); }
inline Tensor Tensor::floor_divide(double o) const { return tinytorch::floor_divide(*this, o); }
inline Tensor Tensor::remainder(const Tensor& o) const { return tinytorch::remainder(*this, o); }
inline Tensor Tensor::remainder(double o) const { return tinytorch::remainder(*this, o); }
inline Tensor Tensor::fmod(const Tensor& o) const { return tinytorch::fmod(*this, o); }
inline Tensor Tensor::fmod(double o) const { return tinytorch::fmod(*this, o); }
inline Tensor Tensor::div(const Tensor& o) const { return tinytorch::div(*this, o); }
inline Tensor Tensor::div(double o) const { return *this / o; }
inline Tensor Tensor::div(const Tensor& o, const std::optional<std::string>& rounding_mode) const {
  return tinytorch::div(*this, o, rounding_mode);
}
inline Tensor Tensor::div(double o, const std::optional<std::string>& rounding_mode) const {
  return tinytorch::div(*this, o, rounding_mode);
}
inline Tensor Tensor::trunc() const { return tinytorch::trunc(*this); }
inline Tensor Tensor::eq(double o) const { return tinytorch::eq(*this, o); }
inline Tensor Tensor::ne(double o) const { return tinytorch::ne(*this, o); }
inline Tensor Tensor::lt(double o) const { return tinytorch::lt(*this, o); }
inline Tensor Tensor::le(double o) const { return tinytorch::le(*this, o); }
inline Tensor Tensor::gt(double o) const { return tinytorch::gt(*this, o); }
inline Tensor Tensor::ge(double o) const { return tinytorch::ge(*this, o); }
inline Tensor Tensor::clamp(std::optional<double> lo, std::optional<double> hi) const {
  return tinytorch::clamp(*this, lo, hi);
}
inline Tensor Tensor::clamp(const Tensor& lo, const Tensor& hi) const { return tinytorch::clamp(*this, lo, hi); }
inline Tensor Tensor::clamp_min(double lo) const { return tinytorch::clamp_min(*this, lo); }
inline Tensor Tensor::clamp_min(const Tensor& lo) const { return tinytorch::clamp_min(*this, lo); }
inline Tensor Tensor::clamp_max(double hi) const { return tinytorch::clamp_max(*this, hi); }
inline Tensor Tensor::clamp_max(const Tensor& hi) const { return tinytorch::clamp_max(*this, hi); }
inline Tensor Tensor::where(const Tensor& c, const Tensor& o) const { return tinytorch::where(c, *this, o); }
inline Tensor Tensor::where(const Tensor& c, double o) const { return tinytorch::where(c, *this, o); }

// ---- operators --------------------------------------------------------------------------------
inline Tensor operator%(const Tensor& a, const Tensor& b) { return remainder(a, b); }
inline Tensor operator%(const Tensor& a, double b) { return remainder(a, b); }
inline Tensor operator==(const Tensor& a, const Tensor& b) { return a.eq(b); }
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return a.ne(b); }
inline Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
inline Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
inline Tensor operator==(const Tensor& a, double b) { return a.eq(b); }
inline Tensor operator!=(const Tensor& a, double b) { return a.ne(b); }
inline Tensor operator<(const Tensor& a, double b) { return a.lt(b); }
inline Tensor operator<=(const Tensor& a, double b) { return a.le(b); }
inline Tensor operator>(const Tensor& a, double b) { return a.gt(b); }
inline Tensor operator>=(const Tensor& a, double b) { return a.ge(b); }
// a number on the left: 0.5 < t is t > 0.5 (as Python's reflected comparisons)
inline Tensor operator==(double a, const Tensor& b) { return b.eq(a); }
inline Tensor operator!=(double a, const Tensor& b) { return b.ne(a); }
inline Tensor operator<(double a, const Tensor& b) { return b.gt(a); }
inline Tensor operator<=(double a, const Tensor& b) { return b.ge(a); }
inline Tensor operator>(double a, const Tensor& b) { return b.lt(a); }
inline Tensor operator>=(double a, const Tensor& b) { return b.le(a); }

TT_NAMESPACE_END  // namespace tinytorch

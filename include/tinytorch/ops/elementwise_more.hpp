// tinytorch/ops/elementwise_more.hpp — comparisons with a number, pow of two tensors,
// floor_divide / remainder / fmod, clamp with optional and tensor bounds, where. No autograd.
//
//   compare_scalar(a, s, f): out = f(a, s) as int64 0/1 (tinytorch has no bool dtype; see below)
//   pow_tensor(a, b), integer_division(a, b, f): out = f(a, b), broadcast, dtype = promote(a, b)
//   clamp_scalar(x, lo?, hi?):  min(max(x, lo), hi); a NaN bound makes every element NaN
//   clamp_tensor(x, lo?, hi?):  the same elementwise with broadcast tensor bounds
//   where(cond, a, b):          out = cond ? a : b, shape = broadcast(cond, a, b), dtype = promote(a, b)
// A number s meets a tensor as in ops::scalar (tinytorch's rule for double scalars): an int64
// tensor keeps its dtype when s is an integral value that fits in int64, and computes in float32
// otherwise (PyTorch decides from the Python type: `int64_tensor > 1.0` compares in float32 there,
// in int64 here; the two differ only for |values| > 2^24). A float tensor computes in its own dtype
// with s rounded to it (as PyTorch: `float32_tensor == 0.1` is true for the float32 nearest 0.1).
// Comparisons return int64 0/1 tensors, as Tensor::eq/lt/... do (no bool dtype); `where` takes
// such a tensor as its condition (any nonzero is true) and refuses a floating point one, as
// PyTorch refuses a non-bool condition.
// Integer division by zero throws "ZeroDivisionError" (PyTorch's message); INT64_MIN // -1 throws
// (its result does not fit in int64; PyTorch dies of SIGFPE there).
// Chapter: chapters/01-training-loop.md. Reference: PyTorch's torch.pow / floor_divide / remainder
// / fmod / clamp / where documentation and its type-promotion notes.
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "../backend/cpu/elementwise.hpp"
#include "../backend/cpu/elementwise_more.hpp"
#include "dispatch.hpp"
#include "elementwise.hpp"
#include "shape.hpp"
#include "../core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace ops {

/// True when the number s keeps an int64 tensor in int64: an integral value in [-2^63, 2^63).
inline bool scalar_fits_int64(double s) {
  return s == std::floor(s) && s >= -9223372036854775808.0 && s < 9223372036854775808.0;
}

/// The dtype a tensor of dtype `t` and the number s compute in (see the file comment).
inline DType scalar_result_type(DType t, double s) {
  return t == kInt64 && !scalar_fits_int64(s) ? kFloat32 : t;
}

/// A 0-d tensor of dtype `dt` holding s on `device` (s must fit when dt is int64: see
/// scalar_result_type). Made on the CPU and copied to a CUDA device.
inline Tensor scalar_as_tensor(double s, DType dt, Device device = Device::cpu()) {
  Tensor t = make_tensor({}, dt);
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    *t.data_ptr<T>() = static_cast<T>(s);
  });
  return device.is_cpu() ? t : to_device(t, device);
}

/// out = f(a, s) as int64 0/1 for a comparison functor f (EqOp, LtOp, ...).
template <class F>
Tensor compare_scalar(const Tensor& a, double s, F f, const char* op) {
  check_device(a, op);
  const DType dt = scalar_result_type(a.dtype(), s);
  return binary(to_dtype(a, dt), scalar_as_tensor(s, dt, a.device()), f, op, true);
}

/// Shape of broadcasting three tensors; the error names all three (`names`: how the op calls them).
inline Shape broadcast_shapes3(const Shape& a, const Shape& b, const Shape& c, const char* op,
                               const char* na, const char* nb, const char* nc) {
  try {
    return broadcast_shapes(broadcast_shapes(a, b, op), c, op);
  } catch (const Error&) {
    throw Error(tinytorch::detail::str_cat(op, ": shapes ", shape_str(a), " (", na, "), ", shape_str(b), " (", nb,
                                           ") and ", shape_str(c), " (", nc, ") cannot be broadcast together"));
  }
}

/// torch.pow(a, b) elementwise with broadcasting; int64 ** int64 stays int64 (exact, see PowTensorOp).
inline Tensor pow_tensor(const Tensor& a, const Tensor& b) {
  return binary(a, b, backend::cpu::PowTensorOp{}, "pow");
}

/// floor_divide / remainder / fmod (f: FloorDivideOp, RemainderOp, FmodOp) with broadcasting.
/// For int64 (after promotion) it first checks every divisor: zero throws "ZeroDivisionError" as
/// PyTorch; with `quotient` (floor_divide, div's trunc and floor modes) INT64_MIN / -1 throws too
/// (2^63 does not fit in int64; a remainder of it is 0 and fine).
template <class F>
Tensor integer_division(const Tensor& a, const Tensor& b, F f, const char* op, bool quotient) {
  check_device(a, op);
  check_device(b, op);
  const DType dt = result_type(a, b);
  if (dt == kInt64) {
    // The divisors are checked on the host (a CUDA tensor is copied there first): a device-side
    // check could only report asynchronously and opaquely (CUDA.md section 5).
    const Tensor ah = a.device().is_cpu() ? a : to_device(a, Device::cpu());
    const Tensor bh = b.device().is_cpu() ? b : to_device(b, Device::cpu());
    const Shape shape = broadcast_shapes(ah.sizes(), bh.sizes(), op);
    const int64_t* pa = ah.data_ptr<int64_t>();
    const int64_t* pb = bh.data_ptr<int64_t>();
    bool zero = false, overflow = false;
    backend::cpu::strided_loop2(shape, broadcast_strides(ah.sizes(), ah.strides(), shape),
                                broadcast_strides(bh.sizes(), bh.strides(), shape),
                                [&](int64_t, int64_t oa, int64_t ob) {
                                  zero |= pb[ob] == 0;
                                  overflow |= pb[ob] == -1 && pa[oa] == std::numeric_limits<int64_t>::min();
                                });
    TT_CHECK(!zero, op, ": ZeroDivisionError (integer division by zero; divisor of shape ",
             shape_str(b.sizes()), ")");
    TT_CHECK(!(quotient && overflow), op, ": integer overflow: -9223372036854775808 // -1 = 2^63 does not fit in "
             "int64 (PyTorch crashes with SIGFPE here)");
  }
  return binary(a, b, f, op);
}

/// integer_division with a number as divisor (dtype by scalar_result_type).
template <class F>
Tensor integer_division(const Tensor& a, double s, F f, const char* op, bool quotient) {
  check_device(a, op);
  const DType dt = scalar_result_type(a.dtype(), s);
  return integer_division(to_dtype(a, dt), scalar_as_tensor(s, dt, a.device()), f, op, quotient);
}

/// torch.clamp(x, min, max) with number bounds, either of which may be absent (not both: PyTorch's
/// "torch.clamp: At least one of 'min' or 'max' must not be None"). min(max(x, lo), hi): a NaN x
/// stays NaN, lo > hi sets every element to hi. A NaN bound, as PyTorch (1.13 and 2.x) does it:
/// clamp with both bounds, and clamp_min / clamp_max (`op`), fill the result with NaN; clamp with
/// one bound leaves x as it is (its kernel computes max(x, NaN) = x).
/// An int64 x with a bound that is not an int64 value computes in float32 (torch.clamp promotes).
inline Tensor clamp_scalar(const Tensor& x0, std::optional<double> lo, std::optional<double> hi,
                           const char* op = "clamp") {
  check_device(x0, op);
  TT_CHECK(lo || hi, op, ": At least one of 'min' or 'max' must not be None");
  DType dt = x0.dtype();
  if (lo) dt = scalar_result_type(dt, *lo) == kFloat32 ? kFloat32 : dt;
  if (hi) dt = scalar_result_type(dt, *hi) == kFloat32 ? kFloat32 : dt;
  for (const auto& bound : {lo, hi})  // as PyTorch's Scalar::to<float>()
    TT_CHECK(dt != kFloat32 || !bound || !std::isfinite(*bound) ||
                 std::abs(*bound) <= static_cast<double>(std::numeric_limits<float>::max()),
             op, ": value cannot be converted to type float without overflow (bound ", *bound, ")");
  const Tensor x = contiguous(to_dtype(x0, dt));
  Tensor out = make_tensor(x.sizes(), dt, x.device());
  const bool fills = (lo && hi) || std::string(op) != "clamp";  // clamp_min, clamp_max
  const bool nan_bound = fills && ((lo && std::isnan(*lo)) || (hi && std::isnan(*hi)));
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data_ptr<T>();
    const int64_t n = out.numel();
    if (nan_bound) {  // only reachable for float dtypes (a NaN bound turns int64 into float32)
      backend::dispatch::unary_kernel(x.device(), x.data_ptr<T>(), o, n,
                                      backend::FillOp<T>{std::numeric_limits<T>::quiet_NaN()});
      return;
    }
    backend::cpu::ClampScalarOp<T> f{lo.has_value(), hi.has_value(), static_cast<T>(lo ? *lo : 0.0),
                                     static_cast<T>(hi ? *hi : 0.0)};
    backend::dispatch::unary_kernel(x.device(), x.data_ptr<T>(), o, n, f);
  });
  return out;
}

/// torch.clamp(x, min, max) with tensor bounds (an undefined Tensor is an absent bound; not both):
/// min(max(x, lo), hi) elementwise with broadcasting; dtype = promote(x, lo, hi). NaN in x or in
/// a bound gives NaN.
inline Tensor clamp_tensor(const Tensor& x, const Tensor& lo, const Tensor& hi, const char* op = "clamp") {
  check_device(x, op);
  TT_CHECK(lo.defined() || hi.defined(), op, ": At least one of 'min' or 'max' must not be None");
  if (lo.defined()) check_device(lo, op);
  if (hi.defined()) check_device(hi, op);
  const Device dev = detail::common_device(op, {&x, &lo, &hi});
  const Tensor& l = lo.defined() ? lo : x;  // an absent bound is read (and ignored) as x
  const Tensor& h = hi.defined() ? hi : x;
  const DType dt = result_type({&x, &l, &h});
  const Shape shape = broadcast_shapes3(x.sizes(), l.sizes(), h.sizes(), op, "input", lo.defined() ? "min" : "input",
                                        hi.defined() ? "max" : "input");
  const Tensor xc = to_dtype(x, dt), lc = to_dtype(l, dt), hc = to_dtype(h, dt);
  Tensor out = make_tensor(shape, dt, dev);
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    backend::dispatch::ternary_kernel(dev, xc.data_ptr<T>(), broadcast_strides(xc.sizes(), xc.strides(), shape),
                                 lc.data_ptr<T>(), broadcast_strides(lc.sizes(), lc.strides(), shape),
                                 hc.data_ptr<T>(), broadcast_strides(hc.sizes(), hc.strides(), shape),
                                 out.data_ptr<T>(), shape,
                                 backend::cpu::ClampTensorOp{lo.defined(), hi.defined()});
  });
  return out;
}

/// Throws unless `cond` can serve as where's condition: int64 (tinytorch's stand-in for bool).
inline void check_condition(const Tensor& cond, const char* op) {
  check_device(cond, op);
  TT_CHECK(cond.dtype() == kInt64, op, ": expected condition to be a boolean tensor (in tinytorch an int64 "
           "0/1 tensor, as comparisons return), but got a tensor with dtype ", scalar_type_name(cond.dtype()));
}

/// torch.where(cond, a, b): a where cond is nonzero, else b, with broadcasting of all three.
inline Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_condition(cond, "where");
  check_device(a, "where");
  check_device(b, "where");
  const Device dev = detail::common_device("where", {&cond, &a, &b});
  const DType dt = result_type(a, b);
  const Shape shape = broadcast_shapes3(cond.sizes(), a.sizes(), b.sizes(), "where", "condition", "input", "other");
  const Tensor ac = to_dtype(a, dt), bc = to_dtype(b, dt);
  Tensor out = make_tensor(shape, dt, dev);
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    backend::dispatch::ternary_kernel(
        dev, cond.data_ptr<int64_t>(), broadcast_strides(cond.sizes(), cond.strides(), shape), ac.data_ptr<T>(),
        broadcast_strides(ac.sizes(), ac.strides(), shape), bc.data_ptr<T>(),
        broadcast_strides(bc.sizes(), bc.strides(), shape), out.data_ptr<T>(), shape, backend::WhereOp{});
  });
  return out;
}

}  TT_NAMESPACE_END  // namespace tinytorch::ops

// tinytorch/ops/creation.ipp — the bodies of the creation functions: empty, zeros, ones, full,
// tensor, arange, rand, randn, randint, randperm, *_like.
//
// Defaults follow PyTorch: float32 unless a dtype is given (arange and randint default to int64,
// as torch.arange(5) and torch.randint do). Random tensors draw from a Generator (core/random.hpp)
// in row-major order: reproducible for a seed, not bit-equal to PyTorch's streams.
// A tensor created with TensorOptions().requires_grad(true) is a leaf that requires grad.
// TensorOptions().device(Device::cuda(i)) puts the result on a GPU: full/zeros/ones run the fill
// kernel there; tensor-from-data and the random factories make the values on the host and copy them
// (the same seed gives the same numbers on the CPU and on every GPU). *_like keep the input's device.
// arange and randperm have no device argument yet: use .to(device).
//
// Declared (with their defaults) in tensor.hpp; not a header to include: ops/creation.hpp
// includes it in a header-only build, <tinytorch/src.hpp> compiles it once with
// -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL, core/config.hpp).
// Chapter: chapters/01-training-loop.md.
#pragma once

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "tinytorch/ops/dispatch.hpp"
#include "tinytorch/ops/shape.hpp"  // to_device
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN

namespace detail {
inline Tensor finish(Tensor t, const TensorOptions& o, const char* op) {
  if (o.requires_grad_) {
    TT_CHECK(is_floating_point(o.dtype_), op, ": only floating point tensors can require gradients (got ",
             dtype_name(o.dtype_), ")");
    t.impl()->requires_grad = true;
  }
  return t;
}
/// A tensor whose element i is f(i) converted to the dtype: exactly for int64 from an integer,
/// and through Scalar::to for a double (an int64 tensor refuses NaN and values beyond its range,
/// whose C++ conversion would be undefined).
/// On a GPU the values are made on the host (a random tensor draws the same numbers from the same
/// generator state as on the CPU) and copied over in one memcpy.
template <class F>
Tensor fill_with(const Shape& shape, const TensorOptions& o, const char* op, F f) {
  if (!o.device_.is_cpu()) {
    const Tensor host = fill_with(shape, TensorOptions(o.dtype_), op, f);
    return finish(ops::to_device(host, o.device_), o, op);
  }
  Tensor t = ops::make_tensor(shape, o.dtype_, o.device_);
  dispatch_all(o.dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data_ptr<T>();
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) p[i] = Scalar(f(i)).to<T>(op);
  });
  return finish(t, o, op);
}
}  // namespace detail

TT_DECL Tensor empty(const Shape& shape, TensorOptions o) {
  return detail::finish(ops::make_tensor(shape, o.dtype_, o.device_), o, "empty");
}
/// An int64 tensor gets the exact integer (full({1}, INT64_MAX, kInt64)); a floating value is
/// truncated toward zero for int64, and one beyond int64's range throws (Scalar::to_int64).
/// float32/float16/bfloat16: a finite value beyond the type's largest (3.40e38; 65504; 3.39e38)
/// throws PyTorch's "value cannot be converted to type float (at::Half) without overflow" (inf
/// and NaN are kept).
TT_DECL Tensor full(const Shape& shape, Scalar value, TensorOptions o) {
  tinytorch::detail::check_fits("full", value.to_double(), o.dtype_);
  Tensor t = ops::make_tensor(shape, o.dtype_, o.device_);
  dispatch_all(o.dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = value.to<T>("full");
    backend::dispatch::fill_kernel(o.device_, t.data_ptr<T>(), t.numel(), v);
  });
  return detail::finish(t, o, "full");
}
TT_DECL Tensor zeros(const Shape& shape, TensorOptions o) { return full(shape, 0.0, o); }
TT_DECL Tensor ones(const Shape& shape, TensorOptions o) { return full(shape, 1.0, o); }

TT_DECL Tensor tensor(const std::vector<double>& values, const Shape& shape, TensorOptions o) {
  TT_CHECK(numel_of(shape) == static_cast<int64_t>(values.size()), "tensor: ", values.size(),
           " values do not fill shape ", shape_str(shape), " (", numel_of(shape), " elements)");
  return detail::fill_with(shape, o, "tensor", [&](int64_t i) { return values[i]; });
}
TT_DECL Tensor tensor(const std::vector<double>& values, TensorOptions o) {
  return tensor(values, Shape{static_cast<int64_t>(values.size())}, o);
}
TT_DECL Tensor scalar_tensor(Scalar value, TensorOptions o) { return full({}, value, o); }

namespace detail {
/// The shortest decimal text that reads back as `v` (std::to_chars): 1e+30, 0.1, 9007199254740993
/// is 9007199254740992, inf, nan. Messages name the numbers exactly, not to 6 digits.
inline std::string shortest(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}
}  // namespace detail

TT_DECL Tensor arange(double start, double end, double step, std::optional<DType> dtype) {
  // PyTorch's checks, in its order (aten/src/ATen/native/RangeFactories.cpp), with the numbers.
  using detail::shortest;
  const std::string args = "start=" + shortest(start) + ", end=" + shortest(end) + ", step=" + shortest(step);
  TT_CHECK(std::isfinite(start) && std::isfinite(end), "arange: unsupported range: ", shortest(start), " -> ",
           shortest(end));
  TT_CHECK(step > 0 || step < 0, "arange: step must be nonzero (got ", shortest(step), ")");  // NaN too, as PyTorch
  TT_CHECK((step > 0 && end >= start) || (step < 0 && end <= start), "arange: upper bound and larger bound "
           "inconsistent with step sign (", args, ")");
  // int64 when every argument is an integral number (torch.arange(5) is int64, arange(0, 5, inf)
  // float32: inf is no integer).
  auto integral = [](double v) { return std::isfinite(v) && v == std::floor(v); };
  DType dt = dtype ? *dtype : (integral(start) && integral(end) && integral(step) ? kInt64 : kFloat32);
  // The element count ceil((end - start) / step) as a double first: beyond int64 (2^63) the
  // conversion would be undefined (it gave INT64_MIN, "negative dimension").
  const double count = std::ceil((end - start) / step);
  TT_CHECK(count >= 0 && count < 9223372036854775808.0, "arange: invalid size, possible overflow? (", args,
           ": ceil((end - start) / step) = ", shortest(count), " elements, more than int64 can count)");
  const int64_t n = static_cast<int64_t>(count);
  const double bytes = count * static_cast<double>(element_size(dt));
  TT_CHECK(bytes < 9223372036854775808.0, "arange: invalid size, possible overflow? (", args, ": ", n,
           " elements of ", element_size(dt), " bytes are more than 2^63 bytes)");
  // int64 values from integral start and step are computed in int64, exactly (in double,
  // 2^53 + 1 would round: arange(2^53, 2^53 + 4) gave 2^53 twice).
  auto fits = [&](double v) { return integral(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0; };
  if (dt == kInt64 && fits(start) && fits(step)) {
    const int64_t s0 = static_cast<int64_t>(start), st = static_cast<int64_t>(step);
    // s0 + i * st lies in [start, end), inside int64; modulo 2^64 the partial products may not
    return detail::fill_with({n}, dt, "arange", [&](int64_t i) {
      return static_cast<int64_t>(static_cast<uint64_t>(s0) + static_cast<uint64_t>(i) * static_cast<uint64_t>(st));
    });
  }
  return detail::fill_with({n}, dt, "arange", [&](int64_t i) { return start + step * static_cast<double>(i); });
}
TT_DECL Tensor arange(int64_t end, std::optional<DType> dtype) {
  return arange(0.0, static_cast<double>(end), 1.0, dtype);
}
// The random ops hold the generator's lock once for the whole tensor (Generator::locked).
TT_DECL Tensor rand(const Shape& shape, TensorOptions o, Generator* gen) {
  Generator& g = gen ? *gen : default_generator();
  TT_CHECK(is_floating_point(o.dtype_), "rand: expected a floating point dtype, got ", dtype_name(o.dtype_));
  return g.locked([&](Generator::Stream& s) {
    return detail::fill_with(shape, o, "rand", [&](int64_t) { return s.uniform(); });
  });
}
TT_DECL Tensor randn(const Shape& shape, TensorOptions o, Generator* gen) {
  Generator& g = gen ? *gen : default_generator();
  TT_CHECK(is_floating_point(o.dtype_), "randn: expected a floating point dtype, got ", dtype_name(o.dtype_));
  return g.locked([&](Generator::Stream& s) {
    return detail::fill_with(shape, o, "randn", [&](int64_t) { return s.normal(); });
  });
}
/// Any int64 bounds with low < high, randint(INT64_MIN, INT64_MAX) included; int64 values are
/// stored exactly (never through a double).
TT_DECL Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions o, Generator* gen) {
  Generator& g = gen ? *gen : default_generator();
  TT_CHECK(low < high, "randint: expected low < high, got low=", low, ", high=", high);
  return g.locked([&](Generator::Stream& s) {
    return detail::fill_with(shape, o, "randint", [&](int64_t) { return s.randint(low, high); });
  });
}
TT_DECL Tensor randperm(int64_t n, Generator* gen) {
  TT_CHECK(n >= 0, "randperm: n must be non-negative, got ", n);
  Generator& g = gen ? *gen : default_generator();
  Tensor t = ops::make_tensor({n}, kInt64);
  int64_t* p = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  g.locked([&](Generator::Stream& s) {
    for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[s.randint(0, i + 1)]);  // Fisher-Yates
  });
  return t;
}

// The *_like factories keep the input's dtype and device (as PyTorch's), not its requires_grad.
TT_DECL Tensor empty_like(const Tensor& t) { return empty(t.sizes(), TensorOptions(t.dtype()).device(t.device())); }
TT_DECL Tensor zeros_like(const Tensor& t) { return zeros(t.sizes(), TensorOptions(t.dtype()).device(t.device())); }
TT_DECL Tensor ones_like(const Tensor& t) { return ones(t.sizes(), TensorOptions(t.dtype()).device(t.device())); }
TT_DECL Tensor full_like(const Tensor& t, Scalar value) {
  return full(t.sizes(), value, TensorOptions(t.dtype()).device(t.device()));
}

TT_NAMESPACE_END  // namespace tinytorch

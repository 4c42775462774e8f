// tinytorch/ops/elementwise.hpp — elementwise math on Tensors, with broadcasting, no autograd.
//   binary(a, b, f):  out = f(a, b), shape = broadcast_shapes(a, b), dtype = promote(a, b)
//   binary(a, b, f, op, /*compare=*/true): same, but out is int64 0/1 (tinytorch has no bool dtype)
//   unary(x, f):      out = f(x); float-only functions (exp, log, ...) turn int64 into float32
//   scalar(a, s, f):  out = f(a, s) for a double s (kept in a's dtype; int64 * 2.5 -> float32)
//   scalar_int64(a, s, f), scalar_int64_(self, s, f): int64 tensor with an int64 scalar, exact
//   compare_scalar(a, s, f), pow_tensor(a, b), integer_division(a, b, f), clamp_scalar(x, lo?, hi?)
//   (a NaN bound makes every element NaN), clamp_tensor, where(cond, a, b) (shape = broadcast of
//   all three, dtype = promote(a, b); cond an int64 0/1 tensor, any nonzero true, floating refused)
// Inputs are read through their strides (broadcast dims have stride 0): no copies. Every operand
// on one device (else PyTorch's "Expected all tensors to be on the same device"); the loop runs
// there through backend::dispatch (ops/dispatch.hpp), with f wrapped in backend::CastTo<T, F> and
// passed by value: on CUDA it must be a named TT_HOST_DEVICE functor (backend/functors.hpp).
// float16/bfloat16: each element computed in float32 and rounded once (CUDA kernels do it
// themselves, backend::Opmath; the CPU converts to float32 and back): the same bits either way.
// In place (binary_, unary_), PyTorch's memory-overlap rules (ATen/MemoryOverlap.cpp): the
// written-to tensor may not repeat a location (an expanded tensor), and an input may not partly
// overlap it (a.add_(a.t())): each PyTorch's "unsupported operation: ..." error. The same elements
// in the same layout (a.add_(a)) are fine; layouts too irregular to decide are allowed, and
// binary_ then reads a copy of the input, so the result never depends on the loop order.
// A number s meets a tensor as in scalar(): an int64 tensor keeps its dtype when s is an integral
// value that fits in int64, else computes in float32 (PyTorch decides from the Python type; the
// two differ only for |values| > 2^24); a float tensor computes in its own dtype with s rounded to
// it (`float32_tensor == 0.1` is true for the float32 nearest 0.1, as in PyTorch).
// Integer division by zero throws "ZeroDivisionError" (PyTorch's message); INT64_MIN // -1 throws
// (its result does not fit; PyTorch dies of SIGFPE).
// Chapter: chapters/01-training-loop.md. Reference: PyTorch's broadcasting and type-promotion
// notes, ATen/MemoryOverlap.cpp, the documentation of torch.pow, floor_divide, clamp and where.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "tinytorch/backend/cpu/elementwise.hpp"
#include "tinytorch/ops/dispatch.hpp"
#include "tinytorch/ops/shape.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace ops {

namespace detail {
// True when t is dense, row-major, and has exactly `shape` (so a flat loop reads it).
inline bool dense_as(const Tensor& t, const Shape& shape) {
  return t.sizes() == shape && t.is_contiguous();
}

/// The device of the first defined operand, after check_same_device (ops/dispatch.hpp: PyTorch's
/// "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!").
inline Device common_device(const char* op, std::initializer_list<const Tensor*> operands) {
  const Tensor* first = nullptr;
  for (const Tensor* t : operands) {
    if (!t->defined()) continue;
    if (first) check_same_device(op, *first, *t);
    else first = t;
  }
  return first ? first->device() : Device::cpu();
}

/// A lambda (or function pointer) cannot run in a CUDA kernel: throws on a CUDA device, so only
/// named TT_HOST_DEVICE functors (backend/functors.hpp) reach backend::dispatch::.
template <class F>
void check_functor(Device d, const char* op) {
  if constexpr (!backend::is_kernel_functor_v<F>)
    TT_CHECK(d.is_cpu(), op, ": not implemented for CUDA tensors yet (this caller passes a lambda, which a "
             "kernel cannot run; it needs a named TT_HOST_DEVICE functor, backend/functors.hpp)");
}

// The loops of the ops below on device d: backend::dispatch:: for a kernel functor, the CPU loop
// for a lambda (check_functor has refused a CUDA device for it already).
template <class T, class U, class F>
void run_unary(Device d, const T* x, U* y, int64_t n, F f) {
  if constexpr (backend::is_kernel_functor_v<F>) backend::dispatch::unary_kernel(d, x, y, n, f);
  else backend::cpu::unary_kernel(x, y, n, f);
}
template <class T, class U, class F>
void run_binary(Device d, const T* a, const Strides& sa, const T* b, const Strides& sb, U* out, const Shape& shape,
                bool dense, F f) {
  if constexpr (backend::is_kernel_functor_v<F>) backend::dispatch::binary_kernel(d, a, sa, b, sb, out, shape, dense, f);
  else backend::cpu::binary_kernel(a, sa, b, sb, out, shape, dense, f);
}
template <class T, class U, class F>
void run_scalar(Device d, const T* a, T s, U* out, int64_t n, F f) {
  if constexpr (backend::is_kernel_functor_v<F>) backend::dispatch::scalar_kernel(d, a, s, out, n, f);
  else backend::cpu::scalar_kernel(a, s, out, n, f);
}
/// self[.] = f(self[.], other[.]) through both strides (in place; any layout of self).
template <class T, class F>
void run_binary_inplace(Device d, T* self, const Strides& ss, const T* o, const Strides& so, const Shape& shape,
                        F f) {
  if constexpr (backend::is_kernel_functor_v<F>) backend::dispatch::binary_inplace_kernel(d, self, ss, o, so, shape, f);
  else backend::cpu::binary_inplace_kernel(self, ss, o, so, shape, f);
}

/// dispatch(dt, k), and for a named kernel functor F also float16/bfloat16: the dtypes an
/// elementwise op's kernels are compiled for (a lambda runs on the CPU only, where a 16-bit op
/// has been converted to float32 before this).
template <class F, class K>
void dispatch_kernel_dtypes(DType dt, K&& k) {
  if constexpr (backend::is_kernel_functor_v<F>) dispatch_all(dt, k);
  else dispatch(dt, k);
}
}  // namespace detail

/// out = f(a, b) elementwise with broadcasting; out dtype = result_type(a, b) (int64 for compare).
/// On the inputs' device (both on one device, else PyTorch's "Expected all tensors to be on the
/// same device" error); on CUDA f must be a named functor (a lambda throws).
template <class F>
Tensor binary(const Tensor& a0, const Tensor& b0, F f, const char* op, bool compare = false) {
  check_device(a0, op);
  check_device(b0, op);
  const Device dev = detail::common_device(op, {&a0, &b0});
  detail::check_functor<F>(dev, op);
  DType dt = result_type(a0, b0);  // torch.result_type: a 0-d operand ranks below a dimensioned one
  if (via_float32(dev, dt, {&a0, &b0})) {  // float16/bfloat16: computed in float32, rounded once
    Tensor r = binary(to_dtype(a0, kFloat32), to_dtype(b0, kFloat32), f, op, compare);
    return compare ? r : to_dtype(r, dt);
  }
  const Tensor a = to_dtype(a0, dt), b = to_dtype(b0, dt);
  Shape shape = broadcast_shapes(a.sizes(), b.sizes(), op);
  Tensor out = make_tensor(shape, compare ? kInt64 : dt, dev);
  bool dense = detail::dense_as(a, shape) && detail::dense_as(b, shape);
  Strides sa = broadcast_strides(a.sizes(), a.strides(), shape);
  Strides sb = broadcast_strides(b.sizes(), b.strides(), shape);
  detail::dispatch_kernel_dtypes<F>(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (compare)
      detail::run_binary(dev, a.data_ptr<T>(), sa, b.data_ptr<T>(), sb, out.data_ptr<int64_t>(), shape, dense,
                         backend::ElementOp<T, int64_t, F>{f});
    else
      detail::run_binary(dev, a.data_ptr<T>(), sa, b.data_ptr<T>(), sb, out.data_ptr<T>(), shape, dense,
                         backend::ElementOp<T, T, F>{f});
  });
  return out;
}

/// out = f(x) elementwise. With float_only, int64 input is computed in float32 (as torch.exp).
template <class F>
Tensor unary(const Tensor& x0, F f, const char* op, bool float_only = false) {
  check_device(x0, op);
  detail::check_functor<F>(x0.device(), op);
  if (via_float32(x0.device(), x0.dtype()))  // computed in float32, rounded once
    return to_dtype(unary(to_dtype(x0, kFloat32), f, op, float_only), x0.dtype());
  const Tensor x = contiguous(float_only && x0.dtype() == kInt64 ? to_dtype(x0, kFloat32) : x0);
  Tensor out = make_tensor(x.sizes(), x.dtype(), x.device());
  detail::dispatch_kernel_dtypes<F>(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    detail::run_unary(x.device(), x.data_ptr<T>(), out.data_ptr<T>(), x.numel(), backend::ElementOp<T, T, F>{f});
  });
  return out;
}

/// out = f(a, s) for a scalar s. An int64 tensor with a non-integral s computes in float32.
template <class F>
Tensor scalar(const Tensor& a0, double s, F f, const char* op) {
  check_device(a0, op);
  detail::check_functor<F>(a0.device(), op);
  // float16/bfloat16: s is first rounded to a0's dtype: the number joins the op as a 0-d tensor of
  // that dtype would (PyTorch 1.13's kernels; 2.x keeps s as a float in mul and div, so x * 0.1
  // can differ there by one unit in the last place); then computed in float32 and rounded once
  if (via_float32(a0.device(), a0.dtype())) {
    return to_dtype(scalar(to_float32(a0), ::tinytorch::detail::round_to(s, a0.dtype()), f, op), a0.dtype());
  }
  bool to_float = a0.dtype() == kInt64 && s != std::floor(s);
  const Tensor a = contiguous(to_float ? to_dtype(a0, kFloat32) : a0);
  Tensor out = make_tensor(a.sizes(), a.dtype(), a.device());
  detail::dispatch_kernel_dtypes<F>(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    detail::run_scalar(a.device(), a.data_ptr<T>(), static_cast<T>(s), out.data_ptr<T>(), a.numel(),
                       backend::ElementOp<T, T, F>{f});
  });
  return out;
}

// ---- memory overlap (PyTorch's ATen/MemoryOverlap.cpp) ------------------------------------------

/// True when the elements fill a block of memory without gaps or repeats, in some dim order
/// (PyTorch's is_non_overlapping_and_dense: a permutation of contiguous strides).
inline bool is_non_overlapping_and_dense(const Tensor& t) {
  const Shape& sizes = t.sizes();
  const Strides& strides = t.strides();
  const size_t dim = sizes.size();
  if (dim == 1) return sizes[0] < 2 || strides[0] == 1;
  std::vector<size_t> perm(dim);
  for (size_t i = 0; i < dim; ++i) perm[i] = i;
  std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {  // size-1 dims last, then by stride
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t require_stride = 1;
  for (size_t i = 0; i < dim; ++i) {
    const int64_t size = sizes[perm[i]];
    if (size < 2) return true;
    if (strides[perm[i]] != require_stride) return false;
    require_stride *= size;
  }
  return true;
}

enum class MemOverlap { No, Yes, TooHard };
/// Whether two elements of `t` share a location: Yes only for a stride-0 dim of size > 1.
inline MemOverlap has_internal_overlap(const Tensor& t) {
  if (is_non_overlapping_and_dense(t)) return MemOverlap::No;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.strides()[d] == 0 && t.sizes()[d] > 1) return MemOverlap::Yes;
  return MemOverlap::TooHard;
}
/// Throws PyTorch's error when `t`, about to be written, repeats a location (e.g. after expand).
inline void assert_no_internal_overlap(const Tensor& t, const char* op) {
  TT_CHECK(has_internal_overlap(t) != MemOverlap::Yes, op, ": unsupported operation: more than one element of the "
           "written-to tensor refers to a single memory location. Please clone() the tensor before performing the "
           "operation. (shape ", shape_str(t.sizes()), ", strides ", shape_str(t.strides()), ")");
}

enum class MemOverlapStatus { Full, Partial, TooHard, No };
/// How the memory of a and b overlaps: Full (the same elements in the same layout), Partial,
/// No, or TooHard (one is not dense, so it is not worth deciding).
inline MemOverlapStatus get_overlap_status(const Tensor& a, const Tensor& b) {
  if (a.is_same(b)) return MemOverlapStatus::Full;
  if (a.numel() == 0 || b.numel() == 0) return MemOverlapStatus::No;
  if (!is_non_overlapping_and_dense(a) || !is_non_overlapping_and_dense(b)) return MemOverlapStatus::TooHard;
  if (a.impl()->storage != b.impl()->storage) return MemOverlapStatus::No;
  const int64_t ea = static_cast<int64_t>(element_size(a.dtype())), eb = static_cast<int64_t>(element_size(b.dtype()));
  const int64_t a_begin = a.storage_offset() * ea, a_end = a_begin + a.numel() * ea;
  const int64_t b_begin = b.storage_offset() * eb, b_end = b_begin + b.numel() * eb;
  if (a_begin == b_begin && a_end == b_end)
    return a.strides() == b.strides() ? MemOverlapStatus::Full : MemOverlapStatus::Partial;
  if (a_begin < b_end && b_begin < a_end) return MemOverlapStatus::Partial;
  return MemOverlapStatus::No;
}
/// Throws PyTorch's error when the input `in` partly overlaps `out`, which is about to be written.
inline void assert_no_partial_overlap(const Tensor& out, const Tensor& in, const char* op) {
  TT_CHECK(get_overlap_status(out, in) != MemOverlapStatus::Partial, op, ": unsupported operation: some elements "
           "of the input tensor and the written-to tensor refer to a single memory location. Please clone() the "
           "tensor before performing the operation.");
}
/// out = f(a, s) for an int64 tensor a and an int64 scalar s, computed in int64 (exact: the
/// scalar never passes through a double; f is expected to wrap modulo 2^64, as AddOp does).
template <class F>
Tensor scalar_int64(const Tensor& a0, int64_t s, F f, const char* op) {
  check_device(a0, op);
  detail::check_functor<F>(a0.device(), op);
  TT_CHECK(a0.dtype() == kInt64, op, ": expected an int64 tensor, got ", dtype_name(a0.dtype()));
  const Tensor a = contiguous(a0);
  Tensor out = make_tensor(a.sizes(), kInt64, a.device());
  detail::run_scalar(a.device(), a.data_ptr<int64_t>(), s, out.data_ptr<int64_t>(), a.numel(), f);
  return out;
}

/// In place: self = f(self, s) for an int64 self and an int64 scalar s (exact, any strides).
template <class F>
void scalar_int64_(Tensor& self, int64_t s, F f, const char* op);

/// In place: self = f(self, other) with other broadcast to self's shape (self keeps its dtype).
/// When other shares memory with self in any layout but the same one, it is read from a copy.
/// self and other must be on one device (other may not be a CPU tensor for a CUDA self: as
/// PyTorch's in-place ops, except copy_, which moves data across devices before calling this).
template <class F>
void binary_(Tensor& self, const Tensor& other0, F f, const char* op) {
  check_device(self, op);
  check_device(other0, op);
  const Device dev = detail::common_device(op, {&self, &other0});
  detail::check_functor<F>(dev, op);
  Shape shape = broadcast_shapes(self.sizes(), other0.sizes(), op);
  TT_CHECK(shape == self.sizes(), op, ": output with shape ", shape_str(self.sizes()),
           " doesn't match the broadcast shape ", shape_str(shape));
  // (on a GPU the elements run in parallel: a self that repeats a location would race)
  TT_CHECK(dev.is_cpu() || has_internal_overlap(self) != MemOverlap::Yes, op, ": not implemented for CUDA tensors "
           "yet: the written-to tensor repeats a memory location (shape ", shape_str(self.sizes()), ", strides ",
           shape_str(self.strides()), ")");
  if (via_float32(dev, self.dtype(), {&other0})) {  // computed in float32, rounded once into self
    const Tensor r = binary(to_dtype(self, kFloat32), to_dtype(other0, kFloat32), f, op);
    copy_into_strided(to_dtype(r, self.dtype()), self);
    return;
  }
  Tensor other = to_dtype(other0, self.dtype());
  if (other.impl()->storage == self.impl()->storage) {
    const MemOverlapStatus st = get_overlap_status(self, other);
    if (st == MemOverlapStatus::Partial || st == MemOverlapStatus::TooHard) other = clone(other);
  }
  Strides so = broadcast_strides(other.sizes(), other.strides(), shape);
  detail::dispatch_kernel_dtypes<F>(self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    detail::run_binary_inplace(dev, self.data_ptr<T>(), self.strides(), other.data_ptr<T>(), so, shape,
                               backend::ElementOp<T, T, F>{f});
  });
}

/// In place: self = f(self) (any strides).
template <class F>
void unary_(Tensor& self, F f, const char* op) {
  check_device(self, op);
  detail::check_functor<F>(self.device(), op);
  if (via_float32(self.device(), self.dtype())) {  // computed in float32, rounded once into self
    copy_into_strided(to_dtype(unary(to_dtype(self, kFloat32), f, op), self.dtype()), self);
    return;
  }
  detail::dispatch_kernel_dtypes<F>(self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* s = self.data_ptr<T>();
    detail::run_binary_inplace(self.device(), s, self.strides(), s, self.strides(), self.sizes(),
                               backend::ElementOp<T, T, backend::FirstOnly<F>>{{f}});
  });
}

template <class F>
void scalar_int64_(Tensor& self, int64_t s, F f, const char* op) {
  TT_CHECK(self.dtype() == kInt64, op, ": expected an int64 tensor, got ", dtype_name(self.dtype()));
  unary_(self, backend::BindInt64<F>{f, s}, op);
}

// ---- comparisons with a number, pow of two tensors, integer division, clamp, where ------------

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
  dispatch_all(dt, [&](auto tag) {
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
    // check could only report asynchronously and opaquely.
    const Tensor ah = a.device().is_cpu() ? a : to_device(a, Device::cpu());
    const Tensor bh = b.device().is_cpu() ? b : to_device(b, Device::cpu());
    const Shape shape = broadcast_shapes(ah.sizes(), bh.sizes(), op);
    const int64_t* pa = ah.data_ptr<int64_t>();
    const int64_t* pb = bh.data_ptr<int64_t>();
    bool zero = false, overflow = false;
    const backend::Indexer ix = backend::Indexer::make(
        shape, {broadcast_strides(ah.sizes(), ah.strides(), shape), broadcast_strides(bh.sizes(), bh.strides(), shape)},
        op);
    backend::cpu::strided_loop(ix, [&](int64_t, int64_t oa, int64_t ob, int64_t) {
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
  if (is_reduced_floating_point(x0.dtype()))  // computed in float32, rounded once
    return to_dtype(clamp_scalar(to_dtype(x0, kFloat32), lo, hi, op), x0.dtype());
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
  if (is_reduced_floating_point(dt)) {  // computed in float32, rounded once
    return to_dtype(clamp_tensor(to_float32(x), to_float32(lo), to_float32(hi), op), dt);
  }
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
  dispatch_all(dt, [&](auto tag) {  // a selection, no arithmetic: float16/bfloat16 bits are copied
    using T = typename decltype(tag)::type;
    backend::dispatch::ternary_kernel(
        dev, cond.data_ptr<int64_t>(), broadcast_strides(cond.sizes(), cond.strides(), shape), ac.data_ptr<T>(),
        broadcast_strides(ac.sizes(), ac.strides(), shape), bc.data_ptr<T>(),
        broadcast_strides(bc.sizes(), bc.strides(), shape), out.data_ptr<T>(), shape, backend::WhereOp{});
  });
  return out;
}

}  TT_NAMESPACE_END  // namespace tinytorch::ops

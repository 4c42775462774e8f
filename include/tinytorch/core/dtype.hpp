// tinytorch/core/dtype.hpp — element types and the dtype switch.
//
// Five dtypes, as the course needs them:
//   kFloat32 (default; parameters, activations), kFloat64 (gradient checks), kInt64 (labels, indices),
//   kFloat16 and kBFloat16 (mixed precision, chapter 11; core/half.hpp has their formats).
// dispatch(dtype, f) calls f with a tag whose ::type is the C++ scalar type, so a kernel is written
// once as a template and instantiated per dtype without a macro:
//   dispatch(t.dtype(), [&](auto tag) { using T = typename decltype(tag)::type; ... });
// dispatch covers the three compute dtypes. The two 16-bit ones are storage formats: on the CPU an
// op on them converts to float32, runs the float32 kernel and rounds the result once
// (ops/dispatch.hpp, "float16 and bfloat16"; PyTorch's kernels compute them in float, their
// "opmath" type), so no CPU kernel is compiled twice more; the CUDA backend's elementwise, gemm and
// sum kernels also take Half and BFloat16 (reading 16 bits, computing in float). dispatch_all(dtype,
// f) covers all five, for what moves or converts elements (copies, casts, fill, reading an element)
// and for those CUDA kernels; dispatch and dispatch_floating on a 16-bit dtype throw PyTorch's
// "<op>" not implemented for 'Half'.
// Names follow PyTorch: torch.float32 prints as "torch.float32".
// Chapter: chapters/01-training-loop.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END
#include "tinytorch/core/half.hpp"

TT_NAMESPACE_BEGIN

// The order is part of tinytorch's own checkpoint format (serialization.ipp writes the value): append.
enum class DType : uint8_t { Float32, Float64, Int64, Float16, BFloat16 };

constexpr DType kFloat32 = DType::Float32;
constexpr DType kFloat64 = DType::Float64;
constexpr DType kInt64 = DType::Int64;
constexpr DType kFloat = DType::Float32;
constexpr DType kDouble = DType::Float64;
constexpr DType kLong = DType::Int64;
constexpr DType kFloat16 = DType::Float16;
constexpr DType kHalf = DType::Float16;
constexpr DType kBFloat16 = DType::BFloat16;

/// Bytes per element: 4, 8, 8, 2, 2.
inline size_t element_size(DType d) {
  switch (d) {
    case DType::Float32: return 4;
    case DType::Float16:
    case DType::BFloat16: return 2;
    default: return 8;
  }
}
inline bool is_floating_point(DType d) { return d != DType::Int64; }
/// float16 and bfloat16 (PyTorch's at::isReducedFloatingType): stored in 16 bits, computed in float32.
inline bool is_reduced_floating_point(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

/// "torch.float32", "torch.float64", "torch.int64", "torch.float16", "torch.bfloat16" (as PyTorch
/// prints them).
inline std::string dtype_name(DType d) {
  switch (d) {
    case DType::Float32: return "torch.float32";
    case DType::Float64: return "torch.float64";
    case DType::Int64: return "torch.int64";
    case DType::Float16: return "torch.float16";
    case DType::BFloat16: return "torch.bfloat16";
  }
  return "?";
}

/// "Float", "Double", "Long", "Half", "BFloat16": PyTorch's scalar type names, as some of its error
/// messages print them ("result type Float can't be cast to the desired output type Long").
inline std::string scalar_type_name(DType d) {
  switch (d) {
    case DType::Float32: return "Float";
    case DType::Float64: return "Double";
    case DType::Int64: return "Long";
    case DType::Float16: return "Half";
    case DType::BFloat16: return "BFloat16";
  }
  return "?";
}

/// "torch.FloatTensor", "torch.DoubleTensor", "torch.LongTensor" (PyTorch's legacy type names, as
/// in "expand(torch.FloatTensor{[]}, size=[-2])").
inline std::string tensor_type_name(DType d) { return "torch." + scalar_type_name(d) + "Tensor"; }

template <typename T> struct TypeTag { using type = T; };

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<Half>() { return DType::Float16; }
template <> constexpr DType dtype_of<BFloat16>() { return DType::BFloat16; }

namespace detail {
/// PyTorch's check when a number becomes a float32/float16/bfloat16 value (full, fill_; c10's
/// checked_convert): a finite value beyond the type's largest (3.4028e38; 65504; 3.3895e38)
/// throws "<op>: value cannot be converted to type float without overflow" (at::Half,
/// at::BFloat16 for the 16-bit types); inf and NaN are kept. float64 and int64: no check here.
inline void check_fits(const char* op, double v, DType d) {
  if (!(is_reduced_floating_point(d) || d == DType::Float32) || !(v == v) || v == 1.0 / 0.0 || v == -1.0 / 0.0)
    return;
  const double max = d == DType::Float16 ? 65504.0 : d == DType::BFloat16 ? 3.3895313892515355e38 : 3.4028234663852886e38;
  if (v > max || v < -max)
    throw Error(str_cat(op, ": value cannot be converted to type ",
                        d == DType::Float32 ? std::string("float") : "at::" + std::string(scalar_type_name(d)),
                        " without overflow (got ", v, ")"));
}

/// v as a number of dtype d: rounded to nearest even for float32, float16 and bfloat16 (the value
/// a 0-d tensor of that dtype would hold); float64 and int64: v unchanged. Used where a number
/// joins a 16-bit op (ops/elementwise.hpp's scalar ops) and for clip_grad_norm_'s intermediates.
inline double round_to(double v, DType d) {
  switch (d) {
    case DType::Float32: return static_cast<float>(v);
    case DType::Float16: return static_cast<float>(Half(v));
    case DType::BFloat16: return static_cast<float>(BFloat16(v));
    default: return v;
  }
}

/// PyTorch's error for a kernel without a 16-bit instantiation: "<op>" not implemented for 'Half'.
[[noreturn]] inline void throw_not_implemented_for(const char* op, DType d) {
  throw Error(str_cat("\"", op, "\" not implemented for '", scalar_type_name(d), "'"));
}
}  // namespace detail

/// Calls f(TypeTag<T>{}) for the scalar type T of `d`: float32, float64 or int64. A 16-bit float
/// throws (the op should have converted it to float32 first; `op` names it in the error).
template <typename F>
decltype(auto) dispatch(DType d, F&& f, const char* op = "dispatch") {
  switch (d) {
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    case DType::Int64: return f(TypeTag<int64_t>{});
    default: break;
  }
  detail::throw_not_implemented_for(op, d);
}

/// Like dispatch, over all five dtypes (float16 as Half, bfloat16 as BFloat16), for code that moves
/// or converts elements and does no arithmetic on them (PyTorch's AT_DISPATCH_ALL_TYPES_AND2).
template <typename F>
decltype(auto) dispatch_all(DType d, F&& f) {
  switch (d) {
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    case DType::Int64: return f(TypeTag<int64_t>{});
    case DType::Float16: return f(TypeTag<Half>{});
    case DType::BFloat16: return f(TypeTag<BFloat16>{});
  }
  throw Error("dispatch_all: unknown dtype");
}

/// Like dispatch, but only for float32/float64; `op` names the caller in the error.
template <typename F>
decltype(auto) dispatch_floating(DType d, const char* op, F&& f) {
  switch (d) {
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    case DType::Float16:
    case DType::BFloat16: detail::throw_not_implemented_for(op, d);
    default: break;
  }
  throw Error(detail::str_cat(op, ": expected a floating point tensor (float32 or float64), got ",
                              dtype_name(d)));
}

TT_NAMESPACE_END  // namespace tinytorch

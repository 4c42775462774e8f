// tinytorch/core/dtype.hpp — element types and the dtype switch.
//
// Three dtypes, as the course needs them:
//   kFloat32 (default; parameters, activations), kFloat64 (gradient checks), kInt64 (labels, indices).
// dispatch(dtype, f) calls f with a tag whose ::type is the C++ scalar type, so a kernel is written
// once as a template and instantiated per dtype without a macro:
//   dispatch(t.dtype(), [&](auto tag) { using T = typename decltype(tag)::type; ... });
// Names follow PyTorch: torch.float32 prints as "torch.float32".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "check.hpp"
#include "config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN

enum class DType : uint8_t { Float32, Float64, Int64 };

constexpr DType kFloat32 = DType::Float32;
constexpr DType kFloat64 = DType::Float64;
constexpr DType kInt64 = DType::Int64;
constexpr DType kFloat = DType::Float32;
constexpr DType kDouble = DType::Float64;
constexpr DType kLong = DType::Int64;

inline size_t element_size(DType d) { return d == DType::Float32 ? 4 : 8; }
inline bool is_floating_point(DType d) { return d != DType::Int64; }

/// "torch.float32", "torch.float64", "torch.int64" (as PyTorch prints them).
inline std::string dtype_name(DType d) {
  switch (d) {
    case DType::Float32: return "torch.float32";
    case DType::Float64: return "torch.float64";
    case DType::Int64: return "torch.int64";
  }
  return "?";
}

/// "Float", "Double", "Long": PyTorch's scalar type names, as some of its error messages print them
/// ("result type Float can't be cast to the desired output type Long").
inline std::string scalar_type_name(DType d) {
  switch (d) {
    case DType::Float32: return "Float";
    case DType::Float64: return "Double";
    case DType::Int64: return "Long";
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

/// Calls f(TypeTag<T>{}) for the scalar type T of `d`.
template <typename F>
decltype(auto) dispatch(DType d, F&& f) {
  switch (d) {
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    case DType::Int64: return f(TypeTag<int64_t>{});
  }
  throw Error("dispatch: unknown dtype");
}

/// Like dispatch, but only for float32/float64; `op` names the caller in the error.
template <typename F>
decltype(auto) dispatch_floating(DType d, const char* op, F&& f) {
  switch (d) {
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    default: break;
  }
  throw Error(detail::str_cat(op, ": expected a floating point tensor (float32 or float64), got ",
                              dtype_name(d)));
}

TT_NAMESPACE_END  // namespace tinytorch

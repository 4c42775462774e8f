// tinytorch/ops/item.hpp — reading elements on the host: Tensor::item, Tensor::at, Tensor::tolist.
//
//   t.item<T>()        the one element of a one-element tensor, converted to T (torch's .item())
//   t.at<T>({i, j})    the element at a multi-index (tests and printing; slow)
//   t.tolist<T>()      every element in row-major order, converted to T (torch's .tolist(), flat)
// The three are templates over T (declared in tensor.hpp) and read through two functions that
// are compiled with the library: read_element (one element's bytes, one small device-to-host copy
// for a GPU tensor) and host_contiguous (a contiguous CPU copy, or t itself when it is one).
// Conversions are static_cast from the stored dtype, as PyTorch's item(). Errors (tinytorch::Error):
// item() on a tensor of more than one element ("a Tensor with 6 elements cannot be converted to
// Scalar"), at() with the wrong number of indices or one out of bounds (naming index and shape),
// an undefined tensor, or a CUDA tensor in a build without the CUDA backend.
// Chapter: chapters/01-training-loop.md. Reference: torch.Tensor.item / tolist.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "tinytorch/tensor.hpp"
#include "tinytorch/core/dtype.hpp"   // dispatch
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN

namespace detail {
/// The bytes of one element of t, at element offset `offset` from t's data pointer, copied to the
/// host (one small copy for a GPU tensor). Throws as ops::check_device (named `op`) for an
/// undefined tensor or a device this build cannot reach.
struct ElementBytes {
  alignas(8) unsigned char bytes[8];
};
TT_DECL ElementBytes read_element(const Tensor& t, int64_t offset, const char* op);
/// t's elements in row-major order in a contiguous CPU tensor (t itself when it already is one).
TT_DECL Tensor host_contiguous(const Tensor& t);
/// The element read_element copied, converted to T with static_cast (as torch's item()). A
/// floating value read as an integer type must fit it (NaN, inf and 1e30 do not): PyTorch's
/// checked_convert error, "<op>: value cannot be converted to type int64_t without overflow",
/// instead of an out-of-range conversion (undefined behaviour in C++).
template <typename T> T element_as(const Tensor& t, int64_t offset, const char* op) {
  const ElementBytes b = read_element(t, offset, op);
  return dispatch_all(t.dtype(), [&](auto tag) -> T {
    using S = typename decltype(tag)::type;
    S v;
    std::memcpy(&v, b.bytes, sizeof(S));
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_integral_v<S>) {
      const double d = static_cast<double>(v);
      // T's range as [lo, hi): min (0 or -2^(bits-1)) and max + 1 (a power of two), exact doubles
      constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
      constexpr double hi = (static_cast<double>(std::numeric_limits<T>::max() / 2) + 1.0) * 2.0;
      TT_CHECK(d >= lo && d < hi, op, ": value cannot be converted to type ",  // false for NaN too
               std::is_same_v<T, int64_t> ? "int64_t" : "an integer type", " without overflow (got ", d, ")");
    }
    return static_cast<T>(v);
  });
}
}  // namespace detail

template <typename T> T Tensor::at(const std::vector<int64_t>& index) const {
  TT_CHECK(static_cast<int64_t>(index.size()) == dim(), "at: index ", shape_str(index), " has ", index.size(),
           " entries for a tensor of shape ", shape_str(sizes()));
  int64_t off = 0;
  for (int64_t d = 0; d < dim(); ++d) {
    TT_CHECK(index[d] >= 0 && index[d] < sizes()[d], "at: index ", shape_str(index),
             " is out of bounds for shape ", shape_str(sizes()));
    off += index[d] * strides()[d];
  }
  return detail::element_as<T>(*this, off, "at");
}
template <typename T> T Tensor::item() const {
  TT_CHECK(numel() == 1, "item: a Tensor with ", numel(), " elements cannot be converted to Scalar");
  return detail::element_as<T>(*this, 0, "item");
}
template <typename T> std::vector<T> Tensor::tolist() const {
  const Tensor c = detail::host_contiguous(*this);  // a GPU tensor is read through a host copy
  std::vector<T> out(static_cast<size_t>(numel()));
  dispatch_all(dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* p = c.data_ptr<S>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(p[i]);
  });
  return out;
}

TT_NAMESPACE_END  // namespace tinytorch

#if TT_HEADER_ONLY
#include "tinytorch/ops/item.ipp"
#endif

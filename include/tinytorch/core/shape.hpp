// tinytorch/core/shape.hpp — shapes, strides, broadcasting; Size2 (the (h, w) arguments of conv and pooling).
//
// A tensor of shape (d0, d1, ..., dn-1) stored row-major ("contiguous") has strides
//   stride[n-1] = 1,  stride[i] = stride[i+1] * d[i+1],
// and element (i0, ..., in-1) lives at offset + sum_k i_k * stride[k] (in elements, not bytes).
// Broadcasting follows PyTorch/NumPy: align shapes on the right; two sizes are compatible when
// equal or when one of them is 1; a missing leading dim counts as 1.
//   broadcast_shapes([4, 1, 3], [2, 1]) = [4, 2, 3]
// Chapter: chapters/01-training-loop.md; reference: pytorch.org/docs/stable/notes/broadcasting.html
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/small_vector.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN

/// Sizes of each dim. Up to 6 dims live inside the object (no heap allocation; core/small_vector.hpp).
using Shape = SmallVector<int64_t, 6>;
using Strides = SmallVector<int64_t, 6>;  ///< element strides of each dim

/// "[2, 3]" — how shapes appear in error messages (PyTorch prints torch.Size([2, 3])).
inline std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

/// Number of elements: product of sizes (1 for a 0-d tensor, 0 when any size is 0). Throws when
/// the product does not fit in int64 (PyTorch: "numel: integer multiplication overflow").
inline int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : s) {
    if (d == 0) return 0;
    overflow |= __builtin_mul_overflow(n, d, &n);
  }
  TT_CHECK(!overflow, "numel: integer multiplication overflow (shape ", shape_str(s), ")");
  return n;
}

/// Row-major strides for a shape (a size 0 counts as 1, as in PyTorch). The product is taken
/// modulo 2^64, as PyTorch's int64 arithmetic wraps: it can overflow only for a zero-element
/// shape (any other shape was refused for its numel first), whose strides address nothing, e.g.
/// [0, 2^38, 2^31] -> strides [0, 2^31, 1] in both. (Signed overflow here was undefined
/// behaviour, found by tests/fuzz/fuzz_checkpoint under UBSan.)
inline Strides contiguous_strides(const Shape& s) {
  Strides st(s.size());
  uint64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = static_cast<int64_t>(acc);
    acc *= s[i] > 0 ? static_cast<uint64_t>(s[i]) : 1;
  }
  return st;
}

/// Wraps a possibly negative dim into [0, ndim). `op` names the caller for the error message.
/// A 0-d tensor accepts dim -1 and 0 (as PyTorch does).
inline int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = ndim > 0 ? ndim : 1;
  TT_CHECK(dim >= -n && dim < n, op, ": dimension out of range (expected to be in range of [", -n,
           ", ", n - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

/// Broadcast shape of a and b; throws naming both shapes when they are incompatible.
inline Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op = "broadcast") {
  size_t n = a.size() > b.size() ? a.size() : b.size();
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    TT_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", shape_str(a), " and ", shape_str(b),
             " cannot be broadcast together (size ", da, " vs ", db, " at dim ", i, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// Strides that read a tensor of shape `s`/`st` as if it had the (broadcast) shape `out`:
/// broadcast dims get stride 0.
inline Strides broadcast_strides(const Shape& s, const Strides& st, const Shape& out) {
  Strides r(out.size(), 0);
  size_t lead = out.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) r[lead + i] = (s[i] == 1 && out[lead + i] != 1) ? 0 : st[i];
  return r;
}

/// An int used for both spatial dims, or an (h, w) pair: `2` is (2, 2), `{3, 1}` is (3, 1)
/// (PyTorch's _size_2_t in Python, ExpandingArray<2> in C++).
struct Size2 {
  int64_t h, w;
  Size2(int64_t v) : h(v), w(v) {}  // NOLINT: implicit on purpose, as PyTorch accepts an int
  Size2(int64_t h, int64_t w) : h(h), w(w) {}
  bool operator==(const Size2& o) const { return h == o.h && w == o.w; }
  bool operator!=(const Size2& o) const { return !(*this == o); }
};

namespace detail {
/// "(3, 3)": how PyTorch prints a pair in reprs and messages.
inline std::string pair_str(const Size2& s) { return str_cat("(", s.h, ", ", s.w, ")"); }
}  // namespace detail

TT_NAMESPACE_END  // namespace tinytorch

// tinytorch/ops/print.hpp — tensor printing, character for character as PyTorch prints.
// A port of torch/_tensor_str.py (PyTorch 1.13; unchanged in 2.x for dense CPU tensors) with the
// default print options: precision 4, threshold 1000, edgeitems 3, linewidth 80, sci_mode None.
//   tensor([[1., 2.]], requires_grad=True)            all finite values integral -> "int mode"
//   tensor([ 1.5000, -2.2500])                         fixed: 4 decimals, padded to widest element
//   tensor([1.0000e-05, 1.0000e+00])                   sci: max/min > 1000, max > 1e8 or min < 1e-4
//   tensor([1, 2, 3])                                  int64 (no dtype suffix: it is a default dtype)
//   tensor(3.5000)                                     0-d
//   tensor([], size=(0, 3))                            empty: size= unless 1-D, dtype= unless float32
//   tensor([0.1000, 0.2000], dtype=torch.float64)      float64 is not the default dtype (nor are
//   tensor([0.1000, 0.2000], dtype=torch.float16)      float16 and bfloat16: values printed as floats)
//   tensor([   0,    1,    2,  ..., 1997, 1998, 1999]) numel > 1000: 3 edge items per dim + "..."
// The pieces, named after their Python originals:
//   Formatter            _Formatter: picks int/fixed/sci mode and the column width from the values
//                        that will be shown (get_summarized_data), ignoring zeros, nan and inf.
//   vector_str           _vector_str: one row, wrapped at linewidth - indent, ", " between elements.
//   tensor_str_rec       _tensor_str_with_formatter: nests rows in brackets; dim d is separated by
//                        "," + (d-1) newlines + indent, so 3-D blocks get one blank line between.
//   format_tensor_body   _tensor_str: the "[...]" part.
//   add_suffixes         _add_suffixes: ", suffix" or ",\n" + 7 spaces + suffix when the last line
//                        would pass linewidth.
//   format_tensor        _str_intern: "tensor(" + body + suffixes + ")".
// Numbers are formatted as Python's str.format does ("{:.4f}", "{:.4e}", "{:.0f}"): printf gives
// the same digits (both round the exact binary value correctly) except that Python always prints
// "nan" and "inf"/"-inf", which we special-case. A float32 tensor is formatted through the double
// of each float32 value, exactly as PyTorch does via Tensor.item(). int64 tensors are printed from
// their int64 values (format_tensor_int64): exact over the whole range, 2^53 + 1 included; the
// double overloads, given an int64 dtype, print each value rounded to an integer (exact within
// +-2^53).
// Chapter: chapters/01-training-loop.md. Reference: torch/_tensor_str.py (tests/test_print.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "tinytorch/core/dtype.hpp"
#include "tinytorch/core/shape.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN
namespace detail {

// PRINT_OPTS defaults of torch/_tensor_str.py (torch.set_printoptions(profile="default")).
constexpr int kPrintPrecision = 4;       ///< digits after the decimal point
constexpr int64_t kPrintThreshold = 1000;  ///< summarise when numel > threshold
constexpr int64_t kPrintEdgeItems = 3;   ///< items kept at each end of a summarised dim
constexpr int kPrintLineWidth = 80;      ///< characters per line

// --- Python-style number formatting ------------------------------------------------------------

/// Python's "{:.<prec>f}" / "{:.<prec>e}".format(v): printf, but nan/inf spelled as Python does.
inline std::string py_format_float(double v, int prec, char conversion /* 'f' or 'e' */) {
  if (std::isnan(v)) return "nan";  // Python never prints "-nan"
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  const char fmt[] = {'%', '.', '*', conversion, '\0'};
  int n = std::snprintf(nullptr, 0, fmt, prec, v);
  std::string out(static_cast<size_t>(n), '\0');
  std::snprintf(&out[0], out.size() + 1, fmt, prec, v);
  return out;
}

/// Python's "{}".format(int).
inline std::string py_format_int(int64_t v) { return std::to_string(static_cast<long long>(v)); }
/// The same for an int64 value carried as a double (exact within +-2^53; NaN and values beyond
/// int64's range, which no int64 tensor holds, print as "nan" / "inf" / "-inf").
inline std::string py_format_int(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return py_format_float(v, 0, 'f');
  return py_format_int(static_cast<int64_t>(v));
}

/// Left-pads s with spaces to `width` characters (no-op when already wider).
inline std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

/// Python's str(tuple(shape)): "(0,)", "(0, 3)".
inline std::string py_tuple_str(const Shape& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + (shape.size() == 1 ? ",)" : ")");
}

// --- _Formatter --------------------------------------------------------------------------------

/// Chooses how every element of one tensor is printed, from the elements that will be shown.
///   int64:    "{}", width = longest.
///   floating: looks only at nonzero finite values (none -> int mode, width 1):
///     all integral            -> int mode "1." (or sci if max/min > 1000 or max > 1e8)
///     otherwise               -> fixed "1.5000" (or sci if max/min > 1000, max > 1e8, min < 1e-4)
///   width = longest formatted nonzero finite value; zeros/nan/inf are padded to it, never widen it.
class Formatter {
 public:
  Formatter(const std::vector<double>& shown, bool floating) : floating_(floating) {
    if (!floating_) {
      for (double v : shown) max_width_ = std::max(max_width_, py_format_int(v).size());
      return;
    }
    std::vector<double> nonzero_finite;
    for (double v : shown)
      if (std::isfinite(v) && v != 0.0) nonzero_finite.push_back(v);
    if (nonzero_finite.empty()) return;  // no valid number: int mode, width 1

    double abs_min = std::fabs(nonzero_finite[0]), abs_max = abs_min;
    for (double v : nonzero_finite) {
      abs_min = std::min(abs_min, std::fabs(v));
      abs_max = std::max(abs_max, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }

    if (int_mode_) {
      // Integral floats print as "3." -- the "+ 1" makes room for the trailing dot.
      sci_mode_ = abs_max / abs_min > 1000.0 || abs_max > 1.0e8;
      for (double v : nonzero_finite) {
        size_t len = sci_mode_ ? py_format_float(v, kPrintPrecision, 'e').size()
                               : py_format_float(v, 0, 'f').size() + 1;
        max_width_ = std::max(max_width_, len);
      }
    } else {
      sci_mode_ = abs_max / abs_min > 1000.0 || abs_max > 1.0e8 || abs_min < 1.0e-4;
      for (double v : nonzero_finite)
        max_width_ = std::max(max_width_, py_format_float(v, kPrintPrecision, sci_mode_ ? 'e' : 'f').size());
    }
  }

  /// An int64 tensor's formatter: "{}" of each value, width = longest.
  explicit Formatter(const std::vector<int64_t>& shown) : floating_(false) {
    for (int64_t v : shown) max_width_ = std::max(max_width_, py_format_int(v).size());
  }

  size_t width() const { return max_width_; }

  /// One int64 element, right-aligned to width().
  std::string format(int64_t v) const { return pad_left(py_format_int(v), max_width_); }

  /// One element, right-aligned to width().
  std::string format(double v) const {
    std::string s;
    if (!floating_) {
      s = py_format_int(v);
    } else if (sci_mode_) {
      s = py_format_float(v, kPrintPrecision, 'e');
    } else if (int_mode_) {
      s = py_format_float(v, 0, 'f');
      if (std::isfinite(v)) s += ".";
    } else {
      s = py_format_float(v, kPrintPrecision, 'f');
    }
    return pad_left(s, max_width_);
  }

 private:
  bool floating_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  size_t max_width_ = 1;
};

// --- walking a row-major tensor ----------------------------------------------------------------

/// A read-only view of the row-major data: element (i0, ..., in-1) is values[sum_k i_k*strides[k]].
/// V is double (floating tensors) or int64_t (int64 tensors, printed exactly).
template <class V>
struct PrintView {
  const Shape& shape;
  const std::vector<V>& values;
  Strides strides;
};

/// The indices of dim `d` that are printed: all, or the first and last kPrintEdgeItems when
/// summarising a dim longer than 2 * edgeitems (-1 marks where "..." goes).
inline std::vector<int64_t> shown_indices(int64_t size, bool summarize) {
  std::vector<int64_t> idx;
  if (summarize && size > 2 * kPrintEdgeItems) {
    for (int64_t i = 0; i < kPrintEdgeItems; ++i) idx.push_back(i);
    idx.push_back(-1);
    for (int64_t i = size - kPrintEdgeItems; i < size; ++i) idx.push_back(i);
  } else {
    for (int64_t i = 0; i < size; ++i) idx.push_back(i);
  }
  return idx;
}

/// get_summarized_data: collects the values that will be printed (what _Formatter looks at).
template <class V>
void collect_shown(const PrintView<V>& t, size_t d, int64_t offset, bool summarize, std::vector<V>& out) {
  if (d == t.shape.size()) {
    out.push_back(t.values[static_cast<size_t>(offset)]);
    return;
  }
  for (int64_t i : shown_indices(t.shape[d], summarize))
    if (i >= 0) collect_shown(t, d + 1, offset + i * t.strides[d], summarize, out);
}

/// _vector_str: a 1-D row "[a, b, c]", wrapped so that a line holds
/// max(1, floor((linewidth - indent) / (width + 2))) elements; continuation lines start at indent+1.
template <class V>
std::string vector_str(const PrintView<V>& t, int64_t offset, int indent, bool summarize, const Formatter& fmt) {
  const size_t d = t.shape.size() - 1;
  const double element_length = static_cast<double>(fmt.width() + 2);  // ", " included
  const int64_t per_line =
      std::max<int64_t>(1, static_cast<int64_t>(std::floor((kPrintLineWidth - indent) / element_length)));

  std::vector<std::string> data;  // " ..." counts as an element, as in PyTorch
  for (int64_t i : shown_indices(t.shape[d], summarize))
    data.push_back(i < 0 ? " ..." : fmt.format(t.values[static_cast<size_t>(offset + i * t.strides[d])]));

  std::string out = "[";
  for (size_t i = 0; i < data.size(); ++i) {
    if (i > 0) out += (i % per_line == 0) ? ",\n" + std::string(indent + 1, ' ') : ", ";
    out += data[i];
  }
  return out + "]";
}

/// _tensor_str_with_formatter: the sub-tensor starting at dim d, `offset`.
template <class V>
std::string tensor_str_rec(const PrintView<V>& t, size_t d, int64_t offset, int indent, bool summarize,
                           const Formatter& fmt) {
  const size_t dims_left = t.shape.size() - d;
  if (dims_left == 0) return fmt.format(t.values[static_cast<size_t>(offset)]);  // _scalar_str
  if (dims_left == 1) return vector_str(t, offset, indent, summarize, fmt);

  // Slices of a k-D tensor are separated by "," + (k-1) newlines + (indent+1) spaces.
  const std::string sep = "," + std::string(dims_left - 1, '\n') + std::string(indent + 1, ' ');
  std::string out = "[";
  bool first = true;
  for (int64_t i : shown_indices(t.shape[d], summarize)) {
    if (!first) out += sep;
    first = false;
    out += i < 0 ? "..." : tensor_str_rec(t, d + 1, offset + i * t.strides[d], indent + 1, summarize, fmt);
  }
  return out + "]";
}

/// _tensor_str for values of type V (double or int64_t); see format_tensor_body.
template <class V>
std::string format_tensor_body_impl(const Shape& shape, const std::vector<V>& values, DType dtype, int indent) {
  const int64_t numel = numel_of(shape);
  TT_CHECK(static_cast<int64_t>(values.size()) == numel, "format_tensor: shape ", shape_str(shape),
           " has ", numel, " elements but ", values.size(), " values were given");
  if (numel == 0) return "[]";

  const bool summarize = numel > kPrintThreshold;
  PrintView<V> t{shape, values, contiguous_strides(shape)};
  std::vector<V> shown;
  if (summarize) {
    collect_shown(t, 0, 0, true, shown);
  }
  const std::vector<V>& look_at = summarize ? shown : values;
  if constexpr (std::is_same_v<V, int64_t>) {
    (void)dtype;
    return tensor_str_rec(t, 0, 0, indent, summarize, Formatter(look_at));
  } else {
    return tensor_str_rec(t, 0, 0, indent, summarize, Formatter(look_at, is_floating_point(dtype)));
  }
}

/// _tensor_str: the bracketed data of a tensor, e.g. "[[1., 2.],\n        [3., 4.]]" or "3.5000".
/// `values` is row-major with numel(shape) entries (float32 data as the doubles of its floats).
/// `indent` is the column where the body starts (7 = len("tensor(")). Empty tensors give "[]".
inline std::string format_tensor_body(const Shape& shape, const std::vector<double>& values,
                                      DType dtype, int indent = 7) {
  return format_tensor_body_impl(shape, values, dtype, indent);
}

/// _add_suffixes: appends ", suffix" for each suffix, or ",\n" + indent spaces + suffix when the
/// current last line plus the suffix would exceed the line width; then the closing ")".
inline std::string add_suffixes(const std::string& tensor_str, const std::vector<std::string>& suffixes,
                                int indent) {
  std::string out = tensor_str;
  // Python: len(s) - s.rfind("\n") + 1, where rfind gives -1 when there is no newline.
  const size_t nl = tensor_str.rfind('\n');
  int64_t last_line_len = static_cast<int64_t>(tensor_str.size()) -
                          (nl == std::string::npos ? -1 : static_cast<int64_t>(nl)) + 1;
  for (const std::string& suffix : suffixes) {
    const int64_t suffix_len = static_cast<int64_t>(suffix.size());
    if (last_line_len + suffix_len + 2 > kPrintLineWidth) {
      out += ",\n" + std::string(indent, ' ') + suffix;
      last_line_len = indent + suffix_len;
    } else {
      out += ", " + suffix;
      last_line_len += suffix_len + 2;
    }
  }
  return out + ")";
}

/// (The implementation of format_tensor and format_tensor_int64 below.)
template <class V>
std::string format_tensor_impl(const Shape& shape, const std::vector<V>& values, DType dtype,
                               const std::string& suffix_kwargs, const std::string& device_kwarg) {
  const std::string prefix = "tensor(";
  const int indent = static_cast<int>(prefix.size());
  std::vector<std::string> suffixes;
  if (!device_kwarg.empty()) suffixes.push_back(device_kwarg);  // PyTorch names the device first
  std::string body;
  if (numel_of(shape) == 0) {
    // Like NumPy, the shape is shown unless it is (0,); with no elements to show, every dtype
    // other than the default float32 is named (int64 included).
    if (shape.size() != 1) suffixes.push_back("size=" + py_tuple_str(shape));
    if (dtype != DType::Float32) suffixes.push_back("dtype=" + dtype_name(dtype));
    TT_CHECK(values.empty(), "format_tensor: empty tensor given ", values.size(), " values");
    body = "[]";
  } else {
    // float32 (default dtype) and int64 are "default dtypes" and are never named.
    if (dtype != DType::Float32 && dtype != DType::Int64) suffixes.push_back("dtype=" + dtype_name(dtype));
    body = format_tensor_body_impl(shape, values, dtype, indent);
  }
  if (!suffix_kwargs.empty()) suffixes.push_back(suffix_kwargs);
  return add_suffixes(prefix + body, suffixes, indent);
}

/// _str_intern for a dense CPU tensor (format_tensor_impl<V>, V = double or int64_t): what print(t) / repr(t) shows, e.g.
///   format_tensor({2}, {0.1, 0.2}, kFloat64, "requires_grad=True")
///     == "tensor([0.1000, 0.2000], dtype=torch.float64, requires_grad=True)"
/// Suffix order follows PyTorch: size= (empty, non-1-D only), dtype= (float64, float16, bfloat16
/// always; int64 only when empty), then suffix_kwargs -- the caller's already formatted "grad_fn=<MulBackward0>" or
/// "requires_grad=True" (empty string for none), treated as one suffix. device_kwarg: "" for a CPU
/// tensor, else "device='cuda:0'", which PyTorch puts before every other suffix.
/// Throws tinytorch::Error when values.size() != numel(shape).
inline std::string format_tensor(const Shape& shape, const std::vector<double>& values, DType dtype,
                                 const std::string& suffix_kwargs, const std::string& device_kwarg = "") {
  return format_tensor_impl(shape, values, dtype, suffix_kwargs, device_kwarg);
}
/// format_tensor for an int64 tensor, from its int64 values: exact for every int64
/// ("tensor([9007199254740993])", where a double would print 9007199254740992).
inline std::string format_tensor_int64(const Shape& shape, const std::vector<int64_t>& values,
                                       const std::string& suffix_kwargs, const std::string& device_kwarg = "") {
  return format_tensor_impl(shape, values, DType::Int64, suffix_kwargs, device_kwarg);
}

}  // namespace detail
TT_NAMESPACE_END  // namespace tinytorch

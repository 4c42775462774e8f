// tests/test_elementwise_reduce.cpp — elementwise and reduction ops against PyTorch, case by case:
// min / argmin / amax / amin, sum / mean over a list of dims, maximum / minimum, pow of tensors,
// floor_divide / remainder / fmod, div with a rounding mode, trunc, comparisons with tensors and
// numbers, clamp with optional and tensor bounds, where. (+ - * / and the unary functions are
// checked case by case in test_tensor.cpp / test_autograd.cpp, from gen_ops.py.)
// Every case of tests/reference/gen_elementwise_reduce.py has a C++ twin here (kTwins); the tests
// compare forward values and dtypes, grad_fn names and gradients with PyTorch's
// (elementwise_reduce_ref.hpp), for contiguous and strided inputs, run gradcheck in float64, and
// check the error paths by hand.
// Headers under test: functional.hpp, autograd/functions/{elementwise,reduce}.hpp,
// ops/{elementwise,reduce}.hpp, backend/cpu/{elementwise,reduce}.hpp.
// Chapter: chapters/01-training-loop.md, chapters/02-autograd.md. Tag: [elementwise_reduce].
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <tinytorch/autograd/gradcheck.hpp>
#include <tinytorch/functional.hpp>

#include "reference/elementwise_reduce_ref.hpp"

using namespace tinytorch;
using Catch::Contains;

namespace {
namespace ref = elementwise_reduce_reference;
using V = std::vector<Tensor>;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> vals(const Tensor& t) { return t.tolist<double>(); }

// ---- reference arrays -------------------------------------------------------------------------

const ref::Array* find_array(const std::string& name) {
  for (const auto& a : ref::kArrays)
    if (name == a.name) return &a;
  return nullptr;
}
const ref::Array& array(const std::string& name) {
  const ref::Array* a = find_array(name);
  if (!a) throw std::runtime_error("elementwise_reduce_ref.hpp has no array named " + name);
  return *a;
}
DType dtype_of_code(int code) { return code == 0 ? kFloat32 : code == 1 ? kFloat64 : kInt64; }

/// The reference array `name` as a Tensor: its own dtype (float64 for float arrays when asked),
/// int64 values copied exactly.
Tensor load(const std::string& name, bool requires_grad = false, bool float64 = false) {
  const auto& a = array(name);
  Shape shape(a.shape, a.shape + a.ndim);
  if (a.dtype == 2) {
    Tensor t = zeros(shape, kInt64);
    std::copy(ref::kIntData + a.offset, ref::kIntData + a.offset + a.numel, t.data_ptr<int64_t>());
    return t;
  }
  std::vector<double> values(ref::kData + a.offset, ref::kData + a.offset + a.numel);
  DType dt = float64 ? kFloat64 : dtype_of_code(a.dtype);
  return tensor(values, shape, TensorOptions(dt).requires_grad(requires_grad));
}

V load_inputs(const ref::Case& c, bool requires_grad, bool float64 = false) {
  V in;
  for (int i = 0; i < c.n_inputs; ++i) in.push_back(load(std::string(c.name) + ".in" + std::to_string(i), requires_grad, float64));
  return in;
}

/// "" when `got` matches the reference array `name` (shape; int64 exactly; floats within
/// atol + rtol |ref| with NaN == NaN, equal infinities, and, with `signs`, the sign of a zero),
/// else a description of the first mismatch.
std::string compare(const Tensor& got, const std::string& name, bool signs = false, double rtol = 2e-5,
                    double atol = 2e-6) {
  const auto& a = array(name);
  Shape shape(a.shape, a.shape + a.ndim);
  std::ostringstream os;
  os.precision(17);
  if (!got.defined()) return name + ": got an undefined tensor";
  if (got.sizes() != shape) {
    os << name << ": shape " << shape_str(got.sizes()) << " vs reference " << shape_str(shape);
    return os.str();
  }
  if (a.dtype == 2) {
    if (got.dtype() != kInt64) return name + ": got " + dtype_name(got.dtype()) + ", PyTorch has torch.int64";
    std::vector<int64_t> g = got.tolist<int64_t>();
    for (int64_t i = 0; i < a.numel; ++i)
      if (g[i] != ref::kIntData[a.offset + i]) {
        os << name << ": element " << i << " is " << g[i] << ", PyTorch has " << ref::kIntData[a.offset + i];
        return os.str();
      }
    return "";
  }
  std::vector<double> g = vals(got);
  for (int64_t i = 0; i < a.numel; ++i) {
    double r = ref::kData[a.offset + i], v = g[static_cast<size_t>(i)];
    bool ok = (std::isnan(r) && std::isnan(v)) || (std::isinf(r) && v == r) ||
              std::abs(v - r) <= atol + rtol * std::abs(r);
    if (ok && signs && r == 0) ok = std::signbit(v) == std::signbit(r);
    if (!ok) {
      os << name << ": element " << i << " is " << v << ", PyTorch has " << r << " (shape " << shape_str(shape) << ")";
      return os.str();
    }
  }
  return "";
}

/// The same values as `x` in a non-contiguous layout (reversed-dim strides, or every other element).
Tensor strided_copy(const Tensor& x) {
  NoGradGuard ng;
  if (x.dim() == 0) return x.clone();
  if (x.dim() == 1) return stack({x, zeros_like(x)}, 1).select(1, 0);
  std::vector<int64_t> rev;
  for (int64_t d = x.dim() - 1; d >= 0; --d) rev.push_back(d);
  return x.permute(rev).contiguous().permute(rev);
}

// ---- the C++ twins of gen_elementwise_reduce.py's cases -------------------------------------------------

struct Twin {
  std::string name;
  std::function<Tensor(const V&)> fn;
  std::function<Tensor(const V&)> indices;  // min(dim)'s second result, when the case records it
};

Tensor compare_tt(const std::string& op, const std::string& form, const Tensor& a, const Tensor& b) {
  if (form == "operator") {
    if (op == "eq") return a == b;
    if (op == "ne") return a != b;
    if (op == "lt") return a < b;
    if (op == "le") return a <= b;
    if (op == "gt") return a > b;
    return a >= b;
  }
  if (form == "function") {
    if (op == "eq") return eq(a, b);
    if (op == "ne") return ne(a, b);
    if (op == "lt") return lt(a, b);
    if (op == "le") return le(a, b);
    if (op == "gt") return gt(a, b);
    return ge(a, b);
  }
  if (op == "eq") return a.eq(b);
  if (op == "ne") return a.ne(b);
  if (op == "lt") return a.lt(b);
  if (op == "le") return a.le(b);
  if (op == "gt") return a.gt(b);
  return a.ge(b);
}

Tensor compare_ts(const std::string& op, const std::string& form, const Tensor& a, double s) {
  if (form == "operator") {
    if (op == "eq") return a == s;
    if (op == "ne") return a != s;
    if (op == "lt") return a < s;
    if (op == "le") return a <= s;
    if (op == "gt") return a > s;
    return a >= s;
  }
  if (form == "function") {
    if (op == "eq") return eq(a, s);
    if (op == "ne") return ne(a, s);
    if (op == "lt") return lt(a, s);
    if (op == "le") return le(a, s);
    if (op == "gt") return gt(a, s);
    return ge(a, s);
  }
  if (op == "eq") return a.eq(s);
  if (op == "ne") return a.ne(s);
  if (op == "lt") return a.lt(s);
  if (op == "le") return a.le(s);
  if (op == "gt") return a.gt(s);
  return a.ge(s);
}

const std::vector<Twin>& twins() {
  static const std::vector<Twin> cases = [] {
    auto mind = [](int64_t d, bool k = false) {
      return Twin{"", [=](const V& x) { return std::get<0>(x[0].min(d, k)); },
                  [=](const V& x) { return std::get<1>(min(x[0], d, k)); }};
    };
    auto named = [](std::string n, Twin t) { t.name = std::move(n); return t; };
    std::vector<Twin> c = {
        // min / argmin
        {"min_all", [](const V& x) { return x[0].min(); }, nullptr},
        {"min_all_ties", [](const V& x) { return min(x[0]); }, nullptr},
        {"min_all_nan", [](const V& x) { return x[0].min(); }, nullptr},
        {"max_all_nan", [](const V& x) { return x[0].max(); }, nullptr},
        {"min_all_0d", [](const V& x) { return x[0].min(); }, nullptr},
        named("min_dim", mind(1)),
        named("min_dim_keepdim", mind(0, true)),
        named("min_dim_ties", mind(1)),
        named("min_dim_neg", mind(-2)),
        named("min_dim_nan", mind(1)),
        named("min_dim_int64", mind(1)),
        {"argmin_all_ties", [](const V& x) { return x[0].argmin(); }, nullptr},
        {"argmin_dim_ties", [](const V& x) { return x[0].argmin(1); }, nullptr},
        {"argmin_dim0_keepdim", [](const V& x) { return argmin(x[0], 0, true); }, nullptr},
        {"argmin_nan", [](const V& x) { return x[0].argmin(1); }, nullptr},
        {"argmin_all_nan", [](const V& x) { return argmin(x[0]); }, nullptr},
        // amax / amin
        {"amax_dim", [](const V& x) { return x[0].amax({1}); }, nullptr},
        {"amax_dims_keepdim", [](const V& x) { return amax(x[0], {0, 2}, true); }, nullptr},
        {"amax_all", [](const V& x) { return x[0].amax(); }, nullptr},
        {"amax_neg_dims", [](const V& x) { return x[0].amax({-1, 0}); }, nullptr},
        {"amax_ties", [](const V& x) { return x[0].amax({1}); }, nullptr},
        {"amax_ties_all", [](const V& x) { return x[0].amax({0, 1}); }, nullptr},
        {"amax_nan", [](const V& x) { return x[0].amax({1}); }, nullptr},
        {"amax_int64", [](const V& x) { return x[0].amax({0}); }, nullptr},
        {"amax_0d", [](const V& x) { return x[0].amax(); }, nullptr},
        {"amin_dim", [](const V& x) { return x[0].amin({0}); }, nullptr},
        {"amin_dims", [](const V& x) { return amin(x[0], {1, 2}); }, nullptr},
        {"amin_ties", [](const V& x) { return x[0].amin({1}, true); }, nullptr},
        // maximum / minimum
        {"maximum", [](const V& x) { return maximum(x[0], x[1]); }, nullptr},
        {"maximum_bcast", [](const V& x) { return x[0].maximum(x[1]); }, nullptr},
        {"maximum_ties", [](const V& x) { return maximum(x[0], x[1]); }, nullptr},
        {"maximum_nan", [](const V& x) { return maximum(x[0], x[1]); }, nullptr},
        {"maximum_mixed_dtype", [](const V& x) { return maximum(x[0], x[1]); }, nullptr},
        {"maximum_f32_f64", [](const V& x) { return maximum(x[0], x[1]); }, nullptr},
        {"maximum_int64", [](const V& x) { return maximum(x[0], x[1]); }, nullptr},
        {"max_binary", [](const V& x) { return max(x[0], x[1]); }, nullptr},
        {"minimum", [](const V& x) { return minimum(x[0], x[1]); }, nullptr},
        {"minimum_bcast", [](const V& x) { return x[0].minimum(x[1]); }, nullptr},
        {"minimum_ties", [](const V& x) { return minimum(x[0], x[1]); }, nullptr},
        {"minimum_nan", [](const V& x) { return minimum(x[0], x[1]); }, nullptr},
        {"min_binary", [](const V& x) { return x[0].min(x[1]); }, nullptr},
        // pow
        {"pow_tt", [](const V& x) { return pow(x[0], x[1]); }, nullptr},
        {"pow_tt_bcast", [](const V& x) { return pow(x[0], x[1]); }, nullptr},
        {"pow_tt_method", [](const V& x) { return x[0].pow(x[1]); }, nullptr},
        {"pow_tt_special", [](const V& x) { return pow(x[0], x[1]); }, nullptr},
        {"pow_scalar_base", [](const V& x) { return pow(2.0, x[0]); }, nullptr},
        {"pow_scalar_base_frac", [](const V& x) { return pow(0.5, x[0]); }, nullptr},
        {"pow_scalar_base_zero", [](const V& x) { return pow(0.0, x[0]); }, nullptr},
        {"pow_scalar_base_neg", [](const V& x) { return pow(-2.0, x[0]); }, nullptr},
        {"pow_scalar_base_int", [](const V& x) { return pow(2, x[0]); }, nullptr},
        {"pow_int64", [](const V& x) { return pow(x[0], x[1]); }, nullptr},
        {"pow_int64_overflow", [](const V& x) { return pow(x[0], x[1]); }, nullptr},
        {"pow_int_float", [](const V& x) { return pow(x[0], x[1]); }, nullptr},
        {"pow_float_int", [](const V& x) { return pow(x[0], x[1]); }, nullptr},
        // floor_divide, remainder, fmod
        {"floor_divide", [](const V& x) { return floor_divide(x[0], x[1]); }, nullptr},
        {"floor_divide_bcast", [](const V& x) { return x[0].floor_divide(x[1]); }, nullptr},
        {"floor_divide_special", [](const V& x) { return floor_divide(x[0], x[1]); }, nullptr},
        {"floor_divide_python", [](const V& x) { return floor_divide(x[0], x[1]); }, nullptr},
        {"floor_divide_scalar", [](const V& x) { return x[0].floor_divide(0.7); }, nullptr},
        {"floor_divide_int64", [](const V& x) { return floor_divide(x[0], x[1]); }, nullptr},
        {"floor_divide_int_scalar", [](const V& x) { return floor_divide(x[0], 2); }, nullptr},
        {"floor_divide_int_frac_scalar", [](const V& x) { return floor_divide(x[0], 2.5); }, nullptr},
        {"remainder", [](const V& x) { return remainder(x[0], x[1]); }, nullptr},
        {"remainder_bcast", [](const V& x) { return x[0].remainder(x[1]); }, nullptr},
        {"remainder_operator", [](const V& x) { return x[0] % x[1]; }, nullptr},
        {"remainder_scalar", [](const V& x) { return remainder(x[0], 1.5); }, nullptr},
        {"remainder_scalar_neg", [](const V& x) { return x[0] % -1.5; }, nullptr},
        {"remainder_special", [](const V& x) { return remainder(x[0], x[1]); }, nullptr},
        {"remainder_int64", [](const V& x) { return x[0] % x[1]; }, nullptr},
        {"remainder_int_scalar", [](const V& x) { return x[0] % 3; }, nullptr},
        {"remainder_int_frac_scalar", [](const V& x) { return x[0].remainder(2.5); }, nullptr},
        {"remainder_mixed", [](const V& x) { return remainder(x[0], x[1]); }, nullptr},
        {"fmod", [](const V& x) { return fmod(x[0], x[1]); }, nullptr},
        {"fmod_bcast", [](const V& x) { return x[0].fmod(x[1]); }, nullptr},
        {"fmod_scalar", [](const V& x) { return fmod(x[0], 1.5); }, nullptr},
        {"fmod_special", [](const V& x) { return fmod(x[0], x[1]); }, nullptr},
        {"fmod_int64", [](const V& x) { return fmod(x[0], x[1]); }, nullptr},
        {"fmod_int_scalar", [](const V& x) { return x[0].fmod(-3); }, nullptr},
        // comparisons: the six ops are added below
        {"eq_float32_rounding", [](const V& x) { return x[0] == 0.1; }, nullptr},
        {"lt_float64", [](const V& x) { return x[0] < 0.1; }, nullptr},
        {"gt_operator", [](const V& x) { return x[0] > 0.5; }, nullptr},
        {"le_operator_tensor", [](const V& x) { return x[0] <= x[1]; }, nullptr},
        // clamp
        {"clamp_both", [](const V& x) { return x[0].clamp(-0.5, 0.5); }, nullptr},
        {"clamp_min_only", [](const V& x) { return clamp(x[0], 0.2); }, nullptr},
        {"clamp_max_only", [](const V& x) { return x[0].clamp(std::nullopt, -0.2); }, nullptr},
        {"clamp_bounds_inclusive", [](const V& x) { return clamp(x[0], -0.5, 0.5); }, nullptr},
        {"clamp_min_gt_max", [](const V& x) { return x[0].clamp(2.0, 1.0); }, nullptr},
        {"clamp_nan_input", [](const V& x) { return x[0].clamp(0.0, 0.5); }, nullptr},
        {"clamp_nan_min", [](const V& x) { return x[0].clamp(kNaN); }, nullptr},
        {"clamp_nan_max", [](const V& x) { return x[0].clamp(0.0, kNaN); }, nullptr},
        {"clamp_nan_max_only", [](const V& x) { return x[0].clamp(std::nullopt, kNaN); }, nullptr},
        {"clamp_min_nan", [](const V& x) { return clamp_min(x[0], kNaN); }, nullptr},
        {"clamp_max_nan", [](const V& x) { return x[0].clamp_max(kNaN); }, nullptr},
        {"clamp_int64_nan_min", [](const V& x) { return x[0].clamp(kNaN); }, nullptr},
        {"clamp_min_inclusive", [](const V& x) { return clamp_min(x[0], 0.0); }, nullptr},
        {"clamp_max_inclusive", [](const V& x) { return x[0].clamp_max(0.0); }, nullptr},
        {"clamp_int64", [](const V& x) { return x[0].clamp(-1, 4); }, nullptr},
        {"clamp_int64_frac", [](const V& x) { return x[0].clamp(-1.5, 4.5); }, nullptr},
        {"clamp_int64_min_only", [](const V& x) { return x[0].clamp(0); }, nullptr},
        {"clamp_float64", [](const V& x) { return x[0].clamp(-0.5, 0.5); }, nullptr},
        {"clamp_f32_rounding", [](const V& x) { return x[0].clamp(std::nullopt, 0.1); }, nullptr},
        {"clamp_tensor", [](const V& x) { return x[0].clamp(x[1], x[2]); }, nullptr},
        {"clamp_tensor_min_gt_max", [](const V& x) { return clamp(x[0], x[1], x[2]); }, nullptr},
        {"clamp_tensor_ties", [](const V& x) { return clamp(x[0], x[1], x[2]); }, nullptr},
        {"clamp_tensor_min_only", [](const V& x) { return x[0].clamp(x[1]); }, nullptr},
        {"clamp_tensor_max_only", [](const V& x) { return clamp(x[0], Tensor(), x[1]); }, nullptr},
        {"clamp_min_tensor", [](const V& x) { return x[0].clamp_min(x[1]); }, nullptr},
        {"clamp_max_tensor", [](const V& x) { return clamp_max(x[0], x[1]); }, nullptr},
        {"clamp_tensor_nan", [](const V& x) { return clamp(x[0], x[1], x[2]); }, nullptr},
        {"clamp_tensor_int_x", [](const V& x) { return clamp(x[0], x[1]); }, nullptr},
        {"clamp_tensor_mixed", [](const V& x) { return x[0].clamp(Tensor(), x[1]); }, nullptr},
        {"clamp_tensor_int64", [](const V& x) { return clamp(x[0], x[1], x[2]); }, nullptr},
        // where (x[0] is the int64 0/1 condition)
        {"where", [](const V& x) { return where(x[0], x[1], x[2]); }, nullptr},
        {"where_bcast", [](const V& x) { return where(x[0], x[1], x[2]); }, nullptr},
        {"where_bcast_cond", [](const V& x) { return where(x[0], x[1], x[2]); }, nullptr},
        {"where_scalar_other", [](const V& x) { return where(x[0], x[1], 0.5); }, nullptr},
        {"where_scalar_input", [](const V& x) { return where(x[0], -1.5, x[1]); }, nullptr},
        {"where_mixed_dtype", [](const V& x) { return where(x[0], x[1], x[2]); }, nullptr},
        {"where_f32_f64", [](const V& x) { return where(x[0], x[1], x[2]); }, nullptr},
        {"where_int64", [](const V& x) { return where(x[0], x[1], x[2]); }, nullptr},
        {"where_int_scalar", [](const V& x) { return where(x[0], x[1], 0.5); }, nullptr},
        {"where_method", [](const V& x) { return x[1].where(x[0], x[2]); }, nullptr},
        {"where_nonzero_cond", [](const V& x) { return where(x[0], x[1], x[2]); }, nullptr},
        {"where_from_compare", [](const V& x) { return where(x[0] > 0.0, x[0], x[1] * 2.0); }, nullptr},
        // sum / mean over a list of dims (functional.hpp)
        {"sum_dims", [](const V& x) { return x[0].sum({0, 2}); }, nullptr},
        {"sum_dims_keepdim", [](const V& x) { return sum(x[0], {0, 2}, true); }, nullptr},
        {"sum_dims_neg", [](const V& x) { return x[0].sum({-1, 0}); }, nullptr},
        {"sum_dims_one", [](const V& x) { return x[0].sum(std::vector<int64_t>{1}); }, nullptr},
        {"sum_dims_all", [](const V& x) { return x[0].sum({0, 1}); }, nullptr},
        {"sum_dims_empty", [](const V& x) { return sum(x[0], std::vector<int64_t>{}); }, nullptr},
        {"sum_dims_empty_keepdim", [](const V& x) { return x[0].sum(std::vector<int64_t>{}, true); }, nullptr},
        {"sum_dims_4d", [](const V& x) { return x[0].sum({1, 3}); }, nullptr},
        {"sum_dims_int64", [](const V& x) { return x[0].sum({0, 2}); }, nullptr},
        {"mean_dims", [](const V& x) { return x[0].mean({1, 2}); }, nullptr},
        {"mean_dims_keepdim", [](const V& x) { return mean(x[0], {0, 2}, true); }, nullptr},
        {"mean_dims_f64", [](const V& x) { return x[0].mean({0, -1}); }, nullptr},
        {"mean_dims_empty", [](const V& x) { return mean(x[0], std::vector<int64_t>{}); }, nullptr},
        // div with a rounding mode, trunc (functional.hpp)
        {"div_trunc", [](const V& x) { return div(x[0], x[1], "trunc"); }, nullptr},
        {"div_floor", [](const V& x) { return x[0].div(x[1], "floor"); }, nullptr},
        {"div_trunc_broadcast", [](const V& x) { return div(x[0], x[1], "trunc"); }, nullptr},
        {"div_none_mode", [](const V& x) { return div(x[0], x[1], std::nullopt); }, nullptr},
        {"div_trunc_zero", [](const V& x) { return div(x[0], x[1], "trunc"); }, nullptr},
        {"div_floor_zero", [](const V& x) { return div(x[0], x[1], "floor"); }, nullptr},
        {"div_trunc_int64", [](const V& x) { return x[0].div(x[1], "trunc"); }, nullptr},
        {"div_floor_int64", [](const V& x) { return div(x[0], x[1], "floor"); }, nullptr},
        {"div_trunc_scalar", [](const V& x) { return div(x[0], 0.7, "trunc"); }, nullptr},
        {"div_floor_scalar", [](const V& x) { return x[0].div(-0.7, "floor"); }, nullptr},
        {"div_floor_scalar_int64", [](const V& x) { return div(x[0], 2.0, "floor"); }, nullptr},
        {"trunc", [](const V& x) { return trunc(x[0]); }, nullptr},
        {"trunc_special", [](const V& x) { return x[0].trunc(); }, nullptr},
        {"trunc_int64", [](const V& x) { return trunc(x[0]); }, nullptr},
    };
    // the six comparisons, each through operators, free functions and methods
    for (std::string op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
      c.push_back({op + "_tensor", [op](const V& x) { return compare_tt(op, "operator", x[0], x[1]); }, nullptr});
      c.push_back({op + "_bcast", [op](const V& x) { return compare_tt(op, "function", x[0], x[1]); }, nullptr});
      c.push_back({op + "_scalar", [op](const V& x) { return compare_ts(op, "operator", x[0], 0.5); }, nullptr});
      c.push_back({op + "_int_scalar", [op](const V& x) { return compare_ts(op, "method", x[0], 1); }, nullptr});
      c.push_back({op + "_int_frac_scalar", [op](const V& x) { return compare_ts(op, "function", x[0], 0.5); }, nullptr});
      c.push_back({op + "_mixed", [op](const V& x) { return compare_tt(op, "method", x[0], x[1]); }, nullptr});
    }
    return c;
  }();
  return cases;
}

const Twin* find_twin(const std::string& name) {
  for (const auto& t : twins())
    if (t.name == name) return &t;
  return nullptr;
}

TensorOptions rg(DType d = kFloat32) { return TensorOptions(d).requires_grad(true); }

}  // namespace

// ---- against PyTorch ----------------------------------------------------------------------------

TEST_CASE("every PyTorch reference case has a C++ twin and every twin a reference", "[elementwise_reduce]") {
  for (const auto& c : ref::kCases) {
    INFO("reference case " << c.name);
    CHECK(find_twin(c.name) != nullptr);
  }
  for (const auto& t : twins()) {
    bool found = false;
    for (const auto& c : ref::kCases) found = found || t.name == c.name;
    INFO("C++ twin " << t.name);
    CHECK(found);
  }
}

TEST_CASE("forward values, dtypes and min's indices match PyTorch", "[elementwise_reduce]") {
  int checked = 0;
  for (const auto& c : ref::kCases) {
    const Twin* tw = find_twin(c.name);
    REQUIRE(tw != nullptr);
    const std::string name = c.name;
    INFO("case " << name);
    for (bool strided : {false, true}) {
      INFO("strided inputs: " << strided);
      V in = load_inputs(c, false);
      if (strided)
        for (Tensor& t : in) t = strided_copy(t);
      Tensor out = tw->fn(in);
      CHECK(out.dtype() == dtype_of_code(array(name + ".out").dtype));
      std::string err = compare(out, name + ".out", true);
      INFO(err);
      CHECK(err.empty());
      if (tw->indices) {
        std::string ierr = compare(tw->indices(in), name + ".indices");
        INFO(ierr);
        CHECK(ierr.empty());
      }
    }
    ++checked;
  }
  CHECK(checked >= 150);
}

TEST_CASE("grad_fn names match PyTorch's", "[elementwise_reduce]") {
  for (const auto& c : ref::kCases) {
    INFO("case " << c.name);
    Tensor out = find_twin(c.name)->fn(load_inputs(c, true));
    if (std::string(c.grad_fn).empty()) {
      CHECK_FALSE(out.requires_grad());
    } else {
      REQUIRE(out.grad_fn() != nullptr);
      CHECK(out.grad_fn()->name() == c.grad_fn);
    }
  }
}

TEST_CASE("gradients match PyTorch for a fixed upstream gradient, contiguous or strided", "[elementwise_reduce]") {
  int checked = 0;
  for (const auto& c : ref::kCases) {
    const std::string name = c.name;
    if (std::string(c.grad_fn).empty()) continue;
    INFO("case " << name);
    for (bool strided : {false, true}) {
      INFO("strided: " << strided);
      V in;
      for (Tensor t : load_inputs(c, false)) {
        if (strided) t = strided_copy(t);
        if (t.is_floating_point()) t.requires_grad_();
        in.push_back(t);
      }
      Tensor out = find_twin(name)->fn(in);
      if (!c.backward) {  // floor_divide: PyTorch has no derivative and raises in backward
        REQUIRE_THROWS_WITH(out.backward(ones_like(out)),
                            Contains("floor_divide: derivative for aten::floor_divide is not implemented"));
        continue;
      }
      Tensor gout = load(name + ".gout");
      out.backward(strided ? strided_copy(gout) : gout);
      for (int i = 0; i < c.n_inputs; ++i) {
        const std::string gname = name + ".grad" + std::to_string(i);
        if (!find_array(gname)) {
          CHECK_FALSE(in[i].grad().defined());  // int64 inputs get no gradient
          continue;
        }
        INFO("input " << i);
        REQUIRE(in[i].grad().defined());
        CHECK(in[i].grad().dtype() == in[i].dtype());
        std::string err = compare(in[i].grad(), gname);
        INFO(err);
        CHECK(err.empty());
        ++checked;
      }
    }
  }
  CHECK(checked >= 150);
}

TEST_CASE("gradcheck passes in float64 for every differentiable case away from ties and kinks", "[elementwise_reduce]") {
  int checked = 0;
  for (const auto& c : ref::kCases) {
    if (!c.gradcheck) continue;
    INFO("case " << c.name);
    const Twin* tw = find_twin(c.name);
    V all = load_inputs(c, true, true);
    V diff;
    std::vector<size_t> at;
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i].is_floating_point()) {
        diff.push_back(all[i]);
        at.push_back(i);
      }
    auto f = [&](const V& xs) {
      V args = all;
      for (size_t k = 0; k < xs.size(); ++k) args[at[k]] = xs[k];
      return tw->fn(args);
    };
    bool ok = false;
    try {
      ok = gradcheck(f, diff);
    } catch (const Error& e) {
      FAIL(e.what());
    }
    CHECK(ok);
    ++checked;
  }
  CHECK(checked >= 45);
}

// ---- the max family's tie rules, spelled out ------------------------------------------------------

TEST_CASE("ties share the gradient as PyTorch: evenly for max()/min()/amax/amin, to the index for "
          "max(dim)/min(dim), half each for maximum/minimum", "[elementwise_reduce]") {
  Tensor x = tensor({1, 3, 3, 2}, rg(kFloat64));
  x.max().backward();
  CHECK(vals(x.grad()) == std::vector<double>{0, 0.5, 0.5, 0});
  x.set_grad(Tensor());
  Tensor y = tensor({3, 1, 1, 2}, rg(kFloat64));
  y.min().backward();
  CHECK(vals(y.grad()) == std::vector<double>{0, 0.5, 0.5, 0});
  x.amax().backward();
  CHECK(vals(x.grad()) == std::vector<double>{0, 0.5, 0.5, 0});
  x.set_grad(Tensor());
  std::get<0>(x.max(0)).backward();
  CHECK(vals(x.grad()) == std::vector<double>{0, 1, 0, 0});  // the first index of the ties
  y.set_grad(Tensor());
  std::get<0>(y.min(0)).backward();
  CHECK(vals(y.grad()) == std::vector<double>{0, 1, 0, 0});
  Tensor a = tensor({1, 2, 3}, rg(kFloat64)), b = tensor({1, 5, 0}, rg(kFloat64));
  maximum(a, b).sum().backward();
  CHECK(vals(a.grad()) == std::vector<double>{0.5, 0, 1});
  CHECK(vals(b.grad()) == std::vector<double>{0.5, 1, 0});
  a.set_grad(Tensor());
  b.set_grad(Tensor());
  minimum(a, b).sum().backward();
  CHECK(vals(a.grad()) == std::vector<double>{0.5, 1, 0});
  CHECK(vals(b.grad()) == std::vector<double>{0.5, 0, 1});
}

TEST_CASE("max() and min() over all elements send the gradient to the NaNs when the result is NaN",
          "[elementwise_reduce]") {
  Tensor x = tensor({1, kNaN, 2, kNaN}, rg(kFloat64));
  x.max().backward();
  CHECK(vals(x.grad()) == std::vector<double>{0, 0.5, 0, 0.5});  // not NaN everywhere
  x.set_grad(Tensor());
  x.min().backward();
  CHECK(vals(x.grad()) == std::vector<double>{0, 0.5, 0, 0.5});
}

TEST_CASE("pow's gradients at 0 ** 0 and 0 ** positive are zero, as PyTorch's", "[elementwise_reduce]") {
  Tensor a = tensor({0, 0, 2}, rg(kFloat64)), b = tensor({0, 2, 0}, rg(kFloat64));
  Tensor y = pow(a, b);
  CHECK(vals(y) == std::vector<double>{1, 0, 1});
  y.sum().backward();
  CHECK(vals(a.grad()) == std::vector<double>{0, 0, 0});
  CHECK(vals(b.grad())[0] == 0);
  CHECK(vals(b.grad())[1] == 0);
  CHECK(vals(b.grad())[2] == Approx(std::log(2.0)));
}

TEST_CASE("int64 floor_divide, remainder and fmod are exact and refuse a zero divisor", "[elementwise_reduce]") {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  Tensor a = tensor({0, 0}, kInt64);
  a.data_ptr<int64_t>()[0] = lo;
  a.data_ptr<int64_t>()[1] = hi;
  CHECK(floor_divide(a, 1).tolist<int64_t>() == std::vector<int64_t>{lo, hi});
  CHECK(floor_divide(a, 2).tolist<int64_t>() == std::vector<int64_t>{lo / 2, hi / 2});
  CHECK(remainder(a, -1).tolist<int64_t>() == std::vector<int64_t>{0, 0});  // no SIGFPE
  CHECK(fmod(a, -1).tolist<int64_t>() == std::vector<int64_t>{0, 0});
  CHECK((a % 10).tolist<int64_t>() == std::vector<int64_t>{2, 7});
  REQUIRE_THROWS_WITH(floor_divide(a, -1), Contains("floor_divide: integer overflow"));
  Tensor i = tensor({7, -7}, kInt64);
  REQUIRE_THROWS_WITH(floor_divide(i, tensor({2, 0}, kInt64)), Contains("floor_divide: ZeroDivisionError"));
  REQUIRE_THROWS_WITH(remainder(i, 0), Contains("remainder: ZeroDivisionError"));
  REQUIRE_THROWS_WITH(i % tensor({0}, kInt64), Contains("remainder: ZeroDivisionError"));  // broadcast divisor
  REQUIRE_THROWS_WITH(fmod(i, 0), Contains("fmod: ZeroDivisionError"));
  // a float divisor tensor is IEEE division, never an error
  CHECK(std::isnan(vals(remainder(i, tensor({0.0})))[0]));
  CHECK(vals(floor_divide(i, tensor({0.0})))[0] == std::numeric_limits<double>::infinity());
  // A number divisor follows tinytorch's scalar rule: 0.0 is an integral value, so an int64 tensor
  // stays int64 and throws, where PyTorch (seeing a Python float) computes in float32 and gives NaN.
  REQUIRE_THROWS_WITH(remainder(i, 0.0), Contains("remainder: ZeroDivisionError"));
}

TEST_CASE("comparisons return int64 0/1, with a number on either side", "[elementwise_reduce]") {
  Tensor x = tensor({0.25, 0.5, 0.75});
  CHECK((x > 0.5).dtype() == kInt64);
  CHECK(vals(x > 0.5) == std::vector<double>{0, 0, 1});
  CHECK(vals(0.5 < x) == vals(x > 0.5));
  CHECK(vals(0.5 >= x) == vals(x <= 0.5));
  CHECK(vals(0.5 == x) == std::vector<double>{0, 1, 0});
  CHECK(vals(0.5 != x) == std::vector<double>{1, 0, 1});
  CHECK((x > 0.3).sum().item<int64_t>() == 2);  // counts, as PyTorch's bool sum
  Tensor r = tensor({1.0}, rg()) > 0.0;
  CHECK_FALSE(r.requires_grad());
}

// ---- errors ---------------------------------------------------------------------------------------

TEST_CASE("bad shapes throw naming the shapes", "[elementwise_reduce]") {
  Tensor a = ones({2, 3}), b = ones({4});
  REQUIRE_THROWS_WITH(maximum(a, b), Contains("maximum: shapes [2, 3] and [4] cannot be broadcast together"));
  REQUIRE_THROWS_WITH(minimum(a, b), Contains("minimum: shapes [2, 3] and [4]"));
  REQUIRE_THROWS_WITH(pow(a, b), Contains("pow: shapes [2, 3] and [4]"));
  REQUIRE_THROWS_WITH(floor_divide(a, b), Contains("floor_divide: shapes [2, 3] and [4]"));
  REQUIRE_THROWS_WITH(a % b, Contains("remainder: shapes [2, 3] and [4]"));
  REQUIRE_THROWS_WITH(fmod(a, b), Contains("fmod: shapes [2, 3] and [4]"));
  REQUIRE_THROWS_WITH(floor_divide(ones({2}, kInt64), ones({3}, kInt64)), Contains("floor_divide: shapes [2] and [3]"));
  REQUIRE_THROWS_WITH(a == b, Contains("eq: shapes [2, 3] and [4]"));
  REQUIRE_THROWS_WITH(a.ge(b), Contains("ge: shapes [2, 3] and [4]"));
  REQUIRE_THROWS_WITH(where(ones({2, 3}, kInt64), a, b),
                      Contains("where: shapes [2, 3] (condition), [2, 3] (input) and [4] (other) cannot be broadcast together"));
  REQUIRE_THROWS_WITH(where(ones({5}, kInt64), a, 0.0), Contains("where: shapes [5] (condition), [2, 3] (input)"));
  REQUIRE_THROWS_WITH(a.clamp(b), Contains("clamp: shapes [2, 3] (input), [4] (min)"));
  REQUIRE_THROWS_WITH(clamp(a, ones({3}), ones({2, 1, 2})), Contains("clamp: shapes [2, 3] (input), [3] (min) and [2, 1, 2] (max)"));
  REQUIRE_THROWS_WITH(a.clamp_max(b), Contains("(max)"));
}

TEST_CASE("dims out of range, repeated dims and empty reductions throw as PyTorch", "[elementwise_reduce]") {
  Tensor x = ones({2, 3});
  REQUIRE_THROWS_WITH(x.min(2), Contains("min: dimension out of range (expected to be in range of [-2, 1], but got 2)"));
  REQUIRE_THROWS_WITH(x.argmin(-3), Contains("argmin: dimension out of range"));
  REQUIRE_THROWS_WITH(x.amax({2}), Contains("amax: dimension out of range (expected to be in range of [-2, 1], but got 2)"));
  REQUIRE_THROWS_WITH(x.amin({0, -2}), Contains("amin: dim 0 appears multiple times in the list of dims"));
  REQUIRE_THROWS_WITH(x.amax({1, 1}), Contains("amax: dim 1 appears multiple times in the list of dims"));
  REQUIRE_THROWS_WITH(scalar_tensor(1).min(1), Contains("min: dimension out of range"));
  REQUIRE_THROWS_WITH(zeros({0}).min(), Contains("min(): Expected reduction dim to be specified for input.numel() == 0"));
  REQUIRE_THROWS_WITH(zeros({0}).argmin(), Contains("argmin(): Expected reduction dim to be specified for input.numel() == 0."));
  REQUIRE_THROWS_WITH(zeros({0, 3}).amax(), Contains("amax(): Expected reduction dim to be specified for input.numel() == 0"));
  REQUIRE_THROWS_WITH(zeros({0, 3}).amin({0}), Contains("amin(): Expected reduction dim 0 to have non-zero size"));
  REQUIRE_THROWS_WITH(zeros({0, 3}).min(0), Contains("min(): Expected reduction dim 0 to have non-zero size"));
  // reducing a non-empty dim of an empty tensor is fine
  CHECK(zeros({0, 3}).amax({1}).sizes() == Shape{0});
  CHECK(std::get<1>(zeros({0, 3}).min(1)).sizes() == Shape{0});
  // 0-d tensors take dim 0 / -1, as PyTorch
  CHECK(scalar_tensor(2.5).amin({-1}, true).item() == 2.5);
  CHECK(std::get<1>(scalar_tensor(2.5).min(0)).item<int64_t>() == 0);
  CHECK(scalar_tensor(2.5).argmin(0, true).item<int64_t>() == 0);
  // sum / mean over a list of dims: PyTorch's errors; empty reductions give 0 and NaN, as torch
  // (torch.zeros(0, 3).sum(dim=(0,)) -> [0, 0, 0], .mean(dim=(0,)) -> [nan, nan, nan]).
  REQUIRE_THROWS_WITH(x.sum({0, 0}), Contains("sum: dim 0 appears multiple times in the list of dims"));
  REQUIRE_THROWS_WITH(x.mean({0, 2}), Contains("mean: dimension out of range (expected to be in range of [-2, 1], but got 2)"));
  REQUIRE_THROWS_WITH(ones({2, 3}, kInt64).mean({0, 1}),
                      Contains("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                               "complex dtype. Got: torch.int64"));
  CHECK(zeros({0, 3}).sum({0, 1}).item() == 0.0);
  CHECK(zeros({0, 3}).sum(std::vector<int64_t>{0}).tolist<double>() == std::vector<double>{0, 0, 0});
  CHECK(std::isnan(zeros({0, 3}).mean({0, 1}).item()));
  CHECK(zeros({2, 0}).sum({0, 1}, true).sizes() == Shape{1, 1});
  CHECK(scalar_tensor(2.5).sum(std::vector<int64_t>{0}).item() == 2.5);  // a 0-d tensor takes dim 0 / -1
  CHECK(scalar_tensor(2.5).mean(std::vector<int64_t>{}).item() == 2.5);
}

TEST_CASE("div with a rounding mode: PyTorch's errors for a bad mode, a zero divisor and INT64_MIN / -1",
          "[elementwise_reduce]") {
  const Tensor i = tensor({7, -7}, kInt64);
  REQUIRE_THROWS_WITH(div(ones({2}), ones({2}), "round"),
                      "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'");
  REQUIRE_THROWS_WITH(div(i, tensor({1, 0}, kInt64), "trunc"), Contains("div: ZeroDivisionError"));
  REQUIRE_THROWS_WITH(div(i, 0.0, "floor"), Contains("div: ZeroDivisionError"));
  const Tensor lo = tensor({std::numeric_limits<int64_t>::min()}, kInt64);
  REQUIRE_THROWS_WITH(div(lo, -1.0, "trunc"), Contains("div: integer overflow: -9223372036854775808 // -1"));
  CHECK(div(lo, 1.0, "trunc").item<int64_t>() == std::numeric_limits<int64_t>::min());
  CHECK(div(i, tensor({2, 2}, kInt64)).dtype() == kFloat32);  // no mode: true division
  CHECK(div(i, 2.5, "trunc").dtype() == kFloat32);            // a fractional number: float32
  // The grad_fn names of PyTorch's overloads: div.Tensor, div.Scalar, div.Tensor_mode, div.Scalar_mode.
  const Tensor a = ones({2}, TensorOptions().requires_grad(true));
  CHECK(a.div(a).grad_fn()->name() == "DivBackward0");
  CHECK(a.div(2.0).grad_fn()->name() == "DivBackward1");
  CHECK(a.div(a, std::nullopt).grad_fn()->name() == "DivBackward2");
  CHECK(a.div(2.0, std::nullopt).grad_fn()->name() == "DivBackward3");
}

TEST_CASE("wrong dtypes, absent bounds and undefined tensors throw", "[elementwise_reduce]") {
  Tensor a = ones({3}), b = zeros({3});
  REQUIRE_THROWS_WITH(where(ones({3}), a, b), Contains("where: expected condition to be a boolean tensor") &&
                                                  Contains("got a tensor with dtype Float"));
  REQUIRE_THROWS_WITH(a.where(ones({3}, kFloat64), b), Contains("got a tensor with dtype Double"));
  REQUIRE_THROWS_WITH(a.clamp(std::nullopt, std::nullopt), Contains("clamp: At least one of 'min' or 'max' must not be None"));
  REQUIRE_THROWS_WITH(a.clamp(Tensor(), Tensor()), Contains("clamp: At least one of 'min' or 'max' must not be None"));
  REQUIRE_THROWS_WITH(clamp_min(a, Tensor()), Contains("clamp_min: expected a defined min tensor"));
  REQUIRE_THROWS_WITH(clamp_max(a, Tensor()), Contains("clamp_max: expected a defined max tensor"));
  REQUIRE_THROWS_WITH(a.clamp(std::nullopt, 1e300), Contains("clamp: value cannot be converted to type float without overflow"));
  CHECK(vals(a.to(kFloat64).clamp(std::nullopt, 1e300)) == std::vector<double>{1, 1, 1});
  REQUIRE_THROWS_WITH(maximum(Tensor(), a), Contains("maximum: got an undefined tensor"));
  REQUIRE_THROWS_WITH(pow(a, Tensor()), Contains("pow: got an undefined tensor"));
  REQUIRE_THROWS_WITH(pow(2.0, Tensor()), Contains("pow: got an undefined tensor"));
  REQUIRE_THROWS_WITH(where(Tensor(), a, b), Contains("where: got an undefined tensor"));
  REQUIRE_THROWS_WITH(Tensor().amax(), Contains("amax: got an undefined tensor"));
  REQUIRE_THROWS_WITH(a > Tensor(), Contains("gt: got an undefined tensor"));
  Tensor x = tensor({3.0, 4.0}, rg());
  Tensor q = floor_divide(x, 2.0);
  CHECK(q.requires_grad());
  CHECK(q.grad_fn()->name() == "torch::autograd::NotImplemented");
  REQUIRE_THROWS_WITH(q.sum().backward(), Contains("derivative for aten::floor_divide is not implemented"));
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("clamp follows PyTorch at the edges: min > max, NaN bounds, int64 promotion", "[elementwise_reduce]") {
  Tensor x = tensor({-1, 0.5, 3});
  CHECK(vals(x.clamp(2, 1)) == std::vector<double>{1, 1, 1});  // every element becomes max
  for (double v : vals(x.clamp(kNaN, 1))) CHECK(std::isnan(v));
  Tensor i = tensor({-5, 0, 3, 10}, kInt64);
  CHECK(i.clamp(-1, 4).dtype() == kInt64);
  CHECK(i.clamp(std::nullopt, 2.5).dtype() == kFloat32);
  CHECK(vals(i.clamp(std::nullopt, 2.5)) == std::vector<double>{-5, 0, 2.5, 2.5});
  CHECK(i.clamp(-1e30, 1e30).dtype() == kFloat32);  // not an int64 value: no undefined cast
  CHECK(vals(i.clamp_min(-1e30)) == std::vector<double>{-5, 0, 3, 10});
}

// torch.result_type: a 0-d tensor does not raise a dimensioned tensor's dtype within its category.
// Expected dtypes printed by PyTorch 1.13 (/usr/bin/python3):
//   f32 = torch.ones(3); i = torch.ones(3, dtype=torch.int64)
//   d0 = torch.tensor(2., dtype=torch.float64); f0 = torch.tensor(2.); i0 = torch.tensor(2)
//   (f32+d0, i+d0, i+f0, d0+f0, f32+i0, i0*f32, where(c, f32, d0), clamp(i, min=f0), remainder(f32, d0))
//   -> float32 float64 float32 float64 float32 float32 float32 float32 float32
//   w = tensor(1.5, float64, requires_grad); x = ones(3, requires_grad); (x*w).sum().backward()
//   -> w.grad = tensor(3., dtype=float64), x.grad = [1.5, 1.5, 1.5]
TEST_CASE("binary ops follow torch.result_type: 0-d tensors rank below dimensioned ones", "[elementwise_reduce]") {
  const Tensor f32 = ones({3}), i = ones({3}, kInt64);
  const Tensor d0 = scalar_tensor(2.0, kFloat64), f0 = scalar_tensor(2.0), i0 = scalar_tensor(2.0, kInt64);
  CHECK((f32 + d0).dtype() == kFloat32);
  CHECK((i + d0).dtype() == kFloat64);
  CHECK((i + f0).dtype() == kFloat32);
  CHECK((d0 + f0).dtype() == kFloat64);
  CHECK((f32 + i0).dtype() == kFloat32);
  CHECK((i0 * f32).dtype() == kFloat32);
  CHECK(where(tensor({1, 0, 1}, kInt64), f32, d0).dtype() == kFloat32);
  CHECK(clamp(i, f0).dtype() == kFloat32);
  CHECK(remainder(f32, d0).dtype() == kFloat32);

  Tensor w = scalar_tensor(1.5, TensorOptions(kFloat64).requires_grad(true));
  Tensor x = ones({3}, TensorOptions().requires_grad(true));
  (x * w).sum().backward();
  CHECK(w.grad().dtype() == kFloat64);
  CHECK(w.grad().item() == 3.0);
  CHECK(x.grad().tolist() == std::vector<double>{1.5, 1.5, 1.5});
}

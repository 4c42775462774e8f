// tests/ops_cases.hpp — the C++ twins of the cases in tests/reference/gen_ops.py, and helpers to
// load PyTorch's reference arrays (tests/reference/ops_ref.hpp) as tinytorch Tensors.
//
// Each OpCase computes, with tinytorch, exactly what gen_ops.py computed with PyTorch for the case
// of the same name, from the same inputs (<case>.in0, .in1, ...). tests/test_tensor.cpp compares
// the forward values with <case>.out; tests/test_autograd.cpp compares the gradients after
// out.backward(<case>.gout) with <case>.grad<i>, runs gradcheck in float64, and compares grad_fn
// names. Keep the two files in step: a test fails when a case exists on one side only.
// Not a test file itself (no TEST_CASE here); included by the test files that need it.
#pragma once

#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <tinytorch/functional.hpp>

#include "reference/ops_ref.hpp"

namespace ops_test {

using tinytorch::DType;
using tinytorch::Tensor;
using V = std::vector<Tensor>;

struct OpCase {
  const char* name;
  std::function<Tensor(const V&)> fn;
};

// ---- reference arrays -----------------------------------------------------------------------

inline const ops_reference::Array* find_array(const std::string& name) {
  for (const auto& a : ops_reference::kArrays)
    if (name == a.name) return &a;
  return nullptr;
}

inline const ops_reference::Array& array(const std::string& name) {
  const ops_reference::Array* a = find_array(name);
  if (!a) throw std::runtime_error("ops_ref.hpp has no array named " + name);
  return *a;
}

inline DType dtype_of_code(int code) {
  return code == 0 ? tinytorch::kFloat32 : code == 1 ? tinytorch::kFloat64 : tinytorch::kInt64;
}

/// The reference array `name` as a tinytorch Tensor (its own dtype, or `as` for float arrays).
inline Tensor load(const std::string& name, bool requires_grad = false, bool float64 = false) {
  const auto& a = array(name);
  tinytorch::Shape shape(a.shape, a.shape + a.ndim);
  std::vector<double> values(ops_reference::kData + a.offset, ops_reference::kData + a.offset + a.numel);
  DType dt = dtype_of_code(a.dtype);
  if (float64 && dt != tinytorch::kInt64) dt = tinytorch::kFloat64;
  auto opts = tinytorch::TensorOptions(dt).requires_grad(requires_grad && dt != tinytorch::kInt64);
  return tinytorch::tensor(values, shape, opts);
}

inline std::vector<Tensor> load_inputs(const ops_reference::Case& c, bool requires_grad, bool float64 = false) {
  std::vector<Tensor> in;
  for (int i = 0; i < c.n_inputs; ++i)
    in.push_back(load(std::string(c.name) + ".in" + std::to_string(i), requires_grad, float64));
  return in;
}

/// "" when `got` matches the reference array `name` (shape and |got - ref| <= atol + rtol |ref|,
/// NaN == NaN, equal infinities), else a description of the first mismatch.
inline std::string compare(const Tensor& got, const std::string& name, double rtol = 2e-5, double atol = 2e-6) {
  const auto& a = array(name);
  tinytorch::Shape shape(a.shape, a.shape + a.ndim);
  std::ostringstream os;
  if (!got.defined()) return name + ": got an undefined tensor";
  if (got.sizes() != shape) {
    os << name << ": shape " << tinytorch::shape_str(got.sizes()) << " vs reference " << tinytorch::shape_str(shape);
    return os.str();
  }
  std::vector<double> g = got.tolist<double>();
  for (int64_t i = 0; i < a.numel; ++i) {
    double r = ops_reference::kData[a.offset + i], v = g[static_cast<size_t>(i)];
    bool ok = (std::isnan(r) && std::isnan(v)) || (std::isinf(r) && v == r) ||
              std::abs(v - r) <= atol + rtol * std::abs(r);
    if (!ok) {
      os.precision(9);
      os << name << ": element " << i << " is " << v << ", PyTorch has " << r << " (shape "
         << tinytorch::shape_str(shape) << ")";
      return os.str();
    }
  }
  return "";
}

/// The same values as `x` in a non-contiguous layout: reversed-dim strides for >= 2 dims, every
/// other element of a wider buffer for 1 dim (0-d tensors are returned as they are).
inline Tensor strided_copy(const Tensor& x) {
  tinytorch::NoGradGuard ng;
  if (x.dim() == 0) return x.clone();
  if (x.dim() == 1) return tinytorch::stack({x, tinytorch::zeros_like(x)}, 1).select(1, 0);
  std::vector<int64_t> rev;
  for (int64_t d = x.dim() - 1; d >= 0; --d) rev.push_back(d);
  return x.permute(rev).contiguous().permute(rev);
}

// ---- the cases ------------------------------------------------------------------------------

inline const std::vector<OpCase>& op_cases() {
  using namespace tinytorch;
  using R = Reduction;
  static const std::vector<OpCase> cases = {
      // binary arithmetic, with broadcasting
      {"add", [](const V& x) { return x[0] + x[1]; }},
      {"add_bcast_row", [](const V& x) { return x[0] + x[1]; }},
      {"add_bcast_both", [](const V& x) { return x[0] + x[1]; }},
      {"add_alpha", [](const V& x) { return add(x[0], x[1], 2.5); }},
      {"add_scalar_tensor", [](const V& x) { return x[0] + x[1]; }},
      {"sub", [](const V& x) { return x[0] - x[1]; }},
      {"sub_bcast", [](const V& x) { return x[0] - x[1]; }},
      {"mul", [](const V& x) { return x[0] * x[1]; }},
      {"mul_bcast", [](const V& x) { return x[0] * x[1]; }},
      {"mul_self", [](const V& x) { return x[0] * x[0]; }},
      {"div", [](const V& x) { return x[0] / x[1]; }},
      {"div_bcast", [](const V& x) { return x[0] / x[1]; }},
      {"mul_mixed_dtype", [](const V& x) { return x[0].exp() * x[1]; }},
      // scalar operands
      {"add_scalar", [](const V& x) { return x[0] + 2.5; }},
      {"sub_scalar", [](const V& x) { return x[0] - 1.5; }},
      {"rsub_scalar", [](const V& x) { return 3.0 - x[0]; }},
      {"mul_scalar", [](const V& x) { return x[0] * -1.5; }},
      {"div_scalar", [](const V& x) { return x[0] / 4.0; }},
      {"rdiv_scalar", [](const V& x) { return 2.0 / x[0]; }},
      // unary
      {"neg", [](const V& x) { return -x[0]; }},
      {"exp", [](const V& x) { return x[0].exp(); }},
      {"log", [](const V& x) { return x[0].log(); }},
      {"pow2", [](const V& x) { return x[0].pow(2); }},
      {"pow3", [](const V& x) { return x[0].pow(3); }},
      {"pow_half", [](const V& x) { return x[0].pow(0.5); }},
      {"pow_neg", [](const V& x) { return x[0].pow(-1.5); }},
      {"sqrt", [](const V& x) { return x[0].sqrt(); }},
      {"abs", [](const V& x) { return x[0].abs(); }},
      {"relu", [](const V& x) { return x[0].relu(); }},
      {"sigmoid", [](const V& x) { return x[0].sigmoid(); }},
      {"sigmoid_large", [](const V& x) { return x[0].sigmoid(); }},
      {"tanh", [](const V& x) { return x[0].tanh(); }},
      {"tanh_large", [](const V& x) { return x[0].tanh(); }},
      {"clamp", [](const V& x) { return x[0].clamp(-0.5, 0.5); }},
      {"clamp_min", [](const V& x) { return x[0].clamp_min(0.1); }},
      {"clamp_max", [](const V& x) { return x[0].clamp_max(0.2); }},
      // reductions
      {"sum_all", [](const V& x) { return x[0].sum(); }},
      {"sum_dim0", [](const V& x) { return x[0].sum(0); }},
      {"sum_dim1_keepdim", [](const V& x) { return x[0].sum(1, true); }},
      {"sum_dim_neg", [](const V& x) { return x[0].sum(-1); }},
      {"mean_all", [](const V& x) { return x[0].mean(); }},
      {"mean_dim", [](const V& x) { return x[0].mean(1); }},
      {"mean_dim_keepdim", [](const V& x) { return x[0].mean(0, true); }},
      {"max_all", [](const V& x) { return x[0].max(); }},
      {"max_all_ties", [](const V& x) { return x[0].max(); }},
      {"max_dim", [](const V& x) { return std::get<0>(x[0].max(1)); }},
      {"max_dim_keepdim", [](const V& x) { return std::get<0>(x[0].max(0, true)); }},
      {"max_dim_ties", [](const V& x) { return std::get<0>(x[0].max(1)); }},
      {"max_dim_neg", [](const V& x) { return std::get<0>(x[0].max(-2)); }},
      {"argmax_all_ties", [](const V& x) { return x[0].argmax(); }},
      {"argmax_dim_ties", [](const V& x) { return x[0].argmax(1); }},
      {"argmax_dim0_keepdim", [](const V& x) { return x[0].argmax(0, true); }},
      // matrix products
      {"matmul_1d_1d", [](const V& x) { return matmul(x[0], x[1]); }},
      {"matmul_2d_1d", [](const V& x) { return matmul(x[0], x[1]); }},
      {"matmul_1d_2d", [](const V& x) { return matmul(x[0], x[1]); }},
      {"matmul_2d_2d", [](const V& x) { return matmul(x[0], x[1]); }},
      {"matmul_3d_3d", [](const V& x) { return matmul(x[0], x[1]); }},
      {"matmul_3d_2d", [](const V& x) { return matmul(x[0], x[1]); }},
      {"matmul_2d_3d", [](const V& x) { return matmul(x[0], x[1]); }},
      {"matmul_3d_1d", [](const V& x) { return matmul(x[0], x[1]); }},
      {"matmul_1d_3d", [](const V& x) { return matmul(x[0], x[1]); }},
      {"matmul_bcast_batch", [](const V& x) { return x[0].matmul(x[1]); }},
      {"mm", [](const V& x) { return mm(x[0], x[1]); }},
      {"mm_transposed", [](const V& x) { return x[0].t().mm(x[1].t()); }},
      // softmax
      {"softmax_dim1", [](const V& x) { return x[0].softmax(1); }},
      {"softmax_dim0", [](const V& x) { return x[0].softmax(0); }},
      {"softmax_3d", [](const V& x) { return softmax(x[0], 1); }},
      {"softmax_large", [](const V& x) { return x[0].softmax(-1); }},
      {"log_softmax_dim1", [](const V& x) { return x[0].log_softmax(1); }},
      {"log_softmax_dim0", [](const V& x) { return log_softmax(x[0], 0); }},
      {"log_softmax_large", [](const V& x) { return x[0].log_softmax(1); }},
      // cat / stack
      {"cat_dim0", [](const V& x) { return cat({x[0], x[1], x[2]}, 0); }},
      {"cat_dim1", [](const V& x) { return cat({x[0], x[1]}, 1); }},
      {"cat_neg", [](const V& x) { return cat({x[0], x[1]}, -1); }},
      {"stack_dim0", [](const V& x) { return stack({x[0], x[1]}, 0); }},
      {"stack_dim1", [](const V& x) { return stack({x[0], x[1], x[2]}, 1); }},
      {"stack_neg", [](const V& x) { return stack({x[0], x[1]}, -1); }},
      // views used inside a computation
      {"view", [](const V& x) { return x[0].view({3, 4}) * x[1]; }},
      {"view_infer", [](const V& x) { return x[0].view({-1, 4}) * x[1]; }},
      {"reshape", [](const V& x) { return x[0].reshape({4, 3}) * x[1]; }},
      {"reshape_noncontig", [](const V& x) { return x[0].t().reshape({12}) * x[1]; }},
      {"transpose", [](const V& x) { return x[0].transpose(0, 2) * x[1]; }},
      {"t", [](const V& x) { return x[0].t() * x[1]; }},
      {"permute", [](const V& x) { return x[0].permute({2, 0, 1}) * x[1]; }},
      {"unsqueeze", [](const V& x) { return x[0].unsqueeze(1) * x[1]; }},
      {"squeeze", [](const V& x) { return x[0].squeeze() * x[1]; }},
      {"squeeze_dim", [](const V& x) { return x[0].squeeze(1) * x[1]; }},
      {"flatten", [](const V& x) { return x[0].flatten(1) * x[1]; }},
      {"narrow", [](const V& x) { return x[0].narrow(1, 1, 3) * x[1]; }},
      {"select", [](const V& x) { return x[0].select(1, 2) * x[1]; }},
      {"select_neg", [](const V& x) { return x[0].select(0, -1) * x[1]; }},
      {"expand", [](const V& x) { return x[0].expand({3, 4}) * x[1]; }},
      {"expand_new_dim", [](const V& x) { return x[0].expand({2, 3}) * x[1]; }},
      {"contiguous", [](const V& x) { return x[0].t().contiguous() * x[1]; }},
      {"clone", [](const V& x) { return x[0].clone() * 3.0; }},
      {"to_float64", [](const V& x) { return x[0].to(kFloat64) * x[1]; }},
      {"chunk",
       [](const V& x) {
         auto p = x[0].chunk(3);
         return cat({p.at(2), p.at(0) * 2.0, p.at(1).exp()}, 0);
       }},
      {"chunk_fewer",
       [](const V& x) {
         auto p = x[0].chunk(4);
         return cat({p.at(2), p.at(1), p.at(0)}, 0);
       }},
      {"split",
       [](const V& x) {
         auto p = x[0].split(2);
         return cat({p.at(1), p.at(2) * 3.0, p.at(0) * -2.0}, 0);
       }},
      // nn.functional
      {"linear", [](const V& x) { return linear(x[0], x[1], x[2]); }},
      {"linear_nobias", [](const V& x) { return linear(x[0], x[1]); }},
      {"linear_3d", [](const V& x) { return linear(x[0], x[1], x[2]); }},
      {"mse_mean", [](const V& x) { return mse_loss(x[0], x[1]); }},
      {"mse_sum", [](const V& x) { return mse_loss(x[0], x[1], R::Sum); }},
      {"mse_none", [](const V& x) { return mse_loss(x[0], x[1], R::None); }},
      {"cross_entropy_mean", [](const V& x) { return cross_entropy(x[0], x[1]); }},
      {"cross_entropy_sum", [](const V& x) { return cross_entropy(x[0], x[1], R::Sum); }},
      {"cross_entropy_none", [](const V& x) { return cross_entropy(x[0], x[1], R::None); }},
      {"cross_entropy_large", [](const V& x) { return cross_entropy(x[0], x[1]); }},
      {"nll_loss_mean", [](const V& x) { return nll_loss(x[0], x[1]); }},
      {"nll_loss_sum", [](const V& x) { return nll_loss(x[0], x[1], R::Sum); }},
      {"nll_loss_none", [](const V& x) { return nll_loss(x[0], x[1], R::None); }},
  };
  return cases;
}

inline const OpCase* find_case(const std::string& name) {
  for (const auto& c : op_cases())
    if (name == c.name) return &c;
  return nullptr;
}

}  // namespace ops_test

// tinytorch/autograd/gradcheck.hpp — compare backward() with finite differences.
//
// For f: inputs -> output (any shape), each input element x_j and each output element y_i:
//   numerical  J[i][j] = (f(x + eps e_j)_i - f(x - eps e_j)_i) / (2 eps)      (central differences)
//   analytical J[i][j] = d y_i / d x_j from backward() with grad_output = e_i
// and requires |analytical - numerical| <= atol + rtol * |numerical| everywhere.
// Inputs must be float64 leaves with requires_grad (float32 has too few digits for eps=1e-6).
// Reference: torch.autograd.gradcheck (same defaults: eps=1e-6, atol=1e-5, rtol=1e-3).
// Chapter: chapters/02-autograd.md.
#pragma once

#include <cmath>
#include <functional>
#include <sstream>

#include "tinytorch/functional.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  bool raise_exception = true;  ///< throw a tinytorch::Error describing the first mismatch
};

/// True when the analytical gradients of `f` at `inputs` match finite differences. Throws
/// tinytorch::Error (when raise_exception) naming the input, the element and both values; also
/// throws if an input is not a float64 tensor requiring grad. The inputs' .grad are left as they were.
inline bool gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<Tensor> inputs,
                      GradcheckOptions opt = {}) {
  for (size_t k = 0; k < inputs.size(); ++k)
    TT_CHECK(inputs[k].dtype() == kFloat64 && inputs[k].requires_grad() && inputs[k].is_leaf(),
             "gradcheck: input ", k, " must be a float64 leaf with requires_grad=true (got ",
             dtype_name(inputs[k].dtype()), ", requires_grad=", inputs[k].requires_grad(), ")");
  // The inputs' .grad is used as scratch space; put the caller's values back on every exit,
  // including a mismatch (torch.autograd.gradcheck leaves .grad alone too).
  struct RestoreGrads {
    std::vector<Tensor>& in;
    std::vector<Tensor> saved;
    ~RestoreGrads() {
      for (size_t k = 0; k < in.size(); ++k) in[k].set_grad(saved[k]);
    }
  } restore{inputs, {}};
  for (Tensor& in : inputs) restore.saved.push_back(in.grad());
  Tensor y0;
  {
    NoGradGuard g;
    y0 = f(inputs);
  }
  const int64_t ny = y0.numel();
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor& x = inputs[k];
    const int64_t nx = x.numel();
    // numerical Jacobian, column by column: (ny, nx)
    std::vector<double> num(static_cast<size_t>(ny * nx));
    {
      NoGradGuard g;
      Tensor xd = x.detach();  // shares storage: perturb in place
      Tensor flat = xd.reshape({nx});
      TT_CHECK(flat.impl()->storage == x.impl()->storage, "gradcheck: inputs must be contiguous");
      for (int64_t j = 0; j < nx; ++j) {
        double orig = flat.at<double>({j});
        double* p = flat.data_ptr<double>() + j * flat.strides()[0];
        *p = orig + opt.eps;
        std::vector<double> plus = f(inputs).tolist<double>();
        *p = orig - opt.eps;
        std::vector<double> minus = f(inputs).tolist<double>();
        *p = orig;
        for (int64_t i = 0; i < ny; ++i) num[i * nx + j] = (plus[i] - minus[i]) / (2 * opt.eps);
      }
    }
    // analytical Jacobian, row by row
    for (int64_t i = 0; i < ny; ++i) {
      for (Tensor& in : inputs) in.set_grad(Tensor());
      Tensor y = f(inputs);
      Tensor seed = zeros(y.sizes(), y.dtype());
      seed.reshape({ny}).select(0, i).fill_(1.0);
      if (!y.requires_grad()) {
        for (int64_t j = 0; j < nx; ++j)
          TT_CHECK(std::abs(num[i * nx + j]) <= opt.atol || !opt.raise_exception,
                   "gradcheck: output does not require grad but the numerical gradient of input ", k,
                   " is nonzero");
        continue;
      }
      y.backward(seed);
      Tensor g = x.grad();
      std::vector<double> ana = g.defined() ? g.tolist<double>() : std::vector<double>(nx, 0.0);
      for (int64_t j = 0; j < nx; ++j) {
        double a = ana[j], n = num[i * nx + j];
        if (std::abs(a - n) > opt.atol + opt.rtol * std::abs(n)) {
          if (!opt.raise_exception) return false;
          throw Error(detail::str_cat("gradcheck: Jacobian mismatch for output ", i, " with respect to input ", k,
                                      " element ", j, ": numerical ", n, " vs analytical ", a,
                                      " (input shape ", shape_str(x.sizes()), ")"));
        }
      }
    }
  }
  return true;
}

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

TT_NAMESPACE_BEGIN
using autograd::gradcheck;
using autograd::GradcheckOptions;
TT_NAMESPACE_END  // namespace tinytorch

// tinytorch/nn/utils/clip_grad.hpp — gradient clipping: clip_grad_norm_ and clip_grad_value_.
//
// clip_grad_norm_(params, max_norm, norm_type = 2):
//   total = || (||g_1||_p, ||g_2||_p, ...) ||_p     one norm over all gradients together, as if
//                                                   they were concatenated into one vector
//   coef  = min(max_norm / (total + 1e-6), 1)
//   g_i  *= coef   for every gradient (in place)        returns total (before clipping)
// p = inf is the largest |g| (and -inf the smallest, p = 0 the count of non-zeros: torch.norm's
// conventions). Parameters whose .grad is undefined are skipped. The 1e-6 keeps the division
// finite for zero gradients and makes the clipped norm land just below max_norm.
// clip_grad_value_(params, clip_value): every gradient element clamped to [-clip_value, clip_value].
// Used between backward() and optimizer.step(); with DDP, after backward (the gradients are then
// the averaged ones, identical on every rank, so every rank clips the same way).
// Reference: torch.nn.utils.clip_grad_norm_ / clip_grad_value_ (torch/nn/utils/clip_grad.py,
// PyTorch 2.x); Pascanu, Mikolov & Bengio, "On the difficulty of training recurrent neural
// networks", ICML 2013. Chapter: chapters/01-training-loop.md.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "../module.hpp"
#include "../../core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace nn::utils {

namespace detail {

/// Python's str(float(v)): "2.0", "inf", "1.5", "1e-05" (for error messages).
inline std::string python_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {  // the shortest text that reads back as v
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

/// ||g||_p of one tensor, in double (torch.linalg.vector_norm's conventions for p = +-inf, 0).
inline double vector_norm(const Tensor& g, double p) {
  const std::vector<double> v = g.tolist<double>();
  if (std::isinf(p)) {
    double m = p > 0 ? 0.0 : std::numeric_limits<double>::infinity();
    if (v.empty()) return 0.0;
    for (double x : v) {
      if (std::isnan(x)) return x;
      m = p > 0 ? std::max(m, std::abs(x)) : std::min(m, std::abs(x));
    }
    return m;
  }
  double s = 0;
  if (p == 0) {
    for (double x : v) s += x != 0;
    return s;
  }
  if (p == 1) {
    for (double x : v) s += std::abs(x);
    return s;
  }
  if (p == 2) {
    for (double x : v) s += x * x;
    return std::sqrt(s);
  }
  for (double x : v) s += std::pow(std::abs(x), p);
  return std::pow(s, 1.0 / p);
}

/// v rounded to dtype d (a float32 result is a float32 number, as PyTorch's tensors are).
inline double round_to(double v, DType d) { return d == kFloat32 ? static_cast<double>(static_cast<float>(v)) : v; }

}  // namespace detail

/// Scales all gradients in place so that their joint p-norm is at most max_norm (see the top of
/// this file). parameters: tensors whose .grad is used (undefined .grad: skipped). Returns the
/// total norm before clipping, a 0-d tensor of the gradients' dtype (float64 if any is float64)
/// on their device (gradients on a CUDA device are reduced there: the host reads only the total
/// norm; p = inf and p = 0 still copy them to the host);
/// a float32 0 when no parameter has a gradient (nothing is changed then).
/// Throws tinytorch::Error when error_if_nonfinite and the total norm is nan or inf (nothing is
/// changed then), with PyTorch's message; otherwise a non-finite norm scales by it (nan
/// gradients), as PyTorch.
inline Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                              bool error_if_nonfinite = false) {
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return scalar_tensor(0.0);
  DType dt = grads[0].dtype();
  for (const Tensor& g : grads) dt = ops::promote_types(dt, g.dtype());
  double total = 0;
  const bool on_device = !grads[0].device().is_cpu();
  if (on_device && std::isfinite(norm_type) && norm_type > 0) {
    // Gradients on a CUDA device: the norms are reduced there (float64), and only the total,
    // one scalar, is read on the host. Same rounding as the host path below.
    NoGradGuard ng;
    Tensor acc;  // sum over gradients of ||g_i||^p, float64, on the device
    for (const Tensor& g : grads) {
      Tensor a = g.to(kFloat64).abs();
      Tensor n = (norm_type == 1 ? a : a.pow(norm_type)).sum().pow(1.0 / norm_type);  // ||g_i||_p
      n = n.to(g.dtype()).to(kFloat64);                                                // rounded to g's dtype
      Tensor np = norm_type == 1 ? n : n.pow(norm_type);
      acc = acc.defined() ? acc + np : np;
    }
    total = detail::round_to(acc.pow(1.0 / norm_type).item<double>(), dt);
  } else {
    std::vector<double> norms;  // one per gradient, each rounded to its tensor's dtype
    for (const Tensor& g : grads) norms.push_back(detail::round_to(detail::vector_norm(g, norm_type), g.dtype()));
    total = detail::round_to(detail::vector_norm(tensor(norms, kFloat64), norm_type), dt);
  }
  TT_CHECK(!error_if_nonfinite || std::isfinite(total), "clip_grad_norm_: The total norm of order ",
           detail::python_float(norm_type), " for gradients from `parameters` is non-finite, so it cannot be "
           "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
           "`error_if_nonfinite=False`");
  // coef = min(max_norm / (total + 1e-6), 1), computed in the norm's dtype as PyTorch does
  double coef = 0;
  dispatch_floating(dt, "clip_grad_norm_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T c = static_cast<T>(max_norm) / (static_cast<T>(total) + static_cast<T>(1e-6));
    coef = static_cast<double>(c < T(1) || std::isnan(c) ? c : T(1));  // torch.clamp(max=1): nan stays nan
  });
  NoGradGuard ng;
  for (Tensor& g : grads) g.mul_(coef);
  return scalar_tensor(total, TensorOptions(dt).device(grads[0].device()));
}
/// The same for one tensor (torch.nn.utils.clip_grad_norm_ accepts a single Tensor too).
inline Tensor clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                              bool error_if_nonfinite = false) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

/// Clamps every gradient element to [-clip_value, clip_value] in place (undefined .grad:
/// skipped). As torch.clamp, nan stays nan, and min(max(g, -v), v) is v everywhere when v < 0.
inline void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard ng;
  for (const Tensor& p : parameters) {
    if (!p.defined() || !p.grad().defined()) continue;
    Tensor g = p.grad();
    ops::unary_(g, [clip_value](auto x) {
      using T = decltype(x);
      const T lo = static_cast<T>(-clip_value), hi = static_cast<T>(clip_value);
      return std::isnan(static_cast<double>(x)) ? x : std::min(std::max(x, lo), hi);
    }, "clip_grad_value_");
  }
}
inline void clip_grad_value_(const Tensor& parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

}  TT_NAMESPACE_END  // namespace tinytorch::nn::utils

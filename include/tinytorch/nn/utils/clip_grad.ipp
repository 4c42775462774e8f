// tinytorch/nn/utils/clip_grad.ipp — the bodies of clip_grad.hpp: gradient clipping.
//
// Not a header to include: clip_grad.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The declarations and their documentation are in clip_grad.hpp.
// Chapter: chapters/01-training-loop.md.
#pragma once

#include "tinytorch/nn/utils/clip_grad.hpp"
#include "tinytorch/ops/elementwise.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

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

// round_to(v, dtype): core/dtype.hpp.

}  // namespace detail
TT_DECL Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                              bool error_if_nonfinite) {
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
    total = ::tinytorch::detail::round_to(acc.pow(1.0 / norm_type).item<double>(), dt);
  } else {
    std::vector<double> norms;  // one per gradient, each rounded to its tensor's dtype
    for (const Tensor& g : grads) norms.push_back(::tinytorch::detail::round_to(detail::vector_norm(g, norm_type), g.dtype()));
    total = ::tinytorch::detail::round_to(detail::vector_norm(tensor(norms, kFloat64), norm_type), dt);
  }
  TT_CHECK(!error_if_nonfinite || std::isfinite(total), "clip_grad_norm_: The total norm of order ",
           detail::python_float(norm_type), " for gradients from `parameters` is non-finite, so it cannot be "
           "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
           "`error_if_nonfinite=False`");
  // coef = min(max_norm / (total + 1e-6), 1), computed in the norm's dtype as PyTorch does
  double coef = 0;
  dispatch_floating(is_reduced_floating_point(dt) ? kFloat32 : dt, "clip_grad_norm_", [&](auto tag) {
    using T = typename decltype(tag)::type;  // float16/bfloat16: in float, each op's result rounded to dt
    const T d = static_cast<T>(::tinytorch::detail::round_to(static_cast<T>(total) + static_cast<T>(1e-6), dt));
    const T c = static_cast<T>(::tinytorch::detail::round_to(static_cast<T>(max_norm) / d, dt));
    coef = static_cast<double>(c < T(1) || std::isnan(c) ? c : T(1));  // torch.clamp(max=1): nan stays nan
  });
  NoGradGuard ng;
  for (Tensor& g : grads) g.mul_(coef);
  return scalar_tensor(total, TensorOptions(dt).device(grads[0].device()));
}
TT_DECL Tensor clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type,
                              bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}
TT_DECL void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
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
TT_DECL void clip_grad_value_(const Tensor& parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

}  TT_NAMESPACE_END  // namespace tinytorch::nn::utils

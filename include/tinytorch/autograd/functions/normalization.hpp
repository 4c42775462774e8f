// tinytorch/autograd/functions/normalization.hpp — batch norm and layer norm: forward and backward side by
// side, one node each (PyTorch's NativeBatchNormBackward0 / NativeLayerNormBackward0).
//
// Both normalise groups of n elements by the group's mean and biased variance, then apply an
// optional per-feature affine map:
//   xhat = (x - mean) * invstd,   invstd = 1 / sqrt(var + eps),   var = mean((x - mean)^2)
//   y    = xhat * weight + bias
// batch norm:  x (N, C, *) viewed as (N, C, L); one group per channel c: the N*L elements
//              x[:, c, :]; weight, bias (C), indexed by c.
// layer norm:  x (*, D1..Dk) viewed as (M, K), K = D1*..*Dk; one group per row m: the K
//              elements x[m, :]; weight, bias (D1..Dk), indexed by k.
//
// Backward, for one group of n elements with g = dy * weight (the gradient reaching xhat):
//   dx     = invstd * (g - mean(g) - xhat * mean(g * xhat))    statistics from this batch
//   dx     = invstd * g                                        statistics given (BN eval mode)
//   dweight = sum of dy * xhat,   dbias = sum of dy            (over everything sharing the feature)
// The first line is the chain rule through mean and var: d mean/dx_i = 1/n and
// d var/dx_i = 2 (x_i - mean) / n, so the terms in mean(g) and mean(g * xhat) subtract the
// gradient's share that flows through the statistics. (Ioffe & Szegedy 2015, section 3.)
// Sums run in double, whatever the input dtype; mean and invstd are kept in double.
// Batch norm's loops are here (CPU only); layer norm's are backend/cpu/layer_norm.hpp and its
// CUDA twin backend/cuda/layer_norm.cuh, reached through backend::dispatch (the GPT on cuda:0).
// Tinytorch computes these with dedicated nodes, not as ~10 composed ops: one pass over the data,
// and the backward formula above is readable in one place.
// Chapter: chapters/01-training-loop.md. Reference: PyTorch aten/src/ATen/native/Normalization.cpp
// (batch_norm_cpu, batch_norm_backward_cpu), layer_norm.cpp; tools/autograd/derivatives.yaml.
#pragma once

#include <cmath>
#include <vector>

#include "tinytorch/ops/creation.hpp"
#include "tinytorch/ops/dispatch.hpp"  // backend::dispatch::layer_norm_kernel
#include "tinytorch/ops/shape.hpp"
#include "tinytorch/autograd/engine.hpp"
#include "tinytorch/autograd/node.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

namespace norm_detail {
/// The elements of a floating-point tensor, row-major, as doubles.
inline std::vector<double> values(const Tensor& t) {
  const Tensor c = ops::contiguous(is_reduced_floating_point(t.dtype()) ? ops::to_dtype(t, kFloat32) : t);
  std::vector<double> out;
  dispatch_floating(c.dtype(), "normalization", [&](auto tag) {
    using T = typename decltype(tag)::type;
    out.assign(c.data_ptr<T>(), c.data_ptr<T>() + c.numel());
  });
  return out;
}
}  // namespace norm_detail

/// y = batch_norm(x): statistics per channel over (N, L); x is (N, C, L) (L = 1 for (N, C)).
/// With `use_input_stats` the batch's own mean and biased variance are used (training), else
/// the given mean_in / var_in (running statistics, evaluation). Returns y and, through
/// batch_mean / batch_var_unbiased, the batch's statistics (for the running-stat update; only
/// when use_input_stats).
struct NativeBatchNorm : Node {
  Tensor x;                         // (N, C, L) contiguous, detached
  Tensor weight;                    // (C) or undefined (weight 1)
  std::vector<double> mean, invstd; // (C)
  int64_t N = 0, C = 0, L = 1;
  bool use_input_stats = true;
  std::string name() const override { return "NativeBatchNormBackward0"; }

  static Tensor forward(const Tensor& x0, const Tensor& weight, const Tensor& bias, const Tensor& mean_in,
                        const Tensor& var_in, bool use_input_stats, double eps, std::vector<double>* batch_mean,
                        std::vector<double>* batch_var_unbiased) {
    const Tensor x = ops::contiguous(x0);
    const int64_t N = x.sizes()[0], C = x.sizes()[1], L = x.numel() / std::max<int64_t>(1, N * C);
    const int64_t n = N * L;
    std::vector<double> mean(C), invstd(C), w(C, 1.0), b(C, 0.0);
    if (weight.defined()) w = norm_detail::values(weight);
    if (bias.defined()) b = norm_detail::values(bias);
    Tensor y = ops::make_tensor(x.sizes(), x.dtype());
    dispatch_floating(x.dtype(), "batch_norm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xp = x.data_ptr<T>();
      T* yp = y.data_ptr<T>();
      if (use_input_stats) {
        if (batch_mean) batch_mean->assign(C, 0.0);
        if (batch_var_unbiased) batch_var_unbiased->assign(C, 0.0);
        for (int64_t c = 0; c < C; ++c) {  // two passes: mean, then sum of squared deviations
          double s = 0;
          for (int64_t i = 0; i < N; ++i)
            for (int64_t l = 0; l < L; ++l) s += xp[(i * C + c) * L + l];
          const double m = s / static_cast<double>(n);
          double ss = 0;
          for (int64_t i = 0; i < N; ++i)
            for (int64_t l = 0; l < L; ++l) {
              const double d = xp[(i * C + c) * L + l] - m;
              ss += d * d;
            }
          mean[c] = m;
          invstd[c] = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
          if (batch_mean) (*batch_mean)[c] = m;
          if (batch_var_unbiased) (*batch_var_unbiased)[c] = ss / static_cast<double>(n - 1);
        }
      } else {
        mean = norm_detail::values(mean_in);
        std::vector<double> var = norm_detail::values(var_in);
        for (int64_t c = 0; c < C; ++c) invstd[c] = 1.0 / std::sqrt(var[c] + eps);
      }
      for (int64_t i = 0; i < N; ++i)
        for (int64_t c = 0; c < C; ++c) {
          const double scale = invstd[c] * w[c], shift = b[c] - mean[c] * scale;  // y = x*scale + shift
          for (int64_t l = 0; l < L; ++l) {
            const int64_t k = (i * C + c) * L + l;
            yp[k] = static_cast<T>(xp[k] * scale + shift);
          }
        }
    });
    if (!any_requires_grad({&x0, &weight, &bias})) return y;
    auto node = std::make_shared<NativeBatchNorm>();
    node->x = node->save(x);
    if (!x0.is_contiguous()) node->watch(x0);  // x is a contiguous copy: watch the caller's tensor too
    if (weight.defined()) node->weight = node->save(weight);
    node->mean = std::move(mean);
    node->invstd = std::move(invstd);
    node->N = N;
    node->C = C;
    node->L = L;
    node->use_input_stats = use_input_stats;
    return set_history(y, node, {&x0, &weight, &bias});
  }

  // g = dy * w;  dx = invstd (g - mean(g) - xhat mean(g xhat))  [batch stats]  or  invstd g  [given]
  // dweight_c = sum dy xhat,  dbias_c = sum dy
  std::vector<Tensor> backward(const Tensor& dy0) override {
    const Tensor dy = ops::contiguous(dy0);
    const bool need_dx = next_edges[0].fn != nullptr;
    const bool need_dw = next_edges.size() > 1 && next_edges[1].fn != nullptr;
    const bool need_db = next_edges.size() > 2 && next_edges[2].fn != nullptr;
    const std::vector<double> w = weight.defined() ? norm_detail::values(weight) : std::vector<double>(C, 1.0);
    Tensor dx = need_dx ? ops::make_tensor(x.sizes(), x.dtype()) : Tensor();
    Tensor dw = need_dw ? ops::make_tensor({C}, dy.dtype()) : Tensor();
    Tensor db = need_db ? ops::make_tensor({C}, dy.dtype()) : Tensor();
    const double n = static_cast<double>(N * L);
    dispatch_floating(x.dtype(), "batch_norm_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xp = x.data_ptr<T>();
      const T* gp = dy.data_ptr<T>();
      for (int64_t c = 0; c < C; ++c) {
        double sum_dy = 0, sum_dy_xhat = 0;  // sums over the channel's group
        for (int64_t i = 0; i < N; ++i)
          for (int64_t l = 0; l < L; ++l) {
            const int64_t k = (i * C + c) * L + l;
            sum_dy += gp[k];
            sum_dy_xhat += gp[k] * (xp[k] - mean[c]) * invstd[c];
          }
        if (need_dw) dw.data_ptr<T>()[c] = static_cast<T>(sum_dy_xhat);
        if (need_db) db.data_ptr<T>()[c] = static_cast<T>(sum_dy);
        if (!need_dx) continue;
        T* dxp = dx.data_ptr<T>();
        // mean(g) = w sum_dy / n,  mean(g xhat) = w sum_dy_xhat / n
        const double mg = use_input_stats ? w[c] * sum_dy / n : 0.0;
        const double mgx = use_input_stats ? w[c] * sum_dy_xhat / n : 0.0;
        for (int64_t i = 0; i < N; ++i)
          for (int64_t l = 0; l < L; ++l) {
            const int64_t k = (i * C + c) * L + l;
            const double xhat = (xp[k] - mean[c]) * invstd[c];
            dxp[k] = static_cast<T>(invstd[c] * (gp[k] * w[c] - mg - xhat * mgx));
          }
      }
    });
    return {dx, dw, db};
  }
  void release_saved() override {
    x = weight = Tensor();
    mean.clear();
    invstd.clear();
  }
};

/// y = layer_norm(x) over the last dims: x viewed as (M, K), statistics per row, affine per
/// column k (weight, bias: K elements, or undefined). The loops are backend::dispatch's
/// layer_norm_kernel / layer_norm_backward_kernel (backend/cpu/layer_norm.hpp and its CUDA twin),
/// so the node runs on x's device; mean and rstd are float64 tensors (M) there.
struct NativeLayerNorm : Node {
  Tensor x;       // (M, K) contiguous, detached
  Tensor weight;  // normalized_shape (K elements, contiguous) or undefined
  Shape normalized_shape;
  Tensor mean, rstd;  // (M) float64, on x's device
  int64_t M = 0, K = 0;
  std::string name() const override { return "NativeLayerNormBackward0"; }

  static Tensor forward(const Tensor& x0, const Shape& normalized_shape, const Tensor& weight0, const Tensor& bias0,
                        double eps) {
    const Tensor x = ops::contiguous(x0);
    const Tensor weight = weight0.defined() ? ops::contiguous(weight0) : Tensor();
    const Tensor bias = bias0.defined() ? ops::contiguous(bias0) : Tensor();
    const int64_t K = numel_of(normalized_shape);
    const int64_t M = K == 0 ? 0 : x.numel() / K;
    const Device d = x.device();
    Tensor mean = ops::make_tensor({M}, kFloat64, d), rstd = ops::make_tensor({M}, kFloat64, d);
    Tensor y = ops::make_tensor(x.sizes(), x.dtype(), d);
    dispatch_floating(x.dtype(), "layer_norm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      backend::dispatch::layer_norm_kernel(d, x.data_ptr<T>(), weight.defined() ? weight.data_ptr<T>() : nullptr,
                                           bias.defined() ? bias.data_ptr<T>() : nullptr, y.data_ptr<T>(),
                                           mean.data_ptr<double>(), rstd.data_ptr<double>(), M, K, eps);
    });
    if (!any_requires_grad({&x0, &weight0, &bias0})) return y;
    auto node = std::make_shared<NativeLayerNorm>();
    node->x = node->save(x);
    if (weight.defined()) node->weight = node->save(weight);
    // x or weight copied to be contiguous: watch the caller's tensors too, so that changing them
    // in place before backward still raises, as in PyTorch
    if (!x0.is_contiguous()) node->watch(x0);
    if (weight0.defined() && !weight0.is_contiguous()) node->watch(weight0);
    node->mean = std::move(mean);
    node->rstd = std::move(rstd);
    node->normalized_shape = normalized_shape;
    node->M = M;
    node->K = K;
    return set_history(y, node, {&x0, &weight0, &bias0});
  }

  // g = dy * w;  dx = rstd (g - mean_k(g) - xhat mean_k(g xhat));  dweight_k = sum_m dy xhat,
  // dbias_k = sum_m dy
  std::vector<Tensor> backward(const Tensor& dy0) override {
    const Tensor dy = ops::contiguous(dy0);
    const bool need_dx = next_edges[0].fn != nullptr;
    const bool need_dw = next_edges.size() > 1 && next_edges[1].fn != nullptr;
    const bool need_db = next_edges.size() > 2 && next_edges[2].fn != nullptr;
    const Device d = x.device();
    Tensor dx = need_dx ? ops::make_tensor(x.sizes(), x.dtype(), d) : Tensor();
    Tensor dweight = need_dw ? ops::make_tensor(normalized_shape, x.dtype(), d) : Tensor();
    Tensor dbias = need_db ? ops::make_tensor(normalized_shape, x.dtype(), d) : Tensor();
    dispatch_floating(x.dtype(), "layer_norm_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto ptr = [](Tensor& t) { return t.defined() ? t.data_ptr<T>() : nullptr; };
      backend::dispatch::layer_norm_backward_kernel(d, dy.data_ptr<T>(), x.data_ptr<T>(),
                                                    weight.defined() ? weight.data_ptr<T>() : nullptr,
                                                    mean.data_ptr<double>(), rstd.data_ptr<double>(), ptr(dx),
                                                    ptr(dweight), ptr(dbias), M, K);
    });
    return {dx, dweight, dbias};
  }
  void release_saved() override { x = weight = mean = rstd = Tensor(); }
};

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

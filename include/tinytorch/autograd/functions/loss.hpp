// tinytorch/autograd/functions/loss.hpp — the autograd nodes of the losses: mse_loss and
// nll_loss (cross_entropy is log_softmax then nll_loss, functional.hpp).
//
//   mse:  loss = reduce((x - t)^2)  =>  dx = 2 (x - t) * dloss (/ N for mean),  dt = -dx
//   nll:  loss = -sum_i w[t_i] x[i, t_i] (/ sum_i w[t_i] for mean)  =>  dx[i, t_i] = -w[t_i] dloss
// Chapter: chapters/02-autograd.md. Reference: PyTorch tools/autograd/derivatives.yaml.
#pragma once

#include <vector>

#include "tinytorch/autograd/reduction.hpp"
#include "tinytorch/autograd/functions/common.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

// ---------------------------------------------------------------------------------------------
// Losses
// ---------------------------------------------------------------------------------------------

/// loss = reduce((x - t)^2)  =>  dx = 2 (x - t) * dloss (/ N for mean),  dt = -dx
struct MseLoss : Node {
  Tensor diff;
  Reduction reduction = Reduction::Mean;
  std::string name() const override { return "MseLossBackward0"; }
  static Tensor forward(const Tensor& x, const Tensor& t, Reduction reduction) {
    TT_CHECK(x.sizes() == t.sizes(), "mse_loss: input shape ", shape_str(x.sizes()),
             " does not match target shape ", shape_str(t.sizes()),
             ". PyTorch only warns here and broadcasts (e.g. (N, 1) against (N) becomes (N, N)), which "
             "silently trains on the wrong loss; tinytorch raises. Reshape one of them (e.g. target.view({-1, 1})).");
    TT_CHECK(x.is_floating_point() && t.is_floating_point(), "mse_loss: expected floating point input and "
             "target, got ", dtype_name(x.dtype()), " and ", dtype_name(t.dtype()));
    Tensor diff = ops::binary(x, t, cpu::SubOp{}, "mse_loss");
    Tensor sq = ops::binary(diff, diff, cpu::MulOp{}, "mse_loss");
    Tensor out = reduction == Reduction::None ? sq : ops::sum_all(sq, reduction == Reduction::Mean);
    if (!any_requires_grad({&x, &t})) return out;
    auto n = std::make_shared<MseLoss>();
    n->watch(x);  // PyTorch keeps input and target; tinytorch keeps x - t, but watches both
    n->watch(t);
    n->diff = diff;
    n->reduction = reduction;
    return record(out, n, {&x, &t});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    double scale = reduction == Reduction::Mean ? 2.0 / static_cast<double>(diff.numel()) : 2.0;
    Tensor dx = reduction == Reduction::None ? grad_math::scale(grad_math::mul(diff, dy), 2.0)
                                              : grad_math::mul(diff, grad_math::scale(dy, scale));
    Tensor dt = next_edges[1].fn ? grad_math::neg(dx) : Tensor();  // only when the target needs it
    return {dx, dt};
  }
  void release_saved() override { diff = Tensor(); }
};

/// Throws PyTorch's "Target 7 is out of bounds" (prefixed with `op`) unless every target is
/// ignore_index or in [0, C). The labels are read on the host (a CUDA target is copied there first):
/// a device-side assert would be asynchronous and opaque. Returns them.
inline std::vector<int64_t> checked_targets(const Tensor& t, int64_t C, int64_t ignore_index, const char* op) {
  const std::vector<int64_t> tp = t.tolist<int64_t>();
  for (size_t i = 0; i < tp.size(); ++i)
    TT_CHECK(tp[i] == ignore_index || (tp[i] >= 0 && tp[i] < C), op, ": Target ", tp[i], " is out of bounds (", C,
             " classes; sample ", i, ")");
  return tp;
}

/// loss_i = -w[t_i] * x[i, t_i], 0 where t_i == ignore_index (x holds log-probabilities: (N, C);
/// t: (N) int64; w: (C) class weights, 1 when undefined).
/// Reductions: none -> loss (N); sum -> sum_i loss_i; mean -> sum_i loss_i / sum_i w[t_i] over the
/// non-ignored i (the weighted mean; 0/0 = nan when every target is ignored, as PyTorch).
///   =>  dx[i, t_i] = -w[t_i] * dloss_i   (dloss / total_weight for mean, dloss for sum), 0
///       elsewhere and on ignored rows. The weight gets no gradient (as PyTorch).   (nn.NLLLoss)
/// On any device: the targets and weights are read on the host (checked, and turned into the
/// per-sample factors -w[t_i], 0 when ignored); the pick x[i, t_i] and the scatter of the
/// gradient are elementwise ops with the mask hit[i, c] = (c == t_i).
struct NllLoss : Node {
  Tensor hit;       // (N, C) int64 0/1: c == t_i (never for an ignored sample)
  Tensor neg_w;     // (N, 1) in x's dtype: -w[t_i], 0 for an ignored sample
  Reduction reduction = Reduction::Mean;
  double total_weight = 0;
  std::string name() const override { return "NllLossBackward0"; }
  static Tensor forward(const Tensor& x, const Tensor& t, Reduction reduction, const Tensor& weight = Tensor(),
                        int64_t ignore_index = -100) {
    ops::check_device(x, "nll_loss");
    TT_CHECK(x.dim() == 2, "nll_loss: expected input of shape (N, C), got ", shape_str(x.sizes()));
    TT_CHECK(t.dtype() == kInt64, "nll_loss: expected target of dtype torch.int64 (class indices), got ",
             dtype_name(t.dtype()));
    TT_CHECK(t.dim() == 1 && t.sizes()[0] == x.sizes()[0], "nll_loss: expected target of shape (",
             x.sizes()[0], "), got ", shape_str(t.sizes()), " for input of shape ", shape_str(x.sizes()));
    const Device dev = ops::detail::common_device("nll_loss", {&x, &t, &weight});
    const int64_t N = x.sizes()[0], C = x.sizes()[1];
    std::vector<double> w;
    if (weight.defined()) {
      ops::check_device(weight, "nll_loss");
      TT_CHECK(weight.dim() == 1 && weight.numel() == C, "nll_loss: weight tensor should be defined either for all ",
               C, " classes or no classes but got weight tensor of shape: ", shape_str(weight.sizes()));
      TT_CHECK(weight.dtype() == x.dtype(), "nll_loss: expected weight of dtype ", dtype_name(x.dtype()),
               " (the input's), got ", dtype_name(weight.dtype()));
      TT_CHECK(!(GradMode::is_enabled() && weight.requires_grad()), "nll_loss: The function 'nll_loss_forward' is "
               "not differentiable with respect to argument 'weight'. This input cannot have requires_grad True.");
      dispatch_floating(weight.dtype(), "nll_loss", [&](auto tag) {
        using T = typename decltype(tag)::type;
        for (T v : weight.tolist<T>()) w.push_back(static_cast<double>(v));
      });
    }
    const std::vector<int64_t> tp = checked_targets(t, C, ignore_index, "nll_loss");
    std::vector<double> neg_w(static_cast<size_t>(N));  // -w[t_i] rounded to x's dtype, 0 when ignored
    std::vector<double> kept(static_cast<size_t>(N), -1.0);  // t_i, or -1 (no class) when ignored
    double total_weight = 0;  // sum of w[t_i] over the non-ignored samples
    dispatch_floating(x.dtype(), "nll_loss", [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < N; ++i) {
        if (tp[i] == ignore_index) continue;
        kept[i] = static_cast<double>(tp[i]);
        const T wi = w.empty() ? T(1) : static_cast<T>(w[tp[i]]);
        neg_w[i] = static_cast<double>(-wi);
        total_weight += static_cast<double>(wi);
      }
    });
    Tensor nw = ops::reshape(tensor(neg_w, Shape{N}, x.dtype()), {N, 1});
    Tensor classes = ops::reshape(arange(0, static_cast<double>(C), 1, kInt64), {1, C});
    Tensor kept_t = ops::reshape(tensor(kept, Shape{N}, kInt64), {N, 1});
    if (!dev.is_cpu()) {
      nw = ops::to_device(nw, dev);
      classes = ops::to_device(classes, dev);
      kept_t = ops::to_device(kept_t, dev);
    }
    // hit[i, c] = (c == t_i), all 0 on an ignored row: its gradient is exactly 0 even when the
    // mean's 1 / total_weight is inf (every target ignored; PyTorch skips those rows)
    const Tensor hit = ops::binary(classes, kept_t, cpu::EqOp{}, "nll_loss", true);  // (N, C)
    // x[i, t_i] (exact: one value plus zeros), times -w[t_i]: -x[i, t_i] * w[t_i], 0 when ignored
    const Tensor picked = ops::sum_dim(ops::where(hit, x, ops::scalar_as_tensor(0.0, x.dtype(), dev)), 1, true);
    Tensor per = ops::reshape(grad_math::mul(picked, nw), {N});
    Tensor out = per;
    if (reduction != Reduction::None) {
      out = ops::sum_all(per);
      if (reduction == Reduction::Mean) out = ops::scalar(out, total_weight, cpu::DivOp{}, "nll_loss");
    }
    if (!any_requires_grad({&x})) return out;
    auto n = std::make_shared<NllLoss>();
    n->watch(x);  // PyTorch keeps it; only the target is read back
    n->hit = hit;
    n->neg_w = nw;
    n->watch(t);
    n->reduction = reduction;
    n->total_weight = total_weight;
    return record(out, n, {&x});
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    // dx[i, c] = hit[i, c] ? g_i * -w[t_i] : 0, with g_i = dy[i] (none), dy (sum), dy / total_weight (mean)
    const int64_t N = hit.sizes()[0];
    Tensor g = reduction == Reduction::None ? ops::reshape(dy, {N, 1})
               : reduction == Reduction::Mean ? ops::scalar(dy, total_weight, cpu::DivOp{}, "nll_loss_backward")
                                              : dy;
    const Tensor gw = grad_math::mul(g, neg_w);  // (N, 1)
    return {ops::where(hit, gw, ops::scalar_as_tensor(0.0, dy.dtype(), dy.device()))};
  }
  void release_saved() override { hit = neg_w = Tensor(); }
};

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

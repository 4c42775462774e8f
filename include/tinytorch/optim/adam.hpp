// tinytorch/optim/adam.hpp — Adam and AdamW: adaptive moment estimation, with L2 (Adam) or
// decoupled (AdamW) weight decay, and the AMSGrad variant.
//
// The update of one parameter p with gradient g at step t = 1, 2, ..., as PyTorch's
// _single_tensor_adam (AdamW = the same with decoupled_weight_decay):
//   Adam:  g = g + weight_decay * p                     (if weight_decay != 0: an L2 penalty)
//   AdamW: p = p * (1 - lr * weight_decay)              (decay applied to p, not through g)
//   m = lerp(m, g, 1 - beta1)  = beta1 * m + (1 - beta1) * g      first moment
//   v = beta2 * v + (1 - beta2) * g * g                            second moment
//   v_max = max(v_max, v), and v_max replaces v below  (amsgrad only)
//   bias_correction1 = 1 - beta1^t,  bias_correction2 = 1 - beta2^t
//   p = p - (lr / bias_correction1) * m / (sqrt(v) / sqrt(bias_correction2) + eps)
// i.e. p -= lr * m_hat / (sqrt(v_hat) + eps) with m_hat = m / bc1, v_hat = v / bc2: the bias
// corrections undo the zero initialisation of m and v, which would make the first steps tiny.
// Shapes: m, v, v_max have p's shape and dtype; t is counted per parameter (state.step).
// Two implementations, as for SGD: adam_kernel (backend/cpu/optim.hpp and its CUDA twin, chosen
// by backend::dispatch::adam_kernel: a loop running the shared functor backend::AdamUpdate, dense
// float/double) and adam_naive (tensor ops, PyTorch's Python line by line), tested against each
// other.
// (PyTorch 1.13 updated m with mul_ + add_; 2.x uses lerp_ as here: the same up to rounding.)
// Chapter: chapters/03-optimizers.md.
// Reference: torch.optim.Adam / torch.optim.AdamW (PyTorch 2.x torch/optim/adam.py, adamw.py);
// Kingma & Ba, "Adam: A Method for Stochastic Optimization" (ICLR 2015); Loshchilov & Hutter,
// "Decoupled Weight Decay Regularization" (ICLR 2019); Reddi et al., "On the Convergence of Adam
// and Beyond" (ICLR 2018, AMSGrad).
#pragma once

#include <cmath>
#include <utility>
#include <vector>

#include "tinytorch/optim/optimizer.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace optim {

/// Adam's hyper-parameters (defaults as torch.optim.Adam).
struct AdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool amsgrad = false;
};

/// AdamW's hyper-parameters: as Adam's, but weight_decay defaults to 1e-2 (torch.optim.AdamW).
struct AdamWOptions {
  double lr = 1e-3;
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
};

namespace detail {
/// torch.maximum: the larger value, NaN if either is NaN.
template <typename T> inline T maximum(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
  return a > b ? a : b;
}
}  // namespace detail

/// The Adam/AdamW update in tensor ops, as PyTorch's _single_tensor_adam. Creates the state
/// tensors on the first call and increments state.step.
TT_DECL void adam_naive(Tensor& param, const Tensor& grad_in, ParamState& state, double lr, double beta1,
                       double beta2, double eps, double weight_decay, bool amsgrad, bool decoupled_weight_decay);

/// Adam (torch.optim.Adam): weight_decay is an L2 penalty added to the gradient.
///   Adam opt(model.parameters(), 1e-3);   or   Adam opt(params, AdamOptions{1e-3, {0.9, 0.98}});
/// Errors (tinytorch::Error, PyTorch's ValueError messages):
///   "Invalid learning rate: -0.001"  "Invalid epsilon value: -1e-08"
///   "Invalid beta parameter at index 0: 1.0"  "Invalid beta parameter at index 1: -0.5"  (need 0 <= beta < 1)
///   "Invalid weight_decay value: -0.1"  "optimizer got an empty parameter list"
///   and add_param_group's checks (non-leaf, duplicate parameters).
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options) : Adam(std::move(params), options, false) {}
  explicit Adam(std::vector<Tensor> params, double lr = 1e-3, std::pair<double, double> betas = {0.9, 0.999},
                double eps = 1e-8, double weight_decay = 0.0, bool amsgrad = false)
      : Adam(std::move(params), AdamOptions{lr, betas, eps, weight_decay, amsgrad}, false) {}

  /// Adds a group that uses the constructor's options.
  void add_param_group(std::vector<Tensor> params) { add_param_group(std::move(params), defaults_); }
  /// Adds a group with its own options.
  void add_param_group(std::vector<Tensor> params, const AdamOptions& options) {
    validate(options);
    add_group(make_group(std::move(params), options));
  }
  const AdamOptions& defaults() const { return defaults_; }

  /// torch.optim.Adam's group keys in state_dict() (PyTorch also has maximize, foreach, capturable,
  /// differentiable, fused).
  std::vector<std::string> hyperparameter_names() const override {
    return {"lr", "betas", "eps", "weight_decay", "amsgrad"};
  }
  /// Adam's per-parameter state: step, exp_avg, exp_avg_sq, and max_exp_avg_sq with amsgrad.
  std::vector<std::string> state_names() const override {
    return {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  }
  std::vector<std::string> required_state_names(const ParamGroup& group) const override {
    if (group.amsgrad) return {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
    return {"step", "exp_avg", "exp_avg_sq"};
  }

 protected:
  Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled_weight_decay)
      : defaults_(options), decoupled_weight_decay_(decoupled_weight_decay) {
    validate(options);
    check_not_empty(params);
    add_group(make_group(std::move(params), options));
  }

  void update(Tensor& param, const Tensor& grad, ParamState& state, const ParamGroup& group) override;

  static void validate(const AdamOptions& o) {
    TT_CHECK(0.0 <= o.lr, "Invalid learning rate: ", detail::py_float(o.lr));
    TT_CHECK(0.0 <= o.eps, "Invalid epsilon value: ", detail::py_float(o.eps));
    TT_CHECK(0.0 <= o.betas.first && o.betas.first < 1.0, "Invalid beta parameter at index 0: ",
             detail::py_float(o.betas.first));
    TT_CHECK(0.0 <= o.betas.second && o.betas.second < 1.0, "Invalid beta parameter at index 1: ",
             detail::py_float(o.betas.second));
    TT_CHECK(0.0 <= o.weight_decay, "Invalid weight_decay value: ", detail::py_float(o.weight_decay));
  }
  static ParamGroup make_group(std::vector<Tensor> params, const AdamOptions& o) {
    ParamGroup g;
    g.params = std::move(params);
    g.lr = o.lr;
    g.betas = o.betas;
    g.eps = o.eps;
    g.weight_decay = o.weight_decay;
    g.amsgrad = o.amsgrad;
    return g;
  }
  static AdamOptions to_adam(const AdamWOptions& o) { return {o.lr, o.betas, o.eps, o.weight_decay, o.amsgrad}; }

  AdamOptions defaults_;
  bool decoupled_weight_decay_;
};

/// AdamW (torch.optim.AdamW): Adam with decoupled weight decay, p *= 1 - lr * weight_decay before
/// the Adam step, so the decay is not rescaled by the adaptive denominator. weight_decay
/// defaults to 1e-2. Same errors as Adam.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamWOptions options) : Adam(std::move(params), to_adam(options), true) {}
  explicit AdamW(std::vector<Tensor> params, double lr = 1e-3, std::pair<double, double> betas = {0.9, 0.999},
                 double eps = 1e-8, double weight_decay = 1e-2, bool amsgrad = false)
      : AdamW(std::move(params), AdamWOptions{lr, betas, eps, weight_decay, amsgrad}) {}

  using Adam::add_param_group;
  /// Adds a group with its own options (weight_decay defaults to 1e-2 here too).
  void add_param_group(std::vector<Tensor> params, const AdamWOptions& options) {
    Adam::add_param_group(std::move(params), to_adam(options));
  }
};

}  TT_NAMESPACE_END  // namespace tinytorch::optim

#if TT_HEADER_ONLY
#include "tinytorch/optim/adam.ipp"
#endif

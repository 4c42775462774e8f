// tinytorch/optim/sgd.hpp — SGD: stochastic gradient descent, with momentum, dampening,
// Nesterov momentum and weight decay.
//
// The update of one parameter p with gradient g, exactly as PyTorch's _single_tensor_sgd:
//   d_p = g + weight_decay * p                          (if weight_decay != 0)
//   if momentum != 0:
//     b = clone(d_p)                                    (first step)
//     b = momentum * b + (1 - dampening) * d_p          (later steps)
//     d_p = d_p + momentum * b   if nesterov   else   d_p = b
//   p = p - lr * d_p
// Note the velocity b is not scaled by lr (unlike Sutskever et al.), so changing lr mid-training
// rescales the whole step at once.
// Shapes: p, g and the momentum buffer b all have p's shape. Arithmetic is in p's dtype with the
// hyper-parameters rounded to it, as PyTorch's kernels do.
// Two implementations: sgd_kernel (backend/cpu/optim.hpp and its CUDA twin, chosen by
// backend::dispatch::sgd_kernel: a loop running the shared functor backend::SgdUpdate, what step()
// uses for dense float/double parameters, no temporaries) and sgd_naive below (the same rule in
// tensor ops, line by line as PyTorch's Python; used for anything else, and tested against
// sgd_kernel).
// Chapter: chapters/01-training-loop.md, chapters/03-optimizers.md.
// Reference: torch.optim.SGD (PyTorch 2.x torch/optim/sgd.py); Sutskever et al., "On the
// importance of initialization and momentum in deep learning" (ICML 2013).
#pragma once

#include <utility>
#include <vector>

#include "tinytorch/optim/optimizer.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace optim {

/// SGD's hyper-parameters (defaults as torch.optim.SGD in PyTorch 2.x; lr was required in 1.x).
///   SGD opt(model.parameters(), SGDOptions{0.1, 0.9});   // lr 0.1, momentum 0.9
struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

/// The SGD update in tensor ops, line by line as PyTorch's _single_tensor_sgd. Creates
/// momentum_buffer on the first call when momentum != 0. Any dtype/device/strides the ops accept.
inline void sgd_naive(Tensor& param, const Tensor& grad, Tensor& momentum_buffer, double lr, double momentum,
                      double dampening, double weight_decay, bool nesterov) {
  NoGradGuard no_grad;
  Tensor d_p = grad;
  if (weight_decay != 0) d_p = add(d_p, param, weight_decay);
  if (momentum != 0) {
    if (!momentum_buffer.defined()) {
      momentum_buffer = d_p.clone().detach();
    } else {
      momentum_buffer.mul_(momentum).add_(d_p, 1 - dampening);
    }
    if (nesterov) d_p = add(d_p, momentum_buffer, momentum);
    else d_p = momentum_buffer;
  }
  param.add_(d_p, -lr);
}

/// Stochastic gradient descent (torch.optim.SGD).
///   SGD opt(model.parameters(), 0.1, /*momentum=*/0.9);
///   for (...) { opt.zero_grad(); loss = ...; loss.backward(); opt.step(); }
/// Errors (tinytorch::Error, PyTorch's ValueError messages):
///   "Invalid learning rate: -0.1"  (lr < 0)       "Invalid momentum value: -1.0"  (momentum < 0)
///   "Invalid weight_decay value: -0.01"           "optimizer got an empty parameter list"
///   "Nesterov momentum requires a momentum and zero dampening"
///   and add_param_group's checks (non-leaf, duplicate parameters). PyTorch checks only the
///   constructor's defaults; tinytorch checks every group's options.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options) : defaults_(options) {
    validate(options);
    check_not_empty(params);
    add_group(make_group(std::move(params), options));
  }
  explicit SGD(std::vector<Tensor> params, double lr = 1e-3, double momentum = 0.0, double dampening = 0.0,
               double weight_decay = 0.0, bool nesterov = false)
      : SGD(std::move(params), SGDOptions{lr, momentum, dampening, weight_decay, nesterov}) {}

  /// Adds a group that uses the constructor's options (PyTorch: add_param_group({'params': ...})).
  void add_param_group(std::vector<Tensor> params) { add_param_group(std::move(params), defaults_); }
  /// Adds a group with its own options, e.g. a smaller lr for a pretrained backbone.
  void add_param_group(std::vector<Tensor> params, const SGDOptions& options) {
    validate(options);
    add_group(make_group(std::move(params), options));
  }
  const SGDOptions& defaults() const { return defaults_; }

  /// torch.optim.SGD's group keys in state_dict() (PyTorch also has maximize, foreach, differentiable).
  std::vector<std::string> hyperparameter_names() const override {
    return {"lr", "momentum", "dampening", "weight_decay", "nesterov"};
  }
  /// SGD's per-parameter state: the momentum buffer (only with momentum != 0).
  std::vector<std::string> state_names() const override { return {"momentum_buffer"}; }

 protected:
  void update(Tensor& param, const Tensor& grad, ParamState& state, const ParamGroup& group) override;

 private:
  static void validate(const SGDOptions& o) {
    TT_CHECK(!(o.lr < 0.0), "Invalid learning rate: ", detail::py_float(o.lr));
    TT_CHECK(!(o.momentum < 0.0), "Invalid momentum value: ", detail::py_float(o.momentum));
    TT_CHECK(!(o.weight_decay < 0.0), "Invalid weight_decay value: ", detail::py_float(o.weight_decay));
    TT_CHECK(!(o.nesterov && (o.momentum <= 0 || o.dampening != 0)),
             "Nesterov momentum requires a momentum and zero dampening");
  }
  static ParamGroup make_group(std::vector<Tensor> params, const SGDOptions& o) {
    ParamGroup g;
    g.params = std::move(params);
    g.lr = o.lr;
    g.momentum = o.momentum;
    g.dampening = o.dampening;
    g.weight_decay = o.weight_decay;
    g.nesterov = o.nesterov;
    return g;
  }

  SGDOptions defaults_;
};

}  TT_NAMESPACE_END  // namespace tinytorch::optim

#if TT_HEADER_ONLY
#include "tinytorch/optim/sgd.ipp"
#endif

// labs/03-optimizers/lab.hpp — lab 03: the update rules of SGD (with momentum) and Adam, and an
// optimizer built on tinytorch's optim::Optimizer interface. Your file is optim.cpp.
//
// One parameter p with gradient g (same shape, any; the tests use float64 vectors of 6 and the
// float32 weights of a Linear(2, 1)). The rules are PyTorch's (torch.optim.SGD, torch.optim.Adam):
//   SGD       d = g + weight_decay * p;   p = p - lr * d
//   momentum  b = d (first step),  b = momentum * b + (1 - dampening) * d (later steps);
//             d = d + momentum * b if nesterov, else d = b;   p = p - lr * d
//   Adam      t = t + 1;  g = g + weight_decay * p;
//             m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g * g
//             p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// Everything happens in place on the tensors passed in, under NoGradGuard (the caller's: the
// optimizer step runs without autograd). Useful tinytorch ops: a.add_(b, alpha) (a += alpha*b),
// a.mul_(s), a.addcmul_(b, c, s) (a += s*b*c), a.addcdiv_(b, c, s) (a += s*b/c), add(a, b, alpha),
// a.sqrt(), a / s, a.clone(), zeros(shape, TensorOptions(dtype)), a.defined().
// Chapter: chapters/03-optimizers.md (3.1 the interface, 3.2 SGD and momentum, 3.3 Adam); the
// library's versions, to compare with once you are done: include/tinytorch/optim/sgd.hpp
// (sgd_naive) and adam.ipp (adam_naive). References: PyTorch's torch/optim/sgd.py and adam.py;
// Kingma & Ba, "Adam: A method for stochastic optimization" (ICLR 2015), Algorithm 1.
#pragma once

#include <tinytorch/tinytorch.hpp>

#include <cstdint>
#include <vector>

namespace lab03 {

/// Task sgd. Plain SGD with L2 weight decay: param -= lr * (grad + weight_decay * param).
void sgd_update(tinytorch::Tensor& param, const tinytorch::Tensor& grad, double lr, double weight_decay);

/// Task momentum. SGD with momentum as torch.optim.SGD (the rule above). momentum_buffer is
/// undefined before the first step (momentum_buffer.defined() == false): create it then as a copy
/// of d (d.clone()), and update it in place afterwards. momentum > 0 here.
void sgd_momentum_update(tinytorch::Tensor& param, const tinytorch::Tensor& grad, tinytorch::Tensor& momentum_buffer,
                         double lr, double momentum, double dampening, double weight_decay, bool nesterov);

/// Task adam. One Adam step as torch.optim.Adam (amsgrad off, L2 weight decay added to the
/// gradient). exp_avg (m) and exp_avg_sq (v) are undefined before the first step: create them as
/// zeros of param's shape and dtype. `step` is the number of updates before this one (0 on the
/// first call); increment it.
void adam_update(tinytorch::Tensor& param, const tinytorch::Tensor& grad, tinytorch::Tensor& exp_avg,
                 tinytorch::Tensor& exp_avg_sq, int64_t& step, double lr, double beta1, double beta2, double eps,
                 double weight_decay);

/// Task optimizer. Adam on the optim::Optimizer interface (chapter 3.1): the base class's step()
/// loops over the parameters that have a gradient and calls update(p, p.grad, state[p], group);
/// implement update() with adam_update and the fields of optim::ParamState (exp_avg, exp_avg_sq,
/// step) and optim::ParamGroup (lr, betas, eps, weight_decay). The constructor is given.
class LabAdam : public tinytorch::optim::Optimizer {
 public:
  LabAdam(std::vector<tinytorch::Tensor> params, double lr = 1e-3) {
    check_not_empty(params);
    tinytorch::optim::ParamGroup group;
    group.params = std::move(params);
    group.lr = lr;
    add_group(std::move(group));
  }

 protected:
  void update(tinytorch::Tensor& param, const tinytorch::Tensor& grad, tinytorch::optim::ParamState& state,
              const tinytorch::optim::ParamGroup& group) override;
};

}  // namespace lab03

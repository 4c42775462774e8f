// labs/03-optimizers/optim.cpp — your SGD, momentum and Adam (lab 03; the tasks are in lab.hpp).
//
// Check your work:   scripts/lab.sh check 03, from the tinytorch clone (add the --dir you gave to start)
// Chapter: chapters/03-optimizers.md, sections 3.1-3.3.
// BEGIN REFERENCE ONLY
#ifndef TT_LAB_REFERENCE
#error "labs/03-optimizers/optim.cpp is the reference solution: a student build must compile the student's copy (scripts/lab.sh start 03)"
#endif
// END REFERENCE ONLY
#include "lab.hpp"

#include <cmath>

namespace lab03 {

using tinytorch::Tensor;

void sgd_update(Tensor& param, const Tensor& grad, double lr, double weight_decay) {
  // BEGIN SOLUTION sgd
  Tensor d = grad;
  if (weight_decay != 0) d = tinytorch::add(d, param, weight_decay);  // d = g + weight_decay * p
  param.add_(d, -lr);
  // END SOLUTION
}

void sgd_momentum_update(Tensor& param, const Tensor& grad, Tensor& momentum_buffer, double lr, double momentum,
                         double dampening, double weight_decay, bool nesterov) {
  // BEGIN SOLUTION momentum
  Tensor d = grad;
  if (weight_decay != 0) d = tinytorch::add(d, param, weight_decay);
  if (!momentum_buffer.defined())
    momentum_buffer = d.clone();  // the first step: b = d, no dampening
  else
    momentum_buffer.mul_(momentum).add_(d, 1 - dampening);
  d = nesterov ? tinytorch::add(d, momentum_buffer, momentum) : momentum_buffer;
  param.add_(d, -lr);
  // END SOLUTION
}

void adam_update(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, int64_t& step, double lr,
                 double beta1, double beta2, double eps, double weight_decay) {
  // BEGIN SOLUTION adam
  const tinytorch::TensorOptions like = tinytorch::TensorOptions(param.dtype()).device(param.device());
  if (!exp_avg.defined()) exp_avg = tinytorch::zeros(param.sizes(), like);
  if (!exp_avg_sq.defined()) exp_avg_sq = tinytorch::zeros(param.sizes(), like);
  step += 1;
  Tensor g = grad;
  if (weight_decay != 0) g = tinytorch::add(g, param, weight_decay);
  exp_avg.mul_(beta1).add_(g, 1 - beta1);              // m = beta1 m + (1 - beta1) g
  exp_avg_sq.mul_(beta2).addcmul_(g, g, 1 - beta2);    // v = beta2 v + (1 - beta2) g^2
  const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(step));
  Tensor denom = (exp_avg_sq.sqrt() / std::sqrt(bias_correction2)).add_(eps);
  param.addcdiv_(exp_avg, denom, -lr / bias_correction1);
  // END SOLUTION
}

void LabAdam::update(Tensor& param, const Tensor& grad, tinytorch::optim::ParamState& state,
                     const tinytorch::optim::ParamGroup& group) {
  // BEGIN SOLUTION optimizer
  adam_update(param, grad, state.exp_avg, state.exp_avg_sq, state.step, group.lr, group.betas.first,
              group.betas.second, group.eps, group.weight_decay);
  // END SOLUTION
}

}  // namespace lab03

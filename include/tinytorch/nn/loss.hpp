// tinytorch/nn/loss.hpp — MSELoss, CrossEntropyLoss, NLLLoss as modules.
//
//   MSELoss:          input (*) and target (same shape) -> mean/sum of (input - target)^2, or
//                     the elementwise squares for reduction "none".
//                     Differs from PyTorch on purpose: a shape mismatch such as (N, 1) vs (N)
//                     throws (PyTorch warns and broadcasts to (N, N), the classic silent bug).
//   CrossEntropyLoss: logits (N, C) and int64 class indices (N) in [0, C):
//                     loss_i = logsumexp(x_i) - x_i[t_i], reduced by mean or sum.
//   NLLLoss:          log-probabilities (N, C) and int64 class indices (N).
// Losses take two tensors: call loss(input, target). Reduction: "mean" (default), "sum", "none".
// Reference: torch.nn.MSELoss / CrossEntropyLoss / NLLLoss.
#pragma once

#include <string>

#include "module.hpp"

namespace tinytorch::nn {

/// "mean" / "sum" / "none" -> Reduction; throws for anything else.
inline Reduction reduction_from_string(const std::string& r) {
  if (r == "mean") return Reduction::Mean;
  if (r == "sum") return Reduction::Sum;
  if (r == "none") return Reduction::None;
  throw Error(detail::str_cat("loss: ", r, " is not a valid value for reduction (use \"mean\", \"sum\" or \"none\")"));
}
inline const char* reduction_name(Reduction r) {
  return r == Reduction::Mean ? "mean" : r == Reduction::Sum ? "sum" : "none";
}

/// Base for two-argument losses: forward(x) alone is an error.
class Loss : public Module {
 public:
  Reduction reduction;
  explicit Loss(Reduction r) : reduction(r) {}
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  Tensor forward(const Tensor&) override {
    throw Error(name() + ": forward needs (input, target); call loss(input, target)");
  }
};

class MSELoss : public Loss {
 public:
  explicit MSELoss(Reduction r = Reduction::Mean) : Loss(r) {}
  explicit MSELoss(const std::string& r) : Loss(reduction_from_string(r)) {}
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override { return mse_loss(input, target, reduction); }
  std::shared_ptr<Module> clone() const override { return clone_as<MSELoss>(); }
  std::string name() const override { return "MSELoss"; }
};

class CrossEntropyLoss : public Loss {
 public:
  explicit CrossEntropyLoss(Reduction r = Reduction::Mean) : Loss(r) {}
  explicit CrossEntropyLoss(const std::string& r) : Loss(reduction_from_string(r)) {}
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return cross_entropy(input, target, reduction);
  }
  std::shared_ptr<Module> clone() const override { return clone_as<CrossEntropyLoss>(); }
  std::string name() const override { return "CrossEntropyLoss"; }
};

class NLLLoss : public Loss {
 public:
  explicit NLLLoss(Reduction r = Reduction::Mean) : Loss(r) {}
  explicit NLLLoss(const std::string& r) : Loss(reduction_from_string(r)) {}
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override { return nll_loss(input, target, reduction); }
  std::shared_ptr<Module> clone() const override { return clone_as<NLLLoss>(); }
  std::string name() const override { return "NLLLoss"; }
};

}  // namespace tinytorch::nn

// tinytorch/nn/loss.hpp — MSELoss, CrossEntropyLoss, NLLLoss as modules.
//
//   MSELoss:          input (*) and target (same shape) -> mean/sum of (input - target)^2, or
//                     the elementwise squares for reduction "none".
//                     Differs from PyTorch on purpose: a shape mismatch such as (N, 1) vs (N)
//                     throws (PyTorch warns and broadcasts to (N, N), the classic silent bug).
//   CrossEntropyLoss: logits (N, C) and int64 class indices (N) in [0, C):
//                     loss_i = w[t_i] * (logsumexp(x_i) - x_i[t_i]), reduced by mean or sum;
//                     optional class weights w (C), ignore_index (default -100), label_smoothing.
//   NLLLoss:          log-probabilities (N, C) and int64 class indices (N); weight, ignore_index.
//   The mean of a weighted loss divides by the sum of w[t_i] over the samples not ignored, not by
//   N (functional.hpp, nll_loss and cross_entropy, has the formulas).
// Losses take two tensors: call loss(input, target). Reduction: "mean" (default), "sum", "none".
// The class weight is a buffer named "weight" (in state_dict), as PyTorch's _WeightedLoss.
// Reference: torch.nn.MSELoss / CrossEntropyLoss / NLLLoss.
// Chapter: chapters/01-training-loop.md.
#pragma once

#include <string>

#include "tinytorch/nn/module.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace nn {

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

/// Cross entropy on logits (torch.nn.CrossEntropyLoss(weight, ignore_index, reduction,
/// label_smoothing); size_average / reduce are long deprecated and left out).
///   CrossEntropyLoss loss;                                    // mean, no weight
///   CrossEntropyLoss loss(w, -100, Reduction::Mean, 0.1);     // class weights, label smoothing
/// Throws tinytorch::Error for label_smoothing outside [0, 1] (here and at forward).
class CrossEntropyLoss : public Loss {
 public:
  Tensor weight;  ///< (C) class weights or undefined; registered as buffer "weight" when defined
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
  explicit CrossEntropyLoss(Reduction r = Reduction::Mean) : Loss(r) {}
  explicit CrossEntropyLoss(const std::string& r) : Loss(reduction_from_string(r)) {}
  explicit CrossEntropyLoss(const Tensor& weight, int64_t ignore_index = -100, Reduction r = Reduction::Mean,
                            double label_smoothing = 0.0)
      : Loss(r), ignore_index(ignore_index), label_smoothing(label_smoothing) {
    tinytorch::detail::check_label_smoothing(label_smoothing, "CrossEntropyLoss");
    if (weight.defined()) this->weight = register_buffer("weight", weight);
  }
  CrossEntropyLoss(const Tensor& weight, int64_t ignore_index, const std::string& r, double label_smoothing = 0.0)
      : CrossEntropyLoss(weight, ignore_index, reduction_from_string(r), label_smoothing) {}
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing);
  }
  std::shared_ptr<Module> clone() const override {
    check_member(weight, "weight");
    auto m = clone_as<CrossEntropyLoss>();
    if (weight.defined()) m->weight = m->get_buffer("weight");
    return m;
  }
  std::string name() const override { return "CrossEntropyLoss"; }
};

/// Negative log likelihood on log-probabilities (torch.nn.NLLLoss(weight, ignore_index, reduction)).
class NLLLoss : public Loss {
 public:
  Tensor weight;  ///< (C) class weights or undefined; registered as buffer "weight" when defined
  int64_t ignore_index = -100;
  explicit NLLLoss(Reduction r = Reduction::Mean) : Loss(r) {}
  explicit NLLLoss(const std::string& r) : Loss(reduction_from_string(r)) {}
  explicit NLLLoss(const Tensor& weight, int64_t ignore_index = -100, Reduction r = Reduction::Mean)
      : Loss(r), ignore_index(ignore_index) {
    if (weight.defined()) this->weight = register_buffer("weight", weight);
  }
  NLLLoss(const Tensor& weight, int64_t ignore_index, const std::string& r)
      : NLLLoss(weight, ignore_index, reduction_from_string(r)) {}
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return nll_loss(input, target, weight, ignore_index, reduction);
  }
  std::shared_ptr<Module> clone() const override {
    check_member(weight, "weight");
    auto m = clone_as<NLLLoss>();
    if (weight.defined()) m->weight = m->get_buffer("weight");
    return m;
  }
  std::string name() const override { return "NLLLoss"; }
};

}  TT_NAMESPACE_END  // namespace tinytorch::nn

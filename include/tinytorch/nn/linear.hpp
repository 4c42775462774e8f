// tinytorch/nn/linear.hpp — nn::Linear: y = x W^T + b.
//
// Shapes: x (N, in_features) or (*, in_features); W (out_features, in_features); b (out_features);
//         y (N, out_features).
// Initialisation as PyTorch's reset_parameters(): W ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform_
// with a = sqrt(5)) and b ~ U(-1/sqrt(in), 1/sqrt(in)), drawn from `gen` or the default generator.
// Backward: dx = dy W, dW = dy^T x, db = sum_rows dy (autograd::Linear, printed AddmmBackward0).
// Reference: torch.nn.Linear. Chapter: chapters/01-training-loop.md.
#pragma once

#include <cmath>

#include "tinytorch/nn/init.hpp"
#include "tinytorch/nn/module.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace nn {

class Linear : public Module {
 public:
  int64_t in_features, out_features;
  Tensor weight, bias;

  /// Throws tinytorch::Error for non-positive sizes.
  Linear(int64_t in_features, int64_t out_features, bool bias = true, Generator* gen = nullptr)
      : in_features(in_features), out_features(out_features) {
    TT_CHECK(in_features > 0 && out_features > 0, "Linear: in_features and out_features must be positive, got ",
             in_features, " and ", out_features);
    weight = register_parameter("weight", empty({out_features, in_features}));
    init::kaiming_uniform_(weight, std::sqrt(5.0), gen);
    if (bias) {
      double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
      this->bias = register_parameter("bias", empty({out_features}));
      init::uniform_(this->bias, -bound, bound, gen);
    }
  }
  Tensor forward(const Tensor& x) override {
    TT_CHECK(x.dim() >= 1 && x.sizes().back() == in_features, "Linear: input of shape ", shape_str(x.sizes()),
             " does not end in in_features=", in_features);
    return linear(x, weight, bias);
  }
  /// Throws tinytorch::Error when `weight` or `bias` was re-assigned after construction (see
  /// Module::check_member).
  std::shared_ptr<Module> clone() const override {
    check_member(weight, "weight");
    check_member(bias, "bias");
    auto m = clone_as<Linear>();
    m->weight = m->get_parameter("weight");
    if (bias.defined()) m->bias = m->get_parameter("bias");
    return m;
  }
  std::string name() const override { return "Linear"; }
  std::string extra_repr() const override {
    return detail::str_cat("in_features=", in_features, ", out_features=", out_features,
                           ", bias=", bias.defined() ? "True" : "False");
  }
};

}  TT_NAMESPACE_END  // namespace tinytorch::nn

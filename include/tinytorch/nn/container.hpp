// tinytorch/nn/container.hpp — nn::Sequential: modules applied in order.
//
//   auto model = std::make_shared<nn::Sequential>(
//       std::make_shared<nn::Linear>(784, 256), std::make_shared<nn::ReLU>(),
//       std::make_shared<nn::Linear>(256, 10));
//   model->forward(x)  ==  m2(m1(m0(x)));   parameters are named "0.weight", "0.bias", "2.weight", ...
// Reference: torch.nn.Sequential.
// Chapter: chapters/01-training-loop.md.
#pragma once

#include <memory>

#include "tinytorch/nn/module.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace nn {

class Sequential : public Module {
 public:
  Sequential() = default;
  template <class... Ms>
  explicit Sequential(std::shared_ptr<Ms>... modules) {
    (push_back(std::move(modules)), ...);
  }
  /// Appends a module named by its position ("0", "1", ...).
  void push_back(std::shared_ptr<Module> m) {
    register_module(std::to_string(named_children().size()), std::move(m));
  }
  size_t size() const { return named_children().size(); }
  std::shared_ptr<Module> operator[](size_t i) const {
    TT_CHECK(i < size(), "Sequential: index ", i, " is out of range (size ", size(), ")");
    return named_children()[i].second;
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (auto& c : named_children()) h = c.second->forward(h);
    return h;
  }
  std::shared_ptr<Module> clone() const override { return clone_as<Sequential>(); }
  std::string name() const override { return "Sequential"; }
};

}  TT_NAMESPACE_END  // namespace tinytorch::nn

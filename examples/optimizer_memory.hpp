// examples/optimizer_memory.hpp — how much memory an optimizer keeps per parameter, measured:
// the bytes of the state tensors that SGD, SGD with momentum, Adam, AdamW and Adam(amsgrad)
// hold after one step on train_mnist's MLP. Shared by examples/optimizer_memory.cpp and its test
// (tests/test_optim.cpp, "[ch03]"), so the test checks exactly what the example prints.
//
// What each one keeps, per parameter p (every tensor has p's shape and dtype):
//   SGD                 nothing                               0x the parameters
//   SGD, momentum       momentum_buffer b                     1x
//   Adam / AdamW        exp_avg m, exp_avg_sq v  (+ a step count)   2x
//   Adam, amsgrad       m, v, max_exp_avg_sq                  3x
// Counted by Optimizer::state_nbytes() over the tensors the optimizer actually created during
// the step (none exist before it: state is created lazily, as PyTorch's). The step counts are
// integers here (PyTorch: a 0-d float32 tensor per parameter, 4 bytes each) and not counted.
// With the parameters themselves, a training step holds 1x / 2x / 3x (4x) the parameter memory
// in weights plus optimizer state: the book's optimizer-memory table (SGD 1x, momentum 2x,
// Adam 3x), before gradients and activations.
// Chapter: chapters/03-optimizers.md ("How much memory an optimizer needs").
// Reference: torch.optim.SGD / Adam / AdamW state (optimizer.state[p]); Machine Learning Systems,
// "AI Training", Optimization Algorithms: System Implications.
#pragma once

#include <tinytorch/tinytorch.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace examples {

/// One row of the table: the optimizer, the state it keeps, and its size.
struct OptimizerMemory {
  std::string name;          ///< "SGD", "SGD momentum=0.9", "Adam", "AdamW", "Adam amsgrad=True"
  std::string state;         ///< the per-parameter state tensors' names
  int64_t param_bytes = 0;   ///< bytes of the parameters
  int64_t state_bytes = 0;   ///< bytes of the optimizer's state tensors after one step
  double ratio() const { return static_cast<double>(state_bytes) / static_cast<double>(param_bytes); }
};

/// train_mnist's MLP: 784 -> hidden... -> 10 with ReLU between.
inline std::shared_ptr<tinytorch::nn::Sequential> memory_mlp(const std::vector<int64_t>& hidden) {
  namespace nn = tinytorch::nn;
  auto model = std::make_shared<nn::Sequential>();
  int64_t in = 784;
  for (int64_t h : hidden) {
    model->push_back(std::make_shared<nn::Linear>(in, h));
    model->push_back(std::make_shared<nn::ReLU>());
    in = h;
  }
  model->push_back(std::make_shared<nn::Linear>(in, 10));
  return model;
}

/// For each optimizer: a fresh MLP (seed 0), one training step on a random batch of `batch`
/// images, then the bytes of the optimizer's state tensors.
inline std::vector<OptimizerMemory> measure_optimizer_memory(const std::vector<int64_t>& hidden = {256, 128},
                                                             int64_t batch = 64) {
  using namespace tinytorch;
  struct Kind {
    std::string name, state;
    std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)> make;
  };
  const std::vector<Kind> kinds = {
      {"SGD", "-", [](std::vector<Tensor> p) { return std::make_unique<optim::SGD>(std::move(p), 0.01); }},
      {"SGD momentum=0.9", "momentum_buffer",
       [](std::vector<Tensor> p) { return std::make_unique<optim::SGD>(std::move(p), 0.01, 0.9); }},
      {"Adam", "exp_avg, exp_avg_sq",
       [](std::vector<Tensor> p) { return std::make_unique<optim::Adam>(std::move(p), 1e-3); }},
      {"AdamW", "exp_avg, exp_avg_sq",
       [](std::vector<Tensor> p) { return std::make_unique<optim::AdamW>(std::move(p), 1e-3); }},
      {"Adam amsgrad=True", "exp_avg, exp_avg_sq, max_exp_avg_sq", [](std::vector<Tensor> p) {
         return std::make_unique<optim::Adam>(std::move(p), 1e-3, std::make_pair(0.9, 0.999), 1e-8, 0.0, true);
       }},
  };
  std::vector<OptimizerMemory> rows;
  for (const Kind& kind : kinds) {
    manual_seed(0);
    auto model = memory_mlp(hidden);
    auto opt = kind.make(model->parameters());
    OptimizerMemory row{kind.name, kind.state, 0, 0};
    for (const Tensor& p : model->parameters()) row.param_bytes += p.numel() * static_cast<int64_t>(element_size(p.dtype()));
    Tensor x = randn({batch, 784});                          // x: (B, 784)
    Tensor y = randint(0, 10, {batch});                      // y: (B,) int64
    opt->zero_grad();
    nn::CrossEntropyLoss loss_fn;
    loss_fn(model->forward(x), y).backward();
    opt->step();
    row.state_bytes = opt->state_nbytes();
    rows.push_back(row);
  }
  return rows;
}

}  // namespace examples

// examples/single_loop.hpp — the seed article's first training loop, shared by example_single,
// example_dp (examples/dp_loop.hpp) and their test (tests/test_examples.cpp), so the test checks
// exactly what the examples run.
//
//   model = Linear(2, 1); loss = MSELoss(); opt = SGD(lr=0.01)
//   X = [[1.0, 0.5], [0.5, 1.0]]  (2, 2);   y = [[2.0], [1.5]]  (2, 1)
//   each epoch: zero_grad, forward, loss, backward, step; record loss.item()
// Initial weights are fixed (weight [[0.25, -0.5]], bias [0.1]) so the losses equal PyTorch's
// (tests/reference/gen_examples.py); random_init draws them from the default generator instead.
// on_loss, when given, sees each epoch's loss before backward (example_single --dot draws epoch 0's
// graph with it).
// Chapter: chapters/01-training-loop.md (the loop), chapters/02-autograd.md (its graph).
#pragma once

#include <tinytorch/tinytorch.hpp>

#include <functional>
#include <vector>

namespace examples {

/// The loop on any model whose parameters() are one Linear(2, 1)'s weight (1, 2) and bias (1):
/// a plain Linear (example_single) or one wrapped in DataParallel (example_dp). Returns the loss
/// of each epoch. Fixed initial weights unless random_init. on_loss(epoch, loss, model), if set,
/// runs after the forward pass and before loss.backward(), while the graph is still there.
using LossCallback = std::function<void(int epoch, const tinytorch::Tensor& loss, const tinytorch::nn::Module& model)>;
/// device: where the model and the data live (the initial weights are set on the CPU, then the
/// model is moved with Module::to, which keeps the parameter handles taken before it).
inline std::vector<double> train_two_samples(tinytorch::nn::Module& model, int epochs, bool random_init,
                                             const LossCallback& on_loss = nullptr,
                                             tinytorch::Device device = tinytorch::Device::cpu()) {
  using namespace tinytorch;
  std::vector<Tensor> params = model.parameters();  // [weight (1, 2), bias (1)]
  if (!random_init) {
    NoGradGuard no_grad;
    params.at(0).copy_(tensor({0.25, -0.5}, {1, 2}));
    params.at(1).copy_(tensor({0.1}));
  }
  model.to(device);  // in place: `params` still holds the model's parameters
  Tensor X = tensor({1.0, 0.5, 0.5, 1.0}, {2, 2}).to(device);  // X: (2, 2)
  Tensor y = tensor({2.0, 1.5}, {2, 1}).to(device);            // y: (2, 1)
  optim::SGD optimizer(params, /*lr=*/0.01);
  nn::MSELoss loss_fn;

  std::vector<double> losses;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    optimizer.zero_grad();
    Tensor preds = model.forward(X);  // preds: (2, 1)
    Tensor loss = loss_fn(preds, y);  // scalar
    if (on_loss) on_loss(epoch, loss, model);
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

inline std::vector<double> train_single(int epochs = 5, bool random_init = false, uint64_t seed = 0,
                                        const LossCallback& on_loss = nullptr,
                                        tinytorch::Device device = tinytorch::Device::cpu()) {
  tinytorch::manual_seed(seed);
  auto model = std::make_shared<tinytorch::nn::Linear>(2, 1);
  return train_two_samples(*model, epochs, random_init, on_loss, device);
}

}  // namespace examples

// examples/single_loop.hpp — the seed article's first training loop, shared by example_single and
// its test (tests/test_examples.cpp), so the test checks exactly what the example runs.
//
//   model = Linear(2, 1); loss = MSELoss(); opt = SGD(lr=0.01)
//   X = [[1.0, 0.5], [0.5, 1.0]]  (2, 2);   y = [[2.0], [1.5]]  (2, 1)
//   each epoch: zero_grad, forward, loss, backward, step; record loss.item()
// Initial weights are fixed (weight [[0.25, -0.5]], bias [0.1]) so the losses equal PyTorch's
// (tests/reference/gen_examples.py); random_init draws them from the default generator instead.
// Chapter: chapters/01-training-loop.md.
#pragma once

#include <tinytorch/tinytorch.hpp>

#include <vector>

namespace examples {

inline std::vector<double> train_single(int epochs = 5, bool random_init = false, uint64_t seed = 0) {
  using namespace tinytorch;
  manual_seed(seed);
  auto model = std::make_shared<nn::Linear>(2, 1);
  if (!random_init) {
    NoGradGuard no_grad;
    model->weight.copy_(tensor({0.25, -0.5}, {1, 2}));
    model->bias.copy_(tensor({0.1}));
  }
  Tensor X = tensor({1.0, 0.5, 0.5, 1.0}, {2, 2});  // X: (2, 2)
  Tensor y = tensor({2.0, 1.5}, {2, 1});            // y: (2, 1)
  optim::SGD optimizer(model->parameters(), /*lr=*/0.01);
  nn::MSELoss loss_fn;

  std::vector<double> losses;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    optimizer.zero_grad();
    Tensor preds = model->forward(X);  // preds: (2, 1)
    Tensor loss = loss_fn(preds, y);   // scalar
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

}  // namespace examples

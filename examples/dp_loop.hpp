// examples/dp_loop.hpp — the seed article's example_dp.py loop: SimpleMLP wrapped in
// DataParallel, shared by examples/example_dp.cpp and its test (tests/test_examples.cpp).
//
//   model = DataParallel(SimpleMLP{fc = Linear(2, 1)}, N CPU replicas); MSELoss; SGD(lr=0.01)
//   X = [[1.0, 0.5], [0.5, 1.0]]  (2, 2);   y = [[2.0], [1.5]]  (2, 1)
//   each epoch: zero_grad, forward (scatter X, replicate, parallel_apply, gather), loss on the
//   gathered (2, 1) predictions, backward (the replicas' gradients summed into fc's .grad), step.
// With 2 replicas each gets one row. The gradient is the full-batch one, so the losses are
// example_single's, which are PyTorch's (tests/reference/gen_examples.py).
// Chapter: chapters/05-data-parallel.md. Reference: the seed article's example_dp.py.
#pragma once

#include <tinytorch/tinytorch.hpp>

#include <memory>
#include <vector>

#include "simple_mlp.hpp"
#include "single_loop.hpp"

namespace examples {

/// Runs the loop with `replicas` CPU replicas; returns each epoch's loss.
inline std::vector<double> train_dp(int epochs = 5, int replicas = 2, bool random_init = false, uint64_t seed = 0) {
  using namespace tinytorch;
  manual_seed(seed);
  auto net = std::make_shared<SimpleMLP>();
  nn::DataParallel model(net, std::vector<Device>(static_cast<size_t>(replicas), Device::cpu()));
  return train_two_samples(model, epochs, random_init);
}

}  // namespace examples

// ch01 exercises 1, 3, 4: the single_loop.hpp loop with lr 0.1, without zero_grad, and the epoch-1 gradients.
#include <tinytorch/tinytorch.hpp>
#include <cstdio>
using namespace tinytorch;
int run(double lr, bool zero_grad, int max_epochs, bool verbose) {
  manual_seed(0);
  nn::Linear model(2, 1);
  auto params = model.parameters();
  { NoGradGuard g; params[0].copy_(tensor({0.25, -0.5}, {1, 2})); params[1].copy_(tensor({0.1})); }
  Tensor X = tensor({1.0, 0.5, 0.5, 1.0}, {2, 2}), y = tensor({2.0, 1.5}, {2, 1});
  optim::SGD opt(params, lr);
  nn::MSELoss loss_fn;
  for (int e = 0; e < max_epochs; ++e) {
    if (zero_grad) opt.zero_grad();
    Tensor loss = loss_fn(model.forward(X), y);
    loss.backward();
    if (verbose) std::printf("epoch %d: loss=%.6f W.grad=%s b.grad=%s\n", e, loss.item<double>(),
                             params[0].grad().str().c_str(), params[1].grad().str().c_str());
    opt.step();
    if (loss.item<double>() < 0.01) { std::printf("lr=%g zero_grad=%d: loss %.6f < 0.01 first at epoch %d (0-based), i.e. after %d epochs\n", lr, zero_grad, loss.item<double>(), e, e + 1); return e; }
  }
  return -1;
}
int main() {
  std::printf("-- ex4: lr 0.01, first two epochs\n"); run(0.01, true, 2, true);
  std::printf("-- ex1: lr 0.1\n"); run(0.1, true, 1000, false);
  std::printf("-- ex1: lr 0.01 (for comparison)\n"); run(0.01, true, 100000, false);
  std::printf("-- ex3: lr 0.01 without zero_grad, 12 epochs\n"); run(0.01, false, 12, true);
  std::printf("-- ex3: lr 0.1 without zero_grad, 12 epochs\n"); run(0.1, false, 12, true);
}

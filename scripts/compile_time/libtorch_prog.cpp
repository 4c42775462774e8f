// scripts/compile_time/libtorch_prog.cpp — tests/oneline/prog.cpp (the README's first program)
// written against libtorch, line for line, for scripts/compile_time.sh.
#include <torch/torch.h>

#include <iostream>

int main() {
  torch::manual_seed(0);
  auto model = torch::nn::Linear(2, 1);
  torch::optim::SGD optimizer(model->parameters(), /*lr=*/0.01);
  torch::nn::MSELoss loss_fn;
  torch::Tensor X = torch::tensor({1.0f, 0.5f, 0.5f, 1.0f}).view({2, 2});
  torch::Tensor y = torch::tensor({2.0f, 1.5f}).view({2, 1});
  for (int epoch = 0; epoch < 5; ++epoch) {
    optimizer.zero_grad();
    torch::Tensor loss = loss_fn(model->forward(X), y);
    loss.backward();
    optimizer.step();
    std::cout << "epoch " << epoch << ": " << loss << "\n";
  }
}

// tests/oneline/prog.cpp — the README's "Your first program", verbatim below
// the marker, built by ctest (oneline_build) with exactly the README's one-line command, no CMake:
//   g++ -std=c++17 -O2 -I include -I /usr/include/eigen3 tests/oneline/prog.cpp -lz -o prog
// The test passes when the output contains the last line the README quotes.
// --- README example ---
#include <tinytorch/tinytorch.hpp>

#include <iostream>
namespace tt = tinytorch;

int main() {
  tt::manual_seed(0);  // the same initial weights on every run
  auto model = std::make_shared<tt::nn::Linear>(2, 1);
  tt::optim::SGD optimizer(model->parameters(), /*lr=*/0.01);
  tt::nn::MSELoss loss_fn;
  tt::Tensor X = tt::tensor({1.0, 0.5, 0.5, 1.0}, {2, 2});
  tt::Tensor y = tt::tensor({2.0, 1.5}, {2, 1});
  for (int epoch = 0; epoch < 5; ++epoch) {
    optimizer.zero_grad();
    tt::Tensor loss = loss_fn(model->forward(X), y);
    loss.backward();
    optimizer.step();
    std::cout << "epoch " << epoch << ": " << loss << "\n";
  }
}

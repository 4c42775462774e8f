// examples/example_single.cpp — one process, one model, the smallest complete training loop.
//
// Port of the seed article's example_dp.py loop (without DataParallel: one CPU process).
// Prints "epoch k: loss=0.xxxx" for k = 0..4 (4 decimals, as the article's script); with the
// default fixed initial weights the numbers equal PyTorch's to the printed digits.
//   build/bin/example_single                 # fixed init, PyTorch's numbers
//   build/bin/example_single --random-init   # weights drawn from the seeded generator
// Chapter: chapters/01-training-loop.md.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "single_loop.hpp"
#include "flags.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tinytorch example_single: Linear(2,1) + MSELoss + SGD(lr=0.01) on two samples"};
  bool random_init = false;
  int epochs = 5;
  uint64_t seed = 0;
  app.add_flag("--random-init", random_init, "draw the initial weights instead of the fixed ones");
  app.add_option("--epochs", epochs, "number of epochs")->check(flags::integer_in(1, 1000000));
  app.add_option("--seed", seed, "seed for --random-init")->check(flags::seed());
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<double> losses = examples::train_single(epochs, random_init, seed);
    for (size_t k = 0; k < losses.size(); ++k) std::printf("epoch %zu: loss=%.4f\n", k, losses[k]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_single: %s\n", e.what());
    return 1;
  }
  return 0;
}

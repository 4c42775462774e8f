// examples/example_dp.cpp — the seed article's example_dp.py: one process, the model replicated
// on N devices by DataParallel, each replica given a slice of the batch.
//
//   build/bin/example_dp                 # 2 CPU replicas, fixed init: PyTorch's losses
//   build/bin/example_dp --replicas 1    # one device: DataParallel just calls the model
// Prints "epoch k: loss=0.xxxx" for k = 0..4 (4 decimals, as the article's script): the same
// numbers as example_single, because the replicas' gradients add up to the full-batch gradient.
// The devices are CPU "devices" (threads over the same memory): tinytorch's extension, since
// PyTorch's DataParallel needs GPUs. The article's script wraps tinytorch tensors in torch
// modules and needs two GPUs to run; here it runs anywhere.
// The loop lives in examples/dp_loop.hpp (tests/test_examples.cpp runs the same code).
// Chapter: chapters/05-data-parallel.md.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "dp_loop.hpp"
#include "flags.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tinytorch example_dp: DataParallel(Linear(2,1)) + MSELoss + SGD(lr=0.01) on two samples"};
  int replicas = 2, epochs = 5;
  bool random_init = false;
  uint64_t seed = 0;
  app.add_option("--replicas", replicas, "number of CPU replicas (DataParallel's device_ids)")
      ->check(flags::integer_in(1, 64));
  app.add_option("--epochs", epochs, "number of epochs")->check(flags::integer_in(1, 1000000));
  app.add_flag("--random-init", random_init, "draw the initial weights instead of the fixed ones");
  app.add_option("--seed", seed, "seed for --random-init")->check(flags::seed());
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<double> losses = examples::train_dp(epochs, replicas, random_init, seed);
    // a batch of 2 rows uses at most 2 replicas (torch.chunk's split: chapter 05, 5.3)
    if (replicas == 1) std::printf("DataParallel over 1 CPU replica (it calls the model directly)\n");
    else if (replicas == 2) std::printf("DataParallel over 2 CPU replicas\n");
    else std::printf("DataParallel over %d CPU replicas (the batch of 2 rows uses 2 of them)\n", replicas);
    for (size_t k = 0; k < losses.size(); ++k) std::printf("epoch %zu: loss=%.4f\n", k, losses[k]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_dp: %s\n", e.what());
    return 1;
  }
  return 0;
}

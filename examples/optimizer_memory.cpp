// examples/optimizer_memory.cpp — the book's optimizer-memory table, measured: how many bytes of
// state SGD, SGD with momentum, Adam, AdamW and Adam(amsgrad) keep for train_mnist's MLP after
// one step, as a multiple of the parameters' bytes (0x, 1x, 2x, 2x, 3x).
//   build/bin/optimizer_memory                  # MLP 784-256-128-10, 235,146 parameters
//   build/bin/optimizer_memory --hidden 1024    # another size: the ratios stay the same
// The measurement is examples/optimizer_memory.hpp (also run by tests/test_optim.cpp "[ch03]").
// Chapter: chapters/03-optimizers.md ("How much memory an optimizer needs").
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "flags.hpp"
#include "optimizer_memory.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tinytorch optimizer_memory: optimizer state bytes as a multiple of the parameters' bytes"};
  std::vector<int64_t> hidden{256, 128};
  app.add_option("--hidden", hidden, "hidden layer sizes of the MLP, e.g. 256,128")
      ->delimiter(',')
      ->check(flags::integer_in(1, 100000));
  CLI11_PARSE(app, argc, argv);
  try {
    const std::vector<examples::OptimizerMemory> rows = examples::measure_optimizer_memory(hidden);
    std::string shape = "784";
    for (int64_t h : hidden) shape += "-" + std::to_string(h);
    const int64_t params = rows.at(0).param_bytes / 4;
    std::printf("optimizer_memory: MLP %s-10, %lld parameters = %lld bytes (float32), state after one step\n",
                shape.c_str(), (long long)params, (long long)rows.at(0).param_bytes);
    std::printf("%-20s %-38s %12s %8s %14s\n", "optimizer", "state per parameter", "state bytes", "state",
                "params+state");
    for (const auto& r : rows)
      std::printf("%-20s %-38s %12lld %7.2fx %13.2fx\n", r.name.c_str(), r.state.c_str(), (long long)r.state_bytes,
                  r.ratio(), 1.0 + r.ratio());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "optimizer_memory: %s\n", e.what());
    return 1;
  }
  return 0;
}

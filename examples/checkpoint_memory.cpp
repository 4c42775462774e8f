// examples/checkpoint_memory.cpp — activation checkpointing, measured: peak memory and extra
// forwards of one training step of a deep MLP, without checkpointing and with
// checkpoint_sequential in S segments, from 2 through sqrt(L) to L (every layer checkpointed).
//
//   build/bin/checkpoint_memory                      # L=48 blocks ReLU(Linear(64,64)), batch 1024
//   build/bin/checkpoint_memory --layers 64 --segments 8 16
// The bytes are exact (core/allocator.hpp's memory_allocated counts every tensor's storage) and
// the same on every machine; tests/test_accumulation.cpp ("[ch09]") checks them. Times vary.
// Chapter: chapters/09-gradient-accumulation.md ("Activation checkpointing: the numbers").
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <cstdio>
#include <vector>

#include "checkpoint_memory.hpp"
#include "flags.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tinytorch checkpoint_memory: peak activation memory with and without activation checkpointing"};
  int64_t layers = 48, hidden = 64, batch = 1024;
  std::vector<int64_t> segments;
  app.add_option("--layers", layers, "number of ReLU(Linear(H, H)) blocks L")->check(flags::integer_in(1, 4096));
  app.add_option("--hidden", hidden, "width H")->check(flags::integer_in(1, 65536));
  app.add_option("--batch-size", batch, "batch B")->check(flags::integer_in(1, 1 << 20));
  app.add_option("--segments", segments, "checkpoint_sequential segments to try (default: 2 4 6 round(sqrt(L)) 8 12 16 24 L)")
      ->check(flags::integer_in(1, 4096));
  CLI11_PARSE(app, argc, argv);
  try {
    const int64_t root = std::max<int64_t>(1, std::llround(std::sqrt(static_cast<double>(layers))));
    if (segments.empty()) {
      for (int64_t s : {int64_t{2}, int64_t{4}, int64_t{6}, root, int64_t{8}, int64_t{12}, int64_t{16}, int64_t{24}, layers})
        if (s <= layers && std::find(segments.begin(), segments.end(), s) == segments.end()) segments.push_back(s);
      std::sort(segments.begin(), segments.end());
    }
    for (int64_t s : segments)
      if (s > layers) throw std::invalid_argument("--segments " + std::to_string(s) + " is more than --layers");
    const size_t act = static_cast<size_t>(batch * hidden) * 4;
    std::printf("deep MLP: %lld blocks ReLU(Linear(%lld, %lld)), batch %lld, float32\n", static_cast<long long>(layers),
                static_cast<long long>(hidden), static_cast<long long>(hidden), static_cast<long long>(batch));
    std::printf("one activation A = B x H x 4 = %zu bytes; sqrt(L) = %.2f\n", act, std::sqrt(static_cast<double>(layers)));

    // Part 1: gradient accumulation. The same B rows in k micro-batches of B/k.
    std::printf("\ngradient accumulation: the batch of %lld rows as k micro-batches, each loss / k\n",
                static_cast<long long>(batch));
    std::printf("%-4s %8s %12s %8s %22s\n", "k", "rows", "peak bytes", "peak/A", "max |grad - grad(k=1)|");
    std::vector<examples::AccumulationResult> acc;
    for (int64_t k : {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}}) {
      if (batch % k != 0) continue;
      acc.push_back(examples::deep_mlp_accumulate(layers, hidden, batch, k));
      const auto& a = acc.back();
      double d = 0;
      for (size_t j = 0; j < a.grads.size(); ++j) d = std::max(d, std::fabs(a.grads[j] - acc[0].grads[j]));
      std::printf("%-4lld %8lld %12zu %8.2f %22.3g\n", static_cast<long long>(k), static_cast<long long>(batch / k),
                  a.peak_bytes, static_cast<double>(a.peak_bytes) / act, d);
    }
    if (batch % 4 == 0) {
      auto bug = examples::deep_mlp_accumulate(layers, hidden, batch, 4, /*divide_by_k=*/false);
      double num = 0, den = 0;
      for (size_t j = 0; j < bug.grads.size(); ++j) num += bug.grads[j] * acc[0].grads[j], den += acc[0].grads[j] * acc[0].grads[j];
      std::printf("k=4 without dividing the loss by k: gradient = %.4f x the batch gradient (least squares)\n", num / den);
    }

    // Part 2: activation checkpointing.
    std::printf("\nactivation checkpointing: checkpoint_sequential(model, S, x), S segments\n");
    segments.insert(segments.begin(), 0);
    std::vector<examples::CheckpointMemoryResult> runs;
    for (int64_t s : segments) runs.push_back(examples::deep_mlp_step(layers, hidden, batch, s));
    std::printf("before the step (parameters, x, target): %zu bytes (not counted below)\n", runs[0].baseline_bytes);
    std::printf("%-10s %12s %8s %8s %15s %8s\n", "segments", "peak bytes", "peak/A", "vs none", "layer forwards", "step ms");
    double max_diff = 0;
    for (const auto& r : runs) {
      std::printf("%-10s %12zu %8.2f %7.1f%% %8lld (+%2.0f%%) %8.1f\n",
                  r.segments == 0 ? "none" : std::to_string(r.segments).c_str(), r.peak_bytes,
                  static_cast<double>(r.peak_bytes) / act, 100.0 * r.peak_bytes / runs[0].peak_bytes,
                  static_cast<long long>(r.layer_forwards), 100.0 * (r.layer_forwards - layers) / (3.0 * layers),
                  r.seconds * 1e3);
      for (size_t j = 0; j < runs[0].grads.size(); ++j) max_diff = std::max(max_diff, std::fabs(r.grads[j] - runs[0].grads[j]));
    }
    std::printf("(+x%%: extra forward work, counting a step without checkpointing as 3 forwards: 1 forward + backward ~ 2)\n");
    bool same_loss = true;
    for (const auto& r : runs) same_loss = same_loss && r.loss == runs[0].loss;
    std::printf("loss %.6f in every run: %s; gradients: max |difference| from no checkpointing = %g\n", runs[0].loss,
                same_loss ? "yes" : "NO", max_diff);
    std::printf("gradients after the step (every run): %zu bytes\n", runs[0].after_bytes);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "checkpoint_memory: %s\n", e.what());
    return 1;
  }
  return 0;
}

// bench/bench_amp.cpp — float32 against mixed precision (tt::autocast to bfloat16 and to float16):
// the bytes one training step holds, read off the allocator's counter, and the step time, in one run.
//
//   build/bin/bench_amp [--layers 4] [--width 1024] [--batch 256] [--steps 5] [--reps 5]
//
// Model: --layers x (Linear(width, width), ReLU), then Linear(width, 10); cross-entropy; SGD with
// momentum 0.9; a batch of --batch random rows; 1 thread. Per mode, after one untimed step (so the
// momentum buffers exist), with P parameters:
//   master       the float32 parameters, 4P: the same in every mode (mixed precision keeps them)
//   copies       autocast's 16-bit copies of the weights and biases, 2P, made in the forward and kept
//                by the graph for the backward (0 in float32)
//   activations  what else the forward leaves for the backward: memory_allocated() at the end of
//                the forward (inside the autocast guard) minus before it, minus the copies. In mixed
//                precision the
//                activations of the Linear/ReLU layers are 16-bit (half the bytes); the loss's own
//                (the logits cast to float32, log_softmax's output) stay float32, which is why
//                the ratio is a little above 0.5.
//   grads        the float32 gradients of the masters, 4P, in every mode
//   peak         max_memory_allocated() during the step, above what was held before it
// Bytes are exact (they are counters, not timings). Time: the modes alternate, each rep timing
// --steps steps of each after one untimed step; median over reps, and mixed / float32 per rep,
// median (printed as such: it is not the ratio of the medians). On the CPU tinytorch computes a 16-bit op in float32 and converts (chapter 11), so
// mixed precision costs time here: the conversions are extra work and nothing runs faster in 16
// bits. The speed-up of 16-bit tensor-core GEMMs on a GPU is not measured here.
// Chapter: chapters/11-mixed-precision.md ("Master weights and memory").
#include "bench_common.hpp"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace tt = tinytorch;
using bench::Clock;

struct Mode {
  const char* name;
  std::optional<tt::DType> dtype;  // autocast's, or none (float32)
};

struct Run {
  std::shared_ptr<tt::nn::Sequential> model;
  std::unique_ptr<tt::optim::SGD> opt;
  tt::amp::GradScaler scaler;  // float16 only (a pass-through otherwise)
  tt::Tensor x, y;
  tt::nn::CrossEntropyLoss loss_fn;
  Mode mode;

  Run(Mode m, int layers, int64_t width, int64_t batch)
      : scaler(tt::amp::GradScalerOptions{65536.0, 2.0, 0.5, 2000, m.dtype == tt::kFloat16}), mode(m) {
    tt::manual_seed(0);
    std::vector<int64_t> sizes(static_cast<size_t>(layers) + 1, width);
    sizes.push_back(10);
    model = bench::make_mlp(sizes);
    opt = std::make_unique<tt::optim::SGD>(model->parameters(), 0.01, 0.9);
    x = tt::randn({batch, width});
    y = tt::randint(0, 10, {batch}, tt::kInt64);
  }
  tt::Tensor forward() {
    std::optional<tt::autocast> ac;
    if (mode.dtype) ac.emplace("cpu", *mode.dtype);
    return loss_fn(model->forward(x), y);
  }
  void step() {
    opt->zero_grad();
    scaler.scale(forward()).backward();
    scaler.step(*opt);
    scaler.update();
  }
};

struct Bytes {
  int64_t P = 0, master = 0, copies = 0, activations = 0, grads = 0, peak = 0;
};

Bytes measure(Mode mode, int layers, int64_t width, int64_t batch) {
  Run run(mode, layers, width, batch);
  run.step();
  run.opt->zero_grad();
  Bytes b;
  for (const tt::Tensor& p : run.model->parameters()) {
    b.P += p.numel();
    b.master += p.numel() * 4;
  }
  const int64_t before = tt::memory_allocated();
  tt::reset_peak_memory_stats();
  tt::Tensor loss;
  {
    std::optional<tt::autocast> ac;
    if (mode.dtype) ac.emplace("cpu", *mode.dtype);
    loss = run.loss_fn(run.model->forward(run.x), run.y);
    // measured before the guard ends: its cast cache still holds every copy (the graph keeps those
    // it needs for the backward: not the first layer's, whose input needs no gradient)
    for (const auto& [impl, entry] : tt::amp::detail::state().cache)  // leaf -> (leaf, its 16-bit copy)
      b.copies += entry.second.numel() * static_cast<int64_t>(tt::element_size(entry.second.dtype()));
    b.activations = tt::memory_allocated() - before - b.copies;
  }
  run.scaler.scale(loss).backward();
  for (const tt::Tensor& p : run.model->parameters()) b.grads += p.grad().numel() * 4;
  b.peak = tt::max_memory_allocated() - before;
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  int layers = 4, steps = 5, reps = 5;
  int64_t width = 1024, batch = 256;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--layers") layers = static_cast<int>(bench::integer_flag("bench_amp", argc, argv, i, "--layers", 1, 1000));
    else if (a == "--width") width = bench::integer_flag("bench_amp", argc, argv, i, "--width", 1, 100000);
    else if (a == "--batch") batch = bench::integer_flag("bench_amp", argc, argv, i, "--batch", 1, 1000000);
    else if (a == "--steps") steps = static_cast<int>(bench::integer_flag("bench_amp", argc, argv, i, "--steps", 1, 1000000));
    else if (a == "--reps") reps = static_cast<int>(bench::integer_flag("bench_amp", argc, argv, i, "--reps", 1, 1000000));
    else {
      std::fprintf(stderr, "bench_amp: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  tt::set_num_threads(1);
  const Mode modes[] = {{"float32", std::nullopt}, {"bf16", tt::kBFloat16}, {"fp16", tt::kFloat16}};

  // ---- memory --------------------------------------------------------------------------------
  Bytes f32;
  for (const Mode& m : modes) {
    const Bytes b = measure(m, layers, width, batch);
    if (!m.dtype) {
      f32 = b;
      std::printf("bench_amp: %d x Linear(%lld, %lld) + ReLU, Linear(%lld, 10); P = %lld parameters; batch %lld; "
                  "SGD momentum\n\n%-8s %12s %12s %12s %8s %12s %12s\n",
                  layers, (long long)width, (long long)width, (long long)width, (long long)b.P, (long long)batch,
                  "mode", "master", "copies", "activations", "vs f32", "grads", "peak");
    }
    std::printf("%-8s %12lld %12lld %12lld %8.3f %12lld %12lld\n", m.name, (long long)b.master, (long long)b.copies,
                (long long)b.activations, static_cast<double>(b.activations) / static_cast<double>(f32.activations),
                (long long)b.grads, (long long)b.peak);
  }
  std::printf("(bytes; master = grads = 4P in every mode, copies = 2P under autocast)\n\n");

  // ---- time ----------------------------------------------------------------------------------
  bench::LoadWatch watch;
  const double cpu0 = bench::LoadWatch::process_cpu_seconds();
  std::vector<double> times[3], ratio[3];
  for (int rep = 0; rep < reps; ++rep) {
    double t[3];
    for (int i = 0; i < 3; ++i) {
      Run run(modes[i], layers, width, batch);
      run.step();
      const auto t0 = Clock::now();
      for (int s = 0; s < steps; ++s) run.step();
      t[i] = bench::seconds_since(t0) / steps;
      times[i].push_back(t[i]);
    }
    for (int i = 0; i < 3; ++i) ratio[i].push_back(t[i] / t[0]);
  }
  // The ratios are the medians of each rep's ratio (the three modes run back to back in a rep, so a
  // rep slowed by other processes slows all three), not the ratios of the medians above: on a shared
  // machine the two can rank the modes differently.
  std::printf("step time (median of %d reps x %d steps): float32 %.1f ms, bf16 %.1f ms, fp16 %.1f ms; "
              "per rep, mode / float32 (median): bf16 %.2fx, fp16 %.2fx\n",
              reps, steps, bench::median(times[0]) * 1e3, bench::median(times[1]) * 1e3,
              bench::median(times[2]) * 1e3, bench::median(ratio[1]), bench::median(ratio[2]));
  watch.report(stdout, bench::LoadWatch::process_cpu_seconds() - cpu0, 1, "the step times");
  return 0;
}

// bench/bench_common.hpp — what bench_ddp and bench_dp share: the MLP, a training-step harness,
// medians, and a barrier that waits without using a core.
//
//   make_mlp({784, 256, 128, 10})   Linear layers with ReLU between
//   Trainer(model, B, in, seed)     synthetic x (B, in) ~ N(0, 1), y (B) in [0, 10); step() =
//                                   zero_grad, forward, cross-entropy, backward, SGD(0.01, 0.9) step
//   integer_flag(...)               the value after a flag, checked as examples/flags.hpp checks
//   report_load(watch, cpu0, what)  the load line and warning of load_watch.hpp, all ranks' CPU added
//                                   (cores_per_rank: the idle cores each rank needs, default 1)
// Chapters: chapters/05-data-parallel.md, chapters/06-distributed-data-parallel.md.
#pragma once

#include <tinytorch/distributed.hpp>
#include <tinytorch/tinytorch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "../examples/flags.hpp"
#include "load_watch.hpp"

namespace bench {

namespace tt = tinytorch;
using Clock = std::chrono::steady_clock;

inline std::shared_ptr<tt::nn::Sequential> make_mlp(const std::vector<int64_t>& sizes) {
  auto m = std::make_shared<tt::nn::Sequential>();
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    m->push_back(std::make_shared<tt::nn::Linear>(sizes[i], sizes[i + 1]));
    if (i + 2 < sizes.size()) m->push_back(std::make_shared<tt::nn::ReLU>());
  }
  return m;
}

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Waits for all ranks without occupying a core (an MPI_Barrier spins in Open MPI).
inline void sleepy_barrier() {
  tt::distributed::Work w = tt::distributed::barrier_async();
  while (!w.is_completed()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

/// argv[++i], the value of `flag`, as an integer in [lo, hi]; otherwise prints
/// "<program>: <flag>: '<value>' is out of range; expected ..." (flags::parse_integer) and exits 2.
inline long long integer_flag(const char* program, int argc, char** argv, int& i, const char* flag, long long lo,
                              long long hi) {
  if (i + 1 >= argc) {
    std::fprintf(stderr, "%s: %s needs a value\n", program, flag);
    std::exit(2);
  }
  try {
    return flags::parse_integer(program, flag, argv[++i], lo, hi);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(2);
  }
}

/// After a run watched by `watch` (started when this process had used `cpu0` CPU seconds): adds
/// up every rank's CPU time and prints, on rank 0, the load line and the warning of
/// bench/load_watch.hpp for a figure that needs one idle core per rank, each line starting with
/// `prefix`. Call on every rank.
inline void report_load(const LoadWatch& watch, double cpu0, const char* figure, const char* prefix = "",
                        int cores_per_rank = 1) {
  double cpu = LoadWatch::process_cpu_seconds() - cpu0;
  const int N = tt::distributed::get_world_size();
  if (N > 1) tt::distributed::all_reduce(&cpu, 1, tt::distributed::ReduceOp::SUM);
  if (tt::distributed::get_rank() == 0) watch.report(stdout, cpu, N * cores_per_rank, figure, prefix);
}

struct Trainer {
  std::shared_ptr<tt::nn::Module> model;  // what forward is called on (a wrapper or the MLP)
  std::unique_ptr<tt::optim::SGD> opt;
  tt::Tensor x, y;
  tt::nn::CrossEntropyLoss loss_fn;

  Trainer(std::shared_ptr<tt::nn::Module> m, int64_t batch, int64_t in, uint64_t seed) : model(std::move(m)) {
    opt = std::make_unique<tt::optim::SGD>(model->parameters(), 0.01, 0.9);
    tt::Generator g(seed);
    x = tt::randn({batch, in}, {}, &g);                  // (B, in)
    y = tt::randint(0, 10, {batch}, tt::kInt64, &g);     // (B)
  }
  void step() {
    opt->zero_grad();
    loss_fn(model->forward(x), y).backward();
    opt->step();
  }
  /// Seconds for `iters` steps after `warmup` untimed ones (this process only).
  double time(int warmup, int iters) {
    for (int i = 0; i < warmup; ++i) step();
    auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) step();
    return seconds_since(t0);
  }
};

}  // namespace bench

// bench/bench_dp.cpp — DataParallel against one replica and against DistributedDataParallel, on
// the same model and the same global batch, interleaved in one run.
//
//   scripts/mpirun.sh -np 2 build/bin/bench_dp [--reps 21] [--iters 10] [--batch 256]
//   build/bin/bench_dp                  # world size 1: no DDP row
//
// Model: MLP 784-256-128-10 (ReLU), cross-entropy, SGD(momentum 0.9), 1 Eigen thread per
// thread, synthetic data, global batch G (default 256). One step = zero_grad, forward, loss,
// backward, step. Each repetition times, in turn (warm-up steps first, then `iters` steps):
//   single  rank 0 trains the plain model on batch G; the other ranks sleep (no core used)
//   dp      rank 0 trains nn::DataParallel over 2 CPU replicas on batch G (G/2 rows each, two
//           threads); the other ranks sleep
//   ddp     2 ranks (mpirun -np 2) each train their DDP replica on G/2 rows: the same global batch
// and reports medians over repetitions of samples/s and of each row's throughput / single's in
// the same repetition (so a slow spell of this shared machine hits both alike).
// Where DataParallel's step goes: a separate instrumented run of the same steps, split into
// scatter + replicate (clones and graph edges, every step), the replicas' forward
// (parallel_apply: the only part that runs in two threads), gather, loss + backward (one thread,
// both replicas' graphs) and the optimizer step; medians in microseconds; beside it, the plain
// model's forward and loss+backward on the same batch, interleaved step by step.
// Last, a load line (bench/load_watch.hpp) and a WARNING when other processes held more than a
// quarter of a core: the DP and DDP rows need both cores of a 2-core machine.
// Chapter: chapters/05-data-parallel.md ("How fast"). Reference: PyTorch's DataParallel docs
// ("use DistributedDataParallel instead").
#include "bench_common.hpp"

#include <Eigen/Core>  // Eigen::setNbThreads

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace tt = tinytorch;
namespace dist = tinytorch::distributed;
using Clock = std::chrono::steady_clock;

namespace {

using bench::median;
using bench::sleepy_barrier;
using bench::Trainer;
const std::vector<int64_t> kMlp{784, 256, 128, 10};

struct Options {
  int reps = 21;
  int iters = 10;
  int warmup = 2;
  int64_t batch = 256;
};

/// DataParallel's forward written out (the same calls nn::DataParallel::forward makes), timed.
struct DpPhases {
  std::vector<double> replicate_us, forward_us, gather_us, backward_us, step_us;
  std::vector<double> single_forward_us, single_backward_us;  // the plain model, same batch
  /// The plain model's forward and loss+backward on the whole batch, for comparison.
  void single_step(tt::nn::Module& model, tt::optim::SGD& opt, const tt::Tensor& x, const tt::Tensor& y) {
    opt.zero_grad();
    auto t0 = Clock::now();
    tt::Tensor out = model.forward(x);
    auto t1 = Clock::now();
    tt::cross_entropy(out, y).backward();
    auto t2 = Clock::now();
    opt.step();
    single_forward_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    single_backward_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  void step(tt::nn::Module& model, tt::optim::SGD& opt, const tt::Tensor& x, const tt::Tensor& y,
            const std::vector<tt::Device>& devices, const std::vector<tt::Generator*>& gens) {
    auto us = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
    opt.zero_grad();
    auto t0 = Clock::now();
    auto inputs = tt::parallel::scatter(x, devices);
    auto replicas = tt::parallel::replicate(model, devices);
    auto t1 = Clock::now();
    auto outputs = tt::parallel::parallel_apply(replicas, inputs, devices, gens);
    auto t2 = Clock::now();
    tt::Tensor out = tt::parallel::gather(outputs, devices[0]);
    auto t3 = Clock::now();
    tt::cross_entropy(out, y).backward();
    auto t4 = Clock::now();
    opt.step();
    auto t5 = Clock::now();
    replicate_us.push_back(us(t0, t1));
    forward_us.push_back(us(t1, t2));
    gather_us.push_back(us(t2, t3));
    backward_us.push_back(us(t3, t4));
    step_us.push_back(us(t4, t5));
  }
};


int run(const Options& o) {
  const int N = dist::get_world_size(), r = dist::get_rank();
  const bench::LoadWatch watch;  // did other processes take the cores the DP and DDP rows need?
  const double cpu0 = bench::LoadWatch::process_cpu_seconds();
  Eigen::setNbThreads(1);
  const int64_t G = o.batch;
  const std::vector<tt::Device> two_cpus(2, tt::Device::cpu());
  tt::manual_seed(0);
  Trainer single(bench::make_mlp(kMlp), G, 784, 100);
  tt::manual_seed(0);
  Trainer dp(std::make_shared<tt::nn::DataParallel>(bench::make_mlp(kMlp), two_cpus), G, 784, 100);
  tt::manual_seed(0);
  const bool with_ddp = N == 2;
  std::unique_ptr<Trainer> ddp;
  if (with_ddp) ddp = std::make_unique<Trainer>(std::make_shared<dist::DistributedDataParallel>(bench::make_mlp(kMlp)), G / 2, 784,
                                                200 + static_cast<uint64_t>(r));
  if (r == 0) {
    std::printf("bench_dp: MLP 784-256-128-10, global batch %lld, %d reps x %d steps (+%d warm-up), "
                "1 Eigen thread per thread, world_size=%d\n",
                (long long)G, o.reps, o.iters, o.warmup, N);
    if (!with_ddp) std::printf("(no DDP row: run under scripts/mpirun.sh -np 2 for it)\n");
  }
  std::vector<double> s_single, s_dp, s_ddp, r_dp, r_ddp;
  for (int rep = 0; rep < o.reps; ++rep) {
    double t_single = 0, t_dp = 0;
    if (r == 0) t_single = single.time(o.warmup, o.iters);
    sleepy_barrier();
    if (r == 0) t_dp = dp.time(o.warmup, o.iters);
    sleepy_barrier();
    const double samples = static_cast<double>(G) * o.iters;
    s_single.push_back(samples / t_single);
    s_dp.push_back(samples / t_dp);
    r_dp.push_back(t_single / t_dp);
    if (with_ddp) {
      dist::barrier();
      double t = ddp->time(o.warmup, o.iters);
      dist::all_reduce(&t, 1, dist::ReduceOp::MAX);  // the step is done when the slower rank is
      s_ddp.push_back(samples / t);
      r_ddp.push_back(t_single / t);
    }
  }
  // Where DataParallel's step goes (rank 0 alone; the others sleep).
  DpPhases phases;
  if (r == 0) {
    tt::manual_seed(0);
    auto model = bench::make_mlp(kMlp);
    tt::optim::SGD opt(model->parameters(), 0.01, 0.9);
    tt::Generator g0(1), g1(2);
    for (int i = 0; i < o.reps * o.iters; ++i) {
      phases.step(*model, opt, single.x, single.y, two_cpus, {&g0, &g1});
      phases.single_step(*model, opt, single.x, single.y);
    }
  }
  sleepy_barrier();
  if (r == 0) {
    std::printf("\n| %-44s | samples/s (median) | throughput / single (median of per-rep ratios) |\n", "configuration");
    std::printf("|---|---|---|\n");
    std::printf("| %-44s | %18.0f | %s |\n", "single replica, batch G, 1 thread", median(s_single), "1.00");
    std::printf("| %-44s | %18.0f | %.2f |\n", "DataParallel, 2 CPU replicas (G/2 each)", median(s_dp), median(r_dp));
    if (with_ddp)
      std::printf("| %-44s | %18.0f | %.2f |\n", "DDP, 2 ranks (G/2 each)", median(s_ddp), median(r_ddp));
    const double rep = median(phases.replicate_us), fwd = median(phases.forward_us), gat = median(phases.gather_us),
                 bwd = median(phases.backward_us), stp = median(phases.step_us);
    const double total = rep + fwd + gat + bwd + stp;
    std::printf("\nDataParallel step, medians of %d instrumented steps (us): scatter+replicate %.0f | "
                "replicas' forward (2 threads) %.0f | gather %.0f | loss+backward (1 thread) %.0f | "
                "optimizer step %.0f | sum %.0f\n",
                o.reps * o.iters, rep, fwd, gat, bwd, stp, total);
    std::printf("The single model on the same batch, interleaved with those steps (us): forward %.0f | "
                "loss+backward %.0f\n",
                median(phases.single_forward_us), median(phases.single_backward_us));
    std::printf("\n");
  }
  bench::report_load(watch, cpu0, "the DataParallel and DDP rows (two threads; two ranks)");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto positive = [&](const char* flag, long long max) { return bench::integer_flag("bench_dp", argc, argv, i, flag, 1, max); };
    if (a == "--reps") o.reps = static_cast<int>(positive("--reps", 100000));
    else if (a == "--iters") o.iters = static_cast<int>(positive("--iters", 100000));
    else if (a == "--batch") o.batch = positive("--batch", 1 << 20);
    else {
      if (a != "--help" && a != "-h") std::fprintf(stderr, "bench_dp: unknown option '%s'\n", a.c_str());
      std::printf("bench_dp [--reps R] [--iters I] [--batch G]   (scripts/mpirun.sh -np 2 for the DDP row)\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  if (o.batch % 2 != 0) {  // two replicas / two ranks of G/2 rows: the same global batch
    std::fprintf(stderr, "bench_dp: --batch must be even (two replicas of G/2 rows), got %lld\n", (long long)o.batch);
    return 2;
  }
  dist::ProcessGroupGuard pg(dist::Backend::MPI);
  tt::set_num_threads(1);  // 1 thread per rank and per replica, as described above (core/parallel.hpp)
  try {
    dist::check_same_command_line("bench_dp", argc, argv);  // every rank must run the same measurement
    return run(o);
  } catch (const std::exception& e) {
    pg.abort(e);
  }
  return 1;
}

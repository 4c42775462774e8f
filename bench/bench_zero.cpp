// bench/bench_zero.cpp — DDP against ZeRO stage 1 (ZeroRedundancyOptimizer), stage 2
// (FullyShardedDataParallel, SHARD_GRAD_OP) and stage 3 (FullyShardedDataParallel, FULL_SHARD, a
// unit per Linear): bytes per rank, measured by the allocator's counters,
// beside the formulas, bytes on the wire, and the step time in the same run.
//
//   scripts/mpirun.sh -np 2 build/bin/bench_zero [--layers 8] [--width 1024] [--batch 16] [--steps 5] [--reps 5]
//       [--backward-prefetch pre|post|none] [--forward-prefetch] [--trace PREFIX]
//   build/bin/bench_zero                 # world size 1 (ZeRO-1 then shards nothing)
// --backward-prefetch / --forward-prefetch: FSDPOptions of the ZeRO-2 and ZeRO-3 modes (PyTorch's
// defaults: pre, off). --trace PREFIX: after the timing, 3 more ZeRO-3 steps with a Chrome trace,
// PREFIX.rank{r}.json per rank (distributed/trace.hpp), and rank 0's last step printed as a timeline:
// the main thread's unit forwards / backwards and waits, the communication thread's collectives.
//
// Model and measurement: examples/zero_memory.hpp (--layers x Linear(width, width) with ReLU
// between; 8 x 1024: P = 8,396,800 parameters, 33.6 MB of float32; Adam, MSE against a random
// target, batch --batch per rank of random data), 1 thread per rank. Memory, per rank, with P
// parameters and N ranks:
//   parameters 4P, gradients 4P, DDP's bucket buffers 4P (the gradients are copied into flat
//   buckets for the all-reduce, as PyTorch's DDP without gradient_as_bucket_view), Adam's state
//   (exp_avg, exp_avg_sq) 8P for DDP, 8 x (the elements this rank owns) for ZeRO-1 (~8P/N):
//     DDP     20P                      ZeRO-1  12P + 8 P_r   (P_r ~ P/N: PyTorch's greedy partition)
//     ZeRO-2  4NS + 12S                (S = ceil(P/N): the flat parameters, padding included, then
//                                       the shard's gradient and Adam's state for the shard)
//     ZeRO-3  16S                      (S = the sum over the units of ceil(P_unit / N): the shards,
//                                       their gradients, Adam; full parameters only during a step)
// Each figure is measured: the parameters', gradients' and buckets' bytes from the tensors, the
// state from Optimizer::state_nbytes(), and "held" = memory_allocated() between two steps minus
// what was allocated before the model was built, which must equal the sum of the parts plus the
// batch (x, y); "peak" = max_memory_allocated() during a step on the same baseline (the parts +
// activations and temporaries).
// Time: the four modes alternate, each rep running --steps steps of each after one untimed step; the
// table gives the median step time over reps (the slowest rank's) and each mode / DDP per rep, median.
// Bytes on the wire per step (distributed::comm_counters(): what a bandwidth-optimal algorithm
// sends, over all ranks): DDP's all-reduce 2(N-1) x 4P; ZeRO-1 adds one broadcast of each
// parameter from its owner (PyTorch's _sync_params), (N-1) x 4P more: it trades bytes on the
// wire for memory. ZeRO-2 reduce-scatters the flat gradient and all-gathers the flat parameters:
// 2(N-1) x 4NS, DDP's bytes (plus the padding). ZeRO-3 all-gathers each unit again before its
// backward: 3(N-1) x 4NS, the paper's 1.5x.
// Rank 0 prints. Chapter: chapters/13-sharding.md.
#include "bench_common.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "../examples/zero_memory.hpp"

namespace {

namespace tt = tinytorch;
namespace dist = tinytorch::distributed;
using bench::Clock;

int64_t max_over_ranks(int64_t v) {
  dist::all_reduce(&v, 1, dist::ReduceOp::MAX);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  tt::distributed::ProcessGroupGuard pg(dist::Backend::MPI);
  int layers = 8, steps = 5, reps = 5;
  int64_t width = 1024, batch = 16;
  dist::FSDPOptions fo;  // prefetch options of the FSDP modes
  std::string trace_prefix;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--layers") layers = static_cast<int>(bench::integer_flag("bench_zero", argc, argv, i, "--layers", 1, 1000));
    else if (a == "--width") width = bench::integer_flag("bench_zero", argc, argv, i, "--width", 1, 100000);
    else if (a == "--batch") batch = bench::integer_flag("bench_zero", argc, argv, i, "--batch", 1, 1000000);
    else if (a == "--steps") steps = static_cast<int>(bench::integer_flag("bench_zero", argc, argv, i, "--steps", 1, 1000000));
    else if (a == "--reps") reps = static_cast<int>(bench::integer_flag("bench_zero", argc, argv, i, "--reps", 1, 1000000));
    else if (a == "--forward-prefetch") fo.forward_prefetch = true;
    else if (a == "--backward-prefetch" || a == "--trace") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_zero: %s needs a value\n", a.c_str());
        return 2;
      }
      const std::string v = argv[++i];
      if (a == "--trace") trace_prefix = v;
      else if (v == "pre") fo.backward_prefetch = dist::BackwardPrefetch::BACKWARD_PRE;
      else if (v == "post") fo.backward_prefetch = dist::BackwardPrefetch::BACKWARD_POST;
      else if (v == "none") fo.backward_prefetch = std::nullopt;
      else {
        std::fprintf(stderr, "bench_zero: --backward-prefetch takes pre, post or none, not '%s'\n", v.c_str());
        return 2;
      }
    } else {
      const bool help = a == "--help" || a == "-h";
      if (!help) std::fprintf(stderr, "bench_zero: unknown argument '%s'\n", a.c_str());
      std::fprintf(help ? stdout : stderr, "usage: bench_zero [--layers 8] [--width 1024] [--batch 16] [--steps 5] "
                   "[--reps 5] [--backward-prefetch pre|post|none] [--forward-prefetch] [--trace PREFIX]\n");
      return help ? 0 : 2;
    }
  }
  tt::set_num_threads(1);
  const int N = dist::get_world_size();
  const bool main_rank = dist::get_rank() == 0;
  const char* names[] = {"DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"};
  constexpr int kModes = 4;

  // ---- memory: the largest rank's figures ----------------------------------------------------
  for (int zero = 0; zero < kModes; ++zero) {
    const examples::ZeroMemory m = examples::measure_zero_memory(zero, layers, width, batch, fo);
    if (zero == 0 && main_rank)
      std::printf("bench_zero: %d x Linear(%lld, %lld), P = %lld parameters, Adam, batch %lld per rank, %d rank(s)\n\n"
                  "%-7s %13s %13s %13s %13s %8s %8s\n",
                  layers, (long long)width, (long long)width, (long long)m.P, (long long)batch, N, "mode", "optim state",
                  "held", "formula", "peak", "held/P", "peak/P");
    const int64_t state = max_over_ranks(m.state), held = max_over_ranks(m.held), formula = max_over_ranks(m.formula());
    const int64_t peak = max_over_ranks(m.peak);
    const int64_t bad = max_over_ranks(m.held == m.parts() && m.held == m.formula() ? 0 : 1);
    if (main_rank)
      std::printf("%-7s %13lld %13lld %13lld %13lld %8.2f %8.2f%s\n", names[zero], (long long)state, (long long)held,
                  (long long)formula, (long long)peak, static_cast<double>(held) / m.P, static_cast<double>(peak) / m.P,
                  bad ? "  (held != the parts or the formula on some rank)" : "");
  }
  if (main_rank)
    std::printf("(bytes, the largest rank's; formula: DDP 20P, ZeRO-1 12P + 8 x owned elements, ZeRO-2 4NS + 12S,\n"
                " ZeRO-3 16S, + the batch; DDP and ZeRO-1 4P less at world size 1, where DDP makes no buckets)\n\n");

  // ---- bytes on the wire per step (dist::comm_counters) ----------------------------------------
  for (int zero = 0; zero < kModes; ++zero) {
    examples::ZeroRun run(zero, layers, width, batch, fo);
    run.step();
    run.step();  // DDP rebuilds its buckets after the first backward (a broadcast of the layout, at the second)
    dist::reset_comm_counters();
    run.step();
    const dist::CommCounters c = dist::comm_counters();
    int64_t P = 0;
    for (const tt::Tensor& p : run.model->parameters()) P += p.numel();
    const int64_t NS = run.fsdp ? N * run.fsdp->shard_numel() : P;
    const int64_t formula = (zero == 1 || zero == 3 ? 3 : 2) * (N - 1) * 4 * NS;
    using CC = dist::CommCounters;
    if (main_rank)
      std::printf("%-7s sent per step: %lld bytes over all ranks = %s (%lld), %.0f per rank; %lld all-reduce(s), "
                  "%lld broadcast(s), %lld reduce-scatter(s), %lld all-gather(s)\n",
                  names[zero], (long long)c.wire_bytes,
                  zero == 3   ? "3(N-1) x 4NS"
                  : zero == 2 ? "2(N-1) x 4NS"
                  : zero == 1 ? "3(N-1) x 4P"
                              : "2(N-1) x 4P",
                  (long long)formula,
                  static_cast<double>(c.wire_bytes) / N, (long long)c.calls[CC::kAllReduce],
                  (long long)c.calls[CC::kBroadcast], (long long)c.calls[CC::kReduceScatter],
                  (long long)c.calls[CC::kAllGather]);
  }
  if (main_rank) std::printf("\n");

  // ---- time: the modes alternate; the slowest rank's step, median over reps ---------------------
  const bench::LoadWatch watch;  // every rank needs a core of its own for the step times
  const double cpu0 = bench::LoadWatch::process_cpu_seconds();
  std::vector<double> times[kModes], ratio[kModes];
  for (int rep = 0; rep < reps; ++rep) {
    double t[kModes];
    for (int zero = 0; zero < kModes; ++zero) {
      examples::ZeroRun run(zero, layers, width, batch, fo);
      run.step();
      bench::sleepy_barrier();
      const auto t0 = Clock::now();
      for (int s = 0; s < steps; ++s) run.step();
      double secs = bench::seconds_since(t0) / steps;
      dist::all_reduce(&secs, 1, dist::ReduceOp::MAX);
      t[zero] = secs;
      times[zero].push_back(secs);
    }
    for (int zero = 1; zero < kModes; ++zero) ratio[zero].push_back(t[zero] / t[0]);
  }
  if (main_rank)
    std::printf("step time (median of %d reps x %d steps): DDP %.1f ms, ZeRO-1 %.1f ms, ZeRO-2 %.1f ms, ZeRO-3 %.1f ms; "
                "ZeRO-1 / DDP %.2f, ZeRO-2 / DDP %.2f, ZeRO-3 / DDP %.2f\n",
                reps, steps, bench::median(times[0]) * 1e3, bench::median(times[1]) * 1e3,
                bench::median(times[2]) * 1e3, bench::median(times[3]) * 1e3, bench::median(ratio[1]),
                bench::median(ratio[2]), bench::median(ratio[3]));
  bench::report_load(watch, cpu0, "the step times (one rank per core)");

  // ---- a trace of ZeRO-3's last step ------------------------------------------------------------
  if (!trace_prefix.empty()) {
    auto trace = std::make_shared<dist::Trace>(dist::get_rank(), dist::common_origin_us());
    dist::FSDPOptions traced = fo;
    traced.trace = trace;
    examples::ZeroRun run(3, layers, width, batch, traced);
    for (int s = 0; s < 3; ++s) {
      bench::sleepy_barrier();
      dist::Trace::Scope scope(trace.get(), "step");
      run.step();
    }
    trace->write(trace_prefix + ".rank" + std::to_string(dist::get_rank()) + ".json");
    std::vector<dist::Trace::Event> ev = trace->events();
    double t0 = 0;
    for (const auto& e : ev)
      if (e.name == "step") t0 = e.ts;  // the last step's start
    std::sort(ev.begin(), ev.end(), [](const auto& a, const auto& b) { return a.ts < b.ts; });
    if (main_rank) {
      const char* bp = !fo.backward_prefetch                                         ? "none"
                       : *fo.backward_prefetch == dist::BackwardPrefetch::BACKWARD_PRE ? "pre"
                                                                                       : "post";
      std::printf("\ntrace: %s.rank{0..%d}.json; rank 0's last ZeRO-3 step (backward_prefetch %s, forward_prefetch "
                  "%s), ms from its start:\n%8s %8s  %-30s %s\n",
                  trace_prefix.c_str(), N - 1, bp, fo.forward_prefetch ? "on" : "off", "start", "dur", "main thread",
                  "comm thread");
      for (const auto& e : ev) {
        if (e.ts < t0 || e.name == "step") continue;
        std::printf("%8.2f %8.2f  %-30s %s\n", (e.ts - t0) / 1e3, e.dur / 1e3, e.tid == 0 ? e.name.c_str() : "",
                    e.tid == 0 ? "" : e.name.c_str());
      }
    }
  }
  return 0;
}

// examples/zero_memory.cpp — bytes per rank of DDP + Adam against ZeRO stage 1, measured, and
// the lab that shows why it matters: under a memory limit DDP runs out where ZeRO-1 trains.
//
//   scripts/mpirun.sh -np 2 build/bin/zero_memory              # DDP + Adam
//   scripts/mpirun.sh -np 2 build/bin/zero_memory --zero 1     # DDP + ZeroRedundancyOptimizer<Adam>
//   scripts/mpirun.sh -np 2 build/bin/zero_memory --zero 2     # FSDP SHARD_GRAD_OP + Adam (ZeRO-2)
//   scripts/mpirun.sh -np 2 build/bin/zero_memory --zero 3     # FSDP FULL_SHARD, a unit per Linear (ZeRO-3)
//   TINYTORCH_MAX_MEMORY_MB=150 scripts/mpirun.sh -np 2 build/bin/zero_memory            # out of memory
//   TINYTORCH_MAX_MEMORY_MB=150 scripts/mpirun.sh -np 2 build/bin/zero_memory --zero 1   # trains
//   TINYTORCH_MAX_MEMORY_MB=100 scripts/mpirun.sh -np 2 build/bin/zero_memory --zero 2   # out of memory
//   TINYTORCH_MAX_MEMORY_MB=100 scripts/mpirun.sh -np 2 build/bin/zero_memory --zero 3   # trains
//
// The model and the measurement are examples/zero_memory.hpp: --layers x Linear(--width, --width)
// (8 x 1024 by default: P = 8,396,800 parameters), Adam, --batch rows of random data per rank. Each
// rank measures its bytes between two steps (parameters, gradients, DDP's buckets, Adam's state,
// the batch; their sum must equal what memory_allocated() grew by) and the peak during a step;
// rank 0 prints every rank's line beside the formula (DDP 20P, ZeRO-1 12P + 8 x the elements it
// owns, ZeRO-2 4NS + 12S, ZeRO-3 16S, + the batch), then --steps more steps with their losses (the same on every rank and for
// both modes: ZeRO-1 changes where the optimizer state lives, not the numbers).
// TINYTORCH_MAX_MEMORY_MB (core/allocator.hpp) caps memory_allocated() per process: the first
// tensor past it throws "CPU out of memory. Tried to allocate ..." on that rank, and the job ends
// with the message (ProcessGroupGuard::abort), as a GPU's out-of-memory error would end it.
// Chapter: chapters/13-sharding.md (13.3, 13.4).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "flags.hpp"
#include "zero_memory.hpp"

namespace tt = tinytorch;
namespace dist = tinytorch::distributed;

int main(int argc, char** argv) {
  int zero = 0, layers = 8, steps = 3;
  int64_t width = 1024, batch = 16;
  CLI::App app{"Bytes per rank of DDP + Adam and of ZeRO stages 1-3, measured (chapters/13-sharding.md)"};
  app.add_option("--zero", zero,
                 "0: DDP + Adam; 1: DDP + ZeroRedundancyOptimizer<Adam>; 2: FullyShardedDataParallel "
                 "(SHARD_GRAD_OP) + Adam; 3: FullyShardedDataParallel (FULL_SHARD, a unit per Linear) + Adam")
      ->check(flags::integer_in(0, 3));
  app.add_option("--layers", layers, "Linear(width, width) layers")->check(flags::integer_in(1, 1000));
  app.add_option("--width", width, "features of every layer")->check(flags::integer_in(1, 100000));
  app.add_option("--batch", batch, "rows of random data per rank")->check(flags::integer_in(1, 1000000));
  app.add_option("--steps", steps, "training steps after the measurement, each loss printed")
      ->check(flags::integer_in(0, 1000000));
  CLI11_PARSE(app, argc, argv);
  std::optional<dist::ProcessGroupGuard> pg;
  try {
    pg.emplace(dist::Backend::MPI);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zero_memory: %s\n", e.what());
    return 2;
  }
  try {
    tt::set_num_threads(1);
    const int N = dist::get_world_size(), rank = dist::get_rank();
    const examples::ZeroMemory m = examples::measure_zero_memory(zero, layers, width, batch);
    // Rank 0 prints every rank's figures.
    const int64_t mine[] = {m.owned, m.params, m.grads, m.buckets, m.state, m.batch, m.held, m.peak};
    constexpr int K = 8;
    std::vector<int64_t> all(static_cast<size_t>(N) * K);
    dist::all_gather(all.data(), mine, K, tt::kInt64);
    if (rank == 0) {
      std::printf("zero_memory: %d x Linear(%lld, %lld), P = %lld parameters, Adam, batch %lld, %d rank(s), %s\n",
                  layers, (long long)width, (long long)width, (long long)m.P, (long long)batch, N,
                  zero == 3   ? "ZeRO-3 (FullyShardedDataParallel FULL_SHARD, a unit per Linear, + Adam)"
                  : zero == 2 ? "ZeRO-2 (FullyShardedDataParallel SHARD_GRAD_OP + Adam)"
                  : zero == 1 ? "ZeRO-1 (ZeroRedundancyOptimizer<Adam>)"
                              : "DDP + Adam");
      std::printf("%4s %10s %11s %11s %11s %11s %8s %11s %11s %11s %7s\n", "rank", "owned", "params", "grads",
                  "buckets", "optim", "batch", "held", "formula", "peak", "held/P");
      for (int r = 0; r < N; ++r) {
        const int64_t* v = &all[static_cast<size_t>(r) * K];
        examples::ZeroMemory q;
        q.zero = zero;
        q.P = m.P;
        q.world = N;
        q.owned = v[0];
        q.params = v[1], q.grads = v[2], q.buckets = v[3], q.state = v[4], q.batch = v[5], q.held = v[6], q.peak = v[7];
        std::printf("%4d %10lld %11lld %11lld %11lld %11lld %8lld %11lld %11lld %11lld %7.2f%s\n", r, (long long)q.owned,
                    (long long)q.params, (long long)q.grads, (long long)q.buckets, (long long)q.state,
                    (long long)q.batch, (long long)q.held, (long long)q.formula(), (long long)q.peak,
                    static_cast<double>(q.held) / static_cast<double>(m.P),
                    q.held == q.parts() && q.held == q.formula() ? "" : "  (held != the parts or the formula)");
      }
      std::printf("formula: %s + batch, bytes%s\n",
                  zero == 3   ? "16 x S (S = owned: the shards, their gradients, Adam)"
                  : zero == 2 ? "4 x N x S (parameters) + 12 x S (S = owned)"
                  : zero      ? "12P + 8 x owned"
                              : "20P",
                  N > 1 || zero >= 2 ? "" : " (minus DDP's 4P of buckets: none at world size 1)");
      std::fflush(stdout);
    }
    if (steps > 0) {
      examples::ZeroRun run(zero, layers, width, batch);
      for (int s = 1; s <= steps; ++s) {
        const float loss = run.step();
        double all_loss = loss;  // the mean over the ranks' batches
        dist::all_reduce(&all_loss, 1, dist::ReduceOp::SUM);
        if (rank == 0) std::printf("step %d: loss=%.6f\n", s, all_loss / N);
      }
    }
  } catch (const std::exception& e) {
    if (dist::get_world_size() > 1) pg->abort(e);  // "rank r: ...", then MPI_Abort: nobody hangs
    std::fprintf(stderr, "zero_memory: %s\n", e.what());
    return 1;
  }
  return 0;
}

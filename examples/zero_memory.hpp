// examples/zero_memory.hpp — the deep MLP that ZeRO's memory figures are measured on, and the
// measurement: what examples/zero_memory.cpp prints and bench/bench_zero.cpp times.
//
// Model: `layers` x Linear(width, width) with ReLU between (8 x 1024: P = 8,396,800 parameters),
// Adam (lr 1e-3), MSE against a random target, a batch of random data per rank, wrapped in
// DistributedDataParallel. With --zero 1 the optimizer is ZeroRedundancyOptimizer<Adam>; with
// --zero 2 the model is wrapped in FullyShardedDataParallel (SHARD_GRAD_OP) instead of DDP and Adam
// steps the rank's shard of its flat parameter (S = ceil(P / N) elements); with --zero 3 in
// FullyShardedDataParallel (FULL_SHARD) with a unit per Linear (transformer_auto_wrap_policy), and
// Adam steps the rank's shard of each unit's flat parameter (S = the sum of ceil(P_layer / N)).
// Bytes per rank between two steps (zero_grad(set_to_none=false) keeps the gradients):
//   parameters 4P, gradients 4P, DDP's bucket buffers 4P (the gradients are copied into flat
//   buckets for the all-reduce, as PyTorch's DDP without gradient_as_bucket_view; none at world
//   size 1, where there is nothing to all-reduce), Adam's state 8P (DDP) or 8 x the elements this
//   rank owns (ZeRO-1, ~8P/N), and the batch x, y.
//     DDP: 20P + batch            ZeRO-1: 12P + 8 P_r + batch        (N > 1; 4P less at N = 1)
//     ZeRO-2 (FSDP SHARD_GRAD_OP): 4NS (the flat parameters, P + padding) + 4S (the shard's
//     gradient) + 8S (Adam) + batch = 4P + 12P/N: no bucket copy, and the parameters' own
//     gradients are freed once reduce-scattered
//     ZeRO-3 (FSDP FULL_SHARD): 4S (the shards) + 4S (their gradients) + 8S (Adam) + batch =
//     16P/N: the full parameters exist only while a unit's forward or backward runs (peak)
// measure_zero_memory() builds the model, takes two steps and returns each part (from the
// tensors and Optimizer::state_nbytes()), "held" = memory_allocated() after the second step minus
// memory_allocated() before the model was built (the parts must add up to it exactly), and "peak"
// = max_memory_allocated() during the second step on the same baseline (the parts + activations
// and temporaries).
// Chapter: chapters/13-sharding.md.
#pragma once

#include <tinytorch/distributed.hpp>
#include <tinytorch/tinytorch.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace examples {

/// The model, its DDP (or FSDP) wrapper, the optimizer and one batch, for `zero` = 0 (DDP + Adam),
/// 1 (DDP + ZeroRedundancyOptimizer<Adam>), 2 (FullyShardedDataParallel SHARD_GRAD_OP + Adam) or 3
/// (FullyShardedDataParallel FULL_SHARD, a unit per Linear, + Adam).
struct ZeroRun {
  std::shared_ptr<tinytorch::nn::Sequential> model;
  std::shared_ptr<tinytorch::distributed::DistributedDataParallel> ddp;    // zero 0 and 1
  std::shared_ptr<tinytorch::distributed::FullyShardedDataParallel> fsdp;  // zero 2 and 3
  std::unique_ptr<tinytorch::optim::Adam> opt;
  tinytorch::Tensor x, y;  // (batch, width) each
  tinytorch::nn::MSELoss loss_fn;

  /// fo: FSDP's other options for zero 2 and 3 (prefetch, trace); its strategy and policy are set here.
  ZeroRun(int zero, int layers, int64_t width, int64_t batch, tinytorch::distributed::FSDPOptions fo = {}) {
    namespace tt = tinytorch;
    tt::manual_seed(1);
    model = std::make_shared<tt::nn::Sequential>();
    for (int l = 0; l < layers; ++l) {
      model->push_back(std::make_shared<tt::nn::Linear>(width, width));
      if (l + 1 < layers) model->push_back(std::make_shared<tt::nn::ReLU>());
    }
    if (zero >= 2) {  // Adam over this rank's shard of the flat parameter(s)
      if (zero == 2) fo.sharding_strategy = tt::distributed::ShardingStrategy::SHARD_GRAD_OP;
      else fo.auto_wrap_policy = tt::distributed::transformer_auto_wrap_policy<tt::nn::Linear>();  // FULL_SHARD
      fsdp = std::make_shared<tt::distributed::FullyShardedDataParallel>(model, fo);
      opt = std::make_unique<tt::optim::Adam>(fsdp->parameters(), tt::optim::AdamOptions{});
    } else if (zero == 1) {
      ddp = std::make_shared<tt::distributed::DistributedDataParallel>(model);
      opt = std::make_unique<tt::distributed::ZeroRedundancyOptimizer<tt::optim::Adam>>(ddp->parameters(),
                                                                                          tt::optim::AdamOptions{});
    } else {
      ddp = std::make_shared<tt::distributed::DistributedDataParallel>(model);
      opt = std::make_unique<tt::optim::Adam>(ddp->parameters(), tt::optim::AdamOptions{});
    }
    tt::Generator g(7 + static_cast<uint64_t>(tt::distributed::get_rank()));
    x = tt::randn({batch, width}, {}, &g);
    y = tt::randn({batch, width}, {}, &g);
  }
  /// One training step; returns the loss.
  float step() {
    opt->zero_grad(/*set_to_none=*/false);  // the gradients stay allocated between steps: part of the bill
    tinytorch::Tensor loss = loss_fn(fsdp ? fsdp->forward(x) : ddp->forward(x), y);
    loss.backward();
    opt->step();
    return loss.item<float>();
  }
};

/// This rank's bytes (see the file comment).
struct ZeroMemory {
  int world = 1;           ///< ranks
  int64_t P = 0;           ///< parameters (elements)
  int64_t owned = 0;       ///< elements whose optimizer state this rank keeps
  int64_t params = 0, grads = 0, buckets = 0, state = 0, batch = 0;
  int64_t held = 0;        ///< memory_allocated() between steps, above the baseline
  int64_t peak = 0;        ///< max_memory_allocated() during a step, above the baseline
  int zero = 0;            ///< the --zero mode measured
  int64_t parts() const { return params + grads + buckets + state + batch; }
  /// zero 0/1: 12P + 8 x owned + batch (8P at world size 1: no buckets); zero 2 (owned = S):
  /// 4 N S + 12 S + batch; zero 3: 16 S + batch
  int64_t formula() const {
    if (zero == 3) return 16 * owned + batch;
    if (zero == 2) return 4 * world * owned + 12 * owned + batch;
    return (world > 1 ? 12 : 8) * P + 8 * owned + batch;
  }
};

inline ZeroMemory measure_zero_memory(int zero, int layers, int64_t width, int64_t batch,
                                      const tinytorch::distributed::FSDPOptions& fo = {}) {
  namespace tt = tinytorch;
  ZeroMemory m;
  m.zero = zero;
  m.world = tt::distributed::get_world_size();
  const int64_t base = static_cast<int64_t>(tt::memory_allocated());
  ZeroRun run(zero, layers, width, batch, fo);
  run.step();
  tt::reset_peak_memory_stats();
  run.step();
  m.held = static_cast<int64_t>(tt::memory_allocated()) - base;
  m.peak = static_cast<int64_t>(tt::max_memory_allocated()) - base;
  for (const tt::Tensor& p : run.model->parameters()) {
    m.P += p.numel();
    m.params += p.numel() * 4;
    if (p.grad().defined()) m.grads += p.grad().numel() * 4;
  }
  if (run.fsdp) {  // the parameters view flat buffers (N x S, padding included: ZeRO-2; freed: ZeRO-3),
                   // the shards (ZeRO-3: their own memory) and their gradients, S
    m.params = m.grads = 0;
    std::vector<const tt::Storage*> seen;
    auto count = [&](const tt::Tensor& t) {
      const tt::Storage* s = t.impl()->storage.get();
      for (const tt::Storage* q : seen)
        if (q == s) return;
      seen.push_back(s);
      m.params += static_cast<int64_t>(s->nbytes());
    };
    for (const tt::Tensor& p : run.model->parameters()) count(p);
    for (const tt::Tensor& f : run.fsdp->parameters()) {
      count(f);
      m.grads += f.grad().numel() * 4;
    }
    m.owned = run.fsdp->shard_numel();
  }
  if (m.world > 1 && run.ddp)  // at world size 1 DDP lays its buckets out but allocates none
    for (int64_t b : run.ddp->bucket_bytes()) m.buckets += b;
  m.state = run.opt->state_nbytes();
  m.batch = (run.x.numel() + run.y.numel()) * 4;
  if (zero < 2) m.owned = m.P;
  if (zero == 1) {
    auto& z = static_cast<tt::distributed::ZeroRedundancyOptimizer<tt::optim::Adam>&>(*run.opt);
    m.owned = 0;
    for (const auto& ps : z.partition()[static_cast<size_t>(z.rank())])
      for (const tt::Tensor& p : ps) m.owned += p.numel();
  }
  return m;
}

}  // namespace examples

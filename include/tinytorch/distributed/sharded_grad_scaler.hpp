// tinytorch/distributed/sharded_grad_scaler.hpp — ShardedGradScaler: amp::GradScaler for a model
// whose gradients are sharded over the ranks (FullyShardedDataParallel, ZeroRedundancyOptimizer's
// shards are not: DDP all-reduces whole gradients first).
//
//   dist::ShardedGradScaler scaler;            // amp::GradScalerOptions, then the process group
//   scaler.scale(loss).backward();             // FSDP: each rank ends with its shard's gradient
//   scaler.step(opt);                          // unscale_: found_inf all-reduced (MAX) over the ranks
//   scaler.update();
//
// Why. GradScaler skips a step when a gradient it checks is inf or NaN. Under DDP every rank holds
// the same averaged gradients, so every rank finds the same inf and all skip together. Under FSDP
// rank r checks only its shard: an overflow in rank 0's elements would make rank 0 skip its step
// and halve its scale while the others step theirs, and the ranks would train different models
// from then on, silently. ShardedGradScaler makes the check collective: each rank's found_inf
// (0 or 1) is all-reduced with MAX, so all skip, or none. It also unscales float16 gradients
// (PyTorch's allow_fp16=True: FSDP may keep 16-bit parameters), which GradScaler refuses.
// Everything else (the scale, update(), state_dict, errors) is GradScaler's (amp/grad_scaler.hpp).
// A collective inside unscale_ (and so inside step()): every rank calls them, once per iteration.
// Disabled (enabled = false) it is GradScaler's pass-through, with no collective.
//
// Chapter: chapters/13-sharding.md (13.8). Reference:
//   torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler (PyTorch 1.13; its found_inf is
//   all-reduced with SUM and compared with 0, the same decision as MAX).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "tinytorch/amp/grad_scaler.hpp"
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/process_group.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed {

class ShardedGradScaler : public amp::GradScaler {
 public:
  /// `process_group`: the ranks that share the gradients (nullptr: the default group). Throws
  /// tinytorch::Error when the process group is not initialised, or for GradScaler's bad options.
  explicit ShardedGradScaler(amp::GradScalerOptions o = {}, std::shared_ptr<ProcessGroup> process_group = nullptr)
      : amp::GradScaler(o), group_(std::move(process_group)) {
    if (!group_) group_ = detail::default_group("ShardedGradScaler").shared_from_this();
    allow_fp16_ = true;
  }

 protected:
  bool found_inf_on_any_rank(bool found_inf_here) override {
    int64_t v = found_inf_here ? 1 : 0;
    group_->all_reduce(&v, 1, kInt64, ReduceOp::MAX, Completion::Blocking, "ShardedGradScaler found_inf");
    return v != 0;
  }

 private:
  std::shared_ptr<ProcessGroup> group_;
};

}  TT_NAMESPACE_END  // namespace tinytorch::distributed

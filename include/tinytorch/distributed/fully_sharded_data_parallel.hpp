// tinytorch/distributed/fully_sharded_data_parallel.hpp — FullyShardedDataParallel (PyTorch's
// FSDP): the model's parameters in one flat buffer, each rank owning a 1/N shard of it, gradients
// reduce-scattered so that each rank keeps the averaged gradient of its shard only (ZeRO stage 2),
// and an optimizer that holds state for that shard only.
//
//   dist::FSDPOptions fo;
//   fo.sharding_strategy = dist::ShardingStrategy::SHARD_GRAD_OP;
//   auto fsdp = std::make_shared<dist::FullyShardedDataParallel>(model, fo);
//   optim::Adam opt(fsdp->parameters(), lr);   // one parameter: this rank's shard of the flat buffer
//   for (...) { opt.zero_grad(); loss_fn(fsdp->forward(x), y).backward(); opt.step(); }
//
// The flat parameter. At construction (after the ranks agree on the model and rank 0's values are
// broadcast, as DDP's steps 0-2: model_agreement.hpp) the T elements of the parameters that train
// are laid end to end in one buffer `flat` of N * S elements, S = ceil(T / N) (zero padding at the
// end), and each parameter becomes a view of its slice (PyTorch's FlatParameter; the same rebinding
// as ZeroRedundancyOptimizer's parameters_as_bucket_view). Rank r owns flat[r*S, (r+1)*S): that
// slice, a leaf tensor of shape (S), is the module's one parameter, `flat_param`, so the optimizer
// built on fsdp->parameters() updates it in place and keeps state for S elements (PyTorch:
// use_orig_params=False, where fsdp.parameters() yields the FlatParameter's shard).
//
// One iteration (ShardingStrategy::SHARD_GRAD_OP, ZeRO-2):
//   forward   all_gather: every rank's shard into `flat` (the parameters see the values the
//             owners' optimizers wrote), then the module's forward. Skipped when `flat` is
//             unchanged since the last gather (its version counter: no optimizer step between),
//             so a forward under NoGradGuard (evaluation) between a forward and its backward
//             neither sends anything nor invalidates the pending graph; it arms nothing.
//   backward  forward made each parameter's .grad a zeroed view of one flat (N * S) gradient
//             buffer, so backward accumulates into it in place; when the last gradient has
//             arrived (a hook per parameter, as DDP's Reducer), the buffer is divided by N and
//             reduce_scatter (SUM) leaves on rank r the average of its shard: flat_param.grad
//             (added to a gradient already there, as .grad accumulates). The buffer and the
//             parameters' .grad are then freed: between steps a rank holds its shard's gradient.
//   step      the optimizer updates flat_param (rank r's slice of `flat`); the other slices are
//             stale until the next forward's all_gather.
// ShardingStrategy::NO_SHARD (DDP's semantics): flat_param is the whole buffer [0, T) on every
//   rank, the gradients are all-reduced instead, every rank steps every element; no gather.
// ShardingStrategy::FULL_SHARD (ZeRO-3: parameters freed after forward, gathered again before
//   backward) is PyTorch's default and not implemented yet: it throws.
//
// Memory per rank, P parameters of 4 bytes, Adam (chapter 13.7):
//   SHARD_GRAD_OP  4P (the flat parameters, + padding) + 4P/N (flat_param.grad) + 8P/N (Adam)
//                  = the paper's ZeRO-2, 4P + 12P/N; during backward the full gradients exist
//                  until the reduce-scatter (one model-sized unit here: no auto_wrap_policy yet)
//   NO_SHARD       4P + 4P + 8P, DDP's 16P without DDP's bucket copy
// Bytes sent per step (distributed::comm_counters): SHARD_GRAD_OP a reduce-scatter and an
//   all-gather of 4(N S) bytes, 2(N-1)/N x 4P per rank (+ padding): what DDP's all-reduce sends.
//
// The numbers: rank r's shard gradient is sum_q g_q / N over the ranks' gradients, as DDP's
//   average (each term divided by N before the sum, as DDP's buckets); Adam on a flat shard is
//   Adam elementwise, so 20 steps equal DDP + Adam bit for bit on 2 ranks (a sum of two is the
//   same in any order) and within rounding on more (MPI's reduce-scatter may add in another
//   order than its all-reduce): tests/mpi/test_zero.cpp, [fsdp].
//
// Errors (tinytorch::Error, the same on every rank where the check is collective):
//   the model differs across ranks, or options differ (as DDP's messages);
//   "FullyShardedDataParallel: ShardingStrategy::FULL_SHARD is not implemented yet ...";
//   parameters of more than one dtype or device, none that requires grad, CUDA parameters (not
//   implemented: the collectives below take host pointers);
//   a forward while the previous backward's gradients are incomplete (a parameter without one):
//   PyTorch DDP's "Expected to have finished reduction in the prior iteration" wording; a forward
//   after a grad-mode forward that had no backward at all (one backward per forward; evaluation
//   under NoGradGuard, as DDP asks too).
//   a model wrapped twice, an FSDP inside the wrapped model (nesting: not yet), a parameter
//   moved, converted, frozen or unfrozen after wrapping: errors naming the parameter.
// clip_grad_norm_(max_norm): PyTorch's FSDP method; the norm is the whole model's (the shards'
//   squares summed over the ranks), where nn::utils::clip_grad_norm_ would see one shard.
// A parameter that some ranks use and others do not (a data-dependent branch) leaves those ranks
//   in the reduce-scatter and the others at the next forward's error: the watchdog's timeout
//   ends it (DDP without find_unused_parameters likewise; PyTorch's FSDP reduces zeros for it).
// Not yet: FULL_SHARD, an auto_wrap_policy (one flat parameter per layer, its reduce-scatter
//   overlapped with the rest of backward), state_dict types, CUDA parameters, no_sync(), and
//   PyTorch's ShardedGradScaler (amp::GradScaler checks the gradients of this rank's shard only,
//   so an inf in another rank's shard would make the ranks disagree on skipping a step).
//
// Chapter: chapters/13-sharding.md (13.7). Reference: torch.distributed.fsdp.FullyShardedDataParallel
//   (PyTorch 1.13: ShardingStrategy, FlatParameter, use_orig_params=False); Zhao et al., "PyTorch
//   FSDP: Experiences on Scaling Fully Sharded Data Parallel" (VLDB 2023); Rajbhandari et al.,
//   "ZeRO" (SC 2020), stage P_os+g.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../functional.hpp"
#include "../nn/module.hpp"
#include "clip_grad.hpp"
#include "errors.hpp"
#include "model_agreement.hpp"
#include "process_group.hpp"
#include "../core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed {

namespace detail {
/// The parameters and flat parameters of the live FullyShardedDataParallel wrappers (true: a flat
/// parameter), so that a model is not wrapped twice and a wrapper is not wrapped again.
struct FsdpRegistry {
  std::mutex mu;
  std::unordered_map<const TensorImpl*, bool> managed;
};
inline FsdpRegistry& fsdp_registry() {
  static FsdpRegistry r;
  return r;
}
}  // namespace detail

/// What FSDP shards (torch.distributed.fsdp.ShardingStrategy).
enum class ShardingStrategy {
  FULL_SHARD,     ///< parameters, gradients and optimizer state (ZeRO-3); not implemented yet
  SHARD_GRAD_OP,  ///< gradients and optimizer state (ZeRO-2)
  NO_SHARD,       ///< nothing: DDP's semantics
};

inline const char* sharding_strategy_name(ShardingStrategy s) {
  switch (s) {
    case ShardingStrategy::FULL_SHARD: return "FULL_SHARD";
    case ShardingStrategy::SHARD_GRAD_OP: return "SHARD_GRAD_OP";
    case ShardingStrategy::NO_SHARD: return "NO_SHARD";
  }
  return "?";
}

/// FullyShardedDataParallel's arguments (PyTorch's keyword arguments of the same names).
struct FSDPOptions {
  /// The ranks that shard the model; nullptr = the default group.
  std::shared_ptr<ProcessGroup> process_group = nullptr;
  /// PyTorch's default is FULL_SHARD, which tinytorch does not have yet: pass SHARD_GRAD_OP or NO_SHARD.
  ShardingStrategy sharding_strategy = ShardingStrategy::FULL_SHARD;
};

class FullyShardedDataParallel : public nn::Module {
 public:
  /// Wraps `module` (its parameters become views of the flat buffer; see the file comment).
  /// A collective on the group: every rank constructs it with the same model and options.
  explicit FullyShardedDataParallel(std::shared_ptr<nn::Module> module, FSDPOptions options = {})
      : module_(std::move(module)), options_(std::move(options)) {
    detail::require_initialized("FullyShardedDataParallel");
    group_ = options_.process_group ? options_.process_group
                                    : detail::default_group("FullyShardedDataParallel").shared_from_this();
    ProcessGroup& g = *group_;
    rank_ = g.rank();
    world_ = g.size();
    const int strategy = static_cast<int>(options_.sharding_strategy);
    detail::throw_if_any_rank(g, module_ == nullptr, "FullyShardedDataParallel: module is null",
                              "FullyShardedDataParallel");
    check_same_strategy(g);
    detail::check(strategy >= 0 && strategy <= 2, "FullyShardedDataParallel: FSDPOptions::sharding_strategy has no "
                  "such value (", strategy, ")");
    detail::check(options_.sharding_strategy != ShardingStrategy::FULL_SHARD,
                  "FullyShardedDataParallel: ShardingStrategy::FULL_SHARD (PyTorch's default: parameters freed after "
                  "forward and gathered again for backward, ZeRO-3) is not implemented yet; set "
                  "FSDPOptions::sharding_strategy to ShardingStrategy::SHARD_GRAD_OP (ZeRO-2) or NO_SHARD");

    // The same model everywhere (DDP's step 1).
    const auto named_params = module_->named_parameters();
    const auto named_buffers = module_->named_buffers();
    const char* who = "FullyShardedDataParallel: FSDP expects the same model across all ranks";
    detail::verify_across_ranks(g, named_params, "parameter", who);
    detail::verify_across_ranks(g, named_buffers, "buffer", who);

    // The parameters that train, each once (a shared parameter appears under two names); none
    // may belong to another live FSDP (checked before anything is overwritten).
    std::unordered_set<const TensorImpl*> seen;
    std::string taken;
    {
      auto& reg = detail::fsdp_registry();
      std::lock_guard<std::mutex> lock(reg.mu);
      for (const auto& [name, p] : named_params) {
        if (!p.requires_grad() || !seen.insert(p.impl()).second) continue;
        params_.push_back(p);
        names_.push_back(name);
        const auto it = reg.managed.find(p.impl());
        if (taken.empty() && it != reg.managed.end())
          taken = it->second ? "FullyShardedDataParallel: \"" + name + "\" is the flat parameter of another "
                               "FullyShardedDataParallel inside this module: nested FSDP (one flat parameter per "
                               "wrapped unit) is not implemented yet; wrap the whole model once"
                             : "FullyShardedDataParallel: parameter \"" + name + "\" already belongs to another "
                               "FullyShardedDataParallel (a model is wrapped once: its parameters view that "
                               "wrapper's flat buffer)";
      }
    }
    detail::throw_if_any_rank(g, !taken.empty(), taken, "FullyShardedDataParallel");
    // Rank 0's values everywhere (DDP's step 2).
    detail::broadcast_from_rank0(g, named_params);
    detail::broadcast_from_rank0(g, named_buffers);
    detail::check(!params_.empty(), "FullyShardedDataParallel: the module has no parameter that requires a gradient");
    const DType dtype = params_.front().dtype();
    for (size_t i = 0; i < params_.size(); ++i) {
      detail::check(params_[i].dtype() == dtype, "FullyShardedDataParallel: expects every parameter of one dtype "
                    "(one flat buffer), but \"", names_[0], "\" is ", dtype_name(dtype), " and \"", names_[i],
                    "\" ", dtype_name(params_[i].dtype()));
      detail::check(params_[i].device().is_cpu(), "FullyShardedDataParallel: parameter \"", names_[i], "\" is on ",
                    params_[i].device().str(), "; CUDA parameters are not implemented yet (use DDP)");
    }

    // The flat buffer: T elements, padded to N * S; each parameter rebound to view its slice.
    int64_t total = 0;
    for (const Tensor& p : params_) {
      offsets_.push_back(total);
      total += p.numel();
    }
    numel_ = total;
    shard_numel_ = (total + world_ - 1) / world_;
    {
      NoGradGuard no_grad;
      flat_ = zeros({shard_numel_ * world_}, TensorOptions(dtype));
      for (size_t i = 0; i < params_.size(); ++i) {
        const int64_t k = params_[i].numel();
        flat_.narrow(0, offsets_[i], k).copy_(params_[i].reshape({k}));
        TensorImpl* impl = params_[i].impl();
        impl->storage = flat_.impl()->storage;
        impl->offset = offsets_[i];
        impl->strides = contiguous_strides(impl->shape);
      }
    }
    // This rank's shard, the one parameter the optimizer sees (NO_SHARD: every element).
    const bool sharded = options_.sharding_strategy == ShardingStrategy::SHARD_GRAD_OP;
    Tensor shard = sharded ? flat_.narrow(0, rank_ * shard_numel_, shard_numel_) : flat_.narrow(0, 0, numel_);
    flat_param_ = register_parameter("flat_param", shard, true);
    {
      auto& reg = detail::fsdp_registry();
      std::lock_guard<std::mutex> lock(reg.mu);
      for (const Tensor& p : params_) reg.managed[p.impl()] = false;
      reg.managed[flat_param_.impl()] = true;
    }

    // A hook per parameter: "this .grad is final" (as DDP's Reducer).
    ready_.assign(params_.size(), 0);
    state_ = std::make_shared<HookState>();
    state_->owner = this;
    std::weak_ptr<HookState> weak = state_;
    for (size_t i = 0; i < params_.size(); ++i) {
      params_[i].register_post_accumulate_grad_hook([weak, i](Tensor&) {
        if (auto s = weak.lock())
          if (s->owner) s->owner->on_grad_ready(i);
      });
    }
  }

  FullyShardedDataParallel(const FullyShardedDataParallel&) = delete;
  FullyShardedDataParallel& operator=(const FullyShardedDataParallel&) = delete;
  ~FullyShardedDataParallel() override {
    if (state_) state_->owner = nullptr;
    auto& reg = detail::fsdp_registry();
    std::lock_guard<std::mutex> lock(reg.mu);
    for (const Tensor& p : params_) reg.managed.erase(p.impl());
    if (flat_param_.defined()) reg.managed.erase(flat_param_.impl());
  }

  /// Gathers the shards (SHARD_GRAD_OP), then runs the wrapped module. x: whatever the module
  /// takes. A collective: every rank calls it. Throws PyTorch DDP's "Expected to have finished
  /// reduction in the prior iteration ..." when the previous backward left a parameter without a
  /// gradient (its shard could not be reduced; the message names the parameters).
  Tensor forward(const Tensor& x) override {
    const bool training = GradMode::is_enabled();  // a NoGradGuard forward leaves a pending backward alone
    check_still_wrapped();
    if (training) check_prior_reduction_finished();
    gather_parameters();
    if (!training) return module_->forward(x);
    ready_count_ = 0;
    std::fill(ready_.begin(), ready_.end(), 0);
    prepare_gradients();
    Tensor out = module_->forward(x);
    armed_ = out.requires_grad();
    if (!armed_) release_gradients();
    return out;
  }

  /// PyTorch's FullyShardedDataParallel.clip_grad_norm_(max_norm) (2-norm): scales flat_param's
  /// gradient so that the norm of the whole model's gradient is at most max_norm, and returns that
  /// norm before clipping (a 0-d tensor of the parameters' dtype, as PyTorch's total_norm). A
  /// collective: under SHARD_GRAD_OP each rank holds a shard, and the squares are summed over the
  /// ranks (distributed/clip_grad.hpp); nn::utils::clip_grad_norm_ on fsdp->parameters() would
  /// clip each shard by its own norm.
  Tensor clip_grad_norm_(double max_norm) {
    const bool sharded = options_.sharding_strategy == ShardingStrategy::SHARD_GRAD_OP;
    const std::vector<Tensor> all{flat_param_};
    const std::vector<Tensor> counted = sharded || rank_ == 0 ? all : std::vector<Tensor>{};  // NO_SHARD: once
    return scalar_tensor(clip_grad_norm_across_(counted, all, max_norm, *group_), TensorOptions(flat_.dtype()));
  }

  /// Makes every parameter of the wrapped module hold the current values (the all_gather of
  /// forward): call it, on every rank, before reading module()'s parameters or saving its
  /// state_dict after an optimizer step (PyTorch: FSDP.summon_full_params). NO_SHARD: nothing to do.
  void summon_full_params() { gather_parameters(); }

  /// Training / evaluation mode of the wrapped module.
  void train(bool on = true) override {
    nn::Module::train(on);
    module_->train(on);
  }

  std::string name() const override { return "FullyShardedDataParallel"; }

  /// The wrapped module, whose parameters view the flat buffer (stale outside the shard of this
  /// rank between an optimizer step and the next forward or summon_full_params()).
  const std::shared_ptr<nn::Module>& module() const { return module_; }
  const FSDPOptions& options() const { return options_; }
  /// T, the parameters' elements; S, the elements of one shard (ceil(T / N)); the flat buffer
  /// holds N * S (padding at the end).
  int64_t numel() const { return numel_; }
  int64_t shard_numel() const { return shard_numel_; }
  int rank() const { return rank_; }
  int world_size() const { return world_; }
  /// The flat buffer of every parameter's values (N * S elements; the parameters view it).
  const Tensor& flat_buffer() const { return flat_; }

 private:
  struct HookState {
    FullyShardedDataParallel* owner = nullptr;
  };

  /// Every rank must pass the same sharding_strategy: else every rank throws naming two of them.
  void check_same_strategy(ProcessGroup& g) const {
    if (g.size() == 1) return;
    int64_t lo = static_cast<int64_t>(options_.sharding_strategy), hi = lo;
    g.all_reduce(&lo, 1, kInt64, ReduceOp::MIN, Completion::Blocking, "FullyShardedDataParallel options");
    g.all_reduce(&hi, 1, kInt64, ReduceOp::MAX, Completion::Blocking, "FullyShardedDataParallel options");
    detail::check(lo == hi, "FullyShardedDataParallel: FSDPOptions::sharding_strategy differs across ranks (",
                  sharding_strategy_name(static_cast<ShardingStrategy>(lo)), " and ",
                  sharding_strategy_name(static_cast<ShardingStrategy>(hi)), ")");
  }

  /// The all_gather of the shards, when the flat buffer changed since the last one (an optimizer
  /// step writes it on every rank): a second forward before the next step, or one under
  /// NoGradGuard between a forward and its backward, neither sends nor overwrites anything.
  void gather_parameters() {
    if (options_.sharding_strategy != ShardingStrategy::SHARD_GRAD_OP || world_ == 1) return;
    if (flat_._version() == gathered_version_) return;
    NoGradGuard no_grad;
    // all_gather's input may not alias its output: send a copy of this rank's shard
    const Tensor mine = flat_.narrow(0, rank_ * shard_numel_, shard_numel_).clone();
    group_->all_gather(flat_.raw_data(), mine.raw_data(), shard_numel_, flat_.dtype(), Completion::Blocking,
                       "FullyShardedDataParallel all_gather");
    autograd::increment_version(flat_);
    gathered_version_ = flat_._version();
  }

  /// The wrapped parameters still view the flat buffer and still train, and no other parameter
  /// started to: a model converted or moved after wrapping (module()->to(...)), or a requires_grad
  /// changed after it, would otherwise be trained wrongly or not at all.
  void check_still_wrapped() const {
    for (size_t i = 0; i < params_.size(); ++i) {
      const Tensor& p = params_[i];
      detail::check(p.impl()->storage == flat_.impl()->storage && p.dtype() == flat_.dtype(),
                    "FullyShardedDataParallel: parameter \"", names_[i], "\" no longer views the flat parameter (the "
                    "model was moved or converted after wrapping, e.g. module()->to(...)); convert it before wrapping");
      detail::check(p.requires_grad(), "FullyShardedDataParallel: parameter \"", names_[i], "\" no longer requires "
                    "grad; FSDP flattens the parameters that train when it is constructed: set requires_grad before");
    }
    size_t training = 0;
    std::unordered_set<const TensorImpl*> seen;
    for (const auto& [name, p] : module_->named_parameters())
      if (p.requires_grad() && seen.insert(p.impl()).second) ++training;
    detail::check(training == params_.size(), "FullyShardedDataParallel: the module has ", training,
                  " parameters that require grad, but ", params_.size(), " when it was wrapped: FSDP flattens the "
                  "parameters that train when it is constructed (set requires_grad before wrapping)");
  }

  void check_prior_reduction_finished() {
    if (!armed_ || ready_count_ == params_.size()) return;
    armed_ = false;
    if (ready_count_ == 0)
      detail::throw_error(detail::rank_prefix() +
                          "FullyShardedDataParallel: the previous forward (in grad mode) had no backward: FSDP reduces "
                          "the gradients once per forward, so run one backward per forward, and forwards that are not "
                          "followed by backward (evaluation, a loss printed) under NoGradGuard");
    std::string missing;
    for (size_t i = 0; i < params_.size(); ++i)
      if (!ready_[i]) missing += (missing.empty() ? "" : ", ") + names_[i];
    detail::throw_error(detail::rank_prefix() +
                        "FullyShardedDataParallel: Expected to have finished reduction in the prior iteration before "
                        "starting a new one. The previous backward did not produce gradients for these parameters: " +
                        missing + " (every parameter of the module must take part in computing the loss; FSDP "
                        "reduces a shard once all of its gradients are there)");
  }

  /// The unsharded gradient: one flat (N * S) buffer of zeros, each parameter's .grad a view of its
  /// slice, so that backward accumulates into it in place (AccumulateGrad adds into an existing
  /// .grad) and nothing is copied before the reduce-scatter (PyTorch's FlatParameter gradient).
  void prepare_gradients() {
    NoGradGuard no_grad;
    grad_flat_ = zeros({shard_numel_ * world_}, TensorOptions(flat_.dtype()));
    for (size_t i = 0; i < params_.size(); ++i)
      params_[i].set_grad(grad_flat_.narrow(0, offsets_[i], params_[i].numel()).view(params_[i].sizes()));
  }
  void release_gradients() {
    for (Tensor& p : params_) p.set_grad(Tensor());
    grad_flat_ = Tensor();
  }

  /// A parameter's gradient is final; once all are, the shard's gradient is reduced.
  void on_grad_ready(size_t i) {
    if (!armed_) return;  // a backward through a forward run under no_grad, or outside FSDP's forward
    detail::check(!ready_[i], "FullyShardedDataParallel: Expected to mark a variable ready only once (parameter \"",
                  names_[i], "\" got a gradient after its forward's had been reduced: a second backward through one "
                  "FSDP forward, or a backward through module()->forward, which skips FSDP; run one backward per "
                  "FSDP forward)");
    ready_[i] = 1;
    if (++ready_count_ == params_.size()) reduce_gradients();
  }

  /// The flat gradient (each parameter's g_i in its slice, 0 in the padding) divided by N, then
  /// reduce_scatter SUM (SHARD_GRAD_OP) or all_reduce SUM (NO_SHARD) into flat_param.grad (added
  /// to a gradient already there); the parameters' .grad and the flat buffer are freed.
  void reduce_gradients() {
    NoGradGuard no_grad;
    Tensor grads = grad_flat_;
    release_gradients();
    if (world_ > 1) grads.div_(static_cast<int64_t>(world_));  // as DDP's buckets: g / N, then the sum
    Tensor reduced;
    if (world_ == 1) {  // nothing to reduce (as DDP at world size 1: no communication)
      reduced = grads.narrow(0, 0, numel_);
    } else if (options_.sharding_strategy == ShardingStrategy::SHARD_GRAD_OP) {
      reduced = empty({shard_numel_}, TensorOptions(flat_.dtype()));
      group_->reduce_scatter(reduced.raw_data(), grads.raw_data(), shard_numel_, flat_.dtype(), ReduceOp::SUM,
                             Completion::Blocking, "FullyShardedDataParallel reduce_scatter");
    } else {
      group_->all_reduce(grads.raw_data(), grads.numel(), flat_.dtype(), ReduceOp::SUM, Completion::Blocking,
                         "FullyShardedDataParallel all_reduce");
      reduced = grads.narrow(0, 0, numel_);
    }
    grads = Tensor();
    Tensor old = flat_param_.grad();
    if (old.defined()) old.add_(reduced);
    else flat_param_.set_grad(reduced);  // NO_SHARD: a view of the (N * S) buffer, its padding included
  }

  std::shared_ptr<nn::Module> module_;
  FSDPOptions options_;
  std::shared_ptr<ProcessGroup> group_;
  int rank_ = 0, world_ = 1;
  std::vector<Tensor> params_;
  std::vector<std::string> names_;
  std::vector<int64_t> offsets_;
  int64_t numel_ = 0, shard_numel_ = 0;
  Tensor flat_, flat_param_;
  Tensor grad_flat_;  // the unsharded gradient during a backward (undefined between steps)
  int64_t gathered_version_ = -1;  // flat_'s version after the last all_gather
  std::vector<char> ready_;
  size_t ready_count_ = 0;
  bool armed_ = false;
  std::shared_ptr<HookState> state_;
};

}  TT_NAMESPACE_END  // namespace tinytorch::distributed

// tinytorch/distributed/fully_sharded_data_parallel.hpp — FullyShardedDataParallel (PyTorch's
// FSDP): the model's parameters in flat buffers, each rank owning a 1/N shard of each, gradients
// reduce-scattered so that each rank keeps the averaged gradient of its shard only, an optimizer
// that holds state for that shard only, and (FULL_SHARD, ZeRO stage 3) the full parameters in
// memory only while a unit's forward or backward needs them.
//
//   dist::FSDPOptions fo;                                              // FULL_SHARD, PyTorch's default
//   fo.auto_wrap_policy = dist::transformer_auto_wrap_policy<nn::Linear>();   // a unit per Linear
//   auto fsdp = std::make_shared<dist::FullyShardedDataParallel>(model, fo);
//   optim::Adam opt(fsdp->parameters(), lr);   // the flat parameters: this rank's shard of each unit
//   for (...) { opt.zero_grad(); loss_fn(fsdp->forward(x), y).backward(); opt.step(); }
//
// Units and flat parameters. At construction the ranks agree on the model and rank 0's values
// are broadcast (DDP's steps 0-2: model_agreement.hpp). auto_wrap_policy (PyTorch's callable,
// asked per submodule as torch.distributed.fsdp.wrap._recursive_wrap asks it; nullptr: the model
// is one unit) picks submodules that become units; a parameter belongs to the innermost unit
// around it, the root unit takes the rest. For each unit, the T elements of its parameters that
// train are laid end to end in one buffer `flat` of N * S elements, S = ceil(T / N) (zero padding
// at the end), and each parameter becomes a view of its slice (PyTorch's FlatParameter). Rank r's
// slice [r*S, (r+1)*S), a leaf tensor of shape (S), is the unit's `flat_param`, a parameter of
// the FSDP module ("flat_param" for the root, "<unit path>.flat_param" for the others), so the
// optimizer built on fsdp->parameters() keeps state for S elements per unit (PyTorch:
// use_orig_params=False). Each picked submodule is replaced in its parent by a wrapper (printed as
// FullyShardedDataParallel, the submodule its child "_fsdp_wrapped_module") whose forward
// gathers; the model must reach it through its children (nn::Sequential does): a forward through
// a member pointer skips the wrapper, an error at the end of the forward.
//
// One iteration, ShardingStrategy::FULL_SHARD (ZeRO-3). flat_param has its own memory; `flat`
// holds memory only while the unit's values are needed (Storage::resize_: 0 bytes, then N * S
// again; the parameters, and autograd's views of them saved in forward, keep viewing it):
//   forward   the root unit's all_gather, then the model; each unit's wrapper: all_gather into
//             its refilled `flat`, the submodule's forward, `flat` freed again (reshard after
//             forward; the root keeps its values for backward, as PyTorch's root does), and a hook
//             on the unit's output.
//   backward  the hook fires when the gradient of the unit's output arrives, before any of the
//             unit's backward ops: all_gather again (the version counter is not bumped, so the
//             saved views stay valid), and the parameters' .grad become zeroed views of one flat
//             (N * S) gradient, into which backward accumulates in place. When the unit's last
//             gradient has arrived (a hook per parameter, as DDP's Reducer) `flat` is freed, the
//             flat gradient divided by N and reduce_scatter (SUM) leaves on rank r the average of
//             its shard: flat_param.grad (added to a gradient already there), the rest freed.
//   step      the optimizer updates flat_param; nothing else holds parameter values.
// ShardingStrategy::SHARD_GRAD_OP (ZeRO-2): flat_param is a view of `flat`, which is never freed;
//   a unit's all_gather runs in its forward only when `flat` changed since the last one (its
//   version counter: an optimizer step), so a forward under NoGradGuard between a forward and
//   its backward sends nothing; backward and the reduce-scatter as above.
// ShardingStrategy::NO_SHARD (DDP's semantics): flat_param is the whole [0, T) of every unit on
//   every rank, the gradients are all-reduced instead, every rank steps every element; no gather.
//
// Memory per rank, P parameters of 4 bytes, Adam (chapter 13.7, 13.8):
//   FULL_SHARD     16P/N between steps (4P/N values, 4P/N flat_param.grad, 8P/N Adam, + padding);
//                  during a step also the root unit's values and the unit(s) gathered now, with
//                  their unsharded gradient: with a unit per layer, about two layers' worth
//   SHARD_GRAD_OP  4P + 4P/N + 8P/N = the paper's ZeRO-2, 4P + 12P/N; in backward each unit's full
//                  gradient exists until its reduce-scatter
//   NO_SHARD       4P + 4P + 8P, DDP's 16P without DDP's bucket copy
// Bytes sent per step (distributed::comm_counters), over all ranks: a reduce-scatter and an
//   all-gather of each unit's 4(N S) bytes, 2(N-1) x 4NS (DDP's 2(N-1) x 4P plus padding);
//   FULL_SHARD with units other than the root a second all-gather before their backward:
//   3(N-1) x 4NS, the paper's 1.5x of DDP.
//
// The numbers: rank r's shard gradient is sum_q g_q / N over the ranks' gradients, as DDP's
//   average (each term divided by N before the sum, as DDP's buckets); Adam on a flat shard is
//   Adam elementwise, so 20 steps equal DDP + Adam bit for bit on 2 ranks (a sum of two is the
//   same in any order) and within rounding on more (MPI's reduce-scatter may add in another
//   order than its all-reduce): tests/mpi/test_zero.cpp, [fsdp].
//
// Errors (tinytorch::Error, the same on every rank where the check is collective):
//   the model differs across ranks, or options differ (as DDP's messages), or auto_wrap_policy
//   makes different units on different ranks;
//   parameters of more than one dtype or device, none that requires grad, CUDA parameters (not
//   implemented: the collectives below take host pointers);
//   a parameter shared by two units (a shared parameter must lie in one unit);
//   a forward while the previous backward's gradients are incomplete (a parameter without one):
//   PyTorch DDP's "Expected to have finished reduction in the prior iteration" wording; a forward
//   after a grad-mode forward that had no backward at all (one backward per forward; evaluation
//   under NoGradGuard, as DDP asks too); a unit that did not run in a forward (reached through a
//   member pointer, or skipped); a unit called in grad mode outside the FSDP's forward; a flat
//   parameter changed between forward and backward (FULL_SHARD: an optimizer step before
//   backward would make the gradients those of other values);
//   a model wrapped twice, an FSDP inside the wrapped model (wrap once; auto_wrap_policy makes the
//   inner units), a parameter moved, converted, frozen or unfrozen after wrapping: errors naming
//   the parameter; a parameter read while FULL_SHARD has freed it: Tensor::data_ptr's error
//   (read it after summon_full_params()).
// clip_grad_norm_(max_norm): PyTorch's FSDP method; the norm is the whole model's (the shards'
//   squares summed over the ranks), where nn::utils::clip_grad_norm_ would see one shard.
// A parameter that some ranks use and others do not (a data-dependent branch) leaves those ranks
//   in the reduce-scatter and the others at the next forward's error: the watchdog's timeout
//   ends it (DDP without find_unused_parameters likewise; PyTorch's FSDP reduces zeros for it).
// full_state_dict(rank0_only) / load_full_state_dict(sd): PyTorch's FULL_STATE_DICT, the unwrapped
//   model's names and values (a file any FSDP, DDP or plain model of that architecture loads, on
//   any number of ranks).
// Not yet: the next unit's all_gather prefetched and the reduce-scatter overlapped with backward
//   on a communication thread (the collectives here block), sharded state dicts and the
//   optimizer's full state dict (PyTorch's full_optim_state_dict), CUDA parameters.
// no_sync(): PyTorch's gradient accumulation without communication (the unsharded gradients kept
//   until the next synchronised backward, which reduce-scatters their sum).
// Loss scaling (float16): amp::GradScaler checks the gradients of this rank's shard only, so an
//   inf in another rank's shard would make the ranks disagree on skipping a step; use
//   distributed::ShardedGradScaler (sharded_grad_scaler.hpp), whose check spans the ranks.
// An optimizer must be built on fsdp->parameters() after wrapping: one built on the model's own
//   parameters steps nothing (their gradients go to the flat parameters), with no error (as in
//   PyTorch with use_orig_params=False).
//
// Chapter: chapters/13-sharding.md (13.7, 13.8). Reference: torch.distributed.fsdp (PyTorch 1.13:
//   FullyShardedDataParallel, ShardingStrategy, FlatParameter, use_orig_params=False,
//   wrap.size_based_auto_wrap_policy / transformer_auto_wrap_policy); Zhao et al., "PyTorch FSDP:
//   Experiences on Scaling Fully Sharded Data Parallel" (VLDB 2023); Rajbhandari et al., "ZeRO"
//   (SC 2020), stages P_os+g and P_os+g+p.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
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

class FullyShardedDataParallel;

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
/// What the hooks and the unit wrappers reach the FSDP through (null once it is destroyed).
struct FsdpHookState {
  FullyShardedDataParallel* owner = nullptr;
};

/// What auto_wrap_policy puts in place of a submodule it wraps (PyTorch puts a nested
/// FullyShardedDataParallel there): forward gathers the unit's parameters, runs the submodule
/// (its child "_fsdp_wrapped_module", PyTorch's attribute name) and, under FULL_SHARD, frees them.
class FsdpUnitWrapper : public nn::Module {
 public:
  FsdpUnitWrapper(std::shared_ptr<nn::Module> inner, std::weak_ptr<FsdpHookState> state, size_t unit)
      : state_(std::move(state)), unit_(unit) {
    inner_ = register_module("_fsdp_wrapped_module", std::move(inner));
  }
  Tensor forward(const Tensor& x) override;  // defined after FullyShardedDataParallel
  std::string name() const override { return "FullyShardedDataParallel"; }
  const std::shared_ptr<nn::Module>& module() const { return inner_; }

 private:
  std::shared_ptr<nn::Module> inner_;
  std::weak_ptr<FsdpHookState> state_;
  size_t unit_;
};

/// Holds flat parameters under the path of their unit, so that fsdp.named_parameters() reads
/// "flat_param", "0.flat_param", "blocks.1.flat_param" (not a layer: it has no forward).
struct FsdpFlatParams : nn::Module {
  Tensor forward(const Tensor&) override {
    ::tinytorch::distributed::detail::throw_error("FullyShardedDataParallel: this module only names flat parameters; "
                                                  "call the FullyShardedDataParallel itself");
  }
  std::string name() const override { return "FlatParameters"; }
};
}  // namespace detail

/// What FSDP shards (torch.distributed.fsdp.ShardingStrategy).
enum class ShardingStrategy {
  FULL_SHARD,     ///< parameters, gradients and optimizer state (ZeRO-3)
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

/// PyTorch's auto_wrap_policy callable: asked with recurse = true whether to look inside `module`
/// for units, and with recurse = false whether to make `module` a unit, given the parameter
/// elements under it that no inner unit took (torch.distributed.fsdp.wrap._recursive_wrap).
using AutoWrapPolicy = std::function<bool(const nn::Module& module, bool recurse, int64_t nonwrapped_numel)>;

/// A submodule becomes a unit when at least min_num_params parameter elements under it are not in
/// an inner unit (torch.distributed.fsdp.wrap.size_based_auto_wrap_policy; PyTorch's default 1e8).
inline AutoWrapPolicy size_based_auto_wrap_policy(int64_t min_num_params = 100000000) {
  return [min_num_params](const nn::Module&, bool recurse, int64_t nonwrapped_numel) {
    return recurse || nonwrapped_numel >= min_num_params;
  };
}

/// Every submodule of one of the types Ms... becomes a unit (PyTorch's transformer_auto_wrap_policy
/// with transformer_layer_cls = {Ms...}; ModuleWrapPolicy in PyTorch 2).
///   fo.auto_wrap_policy = dist::transformer_auto_wrap_policy<nn::Linear>();
template <class... Ms>
AutoWrapPolicy transformer_auto_wrap_policy() {
  static_assert(sizeof...(Ms) > 0, "transformer_auto_wrap_policy: name at least one module type");
  return [](const nn::Module& m, bool recurse, int64_t) {
    return recurse || ((dynamic_cast<const Ms*>(&m) != nullptr) || ...);
  };
}

/// FullyShardedDataParallel's arguments (PyTorch's keyword arguments of the same names).
struct FSDPOptions {
  /// The ranks that shard the model; nullptr = the default group.
  std::shared_ptr<ProcessGroup> process_group = nullptr;
  /// PyTorch's default, FULL_SHARD (ZeRO-3).
  ShardingStrategy sharding_strategy = ShardingStrategy::FULL_SHARD;
  /// Which submodules become units with their own flat parameter (nullptr: one unit, the model).
  AutoWrapPolicy auto_wrap_policy = nullptr;
};

class FullyShardedDataParallel : public nn::Module {
 public:
  /// Wraps `module` (its parameters become views of flat buffers; see the file comment).
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

    // The same model everywhere (DDP's step 1).
    const auto named_params = module_->named_parameters();
    const auto named_buffers = module_->named_buffers();
    const char* who = "FullyShardedDataParallel: FSDP expects the same model across all ranks";
    detail::verify_across_ranks(g, named_params, "parameter", who);
    detail::verify_across_ranks(g, named_buffers, "buffer", who);

    // The units: the root (the whole model) and those auto_wrap_policy picks, inner ones first.
    std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> planned;
    std::string taken;
    if (options_.auto_wrap_policy) {
      try {
        plan_units(module_, "", true, planned);
      } catch (const std::exception& e) {
        taken = std::string("FullyShardedDataParallel: auto_wrap_policy threw: ") + e.what();
      }
    }
    detail::throw_if_any_rank(g, !taken.empty(), taken, "FullyShardedDataParallel");
    units_.resize(planned.size() + 1);
    for (size_t k = 0; k < planned.size(); ++k) {
      units_[k + 1].path = planned[k].first;
      units_[k + 1].module = planned[k].second;
    }
    units_[0].module = module_;

    // Each parameter that trains belongs to the innermost unit around it, once (a shared
    // parameter appears under two names, which must lie in one unit); none may belong to another
    // live FSDP (checked before anything is overwritten).
    std::unordered_map<const TensorImpl*, std::pair<size_t, std::string>> owner;  // unit, first name
    {
      auto& reg = detail::fsdp_registry();
      std::lock_guard<std::mutex> lock(reg.mu);
      for (const auto& [name, p] : named_params) {
        if (!p.requires_grad()) continue;
        const size_t k = unit_of(name);
        const auto [it, fresh] = owner.emplace(p.impl(), std::make_pair(k, name));
        if (!fresh) {
          if (taken.empty() && it->second.first != k)
            taken = "FullyShardedDataParallel: parameters \"" + it->second.second + "\" and \"" + name +
                    "\" are one tensor in two units (" + unit_name(it->second.first) + " and " + unit_name(k) +
                    "): a shared parameter must belong to one unit; let auto_wrap_policy wrap a module that holds "
                    "both uses";
          continue;
        }
        units_[k].params.push_back(p);
        units_[k].names.push_back(name);
        const auto r = reg.managed.find(p.impl());
        if (taken.empty() && r != reg.managed.end())
          taken = r->second ? "FullyShardedDataParallel: \"" + name + "\" is the flat parameter of another "
                              "FullyShardedDataParallel inside this module: wrap the model once, and let "
                              "FSDPOptions::auto_wrap_policy make the inner units"
                            : "FullyShardedDataParallel: parameter \"" + name + "\" already belongs to another "
                              "FullyShardedDataParallel (a model is wrapped once: its parameters view that "
                              "wrapper's flat buffer)";
      }
    }
    detail::throw_if_any_rank(g, !taken.empty(), taken, "FullyShardedDataParallel");
    detail::check(!owner.empty(), "FullyShardedDataParallel: the module has no parameter that requires a gradient");
    // A unit without a parameter that trains (all frozen, or all taken by inner units) is no unit.
    units_.erase(std::remove_if(units_.begin() + 1, units_.end(), [](const Unit& u) { return u.params.empty(); }),
                 units_.end());
    check_same_units(g);
    // Rank 0's values everywhere (DDP's step 2).
    detail::broadcast_from_rank0(g, named_params);
    detail::broadcast_from_rank0(g, named_buffers);
    const DType dtype = units_[0].params.empty() ? units_[1].params.front().dtype() : units_[0].params.front().dtype();
    for (const Unit& u : units_)
      for (size_t i = 0; i < u.params.size(); ++i) {
        detail::check(u.params[i].dtype() == dtype, "FullyShardedDataParallel: expects every parameter of one dtype "
                      "(one dtype of flat buffers), but \"", u.names[i], "\" is ", dtype_name(u.params[i].dtype()),
                      " and others ", dtype_name(dtype));
        detail::check(u.params[i].device().is_cpu(), "FullyShardedDataParallel: parameter \"", u.names[i], "\" is on ",
                      u.params[i].device().str(), "; CUDA parameters are not implemented yet (use DDP)");
      }

    state_ = std::make_shared<detail::FsdpHookState>();
    state_->owner = this;
    for (size_t k = 0; k < units_.size(); ++k) build_unit(k, dtype);
    // The planned submodules are replaced by their wrappers, inner ones first (so that an outer
    // unit's module already holds its inner wrappers).
    for (size_t k = 1; k < units_.size(); ++k) {
      const std::string& path = units_[k].path;
      const size_t dot = path.rfind('.');
      const std::shared_ptr<nn::Module> parent = dot == std::string::npos ? module_ : module_->get_submodule(path.substr(0, dot));
      parent->replace_module(dot == std::string::npos ? path : path.substr(dot + 1),
                             std::make_shared<detail::FsdpUnitWrapper>(units_[k].module, state_, k));
    }
    {
      auto& reg = detail::fsdp_registry();
      std::lock_guard<std::mutex> lock(reg.mu);
      for (const Unit& u : units_) {
        for (const Tensor& p : u.params) reg.managed[p.impl()] = false;
        if (u.flat_param.defined()) reg.managed[u.flat_param.impl()] = true;
      }
    }
  }

  FullyShardedDataParallel(const FullyShardedDataParallel&) = delete;
  FullyShardedDataParallel& operator=(const FullyShardedDataParallel&) = delete;
  ~FullyShardedDataParallel() override {
    if (state_) state_->owner = nullptr;
    auto& reg = detail::fsdp_registry();
    std::lock_guard<std::mutex> lock(reg.mu);
    for (const Unit& u : units_) {
      for (const Tensor& p : u.params) reg.managed.erase(p.impl());
      if (u.flat_param.defined()) reg.managed.erase(u.flat_param.impl());
    }
  }

  /// Gathers the root unit's parameters, then runs the wrapped module (whose units gather their
  /// own). x: whatever the module takes. A collective: every rank calls it. Throws PyTorch DDP's
  /// "Expected to have finished reduction in the prior iteration ..." when the previous backward
  /// left a parameter without a gradient (its shard could not be reduced; the message names them).
  Tensor forward(const Tensor& x) override {
    const bool training = GradMode::is_enabled();  // a NoGradGuard forward leaves a pending backward alone
    check_still_wrapped();
    if (training) {
      check_prior_reduction_finished();
      armed_ = finished_ = false;  // until this forward returns (one that throws arms nothing)
      sync_ = require_backward_grad_sync_;  // as DDP: what no_sync says at forward time
      summoned_ = false;
      for (Unit& u : units_) {
        u.ready_count = 0;
        std::fill(u.ready.begin(), u.ready.end(), 0);
        u.forwards = 0;
        u.backward_prepared = false;
      }
    }
    Unit& root = units_[0];
    gather(root);
    if (training && !root.params.empty()) root.forward_version = root.flat_param._version();
    in_forward_ = true;
    Tensor out;
    try {
      out = module_->forward(x);
    } catch (...) {
      in_forward_ = false;
      throw;
    }
    in_forward_ = false;
    if (!training) {
      if ((!armed_ || finished_) && !summoned_) reshard(root);  // FULL_SHARD (evaluation): nothing kept between steps
      return out;
    }
    for (size_t k = 1; k < units_.size(); ++k)
      detail::check(units_[k].params.empty() || units_[k].forwards > 0, "FullyShardedDataParallel: the unit \"",
                    units_[k].path, "\" (auto_wrap_policy) did not run in this forward: a forward that calls the "
                    "submodule through a member pointer skips its wrapper (wrap modules that the model reaches "
                    "through its children, as nn::Sequential does), and every unit must take part in every forward");
    armed_ = out.requires_grad();
    if (armed_ && !root.params.empty()) register_pre_backward(out, 0);
    if (!armed_) reshard(root);
    return out;
  }

  /// PyTorch's FullyShardedDataParallel.clip_grad_norm_(max_norm) (2-norm): scales the flat
  /// parameters' gradients so that the norm of the whole model's gradient is at most max_norm,
  /// and returns that norm before clipping (a 0-d tensor of the parameters' dtype, as PyTorch's
  /// total_norm). A collective: when sharded each rank holds a shard, and the squares are summed
  /// over the ranks (distributed/clip_grad.hpp); nn::utils::clip_grad_norm_ on fsdp->parameters()
  /// would clip each shard by its own norm.
  Tensor clip_grad_norm_(double max_norm) {
    const bool sharded = options_.sharding_strategy != ShardingStrategy::NO_SHARD;
    const std::vector<Tensor> all = parameters();
    const std::vector<Tensor> counted = sharded || rank_ == 0 ? all : std::vector<Tensor>{};  // NO_SHARD: once
    return scalar_tensor(clip_grad_norm_across_(counted, all, max_norm, *group_), TensorOptions(dtype_));
  }

  /// RAII guard returned by no_sync(): gradient reduction off until destroyed (DDP's).
  using NoSyncGuard = detail::NoSyncGuard;

  /// Gradient accumulation without communication (PyTorch's `with fsdp.no_sync():`): the
  /// backwards of forwards made while the guard lives keep each unit's gradient unsharded (the
  /// flat gradient of N * S elements, the parameters' .grad its views) and add to it; the first
  /// forward+backward afterwards reduce-scatters the sum, as DDP's no_sync all-reduces it (bit
  /// for bit DDP's numbers on 2 ranks). The parameters are still freed and gathered as usual;
  /// the unsharded gradients stay until that reduction: a model-sized 4P more per rank, as
  /// PyTorch's documentation warns. The forward must be inside the guard.
  ///   { auto guard = fsdp.no_sync(); loss_fn(fsdp.forward(x1), y1).backward(); }   // local
  ///   loss_fn(fsdp.forward(x2), y2).backward();                                     // reduces g1 + g2
  NoSyncGuard no_sync() { return NoSyncGuard(require_backward_grad_sync_); }

  /// Makes every parameter of the wrapped module hold the current values (the all_gathers of
  /// forward): call it, on every rank, before reading module()'s parameters or saving its
  /// state_dict after an optimizer step (PyTorch: FSDP.summon_full_params, a context manager).
  /// Under FULL_SHARD the gathered values then stay until the next forward in grad mode: forwards
  /// under NoGradGuard (evaluation, through the FSDP or through module() directly) use them, with
  /// no collective, so the ranks may evaluate different numbers of batches. Writes to them
  /// (module()->load_state_dict, an in-place op) are kept: each rank copies its slice back into
  /// its shard before the values are freed or gathered again (PyTorch's writeback=True), so every
  /// rank must make the same write. Destroying the FSDP under FULL_SHARD leaves the model's
  /// parameters freed: summon_full_params() first to keep using the model afterwards.
  void summon_full_params() {
    for (Unit& u : units_) gather(u);
    summoned_ = true;
  }

  /// The whole model's state dict with the unwrapped model's names ("0.weight", not
  /// "0._fsdp_wrapped_module.weight"), each value a copy: PyTorch's fsdp.state_dict() under
  /// StateDictType.FULL_STATE_DICT with FullStateDictConfig(rank0_only). A collective (the
  /// all_gathers of summon_full_params); with rank0_only the other ranks get an empty list and
  /// keep no copy. What tinytorch::save writes (safetensors) and what DDP's module()->state_dict()
  /// or a plain model's gives for the same values: load it into any of them, or into an FSDP on
  /// any number of ranks (load_full_state_dict).
  std::vector<std::pair<std::string, Tensor>> full_state_dict(bool rank0_only = true) {
    summon_full_params();
    std::vector<std::pair<std::string, Tensor>> out;
    if (rank0_only && rank_ != 0) return out;
    NoGradGuard no_grad;
    for (const auto& [name, t] : module_->state_dict()) out.emplace_back(clean_name(name), t.detach().clone());
    return out;
  }

  /// Loads a full state dict (full_state_dict's names and shapes, e.g. tinytorch::load of a file
  /// any FSDP, DDP or plain model wrote) into the wrapped model and every rank's shards. A
  /// collective: every rank passes a dict of the same keys and shapes, and rank 0's values are
  /// the ones loaded (broadcast, as at construction). Throws on every rank, as nn::Module's
  /// load_state_dict (PyTorch's wording), for a missing or unexpected key or a shape mismatch, and
  /// for a key given twice or an undefined tensor, naming the key; nothing is loaded then.
  void load_full_state_dict(const std::vector<std::pair<std::string, Tensor>>& sd) {
    const auto mine = module_->state_dict();
    std::vector<std::pair<std::string, Tensor>> renamed;
    std::unordered_set<std::string> known;
    std::string err;
    for (const auto& [name, t] : mine) {
      const std::string key = clean_name(name);
      known.insert(key);
      const Tensor* src = nullptr;
      for (const auto& e : sd)
        if (e.first == key) src = &e.second;
      if (!err.empty()) continue;
      if (!src) err = "Missing key(s) in state_dict: \"" + key + "\"";
      else if (!src->defined()) err = "the value of \"" + key + "\" is an undefined tensor";
      else if (src->sizes() != t.sizes())
        err = "size mismatch for " + key + ": copying a param with shape " + shape_str(src->sizes()) +
              ", the shape in current model is " + shape_str(t.sizes());
      else renamed.emplace_back(name, *src);
    }
    std::unordered_set<std::string> seen;
    for (const auto& e : sd) {
      if (!err.empty()) break;
      if (!known.count(e.first)) err = "Unexpected key(s) in state_dict: \"" + e.first + "\"";
      else if (!seen.insert(e.first).second) err = "the key \"" + e.first + "\" appears twice";
      else if (!e.second.defined()) err = "the value of \"" + e.first + "\" is an undefined tensor";
    }
    detail::throw_if_any_rank(*group_, !err.empty(), "FullyShardedDataParallel.load_full_state_dict: " + err,
                              "FullyShardedDataParallel load_full_state_dict");
    summon_full_params();  // FULL_SHARD: the parameters' storage present
    module_->load_state_dict(renamed);
    detail::broadcast_from_rank0(*group_, module_->state_dict());  // rank 0's values, should the dicts differ
    for (Unit& u : units_) write_back(u);  // FULL_SHARD: the shards take their slices of the loaded values
  }

  /// Training / evaluation mode of the wrapped module.
  void train(bool on = true) override {
    nn::Module::train(on);
    module_->train(on);
  }

  std::string name() const override { return "FullyShardedDataParallel"; }

  /// The wrapped module (auto_wrap_policy's units replaced by wrappers), whose parameters view the
  /// flat buffers: stale outside this rank's shard between an optimizer step and the next forward
  /// or summon_full_params(); under FULL_SHARD freed outside forward and backward.
  const std::shared_ptr<nn::Module>& module() const { return module_; }
  const FSDPOptions& options() const { return options_; }
  /// T, the parameters' elements; S, the elements of this rank's shards (sum over the units of
  /// ceil(T_u / N)); the flat buffers hold N * S (padding at each unit's end).
  int64_t numel() const {
    int64_t t = 0;
    for (const Unit& u : units_) t += u.numel;
    return t;
  }
  int64_t shard_numel() const {
    int64_t s = 0;
    for (const Unit& u : units_) s += u.shard_numel;
    return s;
  }
  int rank() const { return rank_; }
  int world_size() const { return world_; }
  /// The units' paths in the wrapped module, the root's ("") first, then auto_wrap_policy's in the
  /// order they were wrapped (inner before outer). A submodule the policy picks whose parameters
  /// are all frozen or all in inner units is not a unit (nothing to flatten); the root is listed
  /// even when it has no parameter of its own (then it has no flat parameter).
  std::vector<std::string> unit_paths() const {
    std::vector<std::string> out;
    for (const Unit& u : units_) out.push_back(u.path);
    return out;
  }
  /// The flat buffer of the root unit's values (N * S elements; its parameters view it).
  const Tensor& flat_buffer() const { return units_[0].flat; }

 private:
  friend class detail::FsdpUnitWrapper;

  /// One flat parameter: the parameters of one unit laid end to end.
  struct Unit {
    std::string path;                    // "" for the root
    std::shared_ptr<nn::Module> module;  // the module it wraps (the root: module_)
    std::vector<Tensor> params;
    std::vector<std::string> names;
    std::vector<int64_t> offsets;
    int64_t numel = 0, shard_numel = 0;
    Tensor flat;        // N * S values; the parameters view it (FULL_SHARD: 0 bytes while freed)
    Tensor flat_param;  // this rank's shard, the parameter the optimizer steps
    Tensor grad_flat;   // the unsharded gradient during a backward
    int64_t gathered_version = -1;  // flat_param's (FULL_SHARD) or flat's version at the last gather
    int64_t flat_version = -1;      // FULL_SHARD: flat's version after the last gather (a write since: write_back)
    bool gathered = false;          // FULL_SHARD: flat holds memory and values
    std::vector<char> ready;
    size_t ready_count = 0;
    int forwards = 0;               // training forwards through the unit since the root's began
    int64_t forward_version = -1;   // flat_param's version when the last training forward gathered
    bool backward_prepared = false;
  };

  /// PyTorch's _recursive_wrap: the numel of the parameters under `m` that units took.
  int64_t plan_units(const std::shared_ptr<nn::Module>& m, const std::string& path, bool root,
                     std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>>& out) const {
    int64_t total = 0;
    std::unordered_set<const TensorImpl*> seen;
    for (const Tensor& p : m->parameters())
      if (seen.insert(p.impl()).second) total += p.numel();
    if (!options_.auto_wrap_policy(*m, true, total)) return 0;
    int64_t wrapped = 0;
    for (const auto& [name, child] : m->named_children())
      wrapped += plan_units(child, path.empty() ? name : path + "." + name, false, out);
    if (!root && options_.auto_wrap_policy(*m, false, total - wrapped)) {
      out.emplace_back(path, m);
      return total;
    }
    return wrapped;
  }

  /// The innermost unit whose path prefixes the parameter's name (0: the root).
  size_t unit_of(const std::string& name) const {
    size_t best = 0, best_len = 0;
    for (size_t k = 1; k < units_.size(); ++k) {
      const std::string& p = units_[k].path;
      if (p.size() + 1 > best_len && name.size() > p.size() && name.compare(0, p.size(), p) == 0 &&
          name[p.size()] == '.') {
        best = k;
        best_len = p.size() + 1;
      }
    }
    return best;
  }
  /// A name in the wrapped module without the wrappers' "_fsdp_wrapped_module." (PyTorch's
  /// clean_tensor_name): the unwrapped model's name.
  static std::string clean_name(std::string name) {
    static const std::string kInfix = "_fsdp_wrapped_module.";
    for (size_t at = name.find(kInfix); at != std::string::npos; at = name.find(kInfix, at)) name.erase(at, kInfix.size());
    return name;
  }
  std::string unit_name(size_t k) const { return k == 0 ? "the root" : "\"" + units_[k].path + "\""; }

  /// The flat buffer of unit k; its parameters rebound to view it; its flat parameter registered.
  void build_unit(size_t k, DType dtype) {
    Unit& u = units_[k];
    if (u.params.empty()) return;
    int64_t total = 0;
    for (const Tensor& p : u.params) {
      u.offsets.push_back(total);
      total += p.numel();
    }
    u.numel = total;
    u.shard_numel = (total + world_ - 1) / world_;
    NoGradGuard no_grad;
    u.flat = zeros({u.shard_numel * world_}, TensorOptions(dtype));
    for (size_t i = 0; i < u.params.size(); ++i) {
      const int64_t n = u.params[i].numel();
      u.flat.narrow(0, u.offsets[i], n).copy_(u.params[i].reshape({n}));
      TensorImpl* impl = u.params[i].impl();
      impl->storage = u.flat.impl()->storage;
      impl->offset = u.offsets[i];
      impl->strides = contiguous_strides(impl->shape);
    }
    // This rank's shard, the parameter the optimizer sees: a view of flat (SHARD_GRAD_OP), its own
    // memory (FULL_SHARD: flat is freed), every element (NO_SHARD).
    Tensor shard;
    switch (options_.sharding_strategy) {
      case ShardingStrategy::SHARD_GRAD_OP: shard = u.flat.narrow(0, rank_ * u.shard_numel, u.shard_numel); break;
      case ShardingStrategy::FULL_SHARD: shard = u.flat.narrow(0, rank_ * u.shard_numel, u.shard_numel).clone(); break;
      case ShardingStrategy::NO_SHARD: shard = u.flat.narrow(0, 0, u.numel); break;
    }
    dtype_ = dtype;
    nn::Module* holder = this;  // "flat_param" under the unit's path
    std::string rest = u.path;
    while (!rest.empty()) {
      const size_t dot = rest.find('.');
      const std::string seg = rest.substr(0, dot);
      rest = dot == std::string::npos ? "" : rest.substr(dot + 1);
      nn::Module* next = nullptr;
      for (const auto& [name, child] : holder->named_children())
        if (name == seg) next = child.get();
      if (!next) next = holder->register_module(seg, std::make_shared<detail::FsdpFlatParams>()).get();
      holder = next;
    }
    u.flat_param = holder->register_parameter("flat_param", shard, true);
    u.gathered = true;
    u.gathered_version = options_.sharding_strategy == ShardingStrategy::FULL_SHARD ? u.flat_param._version()
                                                                                     : u.flat._version();
    reshard(u);  // FULL_SHARD: 16P/N at rest
    u.ready.assign(u.params.size(), 0);
    std::weak_ptr<detail::FsdpHookState> weak = state_;
    for (size_t i = 0; i < u.params.size(); ++i)
      u.params[i].register_post_accumulate_grad_hook([weak, k, i](Tensor&) {
        if (auto s = weak.lock())
          if (s->owner) s->owner->on_grad_ready(k, i);
      });
  }

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

  /// Every rank must have made the same units (an auto_wrap_policy that depends on the rank would
  /// pair one rank's all_gather with another's of a different size).
  void check_same_units(ProcessGroup& g) const {
    if (g.size() == 1) return;
    std::vector<int64_t> mine{static_cast<int64_t>(units_.size())};
    for (const Unit& u : units_) {
      int64_t n = 0;
      for (const Tensor& p : u.params) n += p.numel();
      mine.push_back(n);
      uint64_t h = 1469598103934665603ull;  // FNV-1a of the path: units of equal sizes in other places differ
      for (const char c : u.path) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
      mine.push_back(static_cast<int64_t>(h >> 2));
    }
    int64_t count[2] = {mine[0], -mine[0]};
    g.all_reduce(count, 2, kInt64, ReduceOp::MIN, Completion::Blocking, "FullyShardedDataParallel units");
    bool same = count[0] == -count[1];
    if (same) {
      std::vector<int64_t> lo = mine, hi = mine;
      for (int64_t& v : hi) v = -v;
      g.all_reduce(lo.data(), static_cast<int64_t>(lo.size()), kInt64, ReduceOp::MIN, Completion::Blocking,
                   "FullyShardedDataParallel units");
      g.all_reduce(hi.data(), static_cast<int64_t>(hi.size()), kInt64, ReduceOp::MIN, Completion::Blocking,
                   "FullyShardedDataParallel units");
      for (size_t i = 0; i < lo.size(); ++i) same = same && lo[i] == -hi[i];
    }
    detail::check(same, "FullyShardedDataParallel: auto_wrap_policy made different units across ranks (this rank: ",
                  units_.size(), " units); the policy must decide the same on every rank");
  }

  /// The unit's values into its flat buffer, when they are not there yet:
  ///   SHARD_GRAD_OP  all_gather of the shards when flat changed since the last one (an optimizer
  ///                  step writes every rank's shard), so a second forward before the next step,
  ///                  or an evaluation between a forward and its backward, sends nothing;
  ///   FULL_SHARD     the freed storage refilled (resize_) and the shards all-gathered into it,
  ///                  unless they are there and flat_param is unchanged since; the version counter
  ///                  is not bumped, so autograd's views saved in forward stay valid for backward;
  ///   NO_SHARD       nothing (every rank steps every element).
  void gather(Unit& u) {
    if (u.params.empty()) return;
    NoGradGuard no_grad;
    const int64_t bytes = u.shard_numel * static_cast<int64_t>(element_size(u.flat.dtype()));
    if (options_.sharding_strategy == ShardingStrategy::SHARD_GRAD_OP) {
      if (world_ == 1 || u.flat._version() == u.gathered_version) return;
      // all_gather's input may not alias its output: send a copy of this rank's shard
      const Tensor mine = u.flat.narrow(0, rank_ * u.shard_numel, u.shard_numel).clone();
      group_->all_gather(u.flat.raw_data(), mine.raw_data(), u.shard_numel, u.flat.dtype(), Completion::Blocking,
                         "FullyShardedDataParallel all_gather");
      autograd::increment_version(u.flat);
      u.gathered_version = u.flat._version();
    } else if (options_.sharding_strategy == ShardingStrategy::FULL_SHARD) {
      write_back(u);
      if (u.gathered && u.flat_param._version() == u.gathered_version) return;
      u.flat.impl()->storage->resize_(static_cast<size_t>(bytes * world_));
      if (world_ == 1)
        std::memcpy(u.flat.raw_data(), u.flat_param.raw_data(), static_cast<size_t>(bytes));
      else
        group_->all_gather(u.flat.raw_data(), u.flat_param.raw_data(), u.shard_numel, u.flat.dtype(),
                           Completion::Blocking, "FullyShardedDataParallel all_gather");
      u.gathered = true;
      u.gathered_version = u.flat_param._version();
      u.flat_version = u.flat._version();
    }
  }
  /// FULL_SHARD: a write to the gathered parameters (through module()'s parameters after
  /// summon_full_params(): load_state_dict, an in-place op) bumped `flat`'s version; this rank's
  /// slice of it is copied into flat_param before the values are freed or gathered again, as
  /// PyTorch's summon_full_params(writeback=True). Only the slice this rank owns is kept: every
  /// rank must make the same write (other slices come from their owners).
  void write_back(Unit& u) {
    if (!u.gathered || u.flat._version() == u.flat_version) return;
    NoGradGuard no_grad;
    u.flat_param.copy_(u.flat.narrow(0, rank_ * u.shard_numel, u.shard_numel));
    u.flat_version = u.flat._version();
  }
  /// FULL_SHARD: frees the unit's gathered values (PyTorch's _free_storage: resize_(0)); the
  /// parameters keep viewing the storage, and autograd's saved views see it again after gather.
  void reshard(Unit& u) {
    if (options_.sharding_strategy != ShardingStrategy::FULL_SHARD || u.params.empty() || !u.gathered) return;
    write_back(u);
    u.flat.impl()->storage->resize_(0);
    u.gathered = false;
  }

  /// The forward of auto_wrap_policy's unit k (through its wrapper): gather, run, and under
  /// FULL_SHARD free again (reshard after forward); in grad mode a hook on the output gathers once
  /// more when backward reaches the unit.
  Tensor unit_forward(size_t k, const Tensor& x) {
    Unit& u = units_[k];
    const bool training = GradMode::is_enabled();
    detail::check(!training || in_forward_, "FullyShardedDataParallel: the unit \"", u.path, "\" was called outside "
                  "the forward of the FullyShardedDataParallel that wraps it; in grad mode call that (its gradients "
                  "are reduced only then), or evaluate under NoGradGuard");
    gather(u);
    if (training) u.forward_version = u.flat_param._version();
    Tensor out = u.module->forward(x);
    if (!summoned_) reshard(u);
    if (training) {
      ++u.forwards;
      if (out.requires_grad()) register_pre_backward(out, k);
    }
    return out;
  }

  /// When the gradient of a unit's output arrives, its backward is about to begin (PyTorch's
  /// pre-backward hook): gather the unit again and give its parameters zeroed views of one flat
  /// gradient as .grad, into which backward accumulates in place.
  void register_pre_backward(const Tensor& out, size_t k) {
    std::weak_ptr<detail::FsdpHookState> weak = state_;
    out.register_hook([weak, k](const Tensor&) {
      if (auto s = weak.lock())
        if (s->owner) s->owner->pre_backward(k);
      return Tensor();
    });
  }
  void pre_backward(size_t k) {
    if (!armed_) return;
    Unit& u = units_[k];
    detail::check(!finished_, "FullyShardedDataParallel: a second backward through one forward (", unit_name(k),
                  " had its gradients reduced, and under FULL_SHARD its parameters freed, after the first): run one "
                  "backward per FSDP forward (retain_graph is not supported)");
    if (u.backward_prepared) return;
    if (options_.sharding_strategy == ShardingStrategy::FULL_SHARD)
      detail::check(u.flat_param._version() == u.forward_version,
                    "FullyShardedDataParallel: the flat parameter of ", unit_name(k),
                    " changed between forward and backward (an optimizer step before backward?): the gradients "
                    "would be of other values than the forward used");
    gather(u);
    NoGradGuard no_grad;
    if (!u.grad_flat.defined()) {  // else: a no_sync backward's unreduced sum, added to in place
      u.grad_flat = zeros({u.shard_numel * world_}, TensorOptions(u.flat.dtype()));
      for (size_t i = 0; i < u.params.size(); ++i)
        u.params[i].set_grad(u.grad_flat.narrow(0, u.offsets[i], u.params[i].numel()).view(u.params[i].sizes()));
    }
    u.backward_prepared = true;
  }

  /// The wrapped parameters still view the flat buffers and still train, and no other parameter
  /// started to: a model converted or moved after wrapping (module()->to(...)), or a requires_grad
  /// changed after it, would otherwise be trained wrongly or not at all.
  void check_still_wrapped() const {
    size_t count = 0;
    for (const Unit& u : units_) {
      count += u.params.size();
      if (!u.params.empty())
        detail::check(u.flat_param.dtype() == u.flat.dtype() && u.flat_param.device().is_cpu() &&
                          (options_.sharding_strategy == ShardingStrategy::FULL_SHARD ||
                           u.flat_param.impl()->storage == u.flat.impl()->storage),
                      "FullyShardedDataParallel: the flat parameter of ", unit_name(static_cast<size_t>(&u - units_.data())), " was converted "
                      "or moved after wrapping (e.g. fsdp.to(...)); convert or move the model before wrapping it");
      for (size_t i = 0; i < u.params.size(); ++i) {
        const Tensor& p = u.params[i];
        detail::check(p.impl()->storage == u.flat.impl()->storage && p.dtype() == u.flat.dtype(),
                      "FullyShardedDataParallel: parameter \"", u.names[i], "\" no longer views the flat parameter "
                      "(the model was moved or converted after wrapping, e.g. module()->to(...)); convert it before "
                      "wrapping");
        detail::check(p.requires_grad(), "FullyShardedDataParallel: parameter \"", u.names[i], "\" no longer "
                      "requires grad; FSDP flattens the parameters that train when it is constructed: set "
                      "requires_grad before");
      }
    }
    size_t training = 0;
    std::unordered_set<const TensorImpl*> seen;
    for (const auto& [name, p] : module_->named_parameters())
      if (p.requires_grad() && seen.insert(p.impl()).second) ++training;
    detail::check(training == count, "FullyShardedDataParallel: the module has ", training,
                  " parameters that require grad, but ", count, " when it was wrapped: FSDP flattens the "
                  "parameters that train when it is constructed (set requires_grad before wrapping)");
  }

  void check_prior_reduction_finished() {
    if (!armed_ || finished_) return;
    std::string missing;
    bool any = false;
    for (const Unit& u : units_) {
      any = any || u.ready_count > 0;
      for (size_t i = 0; i < u.params.size(); ++i)
        if (!u.ready[i]) missing += (missing.empty() ? "" : ", ") + u.names[i];
    }
    if (missing.empty()) return;
    armed_ = false;
    for (Unit& u : units_) {  // what the unfinished backward left (and a no_sync sum with it)
      for (Tensor& p : u.params) p.set_grad(Tensor());
      u.grad_flat = Tensor();
    }
    if (!any)
      detail::throw_error(detail::rank_prefix() +
                          "FullyShardedDataParallel: the previous forward (in grad mode) had no backward: FSDP reduces "
                          "the gradients once per forward, so run one backward per forward, and forwards that are not "
                          "followed by backward (evaluation, a loss printed) under NoGradGuard");
    detail::throw_error(detail::rank_prefix() +
                        "FullyShardedDataParallel: Expected to have finished reduction in the prior iteration before "
                        "starting a new one. The previous backward did not produce gradients for these parameters: " +
                        missing + " (every parameter of the module must take part in computing the loss; FSDP "
                        "reduces a shard once all of its gradients are there)");
  }

  /// Parameter i of unit k has its final gradient; once all of the unit's have, it is reduced.
  void on_grad_ready(size_t k, size_t i) {
    if (!armed_) return;  // a backward through a forward run under no_grad, or outside FSDP's forward
    Unit& u = units_[k];
    detail::check(!u.ready[i], "FullyShardedDataParallel: Expected to mark a variable ready only once (parameter \"",
                  u.names[i], "\" got a gradient after its forward's had been reduced: a second backward through one "
                  "FSDP forward, or a backward through module()->forward, which skips FSDP; run one backward per "
                  "FSDP forward)");
    detail::check(u.backward_prepared, "FullyShardedDataParallel: parameter \"", u.names[i], "\" got a gradient "
                  "before backward reached its unit's output (", unit_name(k), "): it is used outside that unit's "
                  "forward");
    u.ready[i] = 1;
    if (++u.ready_count == u.params.size()) {
      if (sync_) reduce_gradients(u);
      else reshard(u);  // no_sync: the unsharded gradient stays for the next backward
      bool all = true;
      for (const Unit& v : units_) all = all && v.ready_count == v.params.size();
      finished_ = all;
    }
  }

  /// The unit's flat gradient (each parameter's g_i in its slice, 0 in the padding) divided by N,
  /// then reduce_scatter SUM (FULL_SHARD, SHARD_GRAD_OP) or all_reduce SUM (NO_SHARD) into
  /// flat_param.grad (added to a gradient already there); the parameters' .grad and the flat
  /// gradient are freed, and under FULL_SHARD the gathered values too (reshard after backward).
  void reduce_gradients(Unit& u) {
    NoGradGuard no_grad;
    Tensor grads = u.grad_flat;
    for (Tensor& p : u.params) p.set_grad(Tensor());
    u.grad_flat = Tensor();
    reshard(u);
    if (world_ > 1) grads.div_(static_cast<int64_t>(world_));  // as DDP's buckets: g / N, then the sum
    Tensor reduced;
    if (world_ == 1) {  // nothing to reduce (as DDP at world size 1: no communication)
      reduced = grads.narrow(0, 0, u.flat_param.numel());
    } else if (options_.sharding_strategy != ShardingStrategy::NO_SHARD) {
      reduced = empty({u.shard_numel}, TensorOptions(u.flat.dtype()));
      group_->reduce_scatter(reduced.raw_data(), grads.raw_data(), u.shard_numel, u.flat.dtype(), ReduceOp::SUM,
                             Completion::Blocking, "FullyShardedDataParallel reduce_scatter");
    } else {
      group_->all_reduce(grads.raw_data(), grads.numel(), u.flat.dtype(), ReduceOp::SUM, Completion::Blocking,
                         "FullyShardedDataParallel all_reduce");
      reduced = grads.narrow(0, 0, u.numel);
    }
    grads = Tensor();
    Tensor old = u.flat_param.grad();
    if (old.defined()) old.add_(reduced);
    else u.flat_param.set_grad(reduced);  // a view of the (N * S) buffer at world size 1 and under NO_SHARD
  }

  std::shared_ptr<nn::Module> module_;
  FSDPOptions options_;
  std::shared_ptr<ProcessGroup> group_;
  int rank_ = 0, world_ = 1;
  DType dtype_ = kFloat32;
  std::vector<Unit> units_;  // units_[0]: the root's (the parameters no auto-wrapped unit took)
  bool armed_ = false;       // a grad-mode forward ran: its backward reduces (or has reduced) the gradients
  bool finished_ = false;    // ... and every unit's gradient has been reduced
  bool in_forward_ = false;  // inside the root's forward (the units may run in grad mode)
  bool summoned_ = false;    // summon_full_params() since the last grad-mode forward: keep gathered
  bool require_backward_grad_sync_ = true;  // false inside no_sync()
  bool sync_ = true;                        // the last grad-mode forward's require_backward_grad_sync_
  std::shared_ptr<detail::FsdpHookState> state_;
};

namespace detail {
inline Tensor FsdpUnitWrapper::forward(const Tensor& x) {
  const auto s = state_.lock();
  check(s && s->owner, "FullyShardedDataParallel: the FSDP that wrapped this module (a unit of its auto_wrap_policy) "
        "was destroyed; its parameters view that FSDP's flat buffers");
  return s->owner->unit_forward(unit_, x);
}
}  // namespace detail

}  TT_NAMESPACE_END  // namespace tinytorch::distributed

// tinytorch/distributed/fully_sharded_data_parallel.hpp — FullyShardedDataParallel (PyTorch's
// FSDP with use_orig_params=False): ZeRO stages 2 and 3 in one wrapper.
//
//   dist::FSDPOptions fo;                                              // FULL_SHARD, PyTorch's default
//   fo.auto_wrap_policy = dist::transformer_auto_wrap_policy<nn::Linear>();   // a unit per Linear
//   auto fsdp = std::make_shared<dist::FullyShardedDataParallel>(model, fo);
//   optim::Adam opt(fsdp->parameters(), lr);   // the flat parameters: this rank's shard of each unit
//   for (...) { opt.zero_grad(); loss_fn(fsdp->forward(x), y).backward(); opt.step(); }
//
// Each unit (auto_wrap_policy picks them; the root takes the rest) lays its T trainable elements
// end to end in one buffer `flat` of N*S elements, S = ceil(T/N); each parameter becomes a view of
// its slice, and rank r's slice [r*S, (r+1)*S) is the unit's flat_param, the parameter the
// optimizer sees. One iteration:
//   forward   each unit's shards all-gathered into `flat` (FULL_SHARD: refilled, freed after);
//   backward  gathered again before the unit's backward (FULL_SHARD); the gradients accumulate in
//             one flat gradient, which, when the unit's last one has arrived, is divided by N and
//             reduce-scattered: rank r keeps the average of its shard as flat_param.grad;
//   step      the optimizer updates flat_param.
// The collectives run on a communication thread (comm_thread.hpp), started early as
// backward_prefetch / forward_prefetch say; the numbers never depend on when.
// Memory per rank (P parameters, Adam): FULL_SHARD 16P/N between steps, SHARD_GRAD_OP 4P + 12P/N,
// NO_SHARD 16P. Bytes per step over the ranks: 2(N-1) x 4NS, DDP's; 3(N-1) x 4NS with FULL_SHARD
// units. The same weights as DDP + that optimizer, bit for bit on 2 ranks (test_zero, [fsdp]).
// What it refuses (a tinytorch::Error, the same on every rank where the check is collective) and
// what it does not do: the chapter, 13.10.
// Chapter: chapters/13-sharding.md (13.7-13.10). Reference: torch.distributed.fsdp (PyTorch 1.13);
// Zhao et al., "PyTorch FSDP" (VLDB 2023); Rajbhandari et al., "ZeRO" (SC 2020).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tinytorch/functional.hpp"
#include "tinytorch/nn/module.hpp"
#include "tinytorch/distributed/clip_grad.hpp"
#include "tinytorch/distributed/comm_thread.hpp"
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/model_agreement.hpp"
#include "tinytorch/distributed/process_group.hpp"
#include "tinytorch/distributed/trace.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

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

/// When backward gathers the next unit's parameters (torch.distributed.fsdp.BackwardPrefetch).
enum class BackwardPrefetch {
  BACKWARD_PRE,   ///< when a unit's backward begins, before its gradients are computed (more memory)
  BACKWARD_POST,  ///< when a unit's gradients are computed and its parameters freed, before its reduce-scatter
};

/// FullyShardedDataParallel's arguments (PyTorch's keyword arguments of the same names).
struct FSDPOptions {
  /// The ranks that shard the model; nullptr = the default group.
  std::shared_ptr<ProcessGroup> process_group = nullptr;
  /// PyTorch's default, FULL_SHARD (ZeRO-3).
  ShardingStrategy sharding_strategy = ShardingStrategy::FULL_SHARD;
  /// Which submodules become units with their own flat parameter (nullptr: one unit, the model).
  AutoWrapPolicy auto_wrap_policy = nullptr;
  /// FULL_SHARD: the all_gather of the unit that backward reaches next is issued early (PyTorch's
  /// default BACKWARD_PRE); std::nullopt: only when backward reaches it, after the reduce-scatters
  /// issued before it (less memory, less overlap).
  std::optional<BackwardPrefetch> backward_prefetch = BackwardPrefetch::BACKWARD_PRE;
  /// In a training forward, the all_gather of the unit that the previous training forward ran
  /// next is issued before the current unit computes (PyTorch's forward_prefetch, default false;
  /// a static order is assumed, as PyTorch does).
  bool forward_prefetch = false;
  /// Records each all_gather and reduce-scatter (the communication thread, tid 2: DDP's is 1, so one Trace serves both), each unit's
  /// forward and backward, and the main thread's waits for a collective (tid 0); nullptr: off.
  std::shared_ptr<Trace> trace = nullptr;
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
    if (options_.backward_prefetch) {
      const int bp = static_cast<int>(*options_.backward_prefetch);
      detail::check(bp >= 0 && bp <= 1, "FullyShardedDataParallel: FSDPOptions::backward_prefetch has no such value (",
                    bp, ")");
    }

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
    // The communication thread and its communicator (comm_thread.hpp): the all_gathers and
    // reductions of forward and backward run there, one at a time, in the order they are issued.
    if (world_ > 1) {
      require_thread_multiple("FullyShardedDataParallel (its communication thread)");
      comm_group_ = detail::duplicate_group(g, "FullyShardedDataParallel");
      comm_ = std::make_unique<detail::CommThread>();
      if (options_.trace) options_.trace->thread_name(kCommTid, "FSDP comm thread (all_gather, reduce_scatter)");
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
    if (comm_) comm_->shutdown();  // the collectives in flight finish (or, unwinding, are let go)
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
      forward_calls_.clear();
      forward_done_.clear();
    }
    Unit& root = units_[0];
    start_gather(root, false);
    if (training && options_.forward_prefetch && !last_forward_calls_.empty())
      start_gather(units_[last_forward_calls_.front()], true);  // the first unit the last forward ran
    finish_gather(root);
    if (training && !root.params.empty()) root.forward_version = root.flat_param._version();
    in_forward_ = true;
    Tensor out;
    try {
      out = module_->forward(x);
    } catch (...) {
      in_forward_ = false;
      try {
        for (Unit& u : units_) finish_gather(u);  // no prefetch left in flight (an optimizer step may follow)
      } catch (...) {  // (the forward's own error is the one to report)
      }
      throw;
    }
    in_forward_ = false;
    if (training) {
      check_same_order();
      last_forward_calls_ = forward_calls_;
      plan_backward_prefetch();
    }
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
    if (armed_) register_pre_backward(out, 0);  // (a root without parameters: for backward_prefetch only)
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
    // in flight on the communication thread (main thread's view; ticket 0: ran inline)
    bool gather_pending = false;    // an all_gather into flat issued, not yet waited for
    uint64_t gather_ticket = 0;
    Tensor gather_send;             // what it sends (FULL_SHARD: flat_param; SHARD_GRAD_OP: a copy)
    int64_t pending_version = -1;   // the version it gathers
    uint64_t reduce_ticket = 0;     // its gradient's reduction on the thread (0: ran inline)
    Tensor reduced;                 // its result (this rank's shard of the average)
    double backward_begin_us = 0;   // (trace) when pre_backward ran
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

  /// Every rank must pass the same sharding_strategy, backward_prefetch and forward_prefetch (they
  /// decide which collectives run when): else every rank throws naming the option.
  void check_same_strategy(ProcessGroup& g) const {
    if (g.size() == 1) return;
    const int64_t bp = options_.backward_prefetch ? 1 + static_cast<int64_t>(*options_.backward_prefetch) : 0;
    int64_t lo[3] = {static_cast<int64_t>(options_.sharding_strategy), bp, options_.forward_prefetch ? 1 : 0};
    int64_t hi[3] = {lo[0], lo[1], lo[2]};
    g.all_reduce(lo, 3, kInt64, ReduceOp::MIN, Completion::Blocking, "FullyShardedDataParallel options");
    g.all_reduce(hi, 3, kInt64, ReduceOp::MAX, Completion::Blocking, "FullyShardedDataParallel options");
    detail::check(lo[0] == hi[0], "FullyShardedDataParallel: FSDPOptions::sharding_strategy differs across ranks (",
                  sharding_strategy_name(static_cast<ShardingStrategy>(lo[0])), " and ",
                  sharding_strategy_name(static_cast<ShardingStrategy>(hi[0])), ")");
    detail::check(lo[1] == hi[1] && lo[2] == hi[2], "FullyShardedDataParallel: FSDPOptions::",
                  lo[1] != hi[1] ? "backward_prefetch" : "forward_prefetch", " differs across ranks (it decides "
                  "when each all_gather is issued; every rank must issue them in the same order)");
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
  /// gather = start_gather (issue the all_gather: a prefetch on the communication thread, which
  /// returns at once; else here, after what the thread had been given) + finish_gather (wait for
  /// it). A unit whose all_gather is in flight is `gather_pending`; only the main thread changes
  /// these fields.
  void gather(Unit& u) {
    start_gather(u, false);
    finish_gather(u);
  }
  void start_gather(Unit& u, bool prefetch) {
    if (u.params.empty()) return;
    if (u.gather_pending && source_version(u) != u.pending_version) finish_gather(u);  // stale: gathered again below
    if (u.gather_pending) return;
    NoGradGuard no_grad;
    const int64_t n = u.shard_numel;
    if (options_.sharding_strategy == ShardingStrategy::SHARD_GRAD_OP) {
      if (world_ == 1 || u.flat._version() == u.gathered_version) return;
      // all_gather's input may not alias its output: send a copy of this rank's shard
      u.gather_send = u.flat.narrow(0, rank_ * n, n).clone();
      u.pending_version = u.flat._version();
    } else if (options_.sharding_strategy == ShardingStrategy::FULL_SHARD) {
      write_back(u);
      if (u.gathered && u.flat_param._version() == u.gathered_version) return;
      u.flat.impl()->storage->resize_(static_cast<size_t>(n * world_) * element_size(u.flat.dtype()));
      u.gather_send = u.flat_param;
      u.pending_version = u.flat_param._version();
    } else {
      return;
    }
    u.gather_pending = true;
    const size_t k = static_cast<size_t>(&u - units_.data());
    auto task = [g = comm_group_ ? comm_group_ : group_, out = u.flat, in = u.gather_send, n, world = world_,
                 trace = options_.trace, k, name = trace_name(k), prefetch, tid = comm_ && prefetch ? kCommTid : 0] {
      const double t0 = Trace::steady_us();
      const size_t bytes = static_cast<size_t>(n) * element_size(out.dtype());
      if (world == 1)
        std::memcpy(out.raw_data(), in.raw_data(), bytes);
      else
        g->all_gather(out.raw_data(), in.raw_data(), n, out.dtype(), Completion::Blocking,
                      "FullyShardedDataParallel all_gather");
      if (trace)
        trace->complete("all_gather " + name, "comm", tid, t0, Trace::steady_us(),
                        ::tinytorch::detail::str_cat("\"unit\": ", k, ", \"bytes\": ", bytes * world,
                                                     ", \"prefetch\": ", prefetch ? "true" : "false"));
    };
    if (comm_ && prefetch) {
      u.gather_ticket = comm_->enqueue(std::move(task));
    } else {
      // Needed now: the main thread, which would only wait, runs it itself once the thread has run
      // what was issued before (the order on the wire), as DDP's last bucket: no hand-off.
      wait_idle("all_gather", u);
      task();
    }
  }
  void finish_gather(Unit& u) {
    if (!u.gather_pending) return;
    if (u.gather_ticket) wait_for(u.gather_ticket, "all_gather", u);
    u.gather_ticket = 0;
    u.gather_pending = false;
    u.gather_send = Tensor();
    if (options_.sharding_strategy == ShardingStrategy::SHARD_GRAD_OP) {
      const bool stale = u.flat._version() != u.pending_version;  // a step since it was issued
      autograd::increment_version(u.flat);
      u.gathered_version = stale ? -1 : u.flat._version();
    } else {
      u.gathered = true;
      u.gathered_version = u.pending_version;  // (an optimizer step since the prefetch: gathered again)
      u.flat_version = u.flat._version();
    }
  }
  /// The main thread waits for the communication thread's task `ticket` (recorded in the trace).
  void wait_for(uint64_t ticket, const char* what, const Unit& u) {
    const double t0 = options_.trace ? Trace::steady_us() : 0.0;
    comm_->wait(ticket);
    if (options_.trace)
      options_.trace->complete(std::string("wait ") + what + " " + trace_name(static_cast<size_t>(&u - units_.data())),
                               "wait", 0, t0, Trace::steady_us());
  }
  /// Waits until the communication thread has run everything issued so far (before the main thread
  /// issues a collective on its communicator itself: the order on the wire stays the issue order).
  void wait_idle(const char* what, const Unit& u) {
    if (comm_ && !comm_->done(comm_->enqueued())) wait_for(comm_->enqueued(), what, u);
  }
  std::string trace_name(size_t k) const { return k == 0 ? "root" : units_[k].path; }
  /// The version an all_gather of the unit reads: flat_param's (FULL_SHARD) or flat's (SHARD_GRAD_OP).
  int64_t source_version(const Unit& u) const {
    return options_.sharding_strategy == ShardingStrategy::FULL_SHARD ? u.flat_param._version() : u.flat._version();
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
    finish_gather(u);  // (a prefetch in flight writes into the storage)
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
    start_gather(u, false);
    if (training) {
      // forward_prefetch: the unit that ran after this call in the last training forward
      const size_t call = forward_calls_.size();
      forward_calls_.push_back(k);
      if (options_.forward_prefetch && call + 1 < last_forward_calls_.size() && last_forward_calls_[call] == k)
        start_gather(units_[last_forward_calls_[call + 1]], true);
    }
    finish_gather(u);
    if (training) u.forward_version = u.flat_param._version();
    Tensor out;
    {
      Trace::Scope scope(options_.trace.get(), "forward " + trace_name(k));
      out = u.module->forward(x);
    }
    if (!summoned_) reshard(u);
    if (training) {
      ++u.forwards;
      forward_done_.push_back(k);
      if (out.requires_grad()) register_pre_backward(out, k);
    }
    return out;
  }

  /// The units ran in the same order on every rank: their collectives pair up by order, and units
  /// of equal sizes called in another order would exchange each other's values, silently. Checked
  /// at the first training forward (an all_reduce) and, at TINYTORCH_DISTRIBUTED_DEBUG=DETAIL, at
  /// every one (the group's agreement on a point, ProcessGroup::check_same_point: not counted as
  /// bytes) — PyTorch's FSDP checks its forward order under DETAIL ("Forward order differs across
  /// ranks"). Throws on every rank.
  void check_same_order() {
    if (world_ == 1) return;
    uint64_t h = 1469598103934665603ull;  // FNV-1a of the unit indices in call order
    for (size_t k : forward_calls_) h = (h ^ static_cast<uint64_t>(k + 1)) * 1099511628211ull;
    if (order_checked_) {
      group_->check_same_point("FullyShardedDataParallel forward order", detail::OpType::FSDP_FORWARD,
                               static_cast<int64_t>(h >> 2));
      return;
    }
    order_checked_ = true;
    int64_t v[2] = {static_cast<int64_t>(h >> 2), -static_cast<int64_t>(h >> 2)};
    group_->all_reduce(v, 2, kInt64, ReduceOp::MIN, Completion::Blocking, "FullyShardedDataParallel forward order");
    if (v[0] == -v[1]) return;
    for (Unit& u : units_) finish_gather(u);
    std::string mine;
    for (size_t k : forward_calls_) mine += (mine.empty() ? "\"" : ", \"") + units_[k].path + "\"";
    detail::throw_error(detail::rank_prefix() + "FullyShardedDataParallel: the units ran in a different order on "
                        "different ranks in this forward (this rank: " + mine + "); their all_gathers pair up by "
                        "order, so every rank must call them in the same order (PyTorch: \"Forward order differs "
                        "across ranks\")");
  }

  /// After a training forward: the unit whose backward follows each unit's (backward runs the
  /// units in the reverse order of their forwards' ends; a unit called twice counts at its last
  /// call), for backward_prefetch; the root's is the first unit backward reaches.
  void plan_backward_prefetch() {
    backward_next_.assign(units_.size(), kNone);
    std::vector<size_t> order;  // units in backward order, each once
    std::vector<char> seen(units_.size(), 0);
    for (auto it = forward_done_.rbegin(); it != forward_done_.rend(); ++it)
      if (!seen[*it]) {
        seen[*it] = 1;
        order.push_back(*it);
      }
    if (!order.empty()) backward_next_[0] = order.front();
    for (size_t i = 0; i + 1 < order.size(); ++i) backward_next_[order[i]] = order[i + 1];
  }
  /// FULL_SHARD with backward_prefetch: start the all_gather of the unit backward reaches after k.
  void prefetch_backward(size_t k) {
    if (options_.sharding_strategy != ShardingStrategy::FULL_SHARD || k >= backward_next_.size()) return;
    const size_t next = backward_next_[k];
    if (next != kNone && !units_[next].backward_prepared) start_gather(units_[next], true);
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
    if (u.params.empty()) {  // the root without parameters of its own: the first unit's prefetch only
      if (options_.backward_prefetch == BackwardPrefetch::BACKWARD_PRE) prefetch_backward(k);
      u.backward_prepared = true;
      return;
    }
    if (options_.sharding_strategy == ShardingStrategy::FULL_SHARD)
      detail::check(u.flat_param._version() == u.forward_version,
                    "FullyShardedDataParallel: the flat parameter of ", unit_name(k),
                    " changed between forward and backward (an optimizer step before backward?): the gradients "
                    "would be of other values than the forward used");
    start_gather(u, false);
    if (options_.backward_prefetch == BackwardPrefetch::BACKWARD_PRE) prefetch_backward(k);
    finish_gather(u);
    u.backward_begin_us = options_.trace ? Trace::steady_us() : 0.0;
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
    settle();  // the reductions already issued (every rank issued them in one order) complete first
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
      if (options_.trace)
        options_.trace->complete("backward " + trace_name(k), "compute", 0, u.backward_begin_us, Trace::steady_us());
      if (sync_) {
        reduce_gradients(u);
      } else {
        reshard(u);  // no_sync: the unsharded gradient stays for the next backward
        if (options_.backward_prefetch == BackwardPrefetch::BACKWARD_POST) prefetch_backward(k);
      }
      bool all = true;
      for (const Unit& v : units_) all = all && v.ready_count == v.params.size();
      finished_ = all;
      if (finished_) finish_reduction();  // flat_param.grad set before loss.backward() returns
    }
  }

  /// The unit's flat gradient (each parameter's g_i in its slice, 0 in the padding) divided by N,
  /// then reduce_scatter SUM (FULL_SHARD, SHARD_GRAD_OP) or all_reduce SUM (NO_SHARD) into
  /// flat_param.grad (added to a gradient already there); the parameters' .grad and the flat
  /// gradient are freed, and under FULL_SHARD the gathered values too (reshard after backward).
  /// The collective is issued on the communication thread and overlaps with the rest of backward;
  /// the next unit's reduction (or the end of backward) waits for it and takes its result.
  void reduce_gradients(Unit& u) {
    NoGradGuard no_grad;
    Tensor grads = u.grad_flat;
    for (Tensor& p : u.params) p.set_grad(Tensor());
    u.grad_flat = Tensor();
    reshard(u);
    const size_t k = static_cast<size_t>(&u - units_.data());
    if (options_.backward_prefetch == BackwardPrefetch::BACKWARD_POST) prefetch_backward(k);  // before the reduction
    // At most one reduction in flight: the previous unit's, which overlapped with this unit's
    // backward, is finished first. The unsharded gradients held then are this unit's and that
    // one's, whatever the timing: a bounded peak, the same in every run (13.9).
    finish_reduction();
    reducing_ = k;
    if (world_ == 1) {  // nothing to reduce (as DDP at world size 1: no communication)
      u.reduced = grads.narrow(0, 0, u.flat_param.numel());
      return;
    }
    grads.div_(static_cast<int64_t>(world_));  // as DDP's buckets: g / N, then the sum
    const bool scatter = options_.sharding_strategy != ShardingStrategy::NO_SHARD;
    u.reduced = scatter ? empty({u.shard_numel}, TensorOptions(u.flat.dtype())) : grads.narrow(0, 0, u.numel);
    // The last unit's reduction has nothing left to overlap with: the main thread runs it itself
    // once the thread is idle (no hand-off), as DDP's last bucket.
    bool last = true;
    for (const Unit& v : units_) last = last && (&v == &u || v.ready_count == v.params.size());
    const int tid = last ? 0 : kCommTid;
    auto task = [g = comm_group_, in = grads, out = u.reduced, n = u.shard_numel, scatter, trace = options_.trace, k,
                 name = trace_name(k), tid] {
      const double t0 = Trace::steady_us();
      if (scatter)
        g->reduce_scatter(out.raw_data(), in.raw_data(), n, in.dtype(), ReduceOp::SUM, Completion::Blocking,
                          "FullyShardedDataParallel reduce_scatter");
      else
        g->all_reduce(in.raw_data(), in.numel(), in.dtype(), ReduceOp::SUM, Completion::Blocking,
                      "FullyShardedDataParallel all_reduce");
      if (trace)
        trace->complete((scatter ? "reduce_scatter " : "all_reduce ") + name, "comm", tid, t0, Trace::steady_us(),
                        ::tinytorch::detail::str_cat("\"unit\": ", k, ", \"bytes\": ",
                                                     in.numel() * static_cast<int64_t>(element_size(in.dtype()))));
    };
    if (!last) {
      u.reduce_ticket = comm_->enqueue(std::move(task));
      return;
    }
    wait_idle("reduce_scatter", u);
    task();
  }
  /// Waits for the reduction in flight, if any, and adds its result to its flat_param.grad (or
  /// sets it), freeing it.
  void finish_reduction() {
    if (reducing_ == kNone) return;
    Unit& u = units_[reducing_];
    if (u.reduce_ticket) wait_for(u.reduce_ticket, "reduce_scatter", u);
    reducing_ = kNone;
    u.reduce_ticket = 0;
    NoGradGuard no_grad;
    Tensor old = u.flat_param.grad();
    if (old.defined()) old.add_(u.reduced);
    else u.flat_param.set_grad(u.reduced);  // a view of the (N * S) buffer at world size 1 and under NO_SHARD
    u.reduced = Tensor();
  }
  /// Waits for whatever the communication thread still runs and drops what a backward that did
  /// not finish left in flight (its errors too: the caller reports the unfinished backward).
  void settle() {
    if (comm_) {
      try {
        comm_->wait_all();
      } catch (...) {
      }
    }
    reducing_ = kNone;
    for (Unit& u : units_) {
      u.reduce_ticket = 0;
      u.reduced = Tensor();
      if (u.gather_pending) {
        u.gather_ticket = 0;
        finish_gather(u);
      }
    }
  }

  static constexpr size_t kNone = static_cast<size_t>(-1);
  static constexpr int kCommTid = 2;  // the communication thread's events in a Trace (DDP's thread is 1)

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
  std::vector<size_t> forward_calls_;       // the units' forwards in this training forward, in call order
  std::vector<size_t> forward_done_;        // ... in the order they ended (nested units end first)
  std::vector<size_t> last_forward_calls_;  // the previous training forward's calls (forward_prefetch)
  bool order_checked_ = false;              // check_same_order ran (at the first training forward)
  std::vector<size_t> backward_next_;       // per unit: the unit backward reaches next (kNone: none)
  size_t reducing_ = kNone;                 // the unit whose reduction is issued, not yet in .grad (at most one)
  std::shared_ptr<detail::FsdpHookState> state_;
  // world size > 1: the communication thread and its duplicate of group_ (last members: destroyed,
  // i.e. joined, before anything its tasks might touch)
  std::shared_ptr<ProcessGroup> comm_group_;
  std::unique_ptr<detail::CommThread> comm_;
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

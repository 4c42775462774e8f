// tinytorch/distributed/zero_redundancy_optimizer.hpp — ZeroRedundancyOptimizer: ZeRO stage 1,
// each rank keeps the optimizer state of its shard of the parameters only.
//
// With DDP every rank runs the same update on every parameter: with Adam in float32 a rank holds
// 4 bytes of value, 4 of gradient and 8 of state per parameter, 16P. ZeRO stage 1 partitions the
// parameters over the N ranks; rank r updates only its shard S_r and creates state for it only:
//   step():  for p in S_r with a gradient: update(p, p.grad, state[p])     (the local step)
//            for r in 0..N-1: broadcast(S_r from rank r)                    (sync the replicas)
//   memory per rank:  4P (values) + 4P (gradients) + 8P/N (Adam's state) = 8P + 8P/N
//                     (+ 4P of DDP's buckets: 12P + 8P/N measured, chapter 13.3)
// The weights equal DDP + the plain optimizer bit for bit: each parameter is updated by one rank,
// from the same averaged gradient and state, and the others receive the bytes.
// The partition is PyTorch's sorted greedy one (_partition_parameters): per group, the parameters
// by numel, largest first (a stable sort), each to the rank with the smallest total so far (the
// lowest on a tie); a parameter is never split, a rank may own nothing. With
// parameters_as_bucket_view each rank's shard is one flat tensor (the parameters views into it)
// and the sync is N broadcasts. It is the optimizer class itself, derived:
// ZeroRedundancyOptimizer<optim::Adam> is an Adam whose step() updates this rank's shard, so LR
// schedulers, param_groups() and zero_grad() work as on the plain class; state() is the shard's.
// Checkpoints (PyTorch's protocol): consolidate_state_dict(to), a collective, gathers every rank's
// state on rank `to`, whose state_dict() is then the plain optimizer's (loadable into one);
// load_state_dict() takes such a dict and keeps this rank's shard.
// Chapter: chapters/13-sharding.md (13.2). Reference: torch.distributed.optim.
// ZeroRedundancyOptimizer (PyTorch 1.13); Rajbhandari et al., "ZeRO" (SC 2020), stage P_os.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tinytorch/functional.hpp"
#include "tinytorch/optim/optimizer.hpp"
#include "tinytorch/distributed/device_staging.hpp"
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/model_agreement.hpp"
#include "tinytorch/distributed/process_group.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed {

/// ZeroRedundancyOptimizer's own arguments (PyTorch's keyword arguments besides the optimizer's).
struct ZeroOptions {
  /// The ranks that share the optimizer (PyTorch's process_group); nullptr = the default group.
  std::shared_ptr<ProcessGroup> process_group = nullptr;
  /// Pack each rank's shard into one flat tensor that the parameters view, and broadcast it in one
  /// message per rank instead of one per parameter (PyTorch's parameters_as_bucket_view).
  bool parameters_as_bucket_view = false;
  /// PyTorch overlaps the step with DDP's bucket all-reduces through a DDP communication hook
  /// (ddp_zero_hook.py's hook_with_zero_step); tinytorch has DDP's register_comm_hook but not that
  /// hook yet, so true throws (the default, false, is PyTorch's default).
  bool overlap_with_ddp = false;
};

/// shard[r][g]: the parameters of param group g that rank r owns, in PyTorch's order (by numel,
/// largest first).
using ParameterPartition = std::vector<std::vector<std::vector<Tensor>>>;

/// PyTorch's sorted greedy partition of `groups` over `world_size` ranks (see the file comment).
inline ParameterPartition partition_parameters(const std::vector<optim::ParamGroup>& groups, int world_size) {
  ParameterPartition shard(static_cast<size_t>(world_size), std::vector<std::vector<Tensor>>(groups.size()));
  std::vector<int64_t> sizes(static_cast<size_t>(world_size), 0);
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<Tensor> sorted = groups[g].params;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const Tensor& a, const Tensor& b) { return a.numel() > b.numel(); });
    for (const Tensor& p : sorted) {
      const size_t r = static_cast<size_t>(std::min_element(sizes.begin(), sizes.end()) - sizes.begin());
      shard[r][g].push_back(p);
      sizes[r] += p.numel();
    }
  }
  return shard;
}

/// ZeRO stage 1 over any tinytorch optimizer (PyTorch's ZeroRedundancyOptimizer):
///   DistributedDataParallel ddp(model);
///   ZeroRedundancyOptimizer<optim::Adam> opt(ddp.parameters(), optim::AdamOptions{1e-3});
///   loss.backward(); opt.step(); opt.zero_grad();
/// Every rank constructs it with the same parameters (a collective: checked, see below) and calls
/// step() the same number of times. Gradients must already be the same on every rank (DDP's
/// averaged ones): ZeroRedundancyOptimizer reduces nothing itself, as PyTorch's.
/// Errors (tinytorch::Error). The checks of the parameters are agreed across the ranks: a list that
/// is wrong on one rank only throws the same message on every rank, with " (on rank r)" naming the
/// first rank at fault (PyTorch does not check; its broadcasts would hang or fail later):
///   "ZeroRedundancyOptimizer: parameter 1 is an undefined Tensor (on rank 1)"
///   the parameters differ across ranks in count, dtype, shape or requires_grad: the message names
///     the first parameter that differs and both ranks (as DDP's)
///   "ZeroRedundancyOptimizer got an empty parameter list"  (PyTorch's ValueError)
///   "ZeroRedundancyOptimizer only supports using the same dense type for all parameters but got
///    both torch.FloatTensor and torch.DoubleTensor"  (PyTorch's; a CUDA one reads torch.cuda.FloatTensor)
///   "can't optimize a non-leaf Tensor", "optimizer contains a parameter group with duplicate
///    parameters", "some parameters appear in more than one parameter group" (add_param_group)
///   overlap_with_ddp=true: not implemented (PyTorch's hook_with_zero_step is not written yet)
/// The optimizer's own option checks (lr, betas, ...) are local: options that differ across ranks
/// are not detected (a rank that throws there leaves the others to the collectives' timeout).
template <class OptimizerClass>
class ZeroRedundancyOptimizer : public OptimizerClass {
 public:
  /// params: every parameter of the model (each rank the same list); defaults: the optimizer's
  /// options (e.g. optim::AdamOptions, or optim::SGDOptions); options: ZeRO's own.
  template <class Defaults>
  ZeroRedundancyOptimizer(std::vector<Tensor> params, const Defaults& defaults, ZeroOptions options = {})
      : OptimizerClass(verify_params(std::move(params), options), defaults), options_(std::move(options)),
        group_(group_of(options_)) {
    partition();  // and the buckets, with parameters_as_bucket_view
  }

  /// Adds a param group (the optimizer's add_param_group, any of its overloads) on every rank (a
  /// collective: the new parameters are checked as the constructor's, on every rank), and
  /// repartitions: the groups before it keep their owners (PyTorch's note in add_param_group).
  template <class... Args>
  void add_param_group(std::vector<Tensor> params, Args&&... args) {
    check_new_params(group_, params, &this->param_groups_);
    OptimizerClass::add_param_group(std::move(params), std::forward<Args>(args)...);
    partition();
  }

  /// The rank's place in the optimizer's process group.
  int rank() const { return group_.rank(); }
  int world_size() const { return group_.size(); }
  bool parameters_as_bucket_view() const { return options_.parameters_as_bucket_view; }

  /// The partition (recomputed when a param group was added): partition()[r][g] are the parameters
  /// of group g that rank r updates.
  const ParameterPartition& partition() {
    std::vector<TensorImpl*> layout;
    for (const optim::ParamGroup& g : this->param_groups_) {
      for (const Tensor& p : g.params) layout.push_back(p.impl());
      layout.push_back(nullptr);  // group boundary
    }
    if (layout != layout_) {
      // A group added through the optimizer class (a call that bypassed add_param_group above)
      // must still be of one dense type: the buckets and the broadcasts assume it.
      const Tensor& first = this->param_groups_.front().params.front();
      for (const optim::ParamGroup& g : this->param_groups_)
        for (const Tensor& p : g.params)
          detail::check(p.dtype() == first.dtype() && p.device() == first.device(),
                        "ZeroRedundancyOptimizer only supports using the same dense type for all parameters but got "
                        "both ", tensor_type_name(first.dtype()), " on ", first.device().str(), " and ",
                        tensor_type_name(p.dtype()), " on ", p.device().str());
      layout_ = std::move(layout);
      partition_ = partition_parameters(this->param_groups_, group_.size());
      owner_.clear();
      for (size_t r = 0; r < partition_.size(); ++r)
        for (const auto& ps : partition_[r])
          for (const Tensor& p : ps) owner_[p.impl()] = static_cast<int>(r);
      if (options_.parameters_as_bucket_view) build_param_buckets();
    }
    return partition_;
  }

  /// The rank (of the process group) that updates p; throws if p is not one of the parameters.
  int owner_rank(const Tensor& p) {
    partition();
    auto it = owner_.find(p.impl());
    detail::check(it != owner_.end(), "ZeroRedundancyOptimizer.owner_rank: the tensor (sizes ", shape_str(p.sizes()),
          ") is not one of the optimizer's parameters");
    return it->second;
  }

  /// With parameters_as_bucket_view: bucket r is the flat tensor holding rank r's shard (a
  /// one-element placeholder when rank r owns nothing, as PyTorch's).
  const std::vector<Tensor>& buckets() const { return buckets_; }

  /// Gathers every rank's optimizer state on rank `to` of the process group (a collective: every
  /// rank calls it; PyTorch's consolidate_state_dict). Afterwards state_dict() works on rank `to`
  /// and returns the state as of this call. Throws if `to` is not a rank of the group.
  void consolidate_state_dict(int to = 0) {
    const bool bad_to = to < 0 || to >= group_.size();
    detail::throw_if_any_rank(group_, bad_to,
                              ::tinytorch::detail::str_cat("ZeroRedundancyOptimizer.consolidate_state_dict: to=", to,
                                                           " is not a rank of the process group (size ", group_.size(),
                                                           ")"));
    consolidated_.clear();
    has_consolidated_ = false;
    // Rank r sends its state entries ("state.<i>.<name>"; i is the global index) to everyone, one
    // rank after the other, as PyTorch's _broadcast_object (broadcast rather than gather, which
    // NCCL lacks): first the keys, dtypes and shapes as int64s, then each tensor's values.
    std::vector<std::pair<std::string, Tensor>> gathered;
    for (int r = 0; r < group_.size(); ++r) {
      std::vector<std::pair<std::string, Tensor>> mine;
      std::vector<int64_t> meta;
      if (r == group_.rank()) {
        for (auto& kv : optim::Optimizer::state_dict())
          if (kv.first.rfind("state.", 0) == 0) mine.push_back(kv);
        for (const auto& kv : mine) {
          meta.push_back(static_cast<int64_t>(kv.first.size()));
          meta.insert(meta.end(), kv.first.begin(), kv.first.end());
          meta.push_back(static_cast<int64_t>(kv.second.dtype()));
          meta.push_back(kv.second.dim());
          for (int64_t d : kv.second.sizes()) meta.push_back(d);
        }
      }
      meta = detail::broadcast_ints(group_, meta, r);
      size_t pos = 0, k = 0;
      while (pos < meta.size()) {
        const size_t len = static_cast<size_t>(meta[pos++]);
        std::string key(meta.begin() + static_cast<std::ptrdiff_t>(pos),
                        meta.begin() + static_cast<std::ptrdiff_t>(pos + len));
        pos += len;
        const DType dtype = static_cast<DType>(meta[pos++]);
        Shape shape;
        for (int64_t n = meta[pos++]; n > 0; --n) shape.push_back(meta[pos++]);
        NoGradGuard no_grad;
        // The sender's own tensor is sent as it is (contiguous, on its device); the copy kept is a
        // CPU snapshot, as PyTorch's consolidation copies to the CPU.
        Tensor t = r == group_.rank() ? mine[k].second.contiguous() : empty(shape, TensorOptions(dtype));
        ++k;
        if (t.numel() > 0) {
          detail::HostStage h(t, r == group_.rank());
          group_.broadcast(h.data(), t.numel(), t.dtype(), r, Completion::Blocking);
          h.upload();
        }
        if (group_.rank() == to) gathered.emplace_back(std::move(key), r == group_.rank() ? t.cpu().clone() : t);
      }
    }
    if (group_.rank() != to) return;
    // Global order: by parameter index, each parameter's entries in state_names() order.
    auto index_of = [](const std::string& key) { return std::stoll(key.substr(6, key.find('.', 6) - 6)); };
    std::stable_sort(gathered.begin(), gathered.end(),
                     [&](const auto& a, const auto& b) { return index_of(a.first) < index_of(b.first); });
    consolidated_ = std::move(gathered);
    has_consolidated_ = true;
  }

  /// On the rank a consolidate_state_dict(to) call chose: the whole optimizer's state_dict() as the
  /// plain optimizer writes it (every parameter's state, as of that call, and the groups' current
  /// settings), loadable into the plain optimizer or into a ZeroRedundancyOptimizer on any world
  /// size. Elsewhere throws PyTorch's error: "Optimizer state has not been consolidated on this
  /// rank. Please call `consolidate_state_dict(to=1)` on all ranks beforehand if you meant to save
  /// the global state."
  std::vector<std::pair<std::string, Tensor>> state_dict() const override {
    detail::check(has_consolidated_, "Optimizer state has not been consolidated on this rank. Please call "
                             "`consolidate_state_dict(to=", group_.rank(),
          ")` on all ranks beforehand if you meant to save the global state.");
    std::vector<std::pair<std::string, Tensor>> out = consolidated_;
    for (auto& kv : optim::Optimizer::state_dict())
      if (kv.first.rfind("state.", 0) != 0) out.push_back(kv);
    return out;
  }

  /// Loads a whole optimizer's state_dict() (from a plain optimizer or a consolidated one), with
  /// the plain optimizer's checks and errors; keeps the state of this rank's shard only.
  void load_state_dict(const std::vector<std::pair<std::string, Tensor>>& sd) override {
    optim::Optimizer::load_state_dict(sd);
    partition();
    for (auto it = this->state_.begin(); it != this->state_.end();) {
      if (owner_.at(it->first) != group_.rank()) it = this->state_.erase(it);
      else ++it;
    }
  }

 protected:
  /// The local step on this rank's shard, then the shard of every rank broadcast from its owner.
  void step_impl() override {
    const ParameterPartition& shard = partition();
    {
      NoGradGuard no_grad;
      const auto& mine = shard[static_cast<size_t>(group_.rank())];
      for (size_t g = 0; g < mine.size(); ++g) {
        for (const Tensor& cp : mine[g]) {
          Tensor p = cp;
          const Tensor grad = p.grad();
          if (!grad.defined()) continue;
          optim::ParamState& st = this->state_[p.impl()];
          ops::check_same_device("Optimizer.step", p, grad, st.momentum_buffer, st.exp_avg, st.exp_avg_sq,
                                 st.max_exp_avg_sq);
          this->update(p, grad, st, this->param_groups_[g]);
        }
      }
    }
    sync_params();
  }

 private:
  /// Rank r's updated values reach every rank: one broadcast per parameter of shard r, in the
  /// partition's order, or one per bucket (PyTorch's _sync_params).
  void sync_params() {
    NoGradGuard no_grad;
    for (int r = 0; r < group_.size(); ++r) {
      if (options_.parameters_as_bucket_view) {
        broadcast_from(buckets_[static_cast<size_t>(r)], r);
        continue;
      }
      for (const auto& ps : partition_[static_cast<size_t>(r)])
        for (const Tensor& p : ps) broadcast_from(p, r);
    }
  }

  /// t <- rank root's t. A non-contiguous parameter travels through a contiguous copy. On the
  /// receiving ranks the write counts as an in-place update (the version counter is bumped, as the
  /// owner's update bumped it), so a backward through a graph built before step() raises there too.
  void broadcast_from(const Tensor& t, int root) {
    if (group_.size() == 1 || t.numel() == 0) return;
    Tensor c = t.is_contiguous() ? t : t.contiguous();
    detail::HostStage h(c, group_.rank() == root);
    group_.broadcast(h.data(), c.numel(), c.dtype(), root, Completion::Blocking);
    h.upload();
    if (group_.rank() == root) return;
    if (!t.is_contiguous()) {
      Tensor dst = t;
      dst.copy_(c);
    } else {
      autograd::increment_version(t);
    }
  }

  /// bucket r <- the values of shard r, laid end to end; each parameter then views its slice
  /// (its storage, offset and strides rebound: what PyTorch's `param.data = view` does).
  void build_param_buckets() {
    NoGradGuard no_grad;
    buckets_.clear();
    const Tensor& first = this->param_groups_.front().params.front();
    for (const auto& groups : partition_) {
      int64_t n = 0;
      for (const auto& ps : groups)
        for (const Tensor& p : ps) n += p.numel();
      Tensor bucket = zeros({std::max<int64_t>(n, 1)}, TensorOptions(first.dtype()).device(first.device()));
      int64_t offset = 0;
      for (const auto& ps : groups) {
        for (const Tensor& p : ps) {
          const int64_t k = p.numel();
          bucket.narrow(0, offset, k).copy_(p.reshape({k}));
          TensorImpl* impl = p.impl();
          impl->storage = bucket.impl()->storage;
          impl->offset = offset;
          impl->strides = contiguous_strides(impl->shape);
          offset += k;
        }
      }
      buckets_.push_back(bucket);
    }
  }

  static ProcessGroup& group_of(const ZeroOptions& o) {
    return o.process_group ? *o.process_group : detail::default_group("ZeroRedundancyOptimizer");
  }

  /// Before the optimizer's constructor sees the list. Every check is agreed across the ranks
  /// (model_agreement.hpp: verify_across_ranks, throw_if_any_rank), so that a list that is wrong
  /// on one rank only throws the same error on every rank instead of leaving the others waiting
  /// in a collective: first that every tensor is defined, then count, dtype, shape and
  /// requires_grad against rank 0's, then PyTorch's local checks (_verify_and_init_params,
  /// _verify_same_dense_param_type, and add_param_group's leaf and duplicate checks).
  static std::vector<Tensor> verify_params(std::vector<Tensor> params, const ZeroOptions& options) {
    ProcessGroup& group = group_of(options);
    check_new_params(group, params, nullptr);
    std::string error;
    if (options.overlap_with_ddp)
      error = "ZeroRedundancyOptimizer: overlap_with_ddp=true is not implemented in tinytorch (PyTorch's "
              "hook_with_zero_step, a DDP communication hook, is not written yet); use the default "
              "overlap_with_ddp=false, which steps after backward";
    else if (params.empty())
      error = "ZeroRedundancyOptimizer got an empty parameter list";
    detail::throw_if_any_rank(group, !error.empty(), error);
    return params;
  }

  /// The checks of a new list of parameters (the constructor's, or add_param_group's with the
  /// parameters already held in `existing`), agreed across the ranks as above.
  static void check_new_params(ProcessGroup& group, const std::vector<Tensor>& params,
                               const std::vector<optim::ParamGroup>* existing) {
    std::string error;
    for (size_t i = 0; i < params.size() && error.empty(); ++i)
      if (!params[i].defined())
        error = "ZeroRedundancyOptimizer: parameter " + std::to_string(i) + " is an undefined Tensor";
    detail::throw_if_any_rank(group, !error.empty(), error);
    std::vector<std::pair<std::string, Tensor>> named;
    for (size_t i = 0; i < params.size(); ++i) named.emplace_back("params[" + std::to_string(i) + "]", params[i]);
    detail::verify_across_ranks(group, named, "parameter",
                                "ZeroRedundancyOptimizer: expects the same parameters on every rank");
    auto type_name = [](const Tensor& t) {
      const std::string n = tensor_type_name(t.dtype());
      return t.device().is_cpu() ? n : "torch.cuda." + n.substr(6);
    };
    const Tensor* first = existing && !existing->empty() && !existing->front().params.empty()
                              ? &existing->front().params.front()
                              : (params.empty() ? nullptr : &params.front());
    std::unordered_set<TensorImpl*> held, fresh;
    if (existing)
      for (const optim::ParamGroup& g : *existing)
        for (const Tensor& p : g.params) held.insert(p.impl());
    for (size_t i = 0; i < params.size() && error.empty(); ++i) {
      const Tensor& p = params[i];
      if (type_name(p) != type_name(*first) || p.device() != first->device())
        error = "ZeroRedundancyOptimizer only supports using the same dense type for all parameters but got both " +
                type_name(*first) + " and " + type_name(p) + (type_name(p) == type_name(*first) ? " on another device" : "");
      else if (!p.is_leaf())
        error = "can't optimize a non-leaf Tensor";
      else if (held.count(p.impl()))
        error = "some parameters appear in more than one parameter group";
      else if (!fresh.insert(p.impl()).second)
        error = "optimizer contains a parameter group with duplicate parameters";
    }
    detail::throw_if_any_rank(group, !error.empty(), error);
  }

  ZeroOptions options_;
  ProcessGroup& group_;
  std::vector<TensorImpl*> layout_;                  ///< the groups' parameters when partition_ was made
  ParameterPartition partition_;
  std::unordered_map<TensorImpl*, int> owner_;       ///< parameter -> the rank that updates it
  std::vector<Tensor> buckets_;                      ///< parameters_as_bucket_view: one per rank
  std::vector<std::pair<std::string, Tensor>> consolidated_;  ///< "state.*" entries of every rank
  bool has_consolidated_ = false;
};

}  TT_NAMESPACE_END  // namespace tinytorch::distributed

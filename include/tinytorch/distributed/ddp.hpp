// tinytorch/distributed/ddp.hpp — DistributedDataParallel: one model replica per process,
// gradients averaged by all-reduce during backward (PyTorch's DDP).
//
//   dist::ProcessGroupGuard pg(dist::Backend::MPI);
//   auto ddp = std::make_shared<dist::DistributedDataParallel>(model);   // broadcast from rank 0
//   optim::SGD opt(ddp->parameters(), lr);
//   for (auto& b : loader) {            // loader: a DistributedSampler shard of the data
//     opt.zero_grad();
//     loss_fn(ddp->forward(b.data), b.target).backward();   // returns with averaged .grad
//     opt.step();                                            // identical step on every rank
//   }
//
// The math: rank r computes g_r on its own batch of B samples (a mean loss); DDP replaces every
// .grad by g = (g_0 + ... + g_{N-1}) / N, computed as PyTorch does as the SUM all-reduce of the
// g_r / N: the gradient of the mean loss over all N*B samples, so one DDP step is one
// single-process step on the global batch (tests/mpi/test_ddp.cpp). The replicas start equal
// (broadcast) and apply the same gradient, so they stay equal without sending weights again.
// DataParallelNaive (ddp_naive.hpp) is the same math with a hook per parameter; this wrapper adds
// what the headers it includes do: model_agreement.hpp (the ranks agree on the options and the
// model: the same error on every rank), reducer.hpp (buckets, the communication thread that
// overlaps backward, finalize, find_unused_parameters), trace.hpp (DDPOptions::trace).
// forward checks that the previous iteration's reduction finished and had a backward, broadcasts
// buffers, runs the module and arms the hooks for one backward. no_sync() (RAII) lets gradients
// accumulate locally; the next synced backward reduces their sum. Mixed precision: 16-bit models
// have 16-bit buckets; register_comm_hook(fp16_compress_hook) sends float32 gradients in float16.
// Checkpoints: ../serialization.hpp (tinytorch::save / load), included for DDP programs.
// Chapter: chapters/06-distributed-data-parallel.md (and 08-large-batch.md, 11-mixed-precision.md
// 11.7). Reference: torch.nn.parallel.DistributedDataParallel (notes/ddp.rst, ddp_comm_hooks);
// Li et al., "PyTorch Distributed: Experiences on Accelerating Data Parallel Training", VLDB 2020.
#pragma once

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tinytorch/autograd/grad_mode.hpp"
#include "tinytorch/nn/module.hpp"
#include "tinytorch/serialization.hpp"
#include "tinytorch/distributed/algorithms.hpp"
#include "tinytorch/distributed/collectives.hpp"
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/model_agreement.hpp"
#include "tinytorch/distributed/mpi_include.hpp"
#include "tinytorch/distributed/process_group.hpp"
#include "tinytorch/distributed/reducer.hpp"
#include "tinytorch/distributed/trace.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed {

// =============================================================================================
// Built-in communication hooks (torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py)
// =============================================================================================

namespace default_hooks {

/// PyTorch's allreduce_hook: buffer /= N, all-reduce SUM on `process_group` (nullptr: the group
/// DDP reduces on), in place; what DDP does without a hook (the division rounds in the bucket's
/// dtype first, as in PyTorch).
inline Tensor allreduce_hook(std::shared_ptr<ProcessGroup> process_group, GradBucket& bucket) {
  ProcessGroup& g = process_group ? *process_group : bucket.process_group();
  Tensor t = bucket.buffer();
  t.div_(static_cast<int64_t>(g.size()));
  all_reduce(t, ReduceOp::SUM, g);
  return t;
}

}  // namespace default_hooks

namespace detail {
/// The two compression hooks: buffer -> `low` (rounded), / N in `low`, all-reduce SUM in `low`
/// (each hop rounds), and back into the buffer ("decompress in place to reduce the peak memory").
inline Tensor compress_hook(const std::shared_ptr<ProcessGroup>& process_group, GradBucket& bucket, DType low) {
  ProcessGroup& g = process_group ? *process_group : bucket.process_group();
  Tensor compressed = bucket.buffer().to(low);  // the buffer itself when it is already `low`
  compressed.div_(static_cast<int64_t>(g.size()));
  all_reduce(compressed, ReduceOp::SUM, g);
  Tensor out = bucket.buffer();
  if (compressed.impl() != out.impl()) out.copy_(compressed);
  return out;
}
}  // namespace detail

namespace default_hooks {

/// PyTorch's fp16_compress_hook: the bucket is cast to float16, divided by N there, all-reduced
/// in float16 (half the bytes of float32), and cast back into the bucket. Gradients below
/// float16's range (|g| / N < 2^-24) flush to zero and above 65504 overflow to inf: use a
/// GradScaler with it when training in float32 (chapter 11).
inline Tensor fp16_compress_hook(std::shared_ptr<ProcessGroup> process_group, GradBucket& bucket) {
  return detail::compress_hook(process_group, bucket, kFloat16);
}

/// PyTorch's bf16_compress_hook: as fp16_compress_hook with bfloat16 (float32's range, 8 bits of
/// mantissa: no overflow, coarser rounding).
inline Tensor bf16_compress_hook(std::shared_ptr<ProcessGroup> process_group, GradBucket& bucket) {
  return detail::compress_hook(process_group, bucket, kBFloat16);
}

}  // namespace default_hooks

// =============================================================================================
// DistributedDataParallel
// =============================================================================================

/// Options of DistributedDataParallel (PyTorch's constructor keywords of the same names).
struct DDPOptions {
  /// Bucket size cap in MiB (PyTorch: bucket_cap_mb, default 25). Must be > 0.
  double bucket_cap_mb = 25.0;
  /// Size limit of the first bucket formed, in MiB: PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES
  /// (1 MiB), which ignores bucket_cap_mb. At construction that bucket holds the first-registered
  /// parameters (reduced last); after the rebuild, the first gradients to arrive (reduced first).
  double first_bucket_mb = 1.0;
  /// Walk the graph after every forward and mark parameters that took no part as ready.
  bool find_unused_parameters = false;
  /// Broadcast buffers from rank 0 at every forward (a collective: every rank must call forward).
  bool broadcast_buffers = true;
  /// How each bucket is all-reduced: Algorithm::MPI (default), the library's MPI_Allreduce, as
  /// PyTorch's MPI process group does; or one of our teaching algorithms of algorithms.hpp
  /// (chapter 07): Ring (what NCCL and Gloo use for large buffers), Tree, ParameterServer — a
  /// lab swaps them and watches the step time (bench_ddp --algorithm). On DDP's 0.9 MiB bucket
  /// at 2 ranks here, ring and MPI_Allreduce take the same time (bench/bench_ddp.cpp). Every
  /// rank must pass the same value (checked at construction). PyTorch's counterpart is a
  /// communication hook (DistributedDataParallel.register_comm_hook).
  Algorithm algorithm = Algorithm::MPI;
  /// If set: one event per bucket all-reduce (comm thread) and per finalize (main thread).
  std::shared_ptr<Trace> trace = nullptr;
  /// World size 1 normally skips the buckets (there is nothing to average). True: gradients
  /// still go through them (copy into the bucket, all-reduce, copy back), as on N ranks. NCCL
  /// refuses two ranks on one GPU ("Duplicate GPU detected"), so this is how a one-GPU machine
  /// runs DDP's CUDA/NCCL bucket path. Test-only: no PyTorch
  /// analogue (PyTorch's Reducer always uses its buckets).
  bool force_bucket_path_single_rank = false;
  /// The ranks that hold replicas of this model and average their gradients (PyTorch's
  /// process_group argument); nullptr = the default group (every rank). With a DeviceMesh,
  /// mesh.get_group("dp"): the ranks that hold the same tensor-parallel shards. Only the group's
  /// members construct the wrapper; "rank 0" below is the group's first rank. Backend::MPI only
  /// (the NCCL communicator spans the whole world).
  std::shared_ptr<ProcessGroup> process_group = nullptr;
};

/// DistributedDataParallel (torch.nn.parallel.DistributedDataParallel) over MPI, or NCCL for a
/// model on this rank's GPU. The buckets live on the parameters' device (one device per module);
/// with CUDA parameters and Backend::MPI each bucket is staged through host memory around its
/// all-reduce. See the file comment for the algorithm (and reducer.hpp's for backward).
///   module: the replica on this rank; registered as the child "module", so named_parameters()
///           of the wrapper are "module.<name>" (as PyTorch's state_dict keys).
/// Throws tinytorch::Error: parameters on more than one device, or on CUDA in a build without
/// CUDA; process group not initialised; MPI without MPI_THREAD_MULTIPLE
/// (world size > 1); a model that differs across ranks (the same message on every rank);
/// a module without parameters that require grad; bucket_cap_mb <= 0.
class DistributedDataParallel : public nn::Module {
 public:
  explicit DistributedDataParallel(std::shared_ptr<nn::Module> module, DDPOptions options = {})
      : module_(std::move(module)), options_(std::move(options)) {
    detail::require_initialized("DistributedDataParallel");
    ProcessGroup& main_group = options_.process_group ? *options_.process_group : detail::default_group("DistributedDataParallel");
    detail::verify_options_across_ranks(main_group, module_ != nullptr, options_.algorithm, options_.first_bucket_mb,
                                        options_.bucket_cap_mb, options_.find_unused_parameters,
                                        options_.broadcast_buffers);
    detail::check(module_ != nullptr, "DistributedDataParallel: module is null");
    detail::check(options_.bucket_cap_mb > 0 && options_.first_bucket_mb > 0,  // false for NaN too
                  "DistributedDataParallel: bucket_cap_mb and first_bucket_mb must be positive, got ",
                  options_.bucket_cap_mb, " and ", options_.first_bucket_mb);
    const int algo = static_cast<int>(options_.algorithm);
    detail::check(algo >= static_cast<int>(Algorithm::MPI) && algo <= static_cast<int>(Algorithm::Tree),
                  "DistributedDataParallel: DDPOptions::algorithm has no such value (", algo, ")");
    register_module("module", module_);
    const auto& g = detail::group();
    auto reducer = std::make_shared<detail::Reducer>();
    reducer->rank = main_group.rank();
    reducer->world = main_group.size();
    reducer->main_pg = main_group.shared_from_this();
    reducer->find_unused = options_.find_unused_parameters;
    reducer->algorithm = options_.algorithm;
    reducer->trace = options_.trace;
    reducer->force_buckets = options_.force_bucket_path_single_rank;
    if (reducer->world > 1) require_thread_multiple("DistributedDataParallel (its communication thread)");

    // (1) the same model everywhere, (2) rank 0's values everywhere.
    const auto named_params = module_->named_parameters();
    const auto named_buffers = module_->named_buffers();
    detail::verify_across_ranks(main_group, named_params, "parameter");
    detail::verify_across_ranks(main_group, named_buffers, "buffer");
    detail::broadcast_from_rank0(main_group, named_params);
    detail::broadcast_from_rank0(main_group, named_buffers);
    buffers_ = module_->buffers();

    // Parameters that train, each once (a shared parameter appears under two names).
    std::unordered_set<const TensorImpl*> seen;
    for (const auto& [name, p] : named_params) {
      if (!p.requires_grad() || !seen.insert(p.impl()).second) continue;
      reducer->params.push_back(p);
      reducer->names.push_back(name);
    }
    detail::check(!reducer->params.empty(),
                  "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a "
                  "gradient.");
    // One device for every parameter (PyTorch's single-device module): the buckets live there.
    reducer->device = reducer->params.front().device();
    for (size_t i = 1; i < reducer->params.size(); ++i)
      detail::check(reducer->params[i].device() == reducer->device,
                    "DistributedDataParallel: expects all parameters of the module on one device, but \"",
                    reducer->names[0], "\" is on ", reducer->device.str(), " and \"", reducer->names[i], "\" on ",
                    reducer->params[i].device().str());
    ops::check_device(reducer->device, "DistributedDataParallel");
#if TINYTORCH_WITH_NCCL
    reducer->nccl = g.backend == Backend::NCCL && reducer->device.is_cuda();
    detail::check(!reducer->nccl || main_group.size() == g.world_size, detail::rank_prefix(),
                  "DistributedDataParallel: a process_group of some ranks needs Backend::MPI (the NCCL communicator "
                  "spans every rank)");
#else
    (void)g;
#endif

    // (3) buckets, reversed; contents buffers.
    const auto mib = [](double mb) {  // > 0 here; inf or huge = no limit (saturated, no overflow)
      const double bytes = mb * 1024.0 * 1024.0;
      return bytes >= 0x1p62 ? int64_t{1} << 62 : std::max<int64_t>(1, static_cast<int64_t>(bytes));
    };
    reducer->limits = {mib(options_.first_bucket_mb), mib(options_.bucket_cap_mb)};
    auto order = compute_bucket_assignment_by_size(reducer->params, reducer->limits);
    std::reverse(order.begin(), order.end());
    reducer->assign_buckets(order);
    const size_t n = reducer->params.size();
    reducer->ready.assign(n, 0);
    reducer->local_used.assign(n, 0);
    reducer->global_used.assign(n, 0);

    // (4) the readiness hooks (weak: they do nothing once this wrapper is gone).
    std::weak_ptr<detail::Reducer> weak = reducer;
    for (size_t i = 0; i < n; ++i) {
      reducer->params[i].register_post_accumulate_grad_hook([weak, i](Tensor&) {
        if (auto s = weak.lock()) s->on_grad_ready(i);
      });
    }

    // The communication thread and its communicator (nothing below throws after the thread starts).
    // (World size 1 with force_bucket_path_single_rank: a group of one, the same thread.)
    if (reducer->use_buckets()) {
      reducer->pg = detail::duplicate_group(main_group, "DistributedDataParallel buckets");
      reducer->comm = std::make_unique<detail::CommThread>();
    }
    reducer_ = std::move(reducer);
    if (get_debug_level() != DebugLevel::OFF) {  // INFO and DETAIL: what the buckets are
      std::string line = detail::rank_prefix() + "DistributedDataParallel: " +
                         std::to_string(reducer_->params.size()) + " parameters in " +
                         std::to_string(reducer_->buckets.size()) + " buckets (MiB:";
      char mib[32];
      for (int64_t bytes : bucket_bytes()) {
        std::snprintf(mib, sizeof mib, " %.2f", static_cast<double>(bytes) / (1 << 20));
        line += mib;
      }
      std::cerr << line + "), reduced in that order; rebuilt once in gradient-arrival order after the first "
                          "backward\n"
                << std::flush;
    }
  }

  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  ~DistributedDataParallel() override {
    if (!reducer_) return;
    auto& reducer = *reducer_;
    // The thread finishes its queue and is joined (or, an exception unwinding while a collective
    // is still queued or running, let go: another rank may never join it; comm_thread.hpp).
    if (!reducer.comm || !reducer.comm->shutdown()) return;
    // DETAIL: the ranks agree that they end this DDP after the same number of iterations (a rank
    // that trained fewer steps meets the others' next forward here, an error on every rank).
    try {
      reducer.pg->check_same_point("the end of a DistributedDataParallel", detail::OpType::DDP_END,
                                   training_forwards_);
    } catch (const std::exception& e) {
      abort_job(e.what());  // a destructor cannot throw, and the other ranks would wait forever
    }
  }

  /// Runs the wrapped module (see the file comment for what happens around it).
  /// x: whatever the module takes; returns its output. Throws (PyTorch's messages, on the rank
  /// at fault):
  ///  * "Expected to have finished reduction in the prior iteration" when the previous backward
  ///    left a parameter without gradient (and find_unused_parameters is off), as PyTorch; and,
  ///    unlike PyTorch, when the previous grad-mode forward outside no_sync was skipped: no
  ///    backward reached its output and the output is gone (nothing can backpropagate through
  ///    it any more). PyTorch 1.13 accepts that; but a rank that skips the backward its peers
  ///    run then has its next backward averaged with their previous one, and every rank waits at
  ///    the end until the timeout (checked with gloo on 2 ranks: tests/interop/
  ///    ddp_torch_probe.py). Here that rank fails at once, and its abort ends the job in seconds.
  ///    So a forward that is not followed by backward (evaluation, a loss printed twice) must
  ///    run under NoGradGuard, as PyTorch recommends anyway. Forwards whose outputs are still
  ///    alive are not refused: two forwards and one backward through both (a siamese network,
  ///    ddp(ddp(x))) work as in PyTorch. (A skipped rank that keeps the dropped iteration's loss
  ///    in a variable until after the next forward is not seen here; DETAIL still catches it.)
  ///  * Through the output's backward: "Expected to mark a variable ready only once" when a
  ///    second backward reaches the output of a forward whose reduction finished
  ///    (retain_graph=true, or two losses of one forward). PyTorch 1.13 raises it only when the
  ///    first backward's reduction was unfinished, and otherwise lets .grad become the average
  ///    plus the local gradient. Several backwards through one forward are legal inside
  ///    no_sync() (local accumulation; the next synced backward reduces the sum); tinytorch has
  ///    no static_graph mode, PyTorch's other exception. Not checked when the module's output
  ///    is one of its parameters itself (a hook on it would stay for every later forward).
  Tensor forward(const Tensor& x) override {
    auto& reducer = *reducer_;
    if (GradMode::is_enabled()) {
      const bool skipped_backward = reducer.ensure_prior_reduction_finished();
      // TINYTORCH_DISTRIBUTED_DEBUG=DETAIL: every rank must be at its n-th training forward, on
      // DDP's own group, where the others' bucket all-reduces run: a rank that skipped a
      // backward, or runs one forward more (a probe: run it under NoGradGuard), meets another
      // rank's all-reduce, or the end of its DDP (destructor), and every rank gets the error.
      ++training_forwards_;
      if (reducer.world > 1)
        reducer.pg->check_same_point("DistributedDataParallel forward", detail::OpType::DDP_FORWARD,
                                     training_forwards_);
      // Without DETAIL: the rank that skipped its backward raises here, at once (its abort ends
      // the others' wait in the all-reduce it never joined).
      if (skipped_backward) reducer.throw_skipped_backward();
      reducer.rebuild_buckets();  // once, after the first complete backward
    }
    if (options_.broadcast_buffers && reducer.world > 1 && !buffers_.empty()) {
      std::vector<std::pair<std::string, Tensor>> b;
      for (const Tensor& t : buffers_) b.emplace_back("", t);
      detail::broadcast_from_rank0(*reducer.main_pg, b);
    }
    Tensor out = module_->forward(x);
    if (GradMode::is_enabled() && require_backward_grad_sync_) reducer.prepare_for_backward(out, reducer_);
    return out;
  }

  /// RAII guard returned by no_sync(): gradient synchronisation off until destroyed.
  using NoSyncGuard = detail::NoSyncGuard;

  /// Gradient accumulation (PyTorch's `with ddp.no_sync():`): forwards (and their backwards)
  /// made while the returned guard lives accumulate .grad locally; the first synced
  /// forward+backward afterwards all-reduces the accumulated sum. The forward must be inside.
  ///   { auto guard = ddp.no_sync(); loss_fn(ddp(x1), y1).backward(); }   // local
  ///   loss_fn(ddp(x2), y2).backward();                                   // syncs g1 + g2
  NoSyncGuard no_sync() { return NoSyncGuard(require_backward_grad_sync_); }

  /// Checks that the last synced backward finished its reduction; throws the "Expected to have
  /// finished reduction" error otherwise (what the next forward would throw). Useful after the
  /// last iteration. A backward that completes finalizes itself, so this is normally a no-op.
  void finalize() {
    auto& reducer = *reducer_;
    if (reducer.expect_hooks && reducer.require_finalize) reducer.ensure_prior_reduction_finished();
  }

  /// PyTorch's DistributedDataParallel.register_comm_hook(state, hook): from the next backward
  /// on, DDP hands each bucket to hook(state, bucket) instead of reducing it itself (divide by N,
  /// all-reduce SUM). The hook gets a GradBucket whose buffer() is *not* divided by the world
  /// size and returns the reduced (numel,) tensor (its bucket's buffer, or a tensor that is copied
  /// into it); DDP then writes the slices into .grad as usual. The built-in hooks are in
  /// dist::default_hooks (allreduce_hook, fp16_compress_hook, bf16_compress_hook; their state is a
  /// std::shared_ptr<ProcessGroup>, nullptr = the group DDP reduces on).
  ///   ddp->register_comm_hook(nullptr, dist::default_hooks::fp16_compress_hook);
  ///   ddp->register_comm_hook(my_state, [](MyState& s, dist::GradBucket& b) { ...; return b.buffer(); });
  /// `hook` is called as hook(state, bucket) with a copy of `state` kept here (pass a pointer or a
  /// shared_ptr for state the caller must see).
  /// Where tinytorch differs from PyTorch: the hook returns the tensor itself, not a Future of it;
  /// it runs on DDP's communication thread (the last bucket's on the main thread), so a hook that
  /// blocks in its all-reduce still overlaps with backward, as the Future does in PyTorch. A
  /// collective on DDP's group: every rank must call it, with the same built-in hook (a custom
  /// hook cannot be compared and is trusted to be the same). At world size 1 nothing is reduced
  /// and the hook is not called (PyTorch runs it on its one rank).
  /// Throws tinytorch::Error (on every rank): a second registration (PyTorch's "register_comm_hook
  /// or register_builtin_comm_hook can only be called once."), a call between a synced forward and
  /// the end of its backward, different built-in hooks on different ranks, DDPOptions::algorithm
  /// other than MPI (both would decide how a bucket is reduced), CUDA buckets on Backend::NCCL (not
  /// implemented: the hook's collectives would need NCCL's stream ordering).
  template <typename State, typename Hook>
  void register_comm_hook(State state, Hook hook) {
    int64_t id = 4;  // a custom hook
    if constexpr (std::is_convertible_v<Hook, Tensor (*)(std::shared_ptr<ProcessGroup>, GradBucket&)>) {
      Tensor (*f)(std::shared_ptr<ProcessGroup>, GradBucket&) = hook;
      id = f == &default_hooks::allreduce_hook        ? 1
           : f == &default_hooks::fp16_compress_hook ? 2
           : f == &default_hooks::bf16_compress_hook ? 3
                                                      : 4;
    }
    install_comm_hook([state = std::move(state), hook = std::move(hook)](GradBucket& b) mutable {
      return hook(state, b);
    }, id);
  }

  /// The wrapped module (PyTorch's ddp.module). Calling its forward directly skips DDP: no
  /// gradient synchronisation.
  const std::shared_ptr<nn::Module>& module() const { return module_; }
  const DDPOptions& options() const { return options_; }
  int rank() const { return reducer_->rank; }
  int world_size() const { return reducer_->world; }

  /// The buckets in reduction order: indices into parameter_names()'s numbering (parameters
  /// that require grad, registration order). From the second forward on: the rebuilt buckets.
  std::vector<std::vector<size_t>> bucket_indices() const {
    std::vector<std::vector<size_t>> out;
    for (const auto& b : reducer_->buckets) out.push_back(b.params);
    return out;
  }
  /// Bytes of each bucket, in reduction order.
  std::vector<int64_t> bucket_bytes() const {
    std::vector<int64_t> out;
    for (const auto& b : reducer_->buckets) out.push_back(b.numel * static_cast<int64_t>(element_size(b.dtype)));
    return out;
  }
  /// Names (inside the wrapped module) of the parameters DDP synchronises, in registration order.
  const std::vector<std::string>& parameter_names() const { return reducer_->names; }
  /// Timeline of the last completed synced backward (valid only with world size > 1).
  const DDPIterationStats& last_iteration_stats() const { return reducer_->last_stats; }

  std::string name() const override { return "DistributedDataParallel"; }

 private:
  /// register_comm_hook's checks (the file comment of reducer.hpp: all ranks agree) and install.
  void install_comm_hook(CommHook hook, int64_t id) {
    auto& reducer = *reducer_;
    ProcessGroup& g = *reducer.main_pg;
    const char* op = "DistributedDataParallel::register_comm_hook";
    detail::throw_if_any_rank(g, static_cast<bool>(reducer.comm_hook),
                              "register_comm_hook or register_builtin_comm_hook can only be called once.", op);
    detail::throw_if_any_rank(g, reducer.expect_hooks,
                              ::tinytorch::detail::str_cat(op, ": called between a synced forward and the end of "
                                                           "its backward; register the hook before training"),
                              op);
    static const char* const names[] = {"", "allreduce_hook", "fp16_compress_hook", "bf16_compress_hook",
                                        "a custom hook"};
    if (g.size() > 1) {
      std::vector<int64_t> ids(static_cast<size_t>(g.size()));
      g.all_gather(ids.data(), &id, 1, kInt64, Completion::Blocking, op);
      for (int r = 1; r < g.size(); ++r)
        detail::check(ids[static_cast<size_t>(r)] == ids[0], op, ": every rank must register the same hook, but rank 0 registers ",
                      names[ids[0]], " and rank ", r, " ", names[ids[static_cast<size_t>(r)]]);
    }
    detail::check(options_.algorithm == Algorithm::MPI, op, ": DDPOptions::algorithm is ",
                  algorithm_name(options_.algorithm),
                  "; a communication hook replaces the algorithm (both decide how a bucket is reduced): keep "
                  "Algorithm::MPI, or call ring_all_reduce etc. inside the hook");
    detail::check(!reducer.nccl, op, ": communication hooks on CUDA buckets with Backend::NCCL are not implemented; "
                  "use Backend::MPI (the buckets are staged through host memory)");
    reducer.comm_hook = std::move(hook);
  }

  std::shared_ptr<nn::Module> module_;
  DDPOptions options_;
  std::vector<Tensor> buffers_;
  bool require_backward_grad_sync_ = true;
  int64_t training_forwards_ = 0;  ///< grad-enabled forwards so far (the DETAIL check compares them)
  std::shared_ptr<detail::Reducer> reducer_;
};

}  TT_NAMESPACE_END  // namespace tinytorch::distributed

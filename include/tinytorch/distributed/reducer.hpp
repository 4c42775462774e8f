// tinytorch/distributed/reducer.hpp — DDP's Reducer (PyTorch's name, and its structure):
// gradients packed into buckets, a hook per parameter that says "this .grad is final", and a
// communication thread that all-reduces each bucket as soon as its last gradient arrived, while
// backward continues. DistributedDataParallel (ddp.hpp) owns one Reducer.
//
// Construction (steps 3-4 of DDP's constructor; 0-2 are model_agreement.hpp's):
//   3. buckets (compute_bucket_assignment_by_size): the parameters that require grad, in
//      registration order, one open bucket per dtype, closed at 1 MiB (the first) or bucket_cap_mb
//      (25 MiB), then listed in reverse (bucket 0: the last layers, whose gradients come first);
//      each owns one flat buffer `contents`. The first synced backward records the order in which
//      gradients arrive, and the next forward rebuilds the buckets once in that order (rank 0's).
//   4. register_post_accumulate_grad_hook on every parameter.
// One backward (armed by a synced forward, prepare_for_backward):
//   hook(i)   copy .grad / N into its bucket slice (copy_into_bucket); a bucket whose last gradient
//             arrived is all-reduced (SUM) on the communication thread (comm_thread.hpp), strictly
//             in bucket order, on the Reducer's own process group (a duplicate communicator: never
//             matched against the main thread's collectives): sum_r g_r,i / N, the average.
//   finalize  the hook of the last parameter waits for the earlier buckets, all-reduces the last
//             one itself, and copies the averages into .grad (write_average). Every AccumulateGrad
//             runs once per backward, so no gradient changes after it.
// find_unused_parameters marks the parameters forward cannot reach as ready (zeros, or .grad
// from no_sync steps) and all-reduces a "used" map; without it, a parameter that got no gradient
// makes the next forward throw PyTorch's "Expected to have finished reduction in the prior
// iteration". Communication hooks (register_comm_hook) reduce an undivided bucket where the
// all-reduce would be (run_comm_hook); 16-bit buckets sum in 16 bits, rounding after each hop.
// CUDA parameters keep their buckets on the device (chapter 06, 6.6). Shapes: buckets are 1-D, of
// the parameters' dtype; parameter i is contents[offset_i, offset_i + numel_i) in its own shape.
// Chapter: chapters/06-distributed-data-parallel.md (6.5, 6.6, 6.10); hooks and 16-bit buckets:
// chapters/11-mixed-precision.md (11.7). Reference: PyTorch's torch/csrc/distributed/c10d/
// reducer.cpp (mark_variable_ready, finalize_backward, ...) and comm.hpp (GradBucket).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tinytorch/autograd/grad_mode.hpp"
#include "tinytorch/autograd/node.hpp"
#include "tinytorch/core/dtype.hpp"
#include "tinytorch/functional.hpp"
#include "tinytorch/distributed/algorithms.hpp"
#include "tinytorch/distributed/comm_thread.hpp"
#include "tinytorch/distributed/device_staging.hpp"
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/model_agreement.hpp"
#include "tinytorch/distributed/mpi_include.hpp"
#include "tinytorch/distributed/nccl.hpp"  // (empty unless TINYTORCH_WITH_NCCL)
#include "tinytorch/distributed/process_group.hpp"
#include "tinytorch/distributed/trace.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed {

// =============================================================================================
// Bucket assignment
// =============================================================================================

/// PyTorch's compute_bucket_assignment_by_size (reducer.cpp), dense tensors on one device.
/// Walks `tensors` in order; keeps one open bucket per dtype; appends each tensor and adds its
/// bytes; once the bucket's bytes reach the current limit (>=), closes it and moves that dtype
/// to the next limit (the last limit repeats). Leftover open buckets are appended; the result
/// is sorted by each bucket's smallest index (unless sort_by_first_index is false: then buckets
/// stay in the order they were closed, which DDP's rebuild uses). Indices inside a bucket are
/// ascending.
///   e.g. sizes 0.5, 0.75, 10, 20, 3 MiB with limits {1 MiB, 25 MiB} -> {0,1}, {2,3}, {4}
/// DDP uses the reversed list (bucket 0 = the last-registered parameters).
/// Throws tinytorch::Error if `limits` is empty or holds a non-positive entry.
inline std::vector<std::vector<size_t>> compute_bucket_assignment_by_size(const std::vector<Tensor>& tensors,
                                                                          const std::vector<int64_t>& limits,
                                                                          bool sort_by_first_index = true) {
  detail::check(!limits.empty(), "compute_bucket_assignment_by_size: expected at least one size limit");
  for (int64_t l : limits)
    detail::check(l > 0, "compute_bucket_assignment_by_size: size limits must be positive, got ", l);
  struct Open {
    std::vector<size_t> indices;
    int64_t bytes = 0;
    size_t limit_index = 0;
  };
  std::map<int, Open> open;  // key: dtype
  std::vector<std::vector<size_t>> result;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    Open& b = open[static_cast<int>(t.dtype())];
    b.indices.push_back(i);
    b.bytes += t.numel() * static_cast<int64_t>(element_size(t.dtype()));
    if (b.bytes >= limits[b.limit_index]) {
      result.push_back(std::move(b.indices));
      b.indices.clear();
      b.bytes = 0;
      if (b.limit_index + 1 < limits.size()) ++b.limit_index;
    }
  }
  for (auto& [key, b] : open)
    if (!b.indices.empty()) result.push_back(std::move(b.indices));
  if (sort_by_first_index)
    std::sort(result.begin(), result.end(),
              [](const std::vector<size_t>& a, const std::vector<size_t>& b) { return a.front() < b.front(); });
  return result;
}

/// Timeline of one synced backward (steady_us() values), for benchmarks and traces.
struct DDPIterationStats {
  struct Bucket {
    int64_t bytes = 0;
    double ready_us = 0;  ///< its last gradient arrived (main thread)
    double start_us = 0;  ///< its all-reduce started (comm thread, or main thread for the last)
    double end_us = 0;    ///< ... and left it
  };
  std::vector<Bucket> buckets;
  double first_grad_us = 0;      ///< the first hook of the backward
  double last_grad_us = 0;       ///< the last bucket became ready: backward's compute is done
  double finalize_end_us = 0;    ///< averaged gradients written back
  bool valid = false;            ///< a synced backward completed (world size > 1)

  /// Total time spent in bucket all-reduces (comm thread; the last bucket on the main thread).
  double allreduce_us() const {
    double s = 0;
    for (const Bucket& b : buckets) s += b.end_us - b.start_us;
    return s;
  }
  /// The part of allreduce_us() that ran before the last gradient was ready, i.e. hidden behind
  /// backward's computation.
  double hidden_us() const {
    double s = 0;
    for (const Bucket& b : buckets) s += std::max(0.0, std::min(b.end_us, last_grad_us) - b.start_us);
    return s;
  }
  /// Time from the last gradient to the written-back averages: what overlap could not hide.
  double exposed_us() const { return finalize_end_us - last_grad_us; }
};

// =============================================================================================
// GradBucket: what a communication hook sees
// =============================================================================================

/// One bucket, handed to a communication hook (PyTorch's torch.distributed.GradBucket).
/// buffer(): the flat (numel,) tensor of the bucket's gradients, concatenated in slot order, on
/// the parameters' device and in their dtype, *not* divided by the world size (with a hook, the
/// hook averages). gradients(): views of buffer() shaped as each parameter. parameters(): the
/// parameters, in the same order. index(): 0 = the first bucket reduced. is_last(): the last
/// bucket of the backward (PyTorch: index() == 0 of the reversed order; the same bucket).
class GradBucket {
 public:
  GradBucket(size_t index, bool is_last, Tensor buffer, std::vector<Tensor> parameters,
             std::vector<int64_t> offsets, ProcessGroup* group)
      : index_(index), is_last_(is_last), buffer_(std::move(buffer)), parameters_(std::move(parameters)),
        offsets_(std::move(offsets)), group_(group) {}
  size_t index() const { return index_; }
  bool is_last() const { return is_last_; }
  const Tensor& buffer() const { return buffer_; }
  const std::vector<Tensor>& parameters() const { return parameters_; }
  std::vector<Tensor> gradients() const {
    std::vector<Tensor> out;
    for (size_t s = 0; s < parameters_.size(); ++s)
      out.push_back(buffer_.narrow(0, offsets_[s], parameters_[s].numel()).view(parameters_[s].sizes()));
    return out;
  }
  /// tinytorch: the group DDP reduces its buckets on, the group a hook with no state of its own
  /// uses (the ranks of DDPOptions::process_group, or all, on a communicator of DDP's own so that
  /// the hook, which runs on DDP's communication thread, never meets the main thread's
  /// collectives). PyTorch's hooks fall back to dist.group.WORLD instead.
  ProcessGroup& process_group() const { return *group_; }

 private:
  size_t index_;
  bool is_last_;
  Tensor buffer_;
  std::vector<Tensor> parameters_;
  std::vector<int64_t> offsets_;
  ProcessGroup* group_;
};

/// A communication hook with its state bound: returns the reduced bucket, a (numel,) tensor
/// (PyTorch's hooks return a Future of it; see DistributedDataParallel::register_comm_hook).
using CommHook = std::function<Tensor(GradBucket&)>;

// =============================================================================================
// Reducer
// =============================================================================================

namespace detail {

/// PyTorch's Reducer: the buckets and everything the hooks and the communication thread share;
/// owned by the DDP object (the hooks hold weak pointers, so a parameter that outlives its DDP
/// wrapper just stops syncing). See the file comment for the algorithm.
struct Reducer : std::enable_shared_from_this<Reducer> {
  struct Bucket {
    std::vector<size_t> params;     ///< indices into Reducer::params, ascending
    std::vector<int64_t> offsets;   ///< element offset of each of them in contents
    int64_t numel = 0;
    DType dtype = kFloat32;
    Tensor contents;                ///< (numel,) the flat buffer that is all-reduced, on the
                                    ///< parameters' device
    std::vector<char> host;         ///< MPI backend, CUDA bucket: the host staging buffer
#if TINYTORCH_WITH_NCCL
    std::shared_ptr<NcclEvents> events;  ///< NCCL: ready (compute stream) / done (NCCL stream)
#endif
    size_t pending = 0;             ///< parameters not yet ready in this backward
  };

  int rank = 0;
  int world = 1;
  Device device = Device::cpu();    ///< where the parameters (and so the buckets) live
  bool force_buckets = false;       ///< DDPOptions::force_bucket_path_single_rank
  bool nccl = false;                ///< buckets all-reduced by NCCL (Backend::NCCL, CUDA buckets)

  /// Gradients go through the buckets: always with several ranks; at world size 1 only when
  /// forced (the one-GPU check of the CUDA/NCCL path; otherwise there is nothing to average).
  bool use_buckets() const { return world > 1 || force_buckets; }
  std::vector<Tensor> params;       ///< requires_grad parameters, registration order, deduplicated
  std::vector<std::string> names;   ///< their dotted names inside the wrapped module
  std::vector<size_t> bucket_of;    ///< param -> bucket
  std::vector<size_t> slot_of;      ///< param -> position inside its bucket
  std::vector<Bucket> buckets;      ///< in reduction order (bucket 0 first)
  bool find_unused = false;
  Algorithm algorithm = Algorithm::MPI;
  std::shared_ptr<Trace> trace;
  std::vector<int64_t> limits;      ///< bucket size limits in bytes: {first bucket, cap}
  CommHook comm_hook;               ///< register_comm_hook's (empty: divide by N, all-reduce SUM)
  bool rebuilt = false;             ///< buckets already rebuilt in gradient-arrival order
  std::vector<size_t> arrival;      ///< the order the hooks readied params (until rebuilt)

  // ---- per-iteration state, main thread only -------------------------------------------------
  bool expect_hooks = false;        ///< armed by a synced, grad-enabled forward
  bool require_finalize = false;    ///< a hook fired since the forward armed them
  bool expect_backward = false;     ///< armed by a forward whose output requires grad
  uint64_t generation = 0;          ///< synced forwards so far (the output hook's "which one")
  uint64_t finalized = 0;           ///< the last generation whose reduction finished
  uint64_t reached = 0;             ///< the last generation whose output a backward reached
  std::weak_ptr<autograd::Node> armed_output;  ///< the armed forward's output's grad_fn
  std::vector<char> ready;          ///< param marked ready in this backward
  std::vector<size_t> unused;       ///< find_unused: params unreachable from the output
  std::vector<int64_t> local_used;  ///< find_unused: used in a backward since the last sync
  std::vector<int64_t> global_used; ///< ... summed over ranks
  size_t next_bucket = 0;           ///< the next bucket to launch (strict order)
  DDPIterationStats stats;          ///< the backward in progress / the last one
  DDPIterationStats last_stats;

  // ---- communication thread -----------------------------------------------------------------
  std::shared_ptr<ProcessGroup> main_pg;  ///< DDPOptions::process_group, or the default group
  std::shared_ptr<ProcessGroup> pg; ///< a duplicate of main_pg ("DistributedDataParallel buckets"): DDP's
                                    ///< all-reduces only (comm thread, or main once it is idle)
  std::unique_ptr<CommThread> comm;  ///< runs the bucket all-reduces (comm_thread.hpp); null: no buckets

  /// (Re)creates the buckets: order[b] = the params of bucket b, in their slice order.
  void assign_buckets(const std::vector<std::vector<size_t>>& order) {
    buckets.clear();
    bucket_of.assign(params.size(), 0);
    slot_of.assign(params.size(), 0);
    for (size_t b = 0; b < order.size(); ++b) {
      Bucket bucket;
      bucket.params = order[b];
      bucket.dtype = params[bucket.params.front()].dtype();
      for (size_t s = 0; s < bucket.params.size(); ++s) {
        const size_t i = bucket.params[s];
        bucket_of[i] = b;
        slot_of[i] = s;
        bucket.offsets.push_back(bucket.numel);
        bucket.numel += params[i].numel();
      }
      if (use_buckets()) {  // on the parameters' device; zeroed there (no host write to a GPU)
        bucket.contents = empty({bucket.numel}, TensorOptions(bucket.dtype).device(device));
        zero_fill(device, bucket.contents.raw_data(), bucket.numel, bucket.dtype);
        if (!device.is_cpu() && !nccl)
          bucket.host.resize(static_cast<size_t>(bucket.numel) * element_size(bucket.dtype));
#if TINYTORCH_WITH_NCCL
        if (nccl) {
          backend::cuda::detail::ScopedDevice on(device.index);
          bucket.events = std::make_shared<NcclEvents>();
        }
#endif
      }
      buckets.push_back(std::move(bucket));
    }
  }

  /// PyTorch's _rebuild_buckets: once, at the first forward after a complete synced backward
  /// (not with find_unused_parameters), the buckets are recomputed from the order in which the
  /// gradients actually arrived (rank 0's order, broadcast), without sorting: bucket 0 = the
  /// first gradients, limits {first bucket, cap}. Registration order only approximates that
  /// order (a layer's bias is registered before the next layer's weight but arrives after it),
  /// so the rebuilt buckets can start earlier. Called by forward with grad mode on, when the
  /// communication thread is idle; a collective on the default group when world size > 1.
  void rebuild_buckets() {
    if (rebuilt || find_unused || arrival.size() != params.size()) return;
    rebuilt = true;
    std::vector<int64_t> order(arrival.begin(), arrival.end());
    if (world > 1) order = broadcast_ints(*main_pg, order, 0);
    std::vector<Tensor> ordered;
    for (int64_t i : order) ordered.push_back(params[static_cast<size_t>(i)]);
    std::vector<std::vector<size_t>> groups = compute_bucket_assignment_by_size(ordered, limits, false);
    for (auto& g : groups)
      for (size_t& k : g) k = static_cast<size_t>(order[k]);
    assign_buckets(groups);
    arrival.clear();
  }

  /// Blocks until every bucket all-reduce on the communication thread has completed; rethrows
  /// the first error (once).
  void wait_all() {
    if (comm) comm->wait_all();
  }

  // ---- one backward ---------------------------------------------------------------------------

  /// Called by a synced forward in grad mode: arm the hooks for one backward. A hook on the
  /// output (run by every backward that reaches it, before any parameter's gradient) refuses a
  /// second backward through this forward once its reduction finished: PyTorch's "Expected to
  /// mark a variable ready only once" (PyTorch itself only raises it when the first backward
  /// left the reduction unfinished; after a finished one it ignores the hooks and .grad silently
  /// becomes the average plus this rank's local gradient).
  /// (A module whose output is one of its own parameters gets no such hook: a hook on a
  /// parameter would stay on it for every later forward.)
  void prepare_for_backward(const Tensor& output, const std::weak_ptr<Reducer>& self) {
    expect_hooks = true;
    const uint64_t gen = ++generation;
    expect_backward = output.defined() && output.requires_grad() && output.grad_fn();
    armed_output.reset();
    if (expect_backward) {
      armed_output = output.grad_fn();
      output.register_hook([self, gen](const Tensor&) {
        auto r = self.lock();
        if (!r) return Tensor();
        if (gen <= r->finalized) r->throw_second_backward();
        r->reached = std::max(r->reached, gen);
        return Tensor();
      });
    }
    arrival.clear();
    require_finalize = false;
    std::fill(ready.begin(), ready.end(), 0);
    next_bucket = 0;
    for (Bucket& b : buckets) b.pending = b.params.size();
    stats = DDPIterationStats{};
    stats.buckets.resize(buckets.size());
    for (size_t b = 0; b < buckets.size(); ++b)
      stats.buckets[b].bytes = buckets[b].numel * static_cast<int64_t>(element_size(buckets[b].dtype));
    unused.clear();
    if (!find_unused) return;
    // Every node reachable from the output; a parameter is used iff its AccumulateGrad is.
    std::unordered_set<const autograd::Node*> seen;
    std::vector<autograd::Node*> stack;
    if (output.defined() && output.requires_grad()) {
      std::shared_ptr<autograd::Node> root = output.grad_fn();
      if (!root) root = output.impl()->grad_accumulator.lock();  // the output is a parameter itself
      if (root) {
        seen.insert(root.get());
        stack.push_back(root.get());
      }
    }
    while (!stack.empty()) {
      autograd::Node* n = stack.back();
      stack.pop_back();
      for (const autograd::Edge& e : n->next_edges)
        if (e.fn && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
    for (size_t i = 0; i < params.size(); ++i) {
      std::shared_ptr<autograd::Node> acc = params[i].impl()->grad_accumulator.lock();
      if (!acc || seen.count(acc.get()) == 0) unused.push_back(i);
    }
  }

  /// The post-accumulate-grad hook of parameter i.
  void on_grad_ready(size_t i) {
    if (find_unused) local_used[i] = 1;  // also inside no_sync: used in any micro-step counts
    if (!expect_hooks) return;           // no_sync, or a forward that bypassed the wrapper
    if (!require_finalize) {
      require_finalize = true;
      stats.first_grad_us = Trace::steady_us();
      // find_unused_parameters: the parameters the forward did not reach will get no hook.
      for (size_t u : unused) mark_variable_ready(u);
    }
    mark_variable_ready(i);
  }

  void mark_variable_ready(size_t i) {
    if (ready[i]) {
      detail::throw_error(::tinytorch::detail::str_cat(
          "DistributedDataParallel: Expected to mark a variable ready only once. This error is "
          "caused by one of the following reasons: 1) Use of a module parameter outside the `forward` function. "
          "2) Reused parameters in multiple reentrant backward passes, or the same module run in two backward "
          "passes before the first one's reduction finished. Parameter index ", i, " (\"", names[i],
          "\") has been marked as ready twice."));
    }
    ready[i] = 1;
    if (!rebuilt) arrival.push_back(i);
    Bucket& b = buckets[bucket_of[i]];
    if (use_buckets()) copy_into_bucket(i, b);
    if (--b.pending == 0) {
      stats.buckets[bucket_of[i]].ready_us = Trace::steady_us();
      // Launch every ready bucket at the head of the order: all ranks launch the same sequence.
      while (next_bucket < buckets.size() && buckets[next_bucket].pending == 0) {
        if (next_bucket + 1 == buckets.size()) stats.last_grad_us = Trace::steady_us();  // all grads ready
        launch(next_bucket++);
      }
      if (next_bucket == buckets.size()) finalize_backward();
    }
  }

  /// slice <- .grad / world (or zeros when the parameter has no gradient). Dividing while
  /// copying, as PyTorch's mark_variable_ready does, saves a pass over the averaged result: the
  /// all-reduce (SUM) of the g_r / N is the average. For N a power of two the division is a
  /// multiply by the exact 1/N (the same correctly rounded number, several times cheaper).
  /// On CUDA parameters both are device operations (a kernel on the compute stream:
  /// device_staging.hpp's scale_copy / zero_fill); the gradient never visits the host.
  void copy_into_bucket(size_t i, Bucket& b) {
    const size_t slot = slot_of[i];
    const int64_t n = params[i].numel();
    char* dst = static_cast<char*>(b.contents.raw_data()) +
                static_cast<size_t>(b.offsets[slot]) * element_size(b.dtype);
    Tensor g = params[i].grad();
    if (!g.defined()) {
      zero_fill(device, dst, n, b.dtype);
      return;
    }
    NoGradGuard no_grad;
    if (g.dtype() != b.dtype || !g.is_contiguous()) g = g.to(b.dtype).contiguous();
    check(g.device() == device, "DistributedDataParallel: the gradient of parameter \"", names[i], "\" is on ",
          g.device().str(), " but the parameter is on ", device.str());
    if (comm_hook) {  // the hook averages (PyTorch: buckets are not predivided with a hook)
      copy_bytes(device, dst, g.raw_data(), static_cast<size_t>(n) * element_size(b.dtype));
    } else if (is_reduced_floating_point(b.dtype)) {  // g / N computed in float32, rounded once
      const Tensor q = g.div(static_cast<int64_t>(world));
      copy_bytes(device, dst, q.raw_data(), static_cast<size_t>(n) * element_size(b.dtype));
    } else {
      scale_copy(device, dst, g.raw_data(), n, b.dtype, world);
    }
  }

  /// Starts bucket bi's all-reduce. Buckets before the last go to the communication thread and
  /// overlap with the rest of backward. The last bucket has nothing left to overlap with, so the
  /// main thread, which would only wait, runs it itself: first it waits until the thread has
  /// finished the earlier buckets (collectives on one communicator must be issued in the same
  /// order on every rank, and by one thread at a time), then calls MPI_Allreduce. This saves a
  /// thread hand-off per step, and a one-bucket model never involves the thread at all.
  void launch(size_t bi) {
    if (!use_buckets()) return;
#if TINYTORCH_WITH_NCCL
    if (nccl) {  // NCCL calls only enqueue work on the GPU: no communication thread needed
      all_reduce_bucket(bi, 0);
      return;
    }
#endif
    if (bi + 1 < buckets.size()) {
      // (the task holds the Reducer: a thread let go by ~DistributedDataParallel may still run it)
      comm->enqueue([self = shared_from_this(), bi] { self->all_reduce_bucket(bi, 1); });
    } else {
      wait_all();
      all_reduce_bucket(bi, 0);
    }
  }

  /// All-reduce (SUM) of bucket bi on DDP's process group with the chosen algorithm, timed;
  /// `tid` 1 = comm thread, 0 = main.
  void all_reduce_bucket(size_t bi, int tid) {
#if TINYTORCH_WITH_MPI
    Bucket& b = buckets[bi];
    const double t0 = Trace::steady_us();
#if TINYTORCH_WITH_NCCL
    if (nccl) {
      // The bucket on the GPU: ready[b] recorded on the compute stream after the hooks' copy
      // kernels, the NCCL stream waits for it and runs ncclAllReduce (SUM of the g_r / N),
      // done[b] recorded there; finalize_backward makes the compute stream wait for done[b].
      const NcclContext& ctx = group().nccl;
      const char* name = "DistributedDataParallel (NCCL bucket all-reduce)";
      nccl_ordered(ctx, name, *b.events, false, [&](cudaStream_t s) {
        nccl_check(ncclAllReduce(b.contents.raw_data(), b.contents.raw_data(), static_cast<size_t>(b.numel),
                                 nccl_datatype(b.dtype), ncclSum, ctx.comm, s),
                   "ncclAllReduce", name, ctx.comm);
      });
      stats.buckets[bi].start_us = t0;  // (enqueue times: the GPU runs it later)
      stats.buckets[bi].end_us = Trace::steady_us();
      return;
    }
#endif
    if (comm_hook) {
      run_comm_hook(bi);
    } else {
      reduce_bucket(b);
    }
    const double t1 = Trace::steady_us();
    stats.buckets[bi].start_us = t0;  // from the comm thread: read by the main thread after wait_all()
    stats.buckets[bi].end_us = t1;
    if (trace)
      trace->complete("all_reduce bucket " + std::to_string(bi), "comm", tid, t0, t1,
                      ::tinytorch::detail::str_cat("\"bucket\": ", bi, ", \"params\": ", b.params.size(),
                                                   ", \"bytes\": ", stats.buckets[bi].bytes));
#else
    (void)bi;
    (void)tid;
#endif
  }

  /// Without a hook: bucket <- SUM over ranks (it holds the g_r / N: the average), with
  /// DDPOptions::algorithm.
  void reduce_bucket(Bucket& b) {
    AlgorithmOptions ao;
    ao.group = pg.get();
    if (device.is_cpu()) {
      all_reduce(b.contents.raw_data(), b.numel, b.dtype, ReduceOp::SUM, algorithm, ao);
    } else {
      // The MPI backend moves host memory: stage the CUDA bucket through its host buffer
      // (runtime copies, ordered after the hook's kernels on the compute stream), as gloo does.
      const size_t bytes = b.host.size();
      copy_to_host(device, b.host.data(), b.contents.raw_data(), bytes);
      all_reduce(b.host.data(), b.numel, b.dtype, ReduceOp::SUM, algorithm, ao);
      copy_from_host(device, b.contents.raw_data(), b.host.data(), bytes);
    }
  }

  /// With a hook: bucket <- hook(GradBucket of bi), run on the thread that reduces bi (the
  /// communication thread, or the main thread for the last bucket). The result must have the
  /// bucket's numel and device; it is copied (converted to the bucket's dtype) unless it is the
  /// bucket's own buffer.
  void run_comm_hook(size_t bi) {
    Bucket& b = buckets[bi];
    std::vector<Tensor> ps;
    for (size_t i : b.params) ps.push_back(params[i]);
    GradBucket gb(bi, bi + 1 == buckets.size(), b.contents, std::move(ps), b.offsets, pg.get());
    NoGradGuard no_grad;
    const Tensor r = comm_hook(gb);
    check(r.defined() && r.numel() == b.numel && r.device() == device, rank_prefix(),
          "DistributedDataParallel: the communication hook must return a tensor of the bucket's ", b.numel,
          " elements on ", device.str(), " (bucket ", bi, "), got ",
          r.defined() ? ::tinytorch::detail::str_cat(r.numel(), " elements on ", r.device().str())
                      : std::string("an undefined tensor"));
    if (r.impl() != b.contents.impl()) b.contents.copy_(r.reshape({b.numel}));
  }

  /// All buckets launched (called from the hook that readied the last parameter): wait for the
  /// all-reduces, average, write .grad; disarm the hooks.
  void finalize_backward() {
    const double t0 = stats.last_grad_us;  // set by mark_variable_ready before the last launch
    expect_hooks = false;
    require_finalize = false;
    expect_backward = false;
    finalized = generation;
    wait_all();  // (already idle: launch() ran the last bucket on this thread after the others)
    if (find_unused && use_buckets()) all_reduce_used_map();
    if (use_buckets()) {
#if TINYTORCH_WITH_NCCL
      if (nccl)  // the compute stream waits (on the GPU) for every bucket's all-reduce
        for (const Bucket& b : buckets) nccl_join(group().nccl, "DistributedDataParallel (finalize)", *b.events);
#endif
      for (size_t bi = 0; bi < buckets.size(); ++bi) {
        const Bucket& b = buckets[bi];
        for (size_t s = 0; s < b.params.size(); ++s) {
          const size_t i = b.params[s];
          if (find_unused && global_used[i] == 0) continue;  // unused on every rank: untouched
          write_average(i, b, b.offsets[s]);
        }
      }
    }
    if (find_unused) std::fill(local_used.begin(), local_used.end(), 0);
    stats.finalize_end_us = Trace::steady_us();
    stats.valid = use_buckets();
    last_stats = stats;
    if (trace) trace->complete("finalize: last bucket, average, write .grad", "comm", 0, t0, stats.finalize_end_us);
  }

  /// find_unused_parameters: global_used <- the SUM over ranks of local_used, on DDP's
  /// process group (main thread; the comm thread is idle).
  void all_reduce_used_map() {
    global_used = local_used;
    pg->all_reduce(global_used.data(), static_cast<int64_t>(global_used.size()), kInt64, ReduceOp::SUM,
                   Completion::Blocking, "DistributedDataParallel (used-parameter map)");
  }

  /// .grad of param i <- its slice of the reduced bucket (already the average): in place when
  /// .grad is a contiguous tensor of the parameter's dtype, shape and device, else a new tensor
  /// on the parameter's device (a device-to-device copy for CUDA parameters).
  void write_average(size_t i, const Bucket& b, int64_t offset) {
    Tensor& p = params[i];
    Tensor g = p.grad();
    const bool reuse = g.defined() && g.dtype() == b.dtype && g.is_contiguous() && g.sizes() == p.sizes() &&
                       g.device() == device;
    Tensor out = reuse ? g : empty(p.sizes(), TensorOptions(b.dtype).device(device));
    const size_t esize = element_size(b.dtype);
    const size_t bytes = static_cast<size_t>(p.numel()) * esize;
    copy_bytes(device, out.raw_data(),
               static_cast<const char*>(b.contents.raw_data()) + static_cast<size_t>(offset) * esize, bytes);
    if (!reuse) {
      if (g.defined() && g.dtype() != b.dtype) out = out.to(g.dtype());
      p.set_grad(out);
    }
  }

  /// A second backward reached the output of a forward whose reduction already finished.
  [[noreturn]] void throw_second_backward() const {
    detail::throw_error(::tinytorch::detail::str_cat(
        "DistributedDataParallel: Expected to mark a variable ready only once. A second backward reached the "
        "output of a forward whose gradients were already reduced (backward(retain_graph=true), or two losses "
        "of one forward, each with its own backward), on rank ", rank, ": its gradients would be added, "
        "unaveraged, to the averaged ones. Sum the losses and call backward once, or run the forward and all "
        "its backwards inside no_sync() (gradients stay local until the next synced backward). (PyTorch 1.13 "
        "accepts this silently; tinytorch refuses it.)"));
  }

  /// Called at the start of every grad-enabled forward: PyTorch's
  /// ensure_prior_reduction_finished. Throws when the previous backward left a parameter
  /// without gradient. Returns true when the previous synced forward was skipped: its output
  /// required grad, no backward reached it, and it is gone (its graph freed: no backward can
  /// reach it any more); the caller throws throw_skipped_backward(), after the DETAIL check.
  /// PyTorch allows that. An output still alive may yet be part of a backward: two forwards,
  /// then one backward through both (a siamese network, ddp(ddp(x))), is legal, as in PyTorch.
  bool ensure_prior_reduction_finished() {
    if (!(expect_hooks && require_finalize)) {
      const bool skipped = expect_hooks && expect_backward && reached < generation && armed_output.expired();
      expect_hooks = false;
      expect_backward = false;
      armed_output.reset();
      return skipped;
    }
    armed_output.reset();
    expect_hooks = false;
    require_finalize = false;
    expect_backward = false;
    // The buckets already launched form a prefix of the order that every rank has launched
    // too (a rank launches bucket k only after 0..k-1), so waiting for them cannot hang.
    try {
      wait_all();
    } catch (...) {
    }
    std::string indices, pnames;
    for (size_t i = 0; i < params.size(); ++i) {
      if (ready[i]) continue;
      indices += (indices.empty() ? "" : " ") + std::to_string(i);
      pnames += (pnames.empty() ? "" : ", ") + names[i];
    }
    if (find_unused) std::fill(local_used.begin(), local_used.end(), 0);
    if (indices.empty())  // every gradient arrived: the reduction itself failed (a hook's error, ...)
      detail::throw_error(::tinytorch::detail::str_cat(
          "DistributedDataParallel: Expected to have finished reduction in the prior iteration before starting a "
          "new one. Every parameter received its gradient on rank ", rank, ", but the reduction of the previous "
          "backward did not complete: it failed with the error that backward threw (on this rank or another). "
          "The next iteration starts afresh."));
    detail::throw_error(::tinytorch::detail::str_cat(
        "DistributedDataParallel: Expected to have finished reduction in the prior iteration before starting a "
        "new one. This error indicates that your module has parameters that were not used in producing loss. "
        "You can enable unused parameter detection by passing find_unused_parameters = true in DDPOptions, and "
        "by making sure all `forward` function outputs participate in calculating loss.\n"
        "Parameter indices which did not receive grad for rank ", rank, ": ", indices,
        "\nParameters which did not receive grad for rank ", rank, ": ", pnames));
  }

  /// The error of a grad-enabled forward after a synced forward that had no backward.
  [[noreturn]] void throw_skipped_backward() const {
    detail::throw_error(::tinytorch::detail::str_cat(
        "DistributedDataParallel: Expected to have finished reduction in the prior iteration before starting a "
        "new one. Rank ", rank, " ran no backward after its previous forward (grad mode on, outside no_sync) "
        "and dropped its output, so none of that iteration's gradients were reduced here, while the other "
        "ranks' backward waits for this rank's all-reduce; this rank's next backward would be averaged with "
        "their previous one. Call backward on a loss of every training forward's output, and run forwards "
        "that are not trained (evaluation, a loss printed twice) under NoGradGuard. (PyTorch 1.13 does not "
        "check this: there the ranks average gradients of different iterations and then wait until the "
        "timeout.)"));
  }
};

}  // namespace detail

}  TT_NAMESPACE_END  // namespace tinytorch::distributed

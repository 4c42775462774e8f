// tinytorch/distributed/ddp.hpp — DistributedDataParallel: one model replica per process,
// gradients averaged by all-reduce during backward (PyTorch's DDP and its Reducer).
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
// The math. N ranks, rank r computes g_r = d L_r / d theta on its own batch of B samples, with
// L_r the mean loss over that batch. DDP replaces every .grad by
//     g = (g_0 + g_1 + ... + g_{N-1}) / N
// the gradient of the mean loss over all N*B samples: one DDP step equals one single-process
// step on the global batch N*B (tests/mpi/test_ddp.cpp checks it to 1e-5). It is computed, as
// PyTorch does, as the SUM all-reduce of the g_r / N (for N not a power of two the rounding may
// differ from (sum g_r) / N in the last bit).
// Because every rank starts from the same weights (broadcast at construction) and applies the
// same averaged gradient, the replicas stay identical without ever sending weights again.
//
// Construction (PyTorch's DistributedDataParallel.__init__ and verify_params_across_processes):
//   0. The ranks agree on DDPOptions (and that a module was passed) before any check that could
//      throw on one rank only: all-gathered, compared bit for bit, the same error everywhere.
//   1. The ranks agree on the model before any data moves: parameter counts are all-gathered;
//      rank 0 broadcasts every parameter's dtype, requires_grad and sizes; each rank compares; the first index
//      that differs anywhere is agreed by an all-reduce (MIN); the lowest rank that differs there
//      broadcasts its shape and name; and every rank throws the same tinytorch::Error naming the
//      parameter (dotted name, both shapes, both ranks). Never a hang. The same for buffers.
//   2. Parameters and buffers are broadcast from rank 0 (values are overwritten, not compared).
//   3. Buckets (compute_bucket_assignment_by_size): walk the parameters that require grad in
//      registration order, one open bucket per dtype, close a bucket once its size reaches the
//      limit (the first at 1 MiB, the later ones at bucket_cap_mb, default 25 MiB), then list the
//      buckets in *reverse*: bucket 0 holds the last layers, whose gradients backward produces
//      first. Each bucket owns one flat contiguous buffer `contents` (numel = sum of its params).
//      Registration order only approximates the order of backward (a layer's bias is registered
//      before the next layer's weight but its gradient arrives after it), so, as PyTorch does,
//      the first synced backward records the order in which gradients arrive and the next
//      forward rebuilds the buckets once in that order (rank 0's order, broadcast; not with
//      find_unused_parameters): bucket 0 = the first 1 MiB of gradients to arrive.
//   4. register_post_accumulate_grad_hook on every parameter: "this .grad is final".
//
// One training iteration:
//   forward   checks that the previous iteration's reduction finished (else the error below),
//             broadcasts buffers from rank 0 (if any), runs the module, and (grad mode on, not
//             inside no_sync) arms the hooks for one backward (prepare_for_backward); with
//             find_unused_parameters it also walks the autograd graph from the output.
//   backward  the engine accumulates each parameter's gradient; our hook copies it, divided by
//             N, into its bucket slice; when a bucket's last gradient arrives, its all-reduce
//             (SUM) is started *at once, strictly in bucket order* (every rank must issue the
//             same collectives in the same order), on a communication thread that calls
//             MPI_Allreduce (or DDPOptions::algorithm's ring / tree / parameter server) on a
//             communicator of its own while backward continues on the main thread. That is
//             the overlap.
//   finalize  PyTorch queues a "final callback" in its autograd engine; ours has none. Instead,
//             the hook that readies the last parameter completes the iteration: it waits for the
//             comm thread to finish the earlier buckets, all-reduces the last bucket itself
//             (nothing is left to overlap it with, so a hand-off to the thread would only add a
//             wake-up) and copies the averages into .grad. Every parameter's AccumulateGrad runs
//             exactly once per backward, so at that moment no parameter gradient can change any
//             more; when loss.backward() returns, every rank holds identical averaged gradients.
//             (Nodes that run after the last parameter's AccumulateGrad, e.g. gradients w.r.t.
//             inputs, just start a little later.)
//
// no_sync(): an RAII guard. Forwards inside it do not arm the hooks, so gradients accumulate
//   locally in .grad; the first synced forward+backward after it all-reduces the accumulated sum
//   (the hook copies .grad, which already holds the sum). Scale the loss by 1/k yourself.
// find_unused_parameters: forward walks the graph from its output; parameters whose
//   AccumulateGrad is unreachable are marked ready (their slice: .grad if it has one from no_sync
//   steps, else zeros) at the first hook, so every bucket completes; a per-parameter "used" map
//   is all-reduced so that a parameter unused on *every* rank keeps .grad untouched (undefined
//   if it was). Without the option, a parameter that got no gradient leaves its bucket pending:
//   the next forward throws PyTorch's "Expected to have finished reduction in the prior
//   iteration before starting a new one..." naming the parameters (after waiting for the
//   all-reduces already started, which every rank started too, so nothing is left in flight).
// World size 1: no communication, no thread, no copies; the same errors.
//
// Threads: the communication thread needs MPI_THREAD_MULTIPLE (the main thread may call MPI
// too); the constructor throws a clear error if MPI provides less. The bucket all-reduces run
// on a duplicate of the group's communicator, so they can never be matched against a collective
// the main thread issues (buffer broadcasts, a loss all-reduce, barrier) on the group's own.
//
// Also here: Trace (Chrome-trace JSON of forward / backward / each bucket's all-reduce / step,
// written atomically). Checkpoints (tinytorch::save / load; rank 0 saves, then barrier) are in
// ../serialization.hpp, included here for DDP programs.
//
// Shapes: buckets are 1-D (numel,) tensors of the parameters' dtype; param i occupies
//   contents[offset_i, offset_i + numel_i) viewed as param i's shape.
// Chapter: chapters/06-distributed-data-parallel.md (and 08-large-batch.md).
// Reference: torch.nn.parallel.DistributedDataParallel (docs/source/notes/ddp.rst),
//   torch/csrc/distributed/c10d/reducer.cpp (mark_variable_ready, mark_bucket_ready,
//   finalize_backward, ensure_prior_reduction_finished), compute_bucket_assignment_by_size;
//   Li et al., "PyTorch Distributed: Experiences on Accelerating Data Parallel Training",
//   VLDB 2020. Notes: ../shared/reference/ddp-semantics.md (section 2).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../autograd/grad_mode.hpp"
#include "../autograd/node.hpp"
#include "../nn/module.hpp"
#include "../serialization.hpp"
#include "algorithms.hpp"
#include "buffer_collectives.hpp"
#include "errors.hpp"
#include "mpi_include.hpp"
#include "process_group.hpp"

namespace tinytorch::distributed {

// =============================================================================================
// Trace: a Chrome-trace ("Trace Event Format") recorder, one per rank
// =============================================================================================

/// Records complete events ("ph":"X": name, thread, start, duration) from any thread and writes
/// them as Chrome-trace JSON (open in chrome://tracing or ui.perfetto.dev). pid = rank, tid 0 =
/// the main thread (forward, backward, step, and DDP's finalize with the last bucket's
/// all-reduce), tid 1 = DDP's communication thread (one event per earlier bucket). Times are
/// microseconds of steady_clock (CLOCK_MONOTONIC, shared by all processes of one machine) minus
/// `origin_us`, so the files of all ranks line up; pass the same origin on every rank
/// (common_origin_us()).
class Trace {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Trace(int pid = 0, double origin_us = 0.0) : pid_(pid), origin_us_(origin_us) {
    thread_name(0, "main (forward, backward, step)");
    thread_name(1, "comm thread (bucket all-reduce)");
  }

  /// Microseconds on the steady clock (not shifted by the origin).
  static double steady_us() {
    return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
  }

  /// An event [begin_us, end_us) (steady_us() values) on thread `tid`; `args` is a JSON object
  /// body such as "\"bytes\": 1024" (may be empty).
  void complete(const std::string& name, const std::string& cat, int tid, double begin_us, double end_us,
                const std::string& args = "") {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back({name, cat, tid, begin_us - origin_us_, end_us - begin_us, args});
  }

  /// Names a thread in the viewer.
  void thread_name(int tid, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    thread_names_[tid] = name;
  }

  /// RAII: records [construction, destruction) as one event. A null Trace* records nothing, so
  /// call sites need no `if`:  { auto s = Trace::Scope(trace.get(), "forward"); ... }
  class Scope {
   public:
    Scope(Trace* t, std::string name, std::string cat = "compute", int tid = 0)
        : t_(t), name_(std::move(name)), cat_(std::move(cat)), tid_(tid), begin_(t ? steady_us() : 0.0) {}
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() {
      if (t_) t_->complete(name_, cat_, tid_, begin_, steady_us());
    }

   private:
    Trace* t_;
    std::string name_, cat_;
    int tid_;
    double begin_;
  };

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_.size();
  }

  /// The whole trace as JSON ({"traceEvents": [...], "displayTimeUnit": "ms"}).
  std::string json() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(3);
    os << "{\"traceEvents\": [\n";
    os << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " << pid_
       << ", \"tid\": 0, \"args\": {\"name\": \"rank " << pid_ << "\"}}";
    for (const auto& [tid, name] : thread_names_)
      os << ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " << pid_ << ", \"tid\": " << tid
         << ", \"args\": {\"name\": \"" << escape(name) << "\"}}";
    for (const Event& e : events_) {
      os << ",\n{\"name\": \"" << escape(e.name) << "\", \"cat\": \"" << escape(e.cat) << "\", \"ph\": \"X\", \"pid\": "
         << pid_ << ", \"tid\": " << e.tid << ", \"ts\": " << e.ts << ", \"dur\": " << e.dur;
      if (!e.args.empty()) os << ", \"args\": {" << e.args << "}";
      os << "}";
    }
    os << "\n], \"displayTimeUnit\": \"ms\"}\n";
    return os.str();
  }

  /// Writes json() to `path` atomically: first `path.tmp.<pid>`, fsync, then rename(2), so a
  /// reader never sees half a file. Throws tinytorch::Error if the file cannot be written.
  void write(const std::string& path) const {
    ::tinytorch::detail::write_file_atomically(path, json(), "Trace::write");
  }

 private:
  struct Event {
    std::string name, cat;
    int tid;
    double ts, dur;
    std::string args;
  };
  static std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      if (static_cast<unsigned char>(c) < 0x20) continue;
      out += c;
    }
    return out;
  }
  int pid_;
  double origin_us_;
  mutable std::mutex mu_;
  std::vector<Event> events_;
  std::map<int, std::string> thread_names_;
};

/// The earliest Trace::steady_us() over all ranks (an all-reduce; call it on every rank), to be
/// used as every rank's Trace origin so that rank files share one time axis.
inline double common_origin_us() {
  // MPI has MAX but we want MIN: min(x) = -max(-x). Integer microseconds are exact in int64.
  int64_t neg = -static_cast<int64_t>(Trace::steady_us());
  all_reduce(&neg, 1, ReduceOp::MAX);
  return static_cast<double>(-neg);
}

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
};

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

namespace detail {

/// Broadcasts a string from `root` on the default group (one int64 per character: names are
/// short, and the collectives have no byte dtype).
inline std::string broadcast_string(const std::string& s, int root);

/// Broadcasts a vector<int64_t> from `root` (length first) on the default group.
inline std::vector<int64_t> broadcast_ints(const std::vector<int64_t>& v, int root) {
  int64_t len = static_cast<int64_t>(v.size());
  broadcast(&len, 1, root);
  std::vector<int64_t> out = v;
  out.resize(static_cast<size_t>(len));
  if (len > 0) broadcast(out.data(), len, root);
  return out;
}

inline std::string broadcast_string(const std::string& s, int root) {
  std::vector<int64_t> chars(s.begin(), s.end());
  std::vector<int64_t> got = broadcast_ints(chars, root);
  return std::string(got.begin(), got.end());
}

/// "[3, 4] torch.float32"
inline std::string describe(const std::vector<int64_t>& meta, bool show_requires_grad) {
  // meta = {dtype + 16 * requires_grad, ndim, d0, d1, ...}
  std::string s = "[";
  for (size_t k = 2; k < meta.size(); ++k) s += (k > 2 ? ", " : "") + std::to_string(meta[k]);
  s += "] " + dtype_name(static_cast<DType>(meta[0] % 16));
  if (!show_requires_grad) return s;
  return meta[0] >= 16 ? s + " requires_grad=True" : s + " requires_grad=False";
}

/// Everything the hooks and the communication thread share; owned by the DDP object (the hooks
/// hold weak pointers, so a parameter that outlives its DDP wrapper just stops syncing).
struct DdpState {
  struct Bucket {
    std::vector<size_t> params;     ///< indices into DdpState::params, ascending
    std::vector<int64_t> offsets;   ///< element offset of each of them in contents
    int64_t numel = 0;
    DType dtype = kFloat32;
    Tensor contents;                ///< (numel,) the flat buffer that is all-reduced
    size_t pending = 0;             ///< parameters not yet ready in this backward
  };

  int rank = 0;
  int world = 1;
  std::vector<Tensor> params;       ///< requires_grad parameters, registration order, deduplicated
  std::vector<std::string> names;   ///< their dotted names inside the wrapped module
  std::vector<size_t> bucket_of;    ///< param -> bucket
  std::vector<size_t> slot_of;      ///< param -> position inside its bucket
  std::vector<Bucket> buckets;      ///< in reduction order (bucket 0 first)
  bool find_unused = false;
  Algorithm algorithm = Algorithm::MPI;
  std::shared_ptr<Trace> trace;
  std::vector<int64_t> limits;      ///< bucket size limits in bytes: {first bucket, cap}
  bool rebuilt = false;             ///< buckets already rebuilt in gradient-arrival order
  std::vector<size_t> arrival;      ///< the order the hooks readied params (until rebuilt)

  // ---- per-iteration state, main thread only -------------------------------------------------
  bool expect_hooks = false;        ///< armed by a synced, grad-enabled forward
  bool require_finalize = false;    ///< a hook fired since the forward armed them
  std::vector<char> ready;          ///< param marked ready in this backward
  std::vector<size_t> unused;       ///< find_unused: params unreachable from the output
  std::vector<int64_t> local_used;  ///< find_unused: used in a backward since the last sync
  std::vector<int64_t> global_used; ///< ... summed over ranks
  size_t next_bucket = 0;           ///< the next bucket to launch (strict order)
  DDPIterationStats stats;          ///< the backward in progress / the last one
  DDPIterationStats last_stats;

  // ---- communication thread -----------------------------------------------------------------
#if TINYTORCH_WITH_MPI
  MPI_Comm comm = MPI_COMM_NULL;    ///< dup of the group's communicator, for DDP's all-reduces only
                                    ///< (comm thread, or main thread once the thread is idle)
#endif
  std::mutex mu;
  std::condition_variable cv_task, cv_done;
  std::deque<std::function<void()>> tasks;
  size_t enqueued = 0, completed = 0;
  bool stop = false;
  bool busy = false;
  std::exception_ptr comm_error;
  std::thread thread;

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
      if (world > 1) bucket.contents = zeros({bucket.numel}, TensorOptions(bucket.dtype));
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
    if (world > 1) order = broadcast_ints(order, 0);
    std::vector<Tensor> ordered;
    for (int64_t i : order) ordered.push_back(params[static_cast<size_t>(i)]);
    std::vector<std::vector<size_t>> groups = compute_bucket_assignment_by_size(ordered, limits, false);
    for (auto& g : groups)
      for (size_t& k : g) k = static_cast<size_t>(order[k]);
    assign_buckets(groups);
    arrival.clear();
  }

  // -------------------------------------------------------------------------------------------
  void comm_loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv_task.wait(lock, [&] { return stop || !tasks.empty(); });
        if (tasks.empty()) return;  // stop requested and nothing left
        task = std::move(tasks.front());
        tasks.pop_front();
        busy = true;
      }
      std::exception_ptr err;
      try {
        task();
      } catch (...) {
        err = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        if (err && !comm_error) comm_error = err;
        ++completed;
        busy = false;
      }
      cv_done.notify_all();
    }
  }

  void enqueue(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu);
      tasks.push_back(std::move(task));
      ++enqueued;
    }
    cv_task.notify_one();
  }

  /// Blocks until every enqueued collective has completed; rethrows the first error (once).
  void wait_all() {
    std::exception_ptr err;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv_done.wait(lock, [&] { return completed == enqueued; });
      err = comm_error;
      comm_error = nullptr;
    }
    if (err) std::rethrow_exception(err);
  }

  // ---- the Reducer ----------------------------------------------------------------------------

  /// Called by a synced forward in grad mode: arm the hooks for one backward.
  void prepare_for_backward(const Tensor& output) {
    expect_hooks = true;
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
    if (world > 1) copy_into_bucket(i, b);
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
  /// all-reduce (SUM) of the g_r / N is the average.
  void copy_into_bucket(size_t i, Bucket& b) {
    const size_t slot = slot_of[i];
    const int64_t n = params[i].numel();
    char* dst = static_cast<char*>(b.contents.raw_data()) +
                static_cast<size_t>(b.offsets[slot]) * element_size(b.dtype);
    Tensor g = params[i].grad();
    if (!g.defined()) {
      std::memset(dst, 0, static_cast<size_t>(n) * element_size(b.dtype));
      return;
    }
    if (g.dtype() != b.dtype || !g.is_contiguous()) {
      NoGradGuard no_grad;
      g = g.to(b.dtype).contiguous();
    }
    const int w = world;
    dispatch(b.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = static_cast<const T*>(g.raw_data());
      T* out = reinterpret_cast<T*>(dst);
      const T d = static_cast<T>(w);
      if (std::is_floating_point_v<T> && (w & (w - 1)) == 0) {
        // N a power of two: 1/N is exact, so x * (1/N) is the same correctly rounded number as
        // x / N, and a multiply is several times cheaper than a divide.
        const T inv = T(1) / d;
        for (int64_t k = 0; k < n; ++k) out[k] = src[k] * inv;
      } else {
        for (int64_t k = 0; k < n; ++k) out[k] = src[k] / d;
      }
    });
  }

  /// Starts bucket bi's all-reduce. Buckets before the last go to the communication thread and
  /// overlap with the rest of backward. The last bucket has nothing left to overlap with, so the
  /// main thread, which would only wait, runs it itself: first it waits until the thread has
  /// finished the earlier buckets (collectives on one communicator must be issued in the same
  /// order on every rank, and by one thread at a time), then calls MPI_Allreduce. This saves a
  /// thread hand-off per step, and a one-bucket model never involves the thread at all.
  void launch(size_t bi) {
    if (world == 1) return;
    if (bi + 1 < buckets.size()) {
      enqueue([this, bi] { all_reduce_bucket(bi, 1); });
    } else {
      wait_all();
      all_reduce_bucket(bi, 0);
    }
  }

  /// All-reduce (SUM) of bucket bi on DDP's communicator with the chosen algorithm, timed;
  /// `tid` 1 = comm thread, 0 = main.
  void all_reduce_bucket(size_t bi, int tid) {
#if TINYTORCH_WITH_MPI
    Bucket& b = buckets[bi];
    const double t0 = Trace::steady_us();
    if (algorithm == Algorithm::MPI) {
      mpi_check(MPI_Allreduce(MPI_IN_PLACE, b.contents.raw_data(), static_cast<int>(b.numel), mpi_datatype(b.dtype),
                              MPI_SUM, comm),
                "MPI_Allreduce", "DistributedDataParallel (bucket " + std::to_string(bi) + ")");
    } else {
      AlgorithmOptions ao;
      ao.comm = comm;
      all_reduce(b.contents.raw_data(), b.numel, b.dtype, ReduceOp::SUM, algorithm, ao);
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

  /// All buckets launched (called from the hook that readied the last parameter): wait for the
  /// all-reduces, average, write .grad; disarm the hooks.
  void finalize_backward() {
    const double t0 = stats.last_grad_us;  // set by mark_variable_ready before the last launch
    expect_hooks = false;
    require_finalize = false;
    wait_all();  // (already idle: launch() ran the last bucket on this thread after the others)
#if TINYTORCH_WITH_MPI
    if (find_unused && world > 1) {
      global_used = local_used;
      mpi_check(MPI_Allreduce(MPI_IN_PLACE, global_used.data(), static_cast<int>(global_used.size()), MPI_INT64_T,
                              MPI_SUM, comm),
                "MPI_Allreduce", "DistributedDataParallel (used-parameter map)");
    }
#endif
    if (world > 1) {
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
    stats.valid = world > 1;
    last_stats = stats;
    if (trace) trace->complete("finalize: last bucket, average, write .grad", "comm", 0, t0, stats.finalize_end_us);
  }

  /// .grad of param i <- its slice of the reduced bucket (already the average): in place when
  /// .grad is a contiguous tensor of the parameter's dtype and shape, else a new tensor.
  void write_average(size_t i, const Bucket& b, int64_t offset) {
    Tensor& p = params[i];
    Tensor g = p.grad();
    const bool reuse = g.defined() && g.dtype() == b.dtype && g.is_contiguous() && g.sizes() == p.sizes();
    Tensor out = reuse ? g : empty(p.sizes(), TensorOptions(b.dtype));
    const size_t esize = element_size(b.dtype);
    const size_t bytes = static_cast<size_t>(p.numel()) * esize;
    if (bytes > 0)
      std::memcpy(out.raw_data(), static_cast<const char*>(b.contents.raw_data()) + static_cast<size_t>(offset) * esize,
                  bytes);
    if (!reuse) {
      if (g.defined() && g.dtype() != b.dtype) out = out.to(g.dtype());
      p.set_grad(out);
    }
  }

  /// Called at the start of every grad-enabled forward: PyTorch's
  /// ensure_prior_reduction_finished.
  void ensure_prior_reduction_finished() {
    if (!(expect_hooks && require_finalize)) {
      expect_hooks = false;  // armed but no backward ran: allowed (e.g. a loss computed twice)
      return;
    }
    expect_hooks = false;
    require_finalize = false;
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
    detail::throw_error(::tinytorch::detail::str_cat(
        "DistributedDataParallel: Expected to have finished reduction in the prior iteration before starting a "
        "new one. This error indicates that your module has parameters that were not used in producing loss. "
        "You can enable unused parameter detection by passing find_unused_parameters = true in DDPOptions, and "
        "by making sure all `forward` function outputs participate in calculating loss.\n"
        "Parameter indices which did not receive grad for rank ", rank, ": ", indices,
        "\nParameters which did not receive grad for rank ", rank, ": ", pnames));
  }
};

/// Every rank must build its buckets and reduce them the same way, or the bucket all-reduces
/// would not match (a hang or garbage). PyTorch does not check this. This is the constructor's
/// first collective, before any check that could throw on one rank only: the options (as
/// given, bit for bit) and whether a module was passed are all-gathered, and if any differs,
/// every rank throws the same tinytorch::Error naming the option and both values. Afterwards
/// the local checks see the same values everywhere and throw, if at all, on every rank.
inline void verify_options_across_ranks(bool has_module, Algorithm algorithm, double first_bucket_mb,
                                        double bucket_cap_mb, bool find_unused, bool broadcast_buffers) {
  const auto& g = group();
  const int world = g.world_size;
  if (world == 1) return;
  const char* names[] = {"module (passed or null)", "algorithm", "first_bucket_mb", "bucket_cap_mb",
                         "find_unused_parameters", "broadcast_buffers"};
  auto bits = [](double d) {
    int64_t b = 0;
    std::memcpy(&b, &d, sizeof b);
    return b;
  };
  const int64_t mine[] = {has_module ? 1 : 0,  static_cast<int64_t>(algorithm), bits(first_bucket_mb),
                          bits(bucket_cap_mb), find_unused ? 1 : 0,             broadcast_buffers ? 1 : 0};
  constexpr int K = 6;
  std::vector<int64_t> all(static_cast<size_t>(world) * K);
  all_gather(all.data(), mine, K);
  for (int r = 1; r < world; ++r) {
    for (int k = 0; k < K; ++k) {
      const int64_t a = all[static_cast<size_t>(k)], b = all[static_cast<size_t>(r) * K + k];
      if (a == b) continue;
      auto show = [&](int64_t v) -> std::string {
        if (k == 0) return v ? "passed" : "null";
        if (k == 1) {
          const char* n = v >= 0 && v <= static_cast<int64_t>(Algorithm::Tree) ? algorithm_name(static_cast<Algorithm>(v))
                                                                                : "?";
          return ::tinytorch::detail::str_cat(n, " (", v, ")");
        }
        if (k == 2 || k == 3) {
          double d = 0;
          std::memcpy(&d, &v, sizeof d);
          return ::tinytorch::detail::str_cat(d);
        }
        return v ? "true" : "false";
      };
      throw_error(::tinytorch::detail::str_cat("DistributedDataParallel: DDPOptions must be the same on every rank, but ",
                                               names[k], " is ", show(a), " on rank 0 and ", show(b), " on rank ", r,
                                               "."));
    }
  }
}

/// Step 1 of the constructor for one kind of tensor ("parameter" or "buffer"): counts, then
/// dtypes and shapes against rank 0's; throws the same message on every rank on a mismatch.
inline void verify_across_ranks(const std::vector<std::pair<std::string, Tensor>>& tensors, const char* kind) {
  const auto& g = group();
  const int world = g.world_size, rank = g.rank;
  if (world == 1) return;
  // (1) counts, all-gathered: every rank sees every count.
  std::vector<int64_t> counts(static_cast<size_t>(world));
  int64_t mine = static_cast<int64_t>(tensors.size());
  all_gather(counts.data(), &mine, 1);
  for (int r = 1; r < world; ++r) {
    if (counts[static_cast<size_t>(r)] != counts[0]) {
      std::string all;
      for (int q = 0; q < world; ++q) all += (q ? ", " : "") + std::to_string(counts[static_cast<size_t>(q)]);
      throw_error(::tinytorch::detail::str_cat(
          "DistributedDataParallel: DDP expects same model across all ranks, but rank 0 has ", counts[0], " ",
          kind, "s while rank ", r, " has inconsistent ", counts[static_cast<size_t>(r)], " ", kind,
          "s (", kind, " counts by rank: [", all, "]). Every rank must build the same model and register its ",
          kind, "s in the same order."));
    }
  }
  // (2) rank 0's {dtype + 16 * requires_grad, ndim, sizes...} for every tensor, flattened; each
  // rank compares. (A parameter frozen on one rank only would give the ranks different buckets.)
  auto meta_of = [](const Tensor& t) {
    std::vector<int64_t> m{static_cast<int64_t>(t.dtype()) + (t.requires_grad() ? 16 : 0), t.dim()};
    for (int64_t d : t.sizes()) m.push_back(d);
    return m;
  };
  std::vector<int64_t> flat;
  for (const auto& nt : tensors) {
    auto m = meta_of(nt.second);
    flat.insert(flat.end(), m.begin(), m.end());
  }
  const std::vector<int64_t> ref = broadcast_ints(flat, 0);
  int64_t first_bad = static_cast<int64_t>(tensors.size());
  size_t pos = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (pos + 2 > ref.size()) {
      first_bad = static_cast<int64_t>(i);
      break;
    }
    const size_t len = 2 + static_cast<size_t>(ref[pos + 1]);
    std::vector<int64_t> theirs(ref.begin() + static_cast<std::ptrdiff_t>(pos),
                                ref.begin() + static_cast<std::ptrdiff_t>(std::min(ref.size(), pos + len)));
    if (theirs != meta_of(tensors[i].second)) {
      first_bad = static_cast<int64_t>(i);
      break;
    }
    pos += len;
  }
  // (3) the first bad index anywhere: MIN over ranks (= -MAX of the negatives).
  int64_t neg = -first_bad;
  all_reduce(&neg, 1, ReduceOp::MAX);
  const int64_t p = -neg;
  if (p == static_cast<int64_t>(tensors.size())) return;
  // (4) the lowest rank that differs at p tells its shape and name; rank 0 tells its own.
  int64_t neg_rank = first_bad == p ? -static_cast<int64_t>(rank) : -static_cast<int64_t>(world);
  all_reduce(&neg_rank, 1, ReduceOp::MAX);
  const int bad_rank = static_cast<int>(-neg_rank);
  const size_t pi = static_cast<size_t>(p);
  const std::vector<int64_t> bad_meta = broadcast_ints(rank == bad_rank ? meta_of(tensors[pi].second)
                                                                        : std::vector<int64_t>{}, bad_rank);
  const std::vector<int64_t> ref_meta = broadcast_ints(rank == 0 ? meta_of(tensors[pi].second)
                                                                 : std::vector<int64_t>{}, 0);
  const std::string bad_name = broadcast_string(rank == bad_rank ? tensors[pi].first : std::string(), bad_rank);
  const std::string ref_name = broadcast_string(rank == 0 ? tensors[pi].first : std::string(), 0);
  const bool grad_differs = !ref_meta.empty() && !bad_meta.empty() && (ref_meta[0] >= 16) != (bad_meta[0] >= 16);
  throw_error(::tinytorch::detail::str_cat(
      "DistributedDataParallel: DDP expects same model across all ranks, but ", kind, " ", p, " (\"", ref_name,
      "\") has sizes ", describe(ref_meta, grad_differs), " on rank 0 and sizes ", describe(bad_meta, grad_differs),
      " on rank ", bad_rank,
      bad_name == ref_name ? std::string() : " (named \"" + bad_name + "\" there)",
      ". Every rank must build the same model and register its ", kind, "s in the same order."));
}

/// Step 2: tensor <- rank 0's tensor, for every entry.
inline void broadcast_from_rank0(const std::vector<std::pair<std::string, Tensor>>& tensors) {
  if (group().world_size == 1) return;
  NoGradGuard no_grad;
  for (const auto& nt : tensors) {
    Tensor t = nt.second;
    if (t.numel() == 0) continue;
    if (t.is_contiguous()) {
      broadcast(t.raw_data(), t.numel(), t.dtype(), 0);
    } else {
      Tensor c = t.contiguous();
      broadcast(c.raw_data(), c.numel(), c.dtype(), 0);
      t.copy_(c);
    }
  }
}

}  // namespace detail

/// DistributedDataParallel (torch.nn.parallel.DistributedDataParallel) for CPU tensors over
/// MPI. See the file comment for the algorithm.
///   module: the replica on this rank; registered as the child "module", so named_parameters()
///           of the wrapper are "module.<name>" (as PyTorch's state_dict keys).
/// Throws tinytorch::Error: process group not initialised; MPI without MPI_THREAD_MULTIPLE
/// (world size > 1); a model that differs across ranks (the same message on every rank);
/// a module without parameters that require grad; bucket_cap_mb <= 0.
class DistributedDataParallel : public nn::Module {
 public:
  explicit DistributedDataParallel(std::shared_ptr<nn::Module> module, DDPOptions options = {})
      : module_(std::move(module)), options_(std::move(options)) {
    detail::require_initialized("DistributedDataParallel");
    detail::verify_options_across_ranks(module_ != nullptr, options_.algorithm, options_.first_bucket_mb,
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
    auto st = std::make_shared<detail::DdpState>();
    st->rank = g.rank;
    st->world = g.world_size;
    st->find_unused = options_.find_unused_parameters;
    st->algorithm = options_.algorithm;
    st->trace = options_.trace;
    if (st->world > 1) require_thread_multiple("DistributedDataParallel (its communication thread)");

    // (1) the same model everywhere, (2) rank 0's values everywhere.
    const auto named_params = module_->named_parameters();
    const auto named_buffers = module_->named_buffers();
    detail::verify_across_ranks(named_params, "parameter");
    detail::verify_across_ranks(named_buffers, "buffer");
    detail::broadcast_from_rank0(named_params);
    detail::broadcast_from_rank0(named_buffers);
    buffers_ = module_->buffers();

    // Parameters that train, each once (a shared parameter appears under two names).
    std::unordered_set<const TensorImpl*> seen;
    for (const auto& [name, p] : named_params) {
      if (!p.requires_grad() || !seen.insert(p.impl()).second) continue;
      st->params.push_back(p);
      st->names.push_back(name);
    }
    detail::check(!st->params.empty(),
                  "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a "
                  "gradient.");

    // (3) buckets, reversed; contents buffers.
    const auto mib = [](double mb) {  // > 0 here; inf or huge = no limit (saturated, no overflow)
      const double bytes = mb * 1024.0 * 1024.0;
      return bytes >= 0x1p62 ? int64_t{1} << 62 : std::max<int64_t>(1, static_cast<int64_t>(bytes));
    };
    st->limits = {mib(options_.first_bucket_mb), mib(options_.bucket_cap_mb)};
    auto order = compute_bucket_assignment_by_size(st->params, st->limits);
    std::reverse(order.begin(), order.end());
    st->assign_buckets(order);
    const size_t n = st->params.size();
    st->ready.assign(n, 0);
    st->local_used.assign(n, 0);
    st->global_used.assign(n, 0);

    // (4) the readiness hooks (weak: they do nothing once this wrapper is gone).
    std::weak_ptr<detail::DdpState> weak = st;
    for (size_t i = 0; i < n; ++i) {
      st->params[i].register_post_accumulate_grad_hook([weak, i](Tensor&) {
        if (auto s = weak.lock()) s->on_grad_ready(i);
      });
    }

    // The communication thread and its communicator (nothing below throws after the thread starts).
#if TINYTORCH_WITH_MPI
    if (st->world > 1) {
      detail::mpi_check(MPI_Comm_dup(g.comm, &st->comm), "MPI_Comm_dup", "DistributedDataParallel");
      detail::mpi_check(MPI_Comm_set_errhandler(st->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler",
                        "DistributedDataParallel");
      st->thread = std::thread([st] { st->comm_loop(); });
    }
#endif
    state_ = std::move(st);
  }

  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  ~DistributedDataParallel() override {
    if (!state_) return;
    auto& st = *state_;
    if (!st.thread.joinable()) return;
    bool idle;
    {
      std::lock_guard<std::mutex> lock(st.mu);
      st.stop = true;
      idle = st.tasks.empty() && !st.busy;
    }
    st.cv_task.notify_all();
    if (!idle && std::uncaught_exceptions() > 0) {
      // An exception is unwinding (ProcessGroupGuard will abort the job): a collective that
      // another rank never joins would block join() forever, so let the thread go.
      st.thread.detach();
      return;
    }
    st.thread.join();
#if TINYTORCH_WITH_MPI
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && st.comm != MPI_COMM_NULL) MPI_Comm_free(&st.comm);
#endif
  }

  /// Runs the wrapped module (see the file comment for what happens around it).
  /// x: whatever the module takes; returns its output. Throws the "Expected to have finished
  /// reduction in the prior iteration" error when the previous backward left a parameter
  /// without gradient (and find_unused_parameters is off).
  Tensor forward(const Tensor& x) override {
    auto& st = *state_;
    if (GradMode::is_enabled()) {
      st.ensure_prior_reduction_finished();
      st.rebuild_buckets();  // once, after the first complete backward
    }
    if (options_.broadcast_buffers && st.world > 1 && !buffers_.empty()) {
      std::vector<std::pair<std::string, Tensor>> b;
      for (const Tensor& t : buffers_) b.emplace_back("", t);
      detail::broadcast_from_rank0(b);
    }
    Tensor out = module_->forward(x);
    if (GradMode::is_enabled() && require_backward_grad_sync_) st.prepare_for_backward(out);
    return out;
  }

  /// RAII guard returned by no_sync(): gradient synchronisation off until destroyed.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel& d) : d_(d), previous_(d.require_backward_grad_sync_) {
      d_.require_backward_grad_sync_ = false;
    }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;
    ~NoSyncGuard() { d_.require_backward_grad_sync_ = previous_; }

   private:
    DistributedDataParallel& d_;
    bool previous_;
  };

  /// Gradient accumulation (PyTorch's `with ddp.no_sync():`): forwards (and their backwards)
  /// made while the returned guard lives accumulate .grad locally; the first synced
  /// forward+backward afterwards all-reduces the accumulated sum. The forward must be inside.
  ///   { auto guard = ddp.no_sync(); loss_fn(ddp(x1), y1).backward(); }   // local
  ///   loss_fn(ddp(x2), y2).backward();                                   // syncs g1 + g2
  NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  /// Checks that the last synced backward finished its reduction; throws the "Expected to have
  /// finished reduction" error otherwise (what the next forward would throw). Useful after the
  /// last iteration. A backward that completes finalizes itself, so this is normally a no-op.
  void finalize() {
    auto& st = *state_;
    if (st.expect_hooks && st.require_finalize) st.ensure_prior_reduction_finished();
  }

  /// The wrapped module (PyTorch's ddp.module). Calling its forward directly skips DDP: no
  /// gradient synchronisation.
  const std::shared_ptr<nn::Module>& module() const { return module_; }
  const DDPOptions& options() const { return options_; }
  int rank() const { return state_->rank; }
  int world_size() const { return state_->world; }

  /// The buckets in reduction order: indices into parameter_names()'s numbering (parameters
  /// that require grad, registration order). From the second forward on: the rebuilt buckets.
  std::vector<std::vector<size_t>> bucket_indices() const {
    std::vector<std::vector<size_t>> out;
    for (const auto& b : state_->buckets) out.push_back(b.params);
    return out;
  }
  /// Bytes of each bucket, in reduction order.
  std::vector<int64_t> bucket_bytes() const {
    std::vector<int64_t> out;
    for (const auto& b : state_->buckets) out.push_back(b.numel * static_cast<int64_t>(element_size(b.dtype)));
    return out;
  }
  /// Names (inside the wrapped module) of the parameters DDP synchronises, in registration order.
  const std::vector<std::string>& parameter_names() const { return state_->names; }
  /// Timeline of the last completed synced backward (valid only with world size > 1).
  const DDPIterationStats& last_iteration_stats() const { return state_->last_stats; }

  std::string name() const override { return "DistributedDataParallel"; }

 private:
  std::shared_ptr<nn::Module> module_;
  DDPOptions options_;
  std::vector<Tensor> buffers_;
  bool require_backward_grad_sync_ = true;
  std::shared_ptr<detail::DdpState> state_;
};

}  // namespace tinytorch::distributed

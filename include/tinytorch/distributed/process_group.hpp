// tinytorch/distributed/process_group.hpp — the process groups: who am I, how many are we, and
// the collectives every rank calls together.
//
// A job launched as `mpirun -np N prog` is N copies of one program. Each copy (a "rank") calls
// init_process_group() once; then get_rank() is r in [0, N), get_world_size() N, get_local_rank()
// this rank's number on its machine (rank l uses GPU l). Backend::MPI moves CPU memory over MPI;
// Backend::NCCL also bootstraps an NCCL communicator for GPU buffers (nccl_context.hpp; a TU built
// by nvcc with NCCL). Without mpirun the program is a world of size 1 (MPI as a "singleton"), and
// so is a build without MPI, which throws if it finds itself launched as one of several ranks.
// MPI starts with MPI_THREAD_MULTIPLE (DDP's communication thread); require_thread_multiple()
// throws when MPI provides less.
//
// ProcessGroup (PyTorch's c10d::ProcessGroup) is one MPI communicator with a rank, a size, a
// timeout and a sequence number. Each of its five collectives (all_reduce, broadcast, all_gather,
// reduce_scatter, barrier) is one function that blocks (Completion::Blocking: the free functions of
// buffer_collectives.hpp) or returns a Work (Completion::Async). new_group(name) duplicates a
// group (DDP's buckets run on one, never meeting the main thread's collectives); new_group(ranks)
// takes some of the ranks (a DeviceMesh's lines); send / recv are point to point (pipelines).
// No hang, ever: a blocking collective first waits until every rank has arrived, and every wait
// is watched (work.hpp): past the timeout (30 minutes, PyTorch's; TINYTORCH_DIST_TIMEOUT) the rank
// reports the collective and aborts the job. TINYTORCH_DISTRIBUTED_DEBUG=DETAIL makes the ranks
// agree on a fingerprint of each collective first: a mismatch is the same error on every rank.
// destroy_process_group() waits at a barrier, frees the communicators and finalizes MPI if it
// started it; ProcessGroupGuard (guard.hpp) also turns one rank's exception into MPI_Abort.
// Chapter: chapters/06-distributed-data-parallel.md and 07-all-reduce.md (7.8: timeouts, the
// watchdog, DETAIL); 12-model-parallelism.md for groups of some ranks and point to point.
// Reference: torch.distributed (init_process_group, new_group, send/recv, TORCH_DISTRIBUTED_DEBUG
// and ProcessGroupWrapper's fingerprints); PyTorch's ProcessGroupMPI; llm.c's MPI -> NCCL bootstrap.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"
#include "tinytorch/core/dtype.hpp"
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/work.hpp"

#include "tinytorch/distributed/mpi_include.hpp"
#if TINYTORCH_WITH_NCCL
#include "tinytorch/distributed/nccl_context.hpp"
#endif

TT_NAMESPACE_BEGIN namespace distributed {

/// Which library carries the collectives (torch.distributed's backend strings "mpi", "nccl").
enum class Backend { MPI, NCCL };

/// How all_reduce / reduce_scatter combine the ranks' values (torch.distributed.ReduceOp).
///   SUM  x = x_0 + x_1 + ... + x_{N-1}
///   AVG  x = SUM / N          (floating dtypes only: an int64 AVG throws, as PyTorch's
///                              gloo/NCCL backends do, because the division would truncate)
///   MAX  x = max_r x_r
///   MIN  x = min_r x_r        (MPI_MIN, as MAX is MPI_MAX)
/// float16/bfloat16 (which MPI lacks) reduce with a user-defined MPI_Op that adds in float32 and
/// rounds after each hop (reduce_16bit below), as NCCL and gloo do. Their AVG divides each rank's
/// value by N *before* the sum (rounded once), as NCCL's ncclAvg (a pre-multiplied sum) does: the
/// average of values whose sum would overflow (2 x 60000 > 65504 in float16) stays in range.
/// (Both ranks' dtypes travel as 16-bit words: a rank passing float16 where another passes
/// bfloat16 reduces garbage; TINYTORCH_DISTRIBUTED_DEBUG=DETAIL names the mismatch instead.)
enum class ReduceOp { SUM, AVG, MAX, MIN };

/// How a ProcessGroup collective returns: Blocking (the data has moved when it returns; the
/// Work is already complete) or Async (started; Work::wait() finishes it).
enum class Completion { Blocking, Async };

inline const char* backend_name(Backend b) { return b == Backend::MPI ? "mpi" : "nccl"; }

inline const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return "SUM";
    case ReduceOp::AVG: return "AVG";
    case ReduceOp::MAX: return "MAX";
    case ReduceOp::MIN: return "MIN";
  }
  return "?";
}

/// PyTorch's default process-group timeout (torch.distributed.default_pg_timeout): 30 minutes.
inline constexpr std::chrono::milliseconds kDefaultTimeout{30 * 60 * 1000};

/// The smallest timeout a group accepts: 1 second (PyTorch has no minimum). The timeout bounds
/// how long a rank waits for the slowest one at a collective, and correct ranks drift apart by
/// milliseconds at every step (one rank prints, loads a batch, is descheduled on a busy machine);
/// below a second that drift aborts correct programs, which is not what a timeout is for. The
/// timeout must also exceed the longest wait a correct program has on purpose (rank 0 writing a
/// checkpoint while the others wait at a barrier).
inline constexpr std::chrono::milliseconds kMinTimeout{1000};

/// How long destroy_process_group lets MPI_Finalize take before the watchdog reports it: 60 s, or
/// the group's timeout if that is longer. MPI_Finalize takes its own time (about 0.1 s here, over
/// 1 s on a loaded machine), so under a short timeout it aborted correct jobs at their very end
/// (0.001 s: every one). A rank waits there too when a peer is still in a collective (one step
/// fewer, and the destroy barrier matched the peer's arrival barrier); that peer's own watchdog
/// then ends the job after the timeout.
inline constexpr std::chrono::milliseconds kFinalizeTimeout{60 * 1000};


namespace detail {


/// Integer value of environment variable `name`, or -1 if it is unset or not a number.
inline long env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  return (end != nullptr && *end == '\0') ? x : -1;
}

/// TINYTORCH_DIST_TIMEOUT (seconds, from 1 (kMinTimeout) to 1e9; fractions allowed) or
/// kDefaultTimeout. Throws tinytorch::Error naming the variable and its value otherwise.
inline std::chrono::milliseconds timeout_from_env() {
  const char* v = std::getenv("TINYTORCH_DIST_TIMEOUT");
  if (v == nullptr || *v == '\0') return kDefaultTimeout;
  const std::string text(v);
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  // Decimal only (strtod would also take " 5" and "0x10").
  const bool decimal = text.find_first_not_of("0123456789.eE+-") == std::string::npos;
  check(decimal && end != v && *end == '\0' && s >= 1 && s <= 1e9, "init_process_group: TINYTORCH_DIST_TIMEOUT='",
        text, "' is not a number of seconds in [1, 1e9] (e.g. 60 or 2.5; below 1 s ordinary waits of correct ranks "
        "would time out)");
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0 + 0.5));
}

/// TINYTORCH_DISTRIBUTED_DEBUG (OFF, INFO or DETAIL; unset = OFF). Throws for another value.
inline DebugLevel debug_level_from_env() {
  const char* v = std::getenv("TINYTORCH_DISTRIBUTED_DEBUG");
  if (v == nullptr || *v == '\0') return DebugLevel::OFF;
  const std::string s(v);
  if (s == "OFF") return DebugLevel::OFF;
  if (s == "INFO") return DebugLevel::INFO;
  if (s == "DETAIL") return DebugLevel::DETAIL;
  throw_error("init_process_group: TINYTORCH_DISTRIBUTED_DEBUG='" + s + "' is not one of OFF, INFO, DETAIL");
}

/// AVG of float16/bfloat16 divides each rank's value by N before the SUM (see ReduceOp), and
/// nothing after; other dtypes divide the sum after. The process group and the algorithms ask this.
inline bool premultiplied_avg(ReduceOp op, DType dtype) {
  return op == ReduceOp::AVG && is_reduced_floating_point(dtype);
}

/// dst[i] <- dst[i] (op) src[i] for float16/bfloat16 (H = Half or BFloat16): each element is
/// converted to float32, combined, and rounded back once, so a SUM over N ranks rounds once per
/// hop, as NCCL's and gloo's half-precision sums do (the order of the hops is the MPI library's,
/// or the algorithm's). MAX and MIN keep dst where the comparison is false (NaN: as reduce_into).
template <typename H>
inline void reduce_16bit(const H* src, H* dst, int64_t n, ReduceOp op) {
  for (int64_t i = 0; i < n; ++i) {
    const float a = static_cast<float>(dst[i]), b = static_cast<float>(src[i]);
    if (op == ReduceOp::MAX) {
      if (a < b) dst[i] = src[i];
    } else if (op == ReduceOp::MIN) {
      if (b < a) dst[i] = src[i];
    } else {
      dst[i] = H(a + b);
    }
  }
}

#if TINYTORCH_WITH_MPI
/// The body of the user-defined MPI_Op for 16-bit floats (MPI has no 16-bit float type or
/// reduction; MPI_Op_create's signature: inout[i] = in[i] op inout[i], len elements).
template <typename H, ReduceOp kOp>
inline void mpi_reduce_16bit(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_16bit(static_cast<const H*>(in), static_cast<H*>(inout), *len, kOp);
}

/// The user-defined MPI_Op of (H, op), created once per process on first use (MPI_Op_create is
/// local, no communication; commutative: MPI may combine in any order). Freed by MPI_Finalize.
template <typename H>
inline MPI_Op mpi_op_16bit(ReduceOp op) {
  static const std::array<MPI_Op, 3> ops = [] {
    std::array<MPI_Op, 3> o{};
    MPI_Op_create(&mpi_reduce_16bit<H, ReduceOp::SUM>, 1, &o[0]);
    MPI_Op_create(&mpi_reduce_16bit<H, ReduceOp::MAX>, 1, &o[1]);
    MPI_Op_create(&mpi_reduce_16bit<H, ReduceOp::MIN>, 1, &o[2]);
    return o;
  }();
  return op == ReduceOp::MAX ? ops[1] : op == ReduceOp::MIN ? ops[2] : ops[0];
}

/// MPI's name for a tinytorch dtype. MPI has no 16-bit float: float16/bfloat16 move as
/// MPI_UINT16_T (broadcast, all_gather copy bits; reductions use mpi_op(op, dtype)'s own MPI_Op).
inline MPI_Datatype mpi_datatype(DType d) {
  switch (d) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    case DType::Int64: return MPI_INT64_T;
    case DType::Float16:
    case DType::BFloat16: return MPI_UINT16_T;
  }
  throw_error("mpi_datatype: unknown dtype");
}

/// MPI's reduction: MAX and MIN are MPI's own; SUM and AVG are MPI_SUM (AVG divides by N after:
/// MPI has no average). float16/bfloat16: tinytorch's user-defined ops (mpi_op_16bit).
inline MPI_Op mpi_op(ReduceOp op, DType dtype) {
  if (dtype == DType::Float16) return mpi_op_16bit<Half>(op);
  if (dtype == DType::BFloat16) return mpi_op_16bit<BFloat16>(op);
  return op == ReduceOp::MAX ? MPI_MAX : op == ReduceOp::MIN ? MPI_MIN : MPI_SUM;
}
#endif

/// The checks every raw-buffer collective makes before sending anything.
inline void check_buffer_args(const char* op, const void* buf, int64_t count, const char* name = "buffer") {
  check(count >= 0, rank_prefix(), op, ": count must be >= 0, got ", count);
  check(count <= INT32_MAX, rank_prefix(), op, ": count ", count, " exceeds MPI's int count limit (", INT32_MAX,
        " elements); split the buffer");
  check(count == 0 || buf != nullptr, rank_prefix(), op, ": ", name, " is a null pointer but count is ", count);
}

inline void check_reduce_op(const char* op, ReduceOp rop, DType dtype) {
  check(!(rop == ReduceOp::AVG && dtype == DType::Int64), rank_prefix(), op,
        ": ReduceOp::AVG is not supported for ", dtype_name(dtype),
        " (the average of integers would be truncated; PyTorch's gloo and NCCL backends refuse it "
        "too); use ReduceOp::SUM and divide in floating point");
}

/// The check for a buffer whose size is a multiple of a checked count (no int limit applies).
inline void check_not_null(const char* op, const void* buf, int64_t count, const char* name) {
  check(count == 0 || buf != nullptr, rank_prefix(), op, ": ", name, " is a null pointer but holds ", count,
        " elements");
}

/// x[i] /= n for the AVG reduction (floating dtypes only; checked before). float16/bfloat16:
/// computed in float32, rounded once.
inline void divide_by(void* x, int64_t count, DType dtype, int n) {
  dispatch_all(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(x);
    if constexpr (is_reduced_floating_point_v<T>) {
      for (int64_t i = 0; i < count; ++i) p[i] = T(static_cast<float>(p[i]) / static_cast<float>(n));
    } else {
      const T d = static_cast<T>(n);
      for (int64_t i = 0; i < count; ++i) p[i] /= d;
    }
  });
}

/// The kinds of collective a fingerprint names (PyTorch's OpType).
enum class OpType : int64_t { ALLREDUCE = 1, BROADCAST, ALLGATHER, REDUCE_SCATTER, BARRIER, DDP_FORWARD, DDP_END, NEW_GROUP,
                               FSDP_FORWARD };

/// What a rank is about to do, in numbers every rank can compare (PyTorch's
/// CollectiveFingerPrint). Unused fields are -1.
struct Fingerprint {
  int64_t seq = 0;        ///< the group's sequence number of this collective (1, 2, ...)
  int64_t type = 0;       ///< OpType
  int64_t dtype = -1;     ///< DType
  int64_t count = -1;     ///< elements (per rank for all_gather / reduce_scatter); DDP: iteration
  int64_t root = -1;      ///< broadcast's src
  int64_t reduce_op = -1; ///< ReduceOp
  int64_t algorithm = 0;  ///< all_reduce: 0 = MPI's, else algorithms.hpp's Algorithm
  static constexpr int kFields = 7;

  bool operator==(const Fingerprint& o) const {
    return std::memcmp(this, &o, sizeof(Fingerprint)) == 0;
  }

  /// "all_reduce (sequence number 3, 4 float32 elements, SUM)"
  std::string describe() const {
    static const char* algorithms[] = {"", "ring", "parameter_server", "tree"};
    const std::string seqs = "sequence number " + std::to_string(seq);
    const std::string elems = std::to_string(count) + " " +
                              (dtype >= 0 && dtype <= static_cast<int64_t>(DType::BFloat16) ? dtype_name(static_cast<DType>(dtype))
                                                                     : std::string("?")) +
                              " elements";
    const std::string rop = reduce_op >= 0 && reduce_op <= 3 ? reduce_op_name(static_cast<ReduceOp>(reduce_op)) : "?";
    switch (static_cast<OpType>(type)) {
      case OpType::ALLREDUCE:
        return "all_reduce (" + seqs + ", " + elems + ", " + rop +
               (algorithm > 0 && algorithm <= 3 ? std::string(", ") + algorithms[algorithm] + " algorithm" : "") + ")";
      case OpType::BROADCAST: return "broadcast (" + seqs + ", " + elems + ", src " + std::to_string(root) + ")";
      case OpType::ALLGATHER: return "all_gather (" + seqs + ", " + elems + " per rank)";
      case OpType::REDUCE_SCATTER: return "reduce_scatter (" + seqs + ", " + elems + " per rank, " + rop + ")";
      case OpType::BARRIER: return "barrier (" + seqs + ")";
      case OpType::DDP_FORWARD:
        return "DistributedDataParallel forward (" + seqs + ", iteration " + std::to_string(count) + ")";
      case OpType::DDP_END:
        return "the end of a DistributedDataParallel (" + seqs + ", after " + std::to_string(count) + " iterations)";
      case OpType::NEW_GROUP: return "new_group (" + seqs + ")";
      case OpType::FSDP_FORWARD:
        return "the end of a FullyShardedDataParallel forward (" + seqs + ", its units' order hashed to " +
               std::to_string(count) + ")";
    }
    return "an unknown collective (" + seqs + ")";
  }
};
static_assert(sizeof(Fingerprint) == Fingerprint::kFields * sizeof(int64_t));

}  // namespace detail

/// What this process's collectives and sends moved, over every process group (DDP's own group
/// included), since the start or reset_comm_counters(); returned by comm_counters(). A world of
/// one rank moves nothing and counts nothing. Per collective on a group of N > 1 ranks, with M the
/// bytes of the tensor (all_reduce, broadcast), of the output (all_gather) or of the input
/// (reduce_scatter):
///   calls[op]   +1
///   bytes[op]   +M
///   wire_bytes  +what all N ranks together send in a bandwidth-optimal algorithm: all_reduce
///               2(N-1)M (a ring: reduce-scatter, then all-gather), reduce_scatter (N-1)M,
///               all_gather (N-1)M, broadcast (N-1)M (each of the N-1 others must receive M).
///               Divided by N it is the bytes each rank sends: all_reduce 2(N-1)/N M, the others
///               (N-1)/N M, the figures of chapter 07 and of nccl-tests' bus bandwidth. It is the
///               algorithm's cost, not a measurement of what MPI chose to send.
///   p2p_bytes_sent  the bytes of this rank's send() calls, exactly (the ring all-reduce of
///               algorithms.hpp is made of them).
/// Every rank calls the same collectives, so every rank of a job counts the same wire_bytes.
struct CommCounters {
  enum Op { kAllReduce = 0, kBroadcast, kAllGather, kReduceScatter, kBarrier, kNumOps };
  int64_t calls[kNumOps] = {};
  int64_t bytes[kNumOps] = {};
  int64_t wire_bytes = 0;
  int64_t p2p_bytes_sent = 0;
};

namespace detail {
struct AtomicCommCounters {
  std::atomic<int64_t> calls[CommCounters::kNumOps] = {};
  std::atomic<int64_t> bytes[CommCounters::kNumOps] = {};
  std::atomic<int64_t> wire_bytes{0};
  std::atomic<int64_t> p2p_bytes_sent{0};
};
/// Process-wide, never destroyed (collectives may run from DDP's thread until exit).
inline AtomicCommCounters& comm_counters_storage() {
  static AtomicCommCounters* c = new AtomicCommCounters();
  return *c;
}
/// Counts one collective of `count` elements of `dtype` (per rank for all_gather and
/// reduce_scatter, as the collectives take it) on a group of n ranks.
inline void count_collective(OpType type, int64_t count, DType dtype, int n) {
  if (n <= 1 || type > OpType::BARRIER) return;
  const int op = static_cast<int>(type) - 1;  // OpType starts at ALLREDUCE = 1, in CommCounters::Op's order
  const int64_t es = static_cast<int64_t>(element_size(dtype));
  int64_t m = type == OpType::BARRIER ? 0 : count * es;
  if (type == OpType::ALLGATHER || type == OpType::REDUCE_SCATTER) m *= n;
  AtomicCommCounters& c = comm_counters_storage();
  c.calls[op].fetch_add(1, std::memory_order_relaxed);
  c.bytes[op].fetch_add(m, std::memory_order_relaxed);
  c.wire_bytes.fetch_add((type == OpType::ALLREDUCE ? 2 : 1) * (n - 1) * m, std::memory_order_relaxed);
}
}  // namespace detail

/// A snapshot of the counters (see CommCounters).
inline CommCounters comm_counters() {
  const detail::AtomicCommCounters& c = detail::comm_counters_storage();
  CommCounters out;
  for (int i = 0; i < CommCounters::kNumOps; ++i) {
    out.calls[i] = c.calls[i].load(std::memory_order_relaxed);
    out.bytes[i] = c.bytes[i].load(std::memory_order_relaxed);
  }
  out.wire_bytes = c.wire_bytes.load(std::memory_order_relaxed);
  out.p2p_bytes_sent = c.p2p_bytes_sent.load(std::memory_order_relaxed);
  return out;
}

/// Sets every counter to zero (e.g. before the step one wants to count).
inline void reset_comm_counters() {
  detail::AtomicCommCounters& c = detail::comm_counters_storage();
  for (int i = 0; i < CommCounters::kNumOps; ++i) {
    c.calls[i].store(0, std::memory_order_relaxed);
    c.bytes[i].store(0, std::memory_order_relaxed);
  }
  c.wire_bytes.store(0, std::memory_order_relaxed);
  c.p2p_bytes_sent.store(0, std::memory_order_relaxed);
}

/// One communicator and everything a collective on it needs: rank, size, timeout, sequence
/// number (PyTorch's c10d::ProcessGroup, ProcessGroupMPI). Collectives take raw contiguous CPU
/// buffers of `count` elements of `dtype` (the Tensor forms are in collectives.hpp):
///
///   all_reduce(x, n, dtype, op)           x_r <- op(x_0, ..., x_{N-1})            in place
///   broadcast(x, n, dtype, src)           x_r <- x_src
///   all_gather(out, in, n, dtype)         out_r = [in_0 | in_1 | ... | in_{N-1}]  out: N*n elements
///   reduce_scatter(out, in, n, dtype, op) out_r = op over ranks of in[r*n, (r+1)*n)  in: N*n
///   barrier()                             returns when every rank has called it
///
/// Each is one function: checks (a bad argument throws tinytorch::Error naming the collective
/// and the values, before any message), the next sequence number, the DETAIL agreement, then
/// either Completion::Blocking (wait until every rank has arrived, polled politely, then MPI's
/// blocking call: MPI_Allreduce, MPI_Bcast, MPI_Allgather, MPI_Reduce_scatter_block,
/// MPI_Barrier) or Completion::Async (MPI_Iallreduce, ... returning a Work). Every wait is
/// watched (work.hpp): past timeout() the job is aborted with a report.
/// A world of one rank (no mpirun, or a build without MPI) communicates nothing:
/// all_reduce/broadcast/barrier do nothing, all_gather/reduce_scatter copy `in` to `out`.
/// MPI counts are `int`: one call moves at most 2^31-1 elements (8 GiB of float32).
/// One thread at a time per group (DDP uses a group of its own): a collective called while
/// another thread is inside one of the same group throws tinytorch::Error (two threads would
/// issue MPI collectives in an order that differs across ranks: wrong numbers, silently).
/// A group lives in a std::shared_ptr (init_process_group, new_group); each Work keeps its group
/// alive until it completes. After destroy_process_group, using a group throws.
class ProcessGroup : public std::enable_shared_from_this<ProcessGroup> {
 public:
  using Milliseconds = std::chrono::milliseconds;

#if TINYTORCH_WITH_MPI
  /// Takes ownership of `comm` (freed by the destructor while MPI runs); sets MPI_ERRORS_RETURN
  /// on it. Throws tinytorch::Error if an MPI call fails.
  /// `global_ranks`: the members' ranks in the default group, in this group's rank order (empty:
  /// 0, 1, ..., size-1, a group of the whole world).
  ProcessGroup(MPI_Comm comm, std::string name, Milliseconds timeout, std::vector<int> global_ranks = {})
      : name_(std::move(name)), timeout_(timeout), ranks_(std::move(global_ranks)) {
    comm_ = comm;
    const char* op = "ProcessGroup";
    detail::mpi_check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", op);
    detail::mpi_check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank", op);
    detail::mpi_check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size", op);
    if (ranks_.empty())
      for (int r = 0; r < size_; ++r) ranks_.push_back(r);
    detail::check(static_cast<int>(ranks_.size()) == size_, "ProcessGroup \"", name_, "\": ", ranks_.size(),
                  " global ranks given for a communicator of ", size_);
  }
#endif

  /// A group of one rank with no communicator (a build without MPI, or a group of one member).
  ProcessGroup(std::string name, Milliseconds timeout, int global_rank = 0)
      : name_(std::move(name)), timeout_(timeout), ranks_{global_rank} {}

  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  ~ProcessGroup() { free_communicator(); }

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& name() const { return name_; }
  /// How long any collective of this group may wait before the watchdog aborts the job.
  Milliseconds timeout() const { return timeout_; }
  /// The number of collectives started on this group so far (PyTorch's sequence number).
  uint64_t sequence_number() const { return seq_; }
#if TINYTORCH_WITH_MPI
  MPI_Comm mpi_comm() const { return comm_; }
#endif

  /// The members' ranks in the default group, in this group's rank order: group rank i is
  /// default-group (global) rank ranks()[i]. 0, 1, ..., size-1 for the default group and for
  /// new_group(name); the sorted list given to new_group(ranks) otherwise.
  const std::vector<int>& ranks() const { return ranks_; }

  /// This group's rank of default-group rank `global_rank`, or -1 if it is not a member
  /// (torch.distributed.get_group_rank, which throws instead).
  int group_rank_of(int global_rank) const {
    for (size_t i = 0; i < ranks_.size(); ++i)
      if (ranks_[i] == global_rank) return static_cast<int>(i);
    return -1;
  }

  /// "rank 1" or, in a group that is not the whole world in order, "rank 1 (global rank 3)".
  std::string peer_name(int group_rank) const {
    std::string s = "rank " + std::to_string(group_rank);
    if (group_rank >= 0 && group_rank < size_ && ranks_[static_cast<size_t>(group_rank)] != group_rank)
      s += " (global rank " + std::to_string(ranks_[static_cast<size_t>(group_rank)]) + ")";
    return s;
  }

  /// Asynchronous collectives started on this group whose Work has not completed yet.
  int pending() const { return pending_->load(); }

  /// Frees the communicator (MPI_Comm_free) if MPI is still running; afterwards the group can
  /// no longer communicate. Called by the destructor and by destroy_process_group.
  void free_communicator() {
#if TINYTORCH_WITH_MPI
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = MPI_COMM_NULL;
#endif
  }

  /// RAII, one per collective call: the group is busy until it returns. Throws tinytorch::Error
  /// (naming `name` and the group) if another thread is inside a collective of this group, or
  /// if the group can no longer communicate (destroy_process_group has run).
  class Exclusive {
   public:
    Exclusive(ProcessGroup& g, const char* name) : g_(g) {
      detail::check(!g_.busy_.exchange(true), detail::rank_prefix(), name, ": another thread is inside a collective of ",
                    "process group \"", g_.name_, "\"; one thread at a time may use a group (use new_group() for a ",
                    "second thread: collectives issued from two threads would meet in a different order on each rank)");
      owner_ = true;
#if TINYTORCH_WITH_MPI
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (finalized || g_.comm_ == MPI_COMM_NULL) {
        g_.busy_ = false;
        owner_ = false;
        detail::throw_error(::tinytorch::detail::str_cat(
            detail::rank_prefix(), name, ": process group \"", g_.name_,
            "\" can no longer communicate: its communicator was freed (destroy_process_group)"));
      }
#endif
    }
    ~Exclusive() {
      if (owner_) g_.busy_ = false;
    }
    Exclusive(const Exclusive&) = delete;
    Exclusive& operator=(const Exclusive&) = delete;

   private:
    ProcessGroup& g_;
    bool owner_ = false;
  };

  // ---- the five collectives -------------------------------------------------------------------
  // `name` is the operation's name in error messages (the free functions pass theirs).

  Work all_reduce(void* buf, int64_t count, DType dtype, ReduceOp op = ReduceOp::SUM,
                  Completion how = Completion::Async, const char* name = "all_reduce") {
    Exclusive busy(*this, name);
    detail::check_buffer_args(name, buf, count);
    detail::check_reduce_op(name, op, dtype);
    const detail::Fingerprint fp = begin(name, detail::OpType::ALLREDUCE, dtype, count, -1, op);
    if (size_ == 1 || count == 0) return Work();
#if TINYTORCH_WITH_MPI
    const int n = static_cast<int>(count);
    const MPI_Datatype t = detail::mpi_datatype(dtype);
    const MPI_Op mop = detail::mpi_op(op, dtype);
    if (detail::premultiplied_avg(op, dtype)) detail::divide_by(buf, count, dtype, size_);
    return issue(fp, name, how, average_after(op, buf, count, dtype), "MPI_Allreduce",
                 [&] { return MPI_Allreduce(MPI_IN_PLACE, buf, n, t, mop, comm_); }, "MPI_Iallreduce",
                 [&](MPI_Request* r) { return MPI_Iallreduce(MPI_IN_PLACE, buf, n, t, mop, comm_, r); });
#else
    (void)how, (void)fp;
    return Work();
#endif
  }

  Work broadcast(void* buf, int64_t count, DType dtype, int src, Completion how = Completion::Async,
                 const char* name = "broadcast") {
    Exclusive busy(*this, name);
    detail::check_buffer_args(name, buf, count);
    detail::check(src >= 0 && src < size_, detail::rank_prefix(), name, ": src rank ", src, " is outside [0, ",
                  size_, ")");
    const detail::Fingerprint fp = begin(name, detail::OpType::BROADCAST, dtype, count, src, ReduceOp{}, false);
    if (size_ == 1 || count == 0) return Work();
#if TINYTORCH_WITH_MPI
    const int n = static_cast<int>(count);
    const MPI_Datatype t = detail::mpi_datatype(dtype);
    return issue(fp, name, how, nullptr, "MPI_Bcast", [&] { return MPI_Bcast(buf, n, t, src, comm_); }, "MPI_Ibcast",
                 [&](MPI_Request* r) { return MPI_Ibcast(buf, n, t, src, comm_, r); });
#else
    (void)how, (void)fp;
    return Work();
#endif
  }

  /// `in` may be out + rank * count (in place).
  Work all_gather(void* out, const void* in, int64_t count, DType dtype, Completion how = Completion::Async,
                  const char* name = "all_gather") {
    Exclusive busy(*this, name);
    detail::check_buffer_args(name, in, count, "input");
    detail::check_not_null(name, out, count * size_, "output");
    const detail::Fingerprint fp = begin(name, detail::OpType::ALLGATHER, dtype, count, -1, ReduceOp{}, false);
    const size_t bytes = static_cast<size_t>(count) * element_size(dtype);
    const void* my_slot = static_cast<const char*>(out) + static_cast<size_t>(rank_) * bytes;
    if (size_ == 1 || count == 0) {
      if (count > 0 && in != out) std::memmove(out, in, bytes);
      return Work();
    }
#if TINYTORCH_WITH_MPI
    const int n = static_cast<int>(count);
    const MPI_Datatype t = detail::mpi_datatype(dtype);
    const void* send = in == my_slot ? MPI_IN_PLACE : in;
    return issue(fp, name, how, nullptr, "MPI_Allgather",
                 [&] { return MPI_Allgather(send, n, t, out, n, t, comm_); }, "MPI_Iallgather",
                 [&](MPI_Request* r) { return MPI_Iallgather(send, n, t, out, n, t, comm_, r); });
#else
    (void)my_slot, (void)how, (void)fp;
    return Work();
#endif
  }

  /// out and in must not overlap.
  Work reduce_scatter(void* out, const void* in, int64_t count, DType dtype, ReduceOp op = ReduceOp::SUM,
                      Completion how = Completion::Async, const char* name = "reduce_scatter") {
    Exclusive busy(*this, name);
    detail::check_buffer_args(name, out, count, "output");
    detail::check_not_null(name, in, count * size_, "input");
    detail::check_reduce_op(name, op, dtype);
    const size_t bytes = static_cast<size_t>(count) * element_size(dtype);
    const char* a = static_cast<const char*>(in);
    const char* b = static_cast<const char*>(out);
    detail::check(count == 0 || b + bytes <= a || a + bytes * size_ <= b, detail::rank_prefix(), name,
                  ": output and input buffers overlap");
    const detail::Fingerprint fp = begin(name, detail::OpType::REDUCE_SCATTER, dtype, count, -1, op);
    if (size_ == 1 || count == 0) {
      if (count > 0) std::memcpy(out, in, bytes);
      return Work();
    }
#if TINYTORCH_WITH_MPI
    const int n = static_cast<int>(count);
    const MPI_Datatype t = detail::mpi_datatype(dtype);
    const MPI_Op mop = detail::mpi_op(op, dtype);
    std::shared_ptr<std::vector<char>> scaled;  // 16-bit AVG: a copy of the input divided by N
    if (detail::premultiplied_avg(op, dtype)) {
      scaled = std::make_shared<std::vector<char>>(static_cast<const char*>(in),
                                                   static_cast<const char*>(in) + bytes * static_cast<size_t>(size_));
      detail::divide_by(scaled->data(), count * size_, dtype, size_);
      in = scaled->data();
    }
    Work w = issue(fp, name, how, average_after(op, out, count, dtype), "MPI_Reduce_scatter_block",
                   [&] { return MPI_Reduce_scatter_block(in, out, n, t, mop, comm_); }, "MPI_Ireduce_scatter_block",
                   [&](MPI_Request* r) { return MPI_Ireduce_scatter_block(in, out, n, t, mop, comm_, r); });
    if (scaled) w.attach(scaled);  // alive until an asynchronous reduce-scatter completes
    return w;
#else
    (void)how, (void)fp;
    return Work();
#endif
  }

  Work barrier(Completion how = Completion::Async, const char* name = "barrier") {
    Exclusive busy(*this, name);
    const detail::Fingerprint fp = begin(name, detail::OpType::BARRIER, DType::Float32, 0, -1, ReduceOp{}, false);
    if (size_ == 1) return Work();
#if TINYTORCH_WITH_MPI
    if (how == Completion::Blocking) {  // the polled arrival *is* the barrier
      arrive(fp, name);
      return Work();
    }
    return issue(fp, name, how, nullptr, "MPI_Barrier", [&] { return MPI_Barrier(comm_); }, "MPI_Ibarrier",
                 [&](MPI_Request* r) { return MPI_Ibarrier(comm_, r); });
#else
    (void)how, (void)fp;
    return Work();
#endif
  }

  /// The tag algorithms.hpp's ring, tree and parameter-server all-reduces use on a group's
  /// communicator (kAlgorithmTag); send / recv refuse it, so that a user's message can never be
  /// taken for one of theirs.
  static constexpr int kReservedTag = 0x7474;

  // ---- point to point ---------------------------------------------------------------------------
  // send(buf, n, dtype, dst, tag)   rank dst's matching recv(buf, n, dtype, src = this rank, tag)
  //                                 receives the n elements. Messages between two ranks with one
  //                                 tag arrive in the order they were sent (MPI's non-overtaking
  //                                 rule). Ranks are this group's.
  // Both are MPI_Isend / MPI_Irecv: Completion::Async returns the Work, Completion::Blocking waits
  // for it (polled and watched, as the collectives: a send that nobody receives, or a recv that
  // nobody sends, ends the job after the group's timeout, the watchdog naming the peer, the tag
  // and the size). A blocking send returns once the receiver has the data or MPI has buffered it.
  // The receive checks the size that arrived: a message of another size than the n elements of
  // `dtype` posted throws tinytorch::Error on the receiving rank, naming both sizes, the peer and
  // the tag (MPI itself would report MPI_ERR_TRUNCATE for a longer message and nothing at all for
  // a shorter one). MPI does not transmit the dtype: a float32 message of 2n elements received as
  // n float64 is not detected. Point-to-point messages are not collectives: they do not count in
  // sequence_number() and are not agreed at DETAIL (PyTorch's ProcessGroupWrapper skips them too).

  Work send(const void* buf, int64_t count, DType dtype, int dst, int tag = 0, Completion how = Completion::Async,
            const char* name = "send") {
    return point_to_point(true, const_cast<void*>(buf), count, dtype, dst, tag, how, name);
  }

  Work recv(void* buf, int64_t count, DType dtype, int src, int tag = 0, Completion how = Completion::Async,
            const char* name = "recv") {
    return point_to_point(false, buf, count, dtype, src, tag, how, name);
  }

#if TINYTORCH_WITH_MPI
  /// new_group(ranks)'s collective part, called on the default group by every rank with the same
  /// sorted, checked `members`: all-gathers each rank's membership list (polled, watched) and
  /// throws the same tinytorch::Error on every rank if any rank passed another list, naming both;
  /// then MPI_Comm_split. Returns the new group on its members, nullptr elsewhere.
  std::shared_ptr<ProcessGroup> split(const std::vector<int>& members, const std::string& name, Milliseconds timeout) {
    const char* op = "new_group";
    Exclusive busy(*this, op);
    const detail::Fingerprint fp = begin(op, detail::OpType::NEW_GROUP, DType::Float32, 0, -1, ReduceOp{}, false);
    const size_t n = static_cast<size_t>(size_);
    std::vector<int> mine(n, 0), all(n * n, 0);
    for (int m : members) mine[static_cast<size_t>(m)] = 1;
    MPI_Request r = MPI_REQUEST_NULL;
    detail::mpi_check(MPI_Iallgather(mine.data(), size_, MPI_INT, all.data(), size_, MPI_INT, comm_, &r),
                      "MPI_Iallgather", op);
    detail::wait_requests(&r, 1, timeout_, op, [this, fp] { return describe(fp, "new_group"); });
    auto list = [&](size_t k) {
      std::string l;
      for (size_t i = 0; i < n; ++i)
        if (all[k * n + i]) l += (l.empty() ? "" : ", ") + std::to_string(i);
      return "[" + l + "]";
    };
    for (size_t k = 1; k < n; ++k)
      detail::check(std::equal(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n),
                               all.begin() + static_cast<std::ptrdiff_t>(k * n)),
                    detail::rank_prefix(), "new_group(\"", name, "\"): every rank must pass the same ranks (and create ",
                    "its groups in the same order), but rank 0 passed ", list(0), " and rank ", k, " passed ", list(k));
    const auto it = std::find(members.begin(), members.end(), rank_);
    const bool member = it != members.end();
    MPI_Comm comm = MPI_COMM_NULL;
    {
      detail::WatchScope watch([name] { return "MPI_Comm_split in new_group(\"" + name + "\")"; }, timeout);
      detail::mpi_check(MPI_Comm_split(comm_, member ? 0 : MPI_UNDEFINED,
                                       member ? static_cast<int>(it - members.begin()) : 0, &comm),
                        "MPI_Comm_split", op);
    }
    if (!member) return nullptr;
    return std::make_shared<ProcessGroup>(comm, name, timeout, members);
  }
#endif

  /// For collectives built from point-to-point messages (algorithms.hpp): counts the sequence
  /// number and, at DETAIL, agrees on the fingerprint as the five above do. Returns it.
  /// The caller holds an Exclusive for the whole collective.
  detail::Fingerprint begin_collective(const char* name, detail::OpType type, DType dtype, int64_t count,
                                       ReduceOp op, int64_t algorithm) {
    return begin(name, type, dtype, count, -1, op, true, algorithm);
  }

  /// Returns once every rank has called it (polled, watched; at DETAIL with the same `type`
  /// and `value`). Counts as a collective. For what MPI itself does blocking afterwards, so that
  /// the wait for the slowest rank burns no core (new_group's MPI_Comm_dup).
  void rendezvous(const char* name, detail::OpType type, int64_t value = 0) {
    Exclusive busy(*this, name);
    const detail::Fingerprint fp = begin(name, type, DType::Float32, value, -1, ReduceOp{}, false);
#if TINYTORCH_WITH_MPI
    if (size_ > 1) arrive(fp, name);
#else
    (void)fp;
#endif
  }

  /// At DETAIL only (else nothing): every rank states that it is at `type` with `value` (e.g.
  /// DistributedDataParallel's forward and its iteration), so that a rank that is somewhere
  /// else (one step more, or already in destroy_process_group's barrier) is an error on every
  /// rank instead of a hang. Counts as a collective.
  void check_same_point(const char* name, detail::OpType type, int64_t value) {
    if (get_debug_level() != DebugLevel::DETAIL || size_ == 1) return;
    Exclusive busy(*this, name);
    begin(name, type, DType::Float32, value, -1, ReduceOp{}, false);
  }

  /// The watchdog's description of a collective of this group; `name` is what the caller
  /// called it, when that says more than the op ("barrier in destroy_process_group").
  std::string describe(const detail::Fingerprint& fp, const char* name = nullptr) const {
    const std::string what = fp.describe();
    std::string s = what + " on group \"" + name_ + "\"";
    if (name != nullptr && what.rfind(std::string(name) + " (", 0) != 0) s += ", called as " + std::string(name);
    return s;
  }

 private:
  /// A point-to-point peer must be another member of this group.
  void check_peer(const char* name, int peer, const char* what) const {
    detail::check(peer >= 0 && peer < size_, detail::rank_prefix(), name, ": ", what, " rank ", peer,
                  " is outside [0, ", size_, ") of process group \"", name_, "\"");
    detail::check(peer != rank_, detail::rank_prefix(), name, ": ", what, " rank ", peer,
                  " is this rank; a rank cannot send to or receive from itself (PyTorch: \"Invalid ",
                  what == std::string("dst") ? "destination" : "source", " rank\")");
  }

  /// send (MPI_Isend of buf) or recv (MPI_Irecv into buf, its size checked when it completes),
  /// after the local checks; Blocking waits for the Work (watched) and returns a completed one.
  Work point_to_point(bool is_send, void* buf, int64_t count, DType dtype, int peer, int tag, Completion how,
                      const char* name) {
    Exclusive busy(*this, name);
    detail::check_buffer_args(name, buf, count);
    check_peer(name, peer, is_send ? "dst" : "src");
    check_tag(name, tag);
#if TINYTORCH_WITH_MPI
    std::vector<MPI_Request> r(1, MPI_REQUEST_NULL);
    const int n = static_cast<int>(count);
    const MPI_Datatype t = detail::mpi_datatype(dtype);
    if (is_send) {
      detail::mpi_check(MPI_Isend(buf, n, t, peer, tag, comm_, r.data()), "MPI_Isend", name);
      detail::comm_counters_storage().p2p_bytes_sent.fetch_add(count * static_cast<int64_t>(element_size(dtype)),
                                                               std::memory_order_relaxed);
    } else {
      detail::mpi_check(MPI_Irecv(buf, n, t, peer, tag, comm_, r.data()), "MPI_Irecv", name);
    }
    std::function<void(const std::vector<MPI_Status>&)> check_size;
    if (!is_send) {
      const std::string where = detail::rank_prefix() + name + " from " + peer_name(peer) + " (tag " +
                                std::to_string(tag) + ", group \"" + name_ + "\")";
      const int64_t expected = count * static_cast<int64_t>(element_size(dtype));
      const std::string posted = std::to_string(count) + " " + dtype_name(dtype) + " elements (" +
                                 std::to_string(expected) + " bytes)";
      check_size = [where, expected, posted, name](const std::vector<MPI_Status>& st) {
        int bytes = -1;
        MPI_Get_count(&st[0], MPI_BYTE, &bytes);
        if (st[0].MPI_ERROR == MPI_ERR_TRUNCATE)
          detail::throw_error(::tinytorch::detail::str_cat(
              where, ": the message is larger (", bytes > expected ? std::to_string(bytes) + " bytes" : "size unknown",
              ") than the ", posted, " posted; send and recv must agree on the size"));
        if (st[0].MPI_ERROR != MPI_SUCCESS) detail::mpi_check(st[0].MPI_ERROR, "MPI_Irecv", name);
        detail::check(bytes == expected, where, ": the message holds ", bytes, " bytes but ", posted,
                      " were posted; send and recv must agree on the size");
      };
    }
    Work w = p2p_work(name, std::move(r), (is_send ? "to " : "from ") + peer_name(peer), tag, count, dtype,
                      std::move(check_size));
    if (how == Completion::Blocking) {
      w.wait();
      return Work();
    }
    return w;
#else
    (void)buf, (void)count, (void)dtype, (void)how;
    return Work();  // not reached: a world of one rank has no peer (check_peer threw)
#endif
  }

  /// Tags are 0 .. MPI_TAG_UB (at least 32767 by the MPI standard), except kReservedTag.
  void check_tag(const char* name, int tag) const {
    detail::check(tag != kReservedTag, detail::rank_prefix(), name, ": tag ", tag,
                  " is reserved for the library's own all-reduce algorithms (algorithms.hpp's kAlgorithmTag), "
                  "whose messages travel on the group's communicator too; use another tag");
    int tag_ub = 32767;
#if TINYTORCH_WITH_MPI
    int* attr = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(comm_, MPI_TAG_UB, &attr, &flag);
    if (flag && attr != nullptr) tag_ub = *attr;
#endif
    detail::check(tag >= 0 && tag <= tag_ub, detail::rank_prefix(), name, ": tag ", tag, " is outside [0, ", tag_ub,
                  "] (MPI_TAG_UB)");
  }

#if TINYTORCH_WITH_MPI
  /// The Work of a started MPI_Isend / MPI_Irecv: counted as pending, watched with a description
  /// that names the peer and the tag ("send to rank 1 (tag 7, 12 float32 elements) on group ...").
  Work p2p_work(const char* name, std::vector<MPI_Request> r, const std::string& peer, int tag, int64_t count,
                DType dtype, std::function<void(const std::vector<MPI_Status>&)> check_statuses) {
    pending_->fetch_add(1);
    std::function<void()> done = [pending = pending_] { pending->fetch_sub(1); };
    std::string what = detail::p2p_marker() + name + " " + peer + " (tag " + std::to_string(tag) + ", " + std::to_string(count) +
                       " " + dtype_name(dtype) + " elements) on group \"" + name_ + "\"";
    auto describe = [w = std::move(what)] { return w; };
    if (!check_statuses) return Work(name, std::move(r), std::move(done), std::move(describe), timeout_);
    return Work(name, std::move(r), std::move(done), std::move(describe), timeout_, std::move(check_statuses));
  }
#endif

  /// Checks done: next sequence number, and at DETAIL the fingerprint agreement.
  detail::Fingerprint begin(const char* name, detail::OpType type, DType dtype, int64_t count, int64_t root,
                            ReduceOp op, bool has_op = true, int64_t algorithm = 0) {
    detail::Fingerprint fp;
    fp.seq = static_cast<int64_t>(++seq_);
    fp.type = static_cast<int64_t>(type);
    const bool no_data = type == detail::OpType::BARRIER || type == detail::OpType::DDP_FORWARD ||
                         type == detail::OpType::DDP_END || type == detail::OpType::NEW_GROUP ||
                         type == detail::OpType::FSDP_FORWARD;
    fp.dtype = no_data ? -1 : static_cast<int64_t>(dtype);
    fp.count = count;
    fp.root = root;
    fp.reduce_op = has_op ? static_cast<int64_t>(op) : -1;
    fp.algorithm = algorithm;
    detail::count_collective(type, count, dtype, size_);  // comm_counters()
#if TINYTORCH_WITH_MPI
    if (size_ > 1 && get_debug_level() == DebugLevel::DETAIL) agree(fp, name);
#else
    (void)name;
#endif
    return fp;
  }

#if TINYTORCH_WITH_MPI
  /// The step after the data has arrived: AVG is MPI's SUM, then x[i] /= N (MPI has no
  /// average); nothing for the other ops.
  std::function<void()> average_after(ReduceOp op, void* x, int64_t count, DType dtype) const {
    if (op != ReduceOp::AVG || detail::premultiplied_avg(op, dtype)) return nullptr;
    return [x, count, dtype, n = size_] { detail::divide_by(x, count, dtype, n); };
  }

  /// DETAIL: all-gather every rank's fingerprint (polled, watched) and throw the same error on
  /// every rank if any differs from rank 0's, naming rank 0's and the first other one's.
  void agree(const detail::Fingerprint& fp, const char* name) {
    std::vector<detail::Fingerprint> all(static_cast<size_t>(size_));
    MPI_Request r = MPI_REQUEST_NULL;
    detail::mpi_check(MPI_Iallgather(&fp, detail::Fingerprint::kFields, MPI_INT64_T, all.data(),
                                     detail::Fingerprint::kFields, MPI_INT64_T, comm_, &r),
                      "MPI_Iallgather", name);
    detail::wait_requests(&r, 1, timeout_, name,
                          [this, fp, name] { return "the agreement check (DETAIL) before " + describe(fp, name); });
    for (int k = 1; k < size_; ++k) {
      if (all[static_cast<size_t>(k)] == all[0]) continue;
      detail::throw_error(::tinytorch::detail::str_cat(
          detail::rank_prefix(), "collective mismatch across ranks on group \"", name_,
          "\" (found by TINYTORCH_DISTRIBUTED_DEBUG=DETAIL): rank 0 is running ", all[0].describe(), " but rank ", k,
          " is running ", all[static_cast<size_t>(k)].describe(),
          ". Every rank must call the same collectives, in the same order, with the same dtype, count, "
          "root and reduce op."));
    }
  }

  /// Blocks until every rank has started this collective (MPI_Ibarrier, polled: no core burnt
  /// while waiting), watched. At DETAIL the fingerprint exchange was the arrival already.
  void arrive(const detail::Fingerprint& fp, const char* name) {
    if (get_debug_level() == DebugLevel::DETAIL) return;
    MPI_Request r = MPI_REQUEST_NULL;
    detail::mpi_check(MPI_Ibarrier(comm_, &r), "MPI_Ibarrier", name);
    detail::wait_requests(&r, 1, timeout_, name, [this, fp, name] { return describe(fp, name); });
  }

  /// The one place a collective is issued: Blocking = arrive, then MPI's blocking call under the
  /// watchdog, then `finish`; Async = the non-blocking call, wrapped in a Work.
  template <typename BlockingCall, typename AsyncCall>
  Work issue(const detail::Fingerprint& fp, const char* name, Completion how, std::function<void()> finish,
             const char* blocking_name, BlockingCall blocking, const char* async_name, AsyncCall start) {
    if (how == Completion::Blocking) {
      arrive(fp, name);
      {
        detail::WatchScope watch([this, fp, name] { return describe(fp, name); }, timeout_);
        detail::mpi_check(blocking(), blocking_name, name);
      }
      if (finish) finish();
      return Work();
    }
    std::vector<MPI_Request> r(1, MPI_REQUEST_NULL);
    detail::mpi_check(start(r.data()), async_name, name);
    // The Work keeps this group (and so its communicator) alive until it completes, and counts
    // as pending until then (destroy_process_group refuses to finalise MPI under it).
    pending_->fetch_add(1);
    std::function<void()> done = [pending = pending_, f = std::move(finish)] {
      pending->fetch_sub(1);
      if (f) f();
    };
    return Work(name, std::move(r), std::move(done),
                [self = shared_from_this(), fp, n = std::string(name)] { return self->describe(fp, n.c_str()); },
                timeout_);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
#endif

  std::string name_;
  Milliseconds timeout_;
  std::vector<int> ranks_;  ///< members' default-group ranks, in group-rank order
  int rank_ = 0;
  int size_ = 1;
  std::atomic<uint64_t> seq_{0};
  std::atomic<bool> busy_{false};  ///< a thread is inside a collective of this group (Exclusive)
  std::shared_ptr<std::atomic<int>> pending_ = std::make_shared<std::atomic<int>>(0);  ///< un-completed Works
};

namespace detail {

/// Everything the default group knows. One per process (function-local static).
struct GroupState {
  bool initialized = false;
  Backend backend = Backend::MPI;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int thread_level = 0;            ///< MPI_THREAD_* provided (MPI builds), 0 otherwise
  bool mpi_started_by_us = false;  ///< we called MPI_Init_thread, so destroy calls MPI_Finalize
  std::terminate_handler previous_terminate = nullptr;
  std::shared_ptr<ProcessGroup> world;  ///< the default group (a dup of MPI_COMM_WORLD)
  std::vector<std::weak_ptr<ProcessGroup>> subgroups;  ///< new_group()'s, freed by destroy_process_group
#if TINYTORCH_WITH_MPI
  MPI_Comm local_comm = MPI_COMM_NULL;  ///< the ranks on this machine
#endif
#if TINYTORCH_WITH_NCCL
  NcclContext nccl;
#endif
};

inline GroupState& group() {
  static GroupState state;
  return state;
}

/// The world size a launcher announced in the environment (Open MPI: OMPI_COMM_WORLD_SIZE;
/// MPICH/Intel MPI/Slurm PMI: PMI_SIZE), with the variable's name; {1, ""} if none is set.
inline std::pair<long, std::string> launcher_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    long n = env_int(name);
    if (n > 0) return {n, name};
  }
  return {1, ""};
}

/// Throws "<op>: the default process group has not been initialized ..." unless it has been.
inline void require_initialized(const char* op) {
  check(group().initialized, op,
        ": the default process group has not been initialized; call "
        "tinytorch::distributed::init_process_group(Backend::MPI) first (or use ProcessGroupGuard)");
}

/// The default group, after require_initialized(op).
inline ProcessGroup& default_group(const char* op) {
  require_initialized(op);
  return *group().world;
}

#if TINYTORCH_WITH_MPI
/// Installed by init_process_group (world size > 1): an exception nobody catches ends up in
/// std::terminate without unwinding the stack; print it with the rank and abort the whole job so
/// the other ranks do not wait forever in their next collective.
inline void terminate_with_mpi_abort() {
  std::string what = "std::terminate called";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      what = ex.what();
    } catch (...) {
      what = "an exception that is not a std::exception";
    }
  }
  const std::string prefix = "rank " + std::to_string(group().rank) + ": ";
  // Messages from the distributed layer already start with "rank r: "; do not say it twice.
  // One write, so that the lines of ranks failing at the same moment do not interleave.
  std::cerr << (what.rfind(prefix, 0) == 0 ? "" : prefix) + what + "\n" + prefix +
                   "uncaught exception; calling MPI_Abort so the other ranks do not hang\n"
            << std::flush;
  // One second before the abort, as the watchdog waits: the other ranks often fail at the same
  // moment (a collective mismatch found by every rank) and MPI_Abort kills them, message unprinted.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // not reached: MPI_Abort does not return
}
#endif

}  // namespace detail

/// True between init_process_group() and destroy_process_group() (torch.distributed.is_initialized).
inline bool is_initialized() { return detail::group().initialized; }

/// True if this build can talk to other processes at all (compiled with MPI).
constexpr bool is_mpi_available() { return TINYTORCH_WITH_MPI != 0; }

/// True if this translation unit can use Backend::NCCL (nvcc + NCCL + MPI).
constexpr bool is_nccl_available() { return TINYTORCH_WITH_NCCL != 0; }

/// The timeout init_process_group uses when none is given: TINYTORCH_DIST_TIMEOUT (seconds) if
/// set, else kDefaultTimeout (30 minutes). Throws tinytorch::Error for a bad variable.
inline std::chrono::milliseconds default_timeout() { return detail::timeout_from_env(); }

/// Creates the default process group (torch.distributed.init_process_group).
///
/// `timeout`: how long any collective may wait for the other ranks before the watchdog prints
/// what it waited for and aborts the job (work.hpp); PyTorch's `timeout`, default 30 minutes,
/// or TINYTORCH_DIST_TIMEOUT=<seconds>. The debug level comes from TINYTORCH_DISTRIBUTED_DEBUG.
/// MPI builds: MPI_Init_thread(MPI_THREAD_MULTIPLE) unless MPI is already initialised (then the
/// caller owns MPI and we never finalise it); the group communicates on a duplicate of
/// MPI_COMM_WORLD whose error handler is MPI_ERRORS_RETURN; the local rank comes from
/// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). Backend::NCCL then bootstraps NCCL as described in
/// nccl_context.hpp. With more than one rank, a std::terminate handler is installed that prints
/// "rank r: <what()>" and calls MPI_Abort (see guard.hpp), and the watchdog thread starts.
///
/// Throws tinytorch::Error when: the group is already initialised; MPI was already finalised
/// (a second init after destroy_process_group); Backend::NCCL is asked for in a build without
/// NCCL; the program was built without MPI but launched as one of several ranks; the launcher's
/// world size disagrees with MPI's (a binary linked against a different MPI than mpirun's);
/// timeout < 1 s (kMinTimeout); TINYTORCH_DIST_TIMEOUT or TINYTORCH_DISTRIBUTED_DEBUG is malformed; any
/// MPI/CUDA/NCCL call fails.
inline void init_process_group(Backend backend = Backend::MPI, std::chrono::milliseconds timeout = default_timeout()) {
  auto& g = detail::group();
  detail::check(!g.initialized,
                "init_process_group: trying to initialize the default process group twice "
                "(call destroy_process_group() first)");
  detail::check(timeout >= kMinTimeout, "init_process_group: timeout must be at least 1000 ms (kMinTimeout), got ",
                timeout.count(), " ms");
  set_debug_level(detail::debug_level_from_env());
  auto [launched, launcher_var] = detail::launcher_world_size();

#if !TINYTORCH_WITH_MPI
  detail::check(launched <= 1, "init_process_group: this process was launched as one of ", launched,
                " ranks (", launcher_var, "=", launched,
                ") but tinytorch was compiled without MPI (TINYTORCH_WITH_MPI=0), so every rank would "
                "silently train alone. Build the program with mpicxx (or link the CMake target "
                "tinytorch::mpi), or run it without mpirun.");
  detail::check(backend == Backend::MPI,
                "init_process_group: Backend::NCCL needs MPI (for the bootstrap) and a translation "
                "unit compiled by nvcc with NCCL; this build has neither (TINYTORCH_WITH_MPI=0)");
  g = detail::GroupState{};
  g.world = std::make_shared<ProcessGroup>("default", timeout);
  g.initialized = true;
  g.backend = backend;
  detail::error_rank() = 0;
#else
#if !TINYTORCH_WITH_NCCL
  detail::check(backend == Backend::MPI,
                "init_process_group: Backend::NCCL needs a translation unit compiled by nvcc with "
                "<nccl.h> reachable (TINYTORCH_WITH_NCCL=0 here); use Backend::MPI for CPU tensors");
#endif
  const char* op = "init_process_group";
  int already = 0, finalized = 0;
  MPI_Initialized(&already);
  MPI_Finalized(&finalized);
  detail::check(!finalized,
                "init_process_group: MPI has already been finalized in this process (by an earlier "
                "destroy_process_group()); the MPI standard allows MPI_Init only once per process");
  g = detail::GroupState{};
  if (!already) {
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    detail::check(rc == MPI_SUCCESS, "init_process_group: MPI_Init_thread failed (error code ", rc, ")");
    g.mpi_started_by_us = true;
    g.thread_level = provided;
  } else {
    MPI_Query_thread(&g.thread_level);
  }
  // Our own communicator: a duplicate of MPI_COMM_WORLD (so our messages never mix with the
  // program's), whose errors come back as codes instead of killing the process. MPI_COMM_WORLD
  // itself keeps whatever error handler the program gave it.
  MPI_Comm world = MPI_COMM_NULL;
  detail::mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &world), "MPI_Comm_dup", op);
  g.world = std::make_shared<ProcessGroup>(world, "default", timeout);
  g.rank = g.world->rank();
  g.world_size = g.world->size();
  detail::error_rank() = g.rank;

  // The local rank: split the world into groups of processes that can share memory (one per
  // machine); our rank in that group picks our GPU.
  detail::mpi_check(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, g.rank, MPI_INFO_NULL, &g.local_comm),
                    "MPI_Comm_split_type", op);
  detail::mpi_check(MPI_Comm_set_errhandler(g.local_comm, MPI_ERRORS_RETURN),
                    "MPI_Comm_set_errhandler", op);
  detail::mpi_check(MPI_Comm_rank(g.local_comm, &g.local_rank), "MPI_Comm_rank", op);
  detail::mpi_check(MPI_Comm_size(g.local_comm, &g.local_world_size), "MPI_Comm_size", op);

  if (launched > 1 && g.world_size == 1) {
    int ws = g.world_size;
    // Every copy believes it is rank 0 of 1: mpirun and the linked MPI library do not match.
    MPI_Comm_free(&g.local_comm);
    g.world.reset();
    detail::throw_error(::tinytorch::detail::str_cat(
        "init_process_group: launched as one of ", launched, " ranks (", launcher_var, "=", launched,
        ") but MPI reports a world of size ", ws,
        "; the program is linked against a different MPI library than the mpirun that started it"));
  }

  g.backend = backend;
#if TINYTORCH_WITH_NCCL
  if (backend == Backend::NCCL) {
    try {
      g.nccl.init(g.rank, g.world_size, g.local_rank, world);
    } catch (...) {  // every rank throws together (see nccl_context.hpp); leave no communicator behind
      MPI_Comm_free(&g.local_comm);
      g.world.reset();
      throw;
    }
  }
#endif
  if (g.world_size > 1) {
    g.previous_terminate = std::set_terminate(&detail::terminate_with_mpi_abort);
    detail::watchdog().start();
    // Open MPI reports errors of non-blocking collectives (libnbc) on MPI_COMM_WORLD; when MPI is
    // ours, let them come back as codes (tinytorch::Error) there too instead of killing the job.
    if (g.mpi_started_by_us) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    // The debug level must be the same everywhere (DETAIL adds a collective to each).
    int mine = static_cast<int>(get_debug_level());
    std::vector<int> levels(static_cast<size_t>(g.world_size));
    detail::mpi_check(MPI_Allgather(&mine, 1, MPI_INT, levels.data(), 1, MPI_INT, world), "MPI_Allgather", op);
    for (int r = 0; r < g.world_size; ++r) {
      if (levels[static_cast<size_t>(r)] == levels[0]) continue;
      detail::watchdog().stop();  // (the terminate handler stays: uncaught, this error aborts the job cleanly)
      MPI_Comm_free(&g.local_comm);
      g.world.reset();
      detail::throw_error(::tinytorch::detail::str_cat(
          detail::rank_prefix(), "init_process_group: TINYTORCH_DISTRIBUTED_DEBUG is ",
          debug_level_name(static_cast<DebugLevel>(levels[0])), " on rank 0 but ",
          debug_level_name(static_cast<DebugLevel>(levels[static_cast<size_t>(r)])), " on rank ", r,
          "; it must be the same on every rank (with mpirun, -x TINYTORCH_DISTRIBUTED_DEBUG=... before the "
          "first program, or export it)"));
    }
  }
  g.initialized = true;
  if (get_debug_level() != DebugLevel::OFF)
    std::cerr << detail::rank_prefix() + "init_process_group: backend " + backend_name(backend) + ", world size " +
                     std::to_string(g.world_size) + ", local rank " + std::to_string(g.local_rank) + " of " +
                     std::to_string(g.local_world_size) + ", timeout " + std::to_string(timeout.count()) +
                     " ms, TINYTORCH_DISTRIBUTED_DEBUG=" + debug_level_name(get_debug_level()) + "\n"
              << std::flush;
#endif
}

/// Frees the default group (torch.distributed.destroy_process_group). With more than one rank it
/// first waits at a barrier (watched: a rank that finished early, e.g. after fewer steps than
/// the others, times out here with a report instead of hanging in MPI_Finalize), then frees the
/// NCCL communicator, the MPI communicators and the terminate handler, stops the watchdog, and
/// calls MPI_Finalize if init_process_group started MPI (watched with kFinalizeTimeout, 60 s or
/// the timeout if longer: a short timeout must not abort a correct shutdown). Does nothing if the group is not
/// initialised. Throws tinytorch::Error if an MPI call fails.
inline void destroy_process_group() {
  auto& g = detail::group();
  if (!g.initialized) return;
#if TINYTORCH_WITH_MPI
  const char* op = "destroy_process_group";
  int finalized = 0;
  MPI_Finalized(&finalized);
  detail::check(g.world->pending() == 0, detail::rank_prefix(), "destroy_process_group: ", g.world->pending(),
                " asynchronous collective(s) on the default group were started but never waited for (Work::wait); "
                "MPI cannot be finalised under them");
  for (const auto& weak : g.subgroups)
    if (auto sub = weak.lock())
      detail::check(sub->pending() == 0, detail::rank_prefix(), "destroy_process_group: ", sub->pending(),
                    " asynchronous collective(s) on group \"", sub->name(), "\" were never waited for (Work::wait)");
  if (!finalized && g.world_size > 1) g.world->barrier(Completion::Blocking, "barrier in destroy_process_group");
  g.initialized = false;
#if TINYTORCH_WITH_NCCL
  g.nccl.destroy();
#endif
  if (g.world_size > 1) std::set_terminate(g.previous_terminate);
  const detail::Milliseconds timeout = g.world->timeout();
  g.world.reset();  // frees its communicator while MPI runs
  for (const auto& weak : g.subgroups)  // as PyTorch's: every group dies with the default one
    if (auto sub = weak.lock()) sub->free_communicator();
  g.subgroups.clear();
  if (finalized) {  // someone else finalised MPI already; the communicators died with it
    detail::watchdog().stop();
    return;
  }
  if (g.local_comm != MPI_COMM_NULL) detail::mpi_check(MPI_Comm_free(&g.local_comm), "MPI_Comm_free", op);
  if (g.mpi_started_by_us) {
    detail::WatchScope watch([] { return std::string("MPI_Finalize in destroy_process_group"); },
                             std::max(timeout, kFinalizeTimeout));
    detail::mpi_check(MPI_Finalize(), "MPI_Finalize", op);
  }
  detail::watchdog().stop();
#else
  g.initialized = false;
  g.world.reset();
#endif
}

/// The default process group (torch.distributed's group.WORLD). Throws if not initialised.
inline ProcessGroup& get_default_group() { return detail::default_group("get_default_group"); }

namespace detail {

/// Keeps `g` on the list of groups destroy_process_group frees (weakly).
inline void register_subgroup(const std::shared_ptr<ProcessGroup>& g) {
  auto& subgroups = group().subgroups;
  subgroups.erase(std::remove_if(subgroups.begin(), subgroups.end(), [](const auto& w) { return w.expired(); }),
                  subgroups.end());
  subgroups.push_back(g);
}

/// A group of the same ranks as `parent`, with a communicator of its own (MPI_Comm_dup): a
/// collective of `parent`'s members. new_group(name) duplicates the default group;
/// DistributedDataParallel duplicates its process group for its buckets. `timeout` 0 = parent's.
inline std::shared_ptr<ProcessGroup> duplicate_group(ProcessGroup& parent, const std::string& name,
                                                     std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
  if (timeout.count() <= 0) timeout = parent.timeout();
  check(timeout >= kMinTimeout, "new_group(\"", name, "\"): timeout must be at least 1000 ms (kMinTimeout), got ",
        timeout.count(), " ms");
#if TINYTORCH_WITH_MPI
  // Every rank arrives first (polled: the slowest rank is waited for without burning a core; at
  // DETAIL agreed as "new_group"), then MPI duplicates the communicator, watched.
  parent.rendezvous("new_group", OpType::NEW_GROUP);
  MPI_Comm comm = MPI_COMM_NULL;
  {
    WatchScope watch([name] { return "MPI_Comm_dup in new_group(\"" + name + "\")"; }, timeout);
    mpi_check(MPI_Comm_dup(parent.mpi_comm(), &comm), "MPI_Comm_dup", "new_group");
  }
  auto g = std::make_shared<ProcessGroup>(comm, name, timeout, parent.ranks());
  register_subgroup(g);
  return g;
#else
  return std::make_shared<ProcessGroup>(name, timeout);
#endif
}

}  // namespace detail

/// A new group of all ranks with a communicator of its own (torch.distributed.new_group() with
/// every rank): its collectives never match the default group's, so another thread can use it
/// while the main thread uses the default one (DistributedDataParallel's buckets). A collective:
/// every rank must call it. `timeout` defaults to the default group's.
/// Throws if the default group is not initialised or an MPI call fails.
inline std::shared_ptr<ProcessGroup> new_group(const std::string& name,
                                               std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
  return detail::duplicate_group(detail::default_group("new_group"), name, timeout);
}

/// A group of some of the ranks (torch.distributed.new_group(ranks)): `ranks` are default-group
/// ranks, in any order; they are sorted, and group rank i is the i-th smallest (as PyTorch's).
/// A collective of the default group: *every* rank calls it, members or not, with the same list,
/// and in the same order as its other new_group calls (MPI_Comm_split). Returns the group on its
/// members and nullptr on the other ranks (PyTorch returns GroupMember.NON_GROUP_MEMBER).
/// `name` (for messages and the watchdog) defaults to "ranks [0, 2]"; `timeout` to the default
/// group's. Used by DeviceMesh (one group per row and per column of the mesh).
///
/// Throws tinytorch::Error if the default group is not initialised; `ranks` is empty (PyTorch
/// would make a group nobody is in), holds a rank outside [0, world_size) or one twice; the
/// ranks passed different lists (the same error on every rank, naming rank 0's list and the
/// first different one); an MPI call fails.
inline std::shared_ptr<ProcessGroup> new_group(std::vector<int> ranks, std::string name = "",
                                               std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
  ProcessGroup& world = detail::default_group("new_group");
  if (timeout.count() <= 0) timeout = world.timeout();
  std::sort(ranks.begin(), ranks.end());
  std::string list;
  for (int r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
  list = "[" + list + "]";
  if (name.empty()) name = "ranks " + list;
  detail::check(!ranks.empty(), detail::rank_prefix(), "new_group: the list of ranks is empty");
  detail::check(ranks.front() >= 0 && ranks.back() < world.size(), detail::rank_prefix(), "new_group(", list,
                "): ranks must be in [0, ", world.size(), ") (the world size)");
  detail::check(std::adjacent_find(ranks.begin(), ranks.end()) == ranks.end(), detail::rank_prefix(), "new_group(",
                list, "): a rank is listed twice");
  detail::check(timeout >= kMinTimeout, "new_group(\"", name, "\"): timeout must be at least 1000 ms (kMinTimeout), got ",
                timeout.count(), " ms");
#if TINYTORCH_WITH_MPI
  std::shared_ptr<ProcessGroup> group = world.split(ranks, name, timeout);
  if (group) detail::register_subgroup(group);
  return group;
#else
  return std::make_shared<ProcessGroup>(name, timeout);  // ranks == {0}: checked above
#endif
}

/// new_group({0, 2}): a braced list of ranks (without this overload, {0, 2} could also be read
/// as the characters of a group name).
inline std::shared_ptr<ProcessGroup> new_group(std::initializer_list<int> ranks, std::string name = "",
                                               std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
  return new_group(std::vector<int>(ranks), std::move(name), timeout);
}

/// `group`'s rank of default-group rank `global_rank` (torch.distributed.get_group_rank).
/// Throws tinytorch::Error if that rank is not a member.
inline int get_group_rank(const ProcessGroup& group, int global_rank) {
  const int r = group.group_rank_of(global_rank);
  detail::check(r >= 0, detail::rank_prefix(), "get_group_rank: global rank ", global_rank,
                " is not a member of process group \"", group.name(), "\"");
  return r;
}

/// The default-group rank of `group`'s rank `group_rank` (torch.distributed.get_global_rank).
/// Throws tinytorch::Error if group_rank is outside [0, group.size()).
inline int get_global_rank(const ProcessGroup& group, int group_rank) {
  detail::check(group_rank >= 0 && group_rank < group.size(), detail::rank_prefix(), "get_global_rank: rank ",
                group_rank, " is outside [0, ", group.size(), ") of process group \"", group.name(), "\"");
  return group.ranks()[static_cast<size_t>(group_rank)];
}

/// The backend the default group was created with. Throws if the group is not initialised.
inline Backend get_backend() {
  detail::require_initialized("get_backend");
  return detail::group().backend;
}

/// This process's rank in [0, world_size). Throws if the group is not initialised.
inline int get_rank() {
  detail::require_initialized("get_rank");
  return detail::group().rank;
}

/// Number of processes in the job (1 without mpirun). Throws if the group is not initialised.
inline int get_world_size() {
  detail::require_initialized("get_world_size");
  return detail::group().world_size;
}

/// This process's rank among the ranks on the same machine (torchrun's LOCAL_RANK): the GPU it
/// should use. From MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). Throws if not initialised.
inline int get_local_rank() {
  detail::require_initialized("get_local_rank");
  return detail::group().local_rank;
}

/// Number of ranks on this machine (torchrun's LOCAL_WORLD_SIZE). Throws if not initialised.
inline int get_local_world_size() {
  detail::require_initialized("get_local_world_size");
  return detail::group().local_world_size;
}

/// True if MPI provides MPI_THREAD_MULTIPLE (any thread may call MPI at any time). Always true
/// in a build without MPI (there is nothing to call). Throws if the group is not initialised.
inline bool thread_multiple_supported() {
  detail::require_initialized("thread_multiple_supported");
#if TINYTORCH_WITH_MPI
  return detail::group().thread_level >= MPI_THREAD_MULTIPLE;
#else
  return true;
#endif
}

/// Throws tinytorch::Error naming `who` unless MPI_THREAD_MULTIPLE was provided. Call it before
/// starting a thread that makes MPI calls while another thread also does (DDP's comm thread).
inline void require_thread_multiple(const char* who) {
  if (thread_multiple_supported()) return;
  (void)who;
#if TINYTORCH_WITH_MPI
  const int lvl = detail::group().thread_level;
  const char* name = lvl == MPI_THREAD_SINGLE       ? "MPI_THREAD_SINGLE"
                     : lvl == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
                     : lvl == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                                                    : "an unknown level";
  detail::throw_error(::tinytorch::detail::str_cat(
      detail::rank_prefix(), who,
      ": needs MPI_THREAD_MULTIPLE (MPI calls from two threads at once), but the MPI library "
      "provided only ", name, ". Use an MPI built with thread support (Open MPI: ompi_info | grep "
      "THREAD_MULTIPLE) or do not call MPI_Init yourself with a lower level."));
#endif
}

#if TINYTORCH_WITH_MPI
/// The group's MPI communicator (a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN), for code
/// that calls MPI directly. Throws if the group is not initialised.
inline MPI_Comm get_mpi_comm() { return detail::default_group("get_mpi_comm").mpi_comm(); }
#endif

}  TT_NAMESPACE_END  // namespace tinytorch::distributed

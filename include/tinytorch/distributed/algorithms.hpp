// tinytorch/distributed/algorithms.hpp — three all-reduce algorithms written out over MPI
// point-to-point messages, to read, to count and to time against MPI_Allreduce.
//
// Every rank r holds x_r, M bytes (count elements); afterwards every rank holds x_0 + ... + x_{N-1}
// (or the max, min, average). Costs in the alpha-beta model (alpha: latency per message, beta:
// bandwidth of one link per direction):
//   parameter_server  every worker sends x_r to rank 0, which adds and sends the sum back.
//                     Rank 0 sends (N-1) M bytes, a worker M.  T = 2(N-1) alpha + 2(N-1) M/beta
//   tree              binomial: in round k the ranks with bit k set send their partial sum to
//                     rank - 2^k; rank 0's total goes back down the same tree.
//                     At most (1 + log2 N) M bytes a rank.   T = 2 ceil(log2 N) (alpha + M/beta)
//   ring              r -> r+1, x in N chunks; reduce-scatter: in step s rank r sends chunk
//                     (r-s) mod N right and adds chunk (r-s-1) mod N from the left, N-1 steps;
//                     all-gather: N-1 more steps pass the finished chunks on.
//                     2(N-1)/N M bytes a rank.  T = 2(N-1) alpha + 2(N-1)/N M/beta (bandwidth-optimal)
// ring_all_reduce_naive is the ring and nothing else; ring_all_reduce pipelines it: a message the
// receiver adds in is cut into segments (AlgorithmOptions::segment_bytes), all posted at once,
// landed in a few scratch slots and added as each arrives (still in cache, while the next ones
// travel); a message the receiver only stores goes whole, straight into place.
// Each returns CommStats: what this rank sent and received (ring_bytes_sent & co. give the
// formulas). Chunk c has count/N or count/N + 1 elements, so any count works. AVG = SUM then / N
// (the ring divides its own chunk before the all-gather); int64 AVG throws. Messages use tag
// kAlgorithmTag on the group's communicator; one at a time per group. Each is one collective of
// its group (sequence number, DETAIL agreement), its waits watched (work.hpp).
// Chapter: chapters/07-all-reduce.md. References: Patarasuk & Yuan, "Bandwidth optimal all-reduce
// algorithms for clusters of workstations" (2009); Thakur, Rabenseifner & Gropp, "Optimization of
// collective communication operations in MPICH" (2005); Gibiansky, "Bringing HPC techniques to
// deep learning" (Baidu, 2017); nccl-tests doc/PERFORMANCE.md (busbw).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "tinytorch/core/dtype.hpp"
#include "tinytorch/distributed/buffer_collectives.hpp"
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/process_group.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed {

/// Which all-reduce implementation to run. MPI = the library's MPI_Allreduce (the baseline).
enum class Algorithm { MPI, Ring, ParameterServer, Tree };

/// "mpi", "ring", "parameter_server", "tree".
inline const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::MPI: return "mpi";
    case Algorithm::Ring: return "ring";
    case Algorithm::ParameterServer: return "parameter_server";
    case Algorithm::Tree: return "tree";
  }
  return "?";
}

/// Parses "mpi", "ring", "parameter_server" (or "ps"), "tree". Throws tinytorch::Error listing the
/// valid names otherwise.
inline Algorithm algorithm_from_name(const std::string& name) {
  if (name == "mpi") return Algorithm::MPI;
  if (name == "ring") return Algorithm::Ring;
  if (name == "parameter_server" || name == "ps") return Algorithm::ParameterServer;
  if (name == "tree") return Algorithm::Tree;
  detail::throw_error("all_reduce: unknown algorithm \"" + name +
                      "\"; expected one of: mpi, ring, parameter_server, tree");
}

/// What one rank did during one all-reduce. Bytes are payload bytes (element_size * elements).
struct CommStats {
  int64_t bytes_sent = 0;      ///< bytes this rank sent (-1: unknown, for Algorithm::MPI)
  int64_t bytes_received = 0;  ///< bytes this rank received (-1: unknown)
  int64_t messages_sent = 0;   ///< point-to-point sends (each pipeline segment counts)
  int64_t steps = 0;           ///< communication rounds this rank took part in

  CommStats& operator+=(const CommStats& o) {
    bytes_sent += o.bytes_sent;
    bytes_received += o.bytes_received;
    messages_sent += o.messages_sent;
    steps += o.steps;
    return *this;
  }
};

/// Tuning knobs of the teaching algorithms.
struct AlgorithmOptions {
  /// Pipeline segment in bytes: every message is cut into pieces of at most this size.
  /// Small enough that a received segment is still in L1/L2 cache when it is added, large
  /// enough that the per-message cost (alpha, a few microseconds) stays small.
  int64_t segment_bytes = 128 * 1024;
  /// How many segment receives are posted ahead (scratch slots of segment_bytes each).
  int recv_depth = 2;
  /// Segment size of messages the receiver only stores (the ring's all-gather, the broadcasts):
  /// 0 = whole messages — nothing is computed on them, so there is nothing to overlap, and one
  /// large message costs MPI a single handshake.
  int64_t copy_segment_bytes = 0;
  /// Process group to run on (e.g. one from new_group(), as DistributedDataParallel uses for
  /// its buckets); nullptr = the default group.
  ProcessGroup* group = nullptr;
};

/// MPI tag of the algorithms' point-to-point messages.
constexpr int kAlgorithmTag = ProcessGroup::kReservedTag;  // send / recv refuse it

namespace detail {

/// Chunk boundaries for cutting `count` elements into `parts` nearly equal pieces:
/// piece c is [offsets[c], offsets[c+1]); the first count % parts pieces have one element more.
inline std::vector<int64_t> chunk_offsets(int64_t count, int parts) {
  std::vector<int64_t> off(static_cast<size_t>(parts) + 1, 0);
  const int64_t base = count / parts, extra = count % parts;
  for (int c = 0; c < parts; ++c) off[c + 1] = off[c] + base + (c < extra ? 1 : 0);
  return off;
}

inline int mod(int a, int n) { return ((a % n) + n) % n; }
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// dst[i] = dst[i] (op) src[i]. Written in blocks of 16 with a fixed-length inner loop so that
/// the compiler vectorises it even at -O2; SUM and AVG add (AVG divides at the end).
/// float16/bfloat16: each element in float32, rounded once (process_group.hpp's reduce_16bit).
template <typename T>
inline void reduce_into(T* __restrict dst, const T* __restrict src, int64_t n, ReduceOp op) {
  if constexpr (is_reduced_floating_point_v<T>) {
    reduce_16bit(src, dst, n, op);
  } else {
    int64_t i = 0;
    if (op == ReduceOp::MAX) {
      for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; ++j) dst[i + j] = dst[i + j] < src[i + j] ? src[i + j] : dst[i + j];
      for (; i < n; ++i) dst[i] = dst[i] < src[i] ? src[i] : dst[i];
    } else if (op == ReduceOp::MIN) {
      for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; ++j) dst[i + j] = src[i + j] < dst[i + j] ? src[i + j] : dst[i + j];
      for (; i < n; ++i) dst[i] = src[i] < dst[i] ? src[i] : dst[i];
    } else {
      for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; ++j) dst[i + j] += src[i + j];
      for (; i < n; ++i) dst[i] += src[i];
    }
  }
}

template <typename T>
inline void divide_all(T* x, int64_t n, int world) {
  divide_by(x, n, dtype_of<T>(), world);
}

/// ReduceOp::AVG, the process group's rule (premultiplied_avg): float32/float64 divide the sum by
/// N at the end (avg_after); float16/bfloat16 divide each rank's values by N before the sum
/// (avg_before), as NCCL's ncclAvg does, so that a sum beyond the type's range still averages to
/// a number in it.
template <typename T>
inline void avg_before(T* x, int64_t n, ReduceOp op, int world) {
  if (premultiplied_avg(op, dtype_of<T>())) divide_all(x, n, world);
}
template <typename T>
inline bool avg_after(ReduceOp op) {
  return op == ReduceOp::AVG && !premultiplied_avg(op, dtype_of<T>());
}

/// Scratch memory for received segments: one 64-byte aligned block per thread, grown on demand
/// and kept (so a benchmark loop does not allocate).
inline void* scratch(size_t bytes) {
  struct Block {
    void* p = nullptr;
    size_t size = 0;
    ~Block() { std::free(p); }
  };
  thread_local Block b;
  if (b.size < bytes) {
    std::free(b.p);
    b.size = ((bytes + 63) / 64) * 64;
    b.p = std::aligned_alloc(64, b.size);
    if (b.p == nullptr) throw std::bad_alloc();
  }
  return b.p;
}

/// What the algorithms need to talk: the group (communicator, timeout), my rank, world size,
/// message sizes, and the collective's fingerprint for the watchdog's report.
struct Channel {
  const char* op;     ///< "ring_all_reduce", ... for error messages
  int rank;
  int world;
  int64_t seg;        ///< segment length (elements) of a message the receiver adds in
  int64_t copy_seg;   ///< segment length (elements) of a message the receiver just stores
  int depth;          ///< reduce-receives posted ahead
  ProcessGroup* group;
  Fingerprint fp;
#if TINYTORCH_WITH_MPI
  MPI_Comm comm;
  MPI_Datatype type;

  /// Waits for `n` requests, watched by the watchdog with the group's timeout.
  void wait(MPI_Request* requests, int n) const {
    const ProcessGroup* g = group;
    const Fingerprint f = fp;
    wait_requests(requests, n, group->timeout(), op, [g, f] { return g->describe(f); });
  }
#endif
};

// The four communication primitives of this file. A message of n elements travels as
// ceil(n / seg) MPI messages of at most `seg` elements; sender and receiver use the same `seg`
// (ch.seg when the receiver adds the data in, ch.copy_seg when it only stores it), so the k-th
// send matches the k-th receive (MPI keeps the order of messages between two ranks).

#if TINYTORCH_WITH_MPI
using Requests = std::vector<MPI_Request>;

/// Starts sending data[0, n) to rank `to`, cut into pieces of `seg` elements; returns at once.
/// The caller must wait_all(requests) before changing `data`.
template <typename T>
void post_sends(const Channel& ch, const T* data, int64_t n, int to, int64_t seg, Requests& requests,
                CommStats& st) {
  for (int64_t k = 0; k * seg < n; ++k) {
    const int64_t len = std::min(seg, n - k * seg);
    requests.push_back(MPI_REQUEST_NULL);
    mpi_check(MPI_Isend(data + k * seg, static_cast<int>(len), ch.type, to, kAlgorithmTag, ch.comm,
                        &requests.back()),
              "MPI_Isend", ch.op);
    st.bytes_sent += len * static_cast<int64_t>(sizeof(T));
    st.messages_sent += 1;
  }
}

/// Blocks until every request has completed; empties the list.
inline void wait_all(const Channel& ch, Requests& requests) {
  if (!requests.empty()) ch.wait(requests.data(), static_cast<int>(requests.size()));
  requests.clear();
}

/// Receives n elements from rank `from` straight into dst[0, n) (pieces of ch.copy_seg).
template <typename T>
void recv_copy(const Channel& ch, T* dst, int64_t n, int from, CommStats& st) {
  Requests requests;
  for (int64_t k = 0; k * ch.copy_seg < n; ++k) {
    const int64_t len = std::min(ch.copy_seg, n - k * ch.copy_seg);
    requests.push_back(MPI_REQUEST_NULL);
    mpi_check(MPI_Irecv(dst + k * ch.copy_seg, static_cast<int>(len), ch.type, from, kAlgorithmTag, ch.comm,
                        &requests.back()),
              "MPI_Irecv", ch.op);
  }
  wait_all(ch, requests);
  st.bytes_received += n * static_cast<int64_t>(sizeof(T));
}

/// Receives n elements from rank `from` in pieces of ch.seg and adds each piece into dst as soon
/// as it has arrived: dst[i] = dst[i] (op) received[i]. Pieces land in ch.depth scratch slots
/// (piece k in slot k % depth), so while one piece is being added the next ones are already on
/// their way, and the piece being added is still in cache.
template <typename T>
void recv_reduce(const Channel& ch, T* dst, int64_t n, int from, ReduceOp op, CommStats& st) {
  const int64_t S = ch.seg;
  const int D = ch.depth;
  const int64_t pieces = ceil_div(n, S);
  T* slots = static_cast<T*>(scratch(static_cast<size_t>(D) * S * sizeof(T)));
  MPI_Request window[16];
  auto len = [&](int64_t k) { return std::min(S, n - k * S); };
  auto post = [&](int64_t k) {
    mpi_check(MPI_Irecv(slots + (k % D) * S, static_cast<int>(len(k)), ch.type, from, kAlgorithmTag, ch.comm,
                        &window[k % D]),
              "MPI_Irecv", ch.op);
  };
  for (int64_t k = 0; k < std::min<int64_t>(D, pieces); ++k) post(k);
  for (int64_t k = 0; k < pieces; ++k) {
    ch.wait(&window[k % D], 1);
    reduce_into(dst + k * S, slots + (k % D) * S, len(k), op);
    if (k + D < pieces) post(k + D);
  }
  st.bytes_received += n * static_cast<int64_t>(sizeof(T));
}

/// post_sends + wait_all: sends data[0, n) to `to` and returns when it is out.
template <typename T>
void send_all(const Channel& ch, const T* data, int64_t n, int to, int64_t seg, CommStats& st) {
  Requests requests;
  post_sends(ch, data, n, to, seg, requests, st);
  wait_all(ch, requests);
}

/// The ring's second half, the same for the plain and the pipelined ring: after the
/// reduce-scatter rank r holds the complete chunk (r+1) mod N (off: the chunk boundaries); AVG
/// divides it by N, then N-1 steps pass the completed chunks around the ring, each received
/// whole (pieces of ch.copy_seg) straight into place.
template <typename T>
void ring_all_gather(const Channel& ch, T* x, const std::vector<int64_t>& off, ReduceOp op, CommStats& st) {
  const int N = ch.world, r = ch.rank, right = (r + 1) % N, left = (r - 1 + N) % N;
  auto len = [&](int c) { return off[c + 1] - off[c]; };
  const int mine = (r + 1) % N;  // the chunk this rank has completed
  if (avg_after<T>(op)) divide_all(x + off[mine], len(mine), N);
  Requests sends;
  for (int s = 0; s < N - 1; ++s) {  // each step overwrites one chunk
    const int send_c = mod(r + 1 - s, N), recv_c = mod(r - s, N);
    post_sends(ch, x + off[send_c], len(send_c), right, ch.copy_seg, sends, st);
    recv_copy(ch, x + off[recv_c], len(recv_c), left, st);
    wait_all(ch, sends);
    st.steps += 1;
  }
}
#endif

/// Common argument checks, then the collective's sequence number (and DETAIL agreement) on the
/// group; returns the channel.
/// The group an algorithm runs on: opt.group, or the default group.
inline ProcessGroup& group_for(const char* op, const AlgorithmOptions& opt) {
  return opt.group != nullptr ? *opt.group : default_group(op);
}

/// The caller holds a ProcessGroup::Exclusive on g for the whole algorithm.
template <typename T>
Channel open_channel(ProcessGroup& g, const char* op, const T* x, int64_t count, ReduceOp rop, Algorithm algo,
                     const AlgorithmOptions& opt) {
  check_buffer_args(op, x, count);
  check_reduce_op(op, rop, dtype_of<T>());
  check(opt.segment_bytes >= static_cast<int64_t>(sizeof(T)) && opt.segment_bytes <= (int64_t{1} << 30),
        rank_prefix(), op, ": segment_bytes must be in [", sizeof(T), ", 2^30], got ", opt.segment_bytes);
  check(opt.copy_segment_bytes >= 0 && opt.copy_segment_bytes <= (int64_t{1} << 30), rank_prefix(), op,
        ": copy_segment_bytes must be in [0, 2^30] (0: whole messages), got ", opt.copy_segment_bytes);
  check(opt.recv_depth >= 1 && opt.recv_depth <= 16, rank_prefix(), op, ": recv_depth must be in [1, 16], got ",
        opt.recv_depth);
  const Fingerprint fp = g.begin_collective(op, OpType::ALLREDUCE, dtype_of<T>(), count, rop,
                                            static_cast<int64_t>(algo));
  const int64_t es = static_cast<int64_t>(sizeof(T));
  const int64_t whole = (int64_t{1} << 30) / es;  // "whole message": at most 1 GiB per MPI call
  Channel ch{op,
             g.rank(),
             g.size(),
             std::max<int64_t>(1, opt.segment_bytes / es),
             opt.copy_segment_bytes == 0 ? whole : std::max<int64_t>(1, opt.copy_segment_bytes / es),
             opt.recv_depth,
             &g,
             fp
#if TINYTORCH_WITH_MPI
             ,
             g.mpi_comm(),
             mpi_datatype(dtype_of<T>())
#endif
  };
  return ch;
}

}  // namespace detail

// ---- the plain ring -------------------------------------------------------------------------------

/// The ring all-reduce and nothing else: read it before ring_all_reduce below, which is the same
/// algorithm pipelined. x is cut into N chunks. Reduce-scatter, N-1 steps: send chunk (r-s) mod N
/// whole to the right, receive chunk (r-s-1) mod N whole from the left into a buffer, add it.
/// All-gather, N-1 steps: send the finished chunk (r+1-s) mod N, receive chunk (r-s) mod N in
/// place. The same results, bytes and steps as ring_all_reduce, one message per chunk.
template <typename T>
CommStats ring_all_reduce_naive(T* x, int64_t count, ReduceOp op = ReduceOp::SUM, const AlgorithmOptions& opt = {}) {
  ProcessGroup& g = detail::group_for("ring_all_reduce_naive", opt);
  ProcessGroup::Exclusive busy(g, "ring_all_reduce_naive");
  detail::Channel ch = detail::open_channel(g, "ring_all_reduce_naive", x, count, op, Algorithm::Ring, opt);
  CommStats st;
  const int N = ch.world, r = ch.rank;
  if (N == 1 || count == 0) return st;
  detail::avg_before(x, count, op, N);
  const std::vector<int64_t> off = detail::chunk_offsets(count, N);  // chunk c: [off[c], off[c+1])
  auto len = [&](int c) { return off[c + 1] - off[c]; };
  const int right = (r + 1) % N, left = (r - 1 + N) % N;
#if TINYTORCH_WITH_MPI
  ch.copy_seg = (int64_t{1} << 30) / static_cast<int64_t>(sizeof(T));  // whole messages (up to 1 GiB)
  std::vector<T> incoming(static_cast<size_t>(len(0)));              // chunk 0 is the largest
  detail::Requests sends;
  for (int s = 0; s < N - 1; ++s) {  // reduce-scatter
    const int send_c = detail::mod(r - s, N), recv_c = detail::mod(r - s - 1, N);
    detail::post_sends(ch, x + off[send_c], len(send_c), right, ch.copy_seg, sends, st);
    detail::recv_copy(ch, incoming.data(), len(recv_c), left, st);
    detail::wait_all(ch, sends);
    detail::reduce_into(x + off[recv_c], incoming.data(), len(recv_c), op);
    st.steps += 1;
  }
  detail::ring_all_gather(ch, x, off, op, st);  // AVG's "/ N", then the completed chunks go round
#else
  (void)len, (void)right, (void)left;
#endif
  return st;
}

// ---- ring -------------------------------------------------------------------------------------

/// Ring all-reduce of x (count elements, in place): reduce-scatter then all-gather over N chunks,
/// each message pipelined in segments. Returns this rank's CommStats. Throws tinytorch::Error for
/// bad arguments (before any message) or MPI failures.
template <typename T>
CommStats ring_all_reduce(T* x, int64_t count, ReduceOp op = ReduceOp::SUM, const AlgorithmOptions& opt = {}) {
  ProcessGroup& g = detail::group_for("ring_all_reduce", opt);
  ProcessGroup::Exclusive busy(g, "ring_all_reduce");
  const detail::Channel ch = detail::open_channel(g, "ring_all_reduce", x, count, op, Algorithm::Ring, opt);
  CommStats st;
  const int N = ch.world, r = ch.rank;
  if (N == 1 || count == 0) return st;
  detail::avg_before(x, count, op, N);

  const std::vector<int64_t> off = detail::chunk_offsets(count, N);  // chunk c: [off[c], off[c+1])
  auto len = [&](int c) { return off[c + 1] - off[c]; };
  const int right = (r + 1) % N, left = (r - 1 + N) % N;

  // Phase 1, reduce-scatter: after step s, the chunk received in that step holds the sum of
  // s + 2 ranks' values; after N-1 steps chunk (r+1) mod N holds all N.
#if TINYTORCH_WITH_MPI
  detail::Requests sends;
  for (int s = 0; s < N - 1; ++s) {
    const int send_c = detail::mod(r - s, N), recv_c = detail::mod(r - s - 1, N);
    detail::post_sends(ch, x + off[send_c], len(send_c), right, ch.seg, sends, st);   // all pieces at once
    detail::recv_reduce(ch, x + off[recv_c], len(recv_c), left, op, st);              // add as they come
    detail::wait_all(ch, sends);
    st.steps += 1;
  }
  // Phase 2, all-gather: pass the completed chunks around (AVG divides this rank's chunk first).
  detail::ring_all_gather(ch, x, off, op, st);
#else
  (void)len, (void)right, (void)left;
#endif
  return st;
}

// ---- parameter server ---------------------------------------------------------------------------

/// Parameter-server all-reduce: every worker sends its whole buffer to rank 0 (the "server"),
/// which adds them one after another, then sends the result back to each worker in turn.
/// Returns this rank's CommStats (rank 0: (N-1)*M sent). Throws like ring_all_reduce.
template <typename T>
CommStats parameter_server_all_reduce(T* x, int64_t count, ReduceOp op = ReduceOp::SUM,
                                      const AlgorithmOptions& opt = {}) {
  ProcessGroup& g = detail::group_for("parameter_server_all_reduce", opt);
  ProcessGroup::Exclusive busy(g, "parameter_server_all_reduce");
  const detail::Channel ch = detail::open_channel(g, "parameter_server_all_reduce", x, count, op, Algorithm::ParameterServer, opt);
  CommStats st;
  const int N = ch.world;
  if (N == 1 || count == 0) return st;
  detail::avg_before(x, count, op, N);

#if TINYTORCH_WITH_MPI
  constexpr int server = 0;
  if (ch.rank == server) {
    for (int w = 1; w < N; ++w) {  // gather + reduce, one worker at a time
      detail::recv_reduce(ch, x, count, w, op, st);
      st.steps += 1;
    }
    if (detail::avg_after<T>(op)) detail::divide_all(x, count, N);
    for (int w = 1; w < N; ++w) {  // broadcast, point-to-point
      detail::send_all(ch, x, count, w, ch.copy_seg, st);
      st.steps += 1;
    }
  } else {
    detail::send_all(ch, x, count, server, ch.seg, st);  // the server adds it in: pieces of ch.seg
    detail::recv_copy(ch, x, count, server, st);
    st.steps += 2;
  }
#endif
  return st;
}

// ---- tree ---------------------------------------------------------------------------------------

/// Binomial-tree all-reduce: reduce up the tree to rank 0 in ceil(log2 N) rounds, then broadcast
/// down the same tree. Works for any N (not only powers of two). Returns this rank's CommStats.
/// Throws like ring_all_reduce.
template <typename T>
CommStats tree_all_reduce(T* x, int64_t count, ReduceOp op = ReduceOp::SUM, const AlgorithmOptions& opt = {}) {
  ProcessGroup& g = detail::group_for("tree_all_reduce", opt);
  ProcessGroup::Exclusive busy(g, "tree_all_reduce");
  const detail::Channel ch = detail::open_channel(g, "tree_all_reduce", x, count, op, Algorithm::Tree, opt);
  CommStats st;
  const int N = ch.world, r = ch.rank;
  if (N == 1 || count == 0) return st;
  detail::avg_before(x, count, op, N);

  // Reduce. Round k (mask = 2^k): a rank whose bit k is set sends its partial sum to its parent
  // r - mask and is done; a rank whose bit k is clear adds in the partial sum of child r + mask.
  //   N = 6:  round 0: 1->0, 3->2, 5->4    round 1: 2->0    round 2: 4->0
#if TINYTORCH_WITH_MPI
  for (int mask = 1; mask < N; mask <<= 1) {
    if (r & mask) {
      detail::send_all(ch, x, count, r - mask, ch.seg, st);  // the parent adds it in
      st.steps += 1;
      break;
    }
    if (r + mask < N) {
      detail::recv_reduce(ch, x, count, r + mask, op, st);
      st.steps += 1;
    }
  }
  if (r == 0 && detail::avg_after<T>(op)) detail::divide_all(x, count, N);

  // Broadcast back down the same edges: receive from the parent r - lowbit(r), then send to the
  // children r + mask for every power of two mask below lowbit(r), the farthest first.
  int top = 1;
  while (top < N) top <<= 1;  // rank 0 is the parent of every r + mask < N
  const int lowbit = r == 0 ? top : (r & -r);
  if (r != 0) {
    detail::recv_copy(ch, x, count, r - lowbit, st);
    st.steps += 1;
  }
  for (int mask = lowbit >> 1; mask >= 1; mask >>= 1) {
    if (r + mask < N) {
      detail::send_all(ch, x, count, r + mask, ch.copy_seg, st);
      st.steps += 1;
    }
  }
#else
  (void)r;
#endif
  return st;
}

// ---- by name ------------------------------------------------------------------------------------

/// all_reduce of a raw buffer with the chosen algorithm; Algorithm::MPI calls MPI_Allreduce and
/// reports bytes as -1 (MPI does not tell). Returns this rank's CommStats.
inline CommStats all_reduce(void* buf, int64_t count, DType dtype, ReduceOp op, Algorithm algo,
                            const AlgorithmOptions& opt = {}) {
  if (algo == Algorithm::MPI) {
    ProcessGroup& g = opt.group != nullptr ? *opt.group : detail::default_group("all_reduce");
    g.all_reduce(buf, count, dtype, op, Completion::Blocking);
    CommStats st;
    st.bytes_sent = st.bytes_received = -1;
    st.messages_sent = st.steps = -1;
    return st;
  }
  return dispatch_all(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* x = static_cast<T*>(buf);
    switch (algo) {
      case Algorithm::Ring: return ring_all_reduce(x, count, op, opt);
      case Algorithm::ParameterServer: return parameter_server_all_reduce(x, count, op, opt);
      case Algorithm::Tree: return tree_all_reduce(x, count, op, opt);
      case Algorithm::MPI: break;
    }
    return CommStats{};
  });
}

/// Same, algorithm by name: "mpi", "ring", "parameter_server", "tree".
inline CommStats all_reduce(void* buf, int64_t count, DType dtype, ReduceOp op, const std::string& algo,
                            const AlgorithmOptions& opt = {}) {
  return all_reduce(buf, count, dtype, op, algorithm_from_name(algo), opt);
}

// ---- the cost model, for labs and tests ------------------------------------------------------------

/// Bytes rank `rank` sends in ring_all_reduce of `count` elements of `elem_size` bytes:
/// every chunk but one in each phase, i.e. (M - |chunk r+1|) + (M - |chunk r+2|) in elements.
/// Equals 2(N-1)/N * M exactly when N divides count.
inline int64_t ring_bytes_sent(int64_t count, int64_t elem_size, int world, int rank) {
  if (world <= 1 || count == 0) return 0;
  const auto off = detail::chunk_offsets(count, world);
  auto len = [&](int c) { return off[c + 1] - off[c]; };
  return elem_size * ((count - len((rank + 1) % world)) + (count - len((rank + 2) % world)));
}

/// Bytes `rank` sends in parameter_server_all_reduce: (N-1)*M on rank 0, M on the others.
inline int64_t parameter_server_bytes_sent(int64_t count, int64_t elem_size, int world, int rank) {
  if (world <= 1) return 0;
  return count * elem_size * (rank == 0 ? world - 1 : 1);
}

/// Bytes `rank` sends in tree_all_reduce: M to its parent (not rank 0) plus M per child.
inline int64_t tree_bytes_sent(int64_t count, int64_t elem_size, int world, int rank) {
  if (world <= 1) return 0;
  int top = 1;
  while (top < world) top <<= 1;
  const int lowbit = rank == 0 ? top : (rank & -rank);
  int64_t edges = rank == 0 ? 0 : 1;
  for (int mask = lowbit >> 1; mask >= 1; mask >>= 1) edges += (rank + mask < world) ? 1 : 0;
  return edges * count * elem_size;
}

}  TT_NAMESPACE_END  // namespace tinytorch::distributed

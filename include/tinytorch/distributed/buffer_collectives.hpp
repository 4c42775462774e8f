// tinytorch/distributed/buffer_collectives.hpp — collectives on raw contiguous CPU buffers, on
// the default process group.
//
// The five collectives of data-parallel training, each on `count` elements of `dtype` (N ranks,
// x_r = rank r's buffer, M = count * element_size bytes):
//
//   all_reduce(x, n, dtype, op)          x_r <- op(x_0, ..., x_{N-1})            every rank, in place
//   broadcast(x, n, dtype, src)          x_r <- x_src                            every rank
//   all_gather(out, in, n, dtype)        out_r = [in_0 | in_1 | ... | in_{N-1}]  out: N*n elements
//   reduce_scatter(out, in, n, dtype, op) out_r = op over ranks of in[r*n, (r+1)*n)  in: N*n elements
//   barrier()                            returns when every rank has called it
// all_reduce = reduce_scatter followed by all_gather; that identity is the ring algorithm
// (algorithms.hpp). Here the work is MPI's; each function is a one-line call of the default
// ProcessGroup's collective (process_group.hpp), which does the checks, the sequence number, the
// DETAIL agreement and the watched wait: the plain forms block (Completion::Blocking), the
// *_async forms return a Work (work.hpp). One implementation for both.
// Every argument is checked locally before any message is sent, and a bad one throws
// tinytorch::Error naming the collective and the values. What a local check cannot catch: if
// only *one* rank passes a bad argument, it throws while the others enter the collective and
// wait; run under ProcessGroupGuard so that the throwing rank aborts the job, and the watchdog
// ends any wait after the group's timeout. With TINYTORCH_DISTRIBUTED_DEBUG=DETAIL a dtype,
// count, root or reduce op that differs across ranks is an error on every rank.
//
// AVG is SUM followed by "/ N" on every rank (MPI has no average); an int64 AVG throws (the
// division would truncate; PyTorch's gloo and NCCL refuse it as well).
// World size 1 (no mpirun, or a build without MPI): all_reduce/broadcast/barrier do nothing,
// all_gather/reduce_scatter copy `in` to `out`.
// MPI counts are `int`: a single call moves at most 2^31-1 elements (8 GiB of float32).
// Chapter: chapters/07-all-reduce.md. Reference: torch.distributed collectives; MPI 3.1 ch. 5.
#pragma once

#include <cstdint>

#include "tinytorch/core/dtype.hpp"
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/process_group.hpp"
#include "tinytorch/distributed/work.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed {

// ---- blocking ---------------------------------------------------------------------------------

/// In place: buf <- op over all ranks of buf. `buf` holds `count` elements of `dtype`.
/// Throws tinytorch::Error for a bad argument (before any message) or an MPI failure.
inline void all_reduce(void* buf, int64_t count, DType dtype, ReduceOp op = ReduceOp::SUM) {
  detail::default_group("all_reduce").all_reduce(buf, count, dtype, op, Completion::Blocking);
}

/// Typed form: the dtype comes from T (float, double, int64_t).
template <typename T>
void all_reduce(T* buf, int64_t count, ReduceOp op = ReduceOp::SUM) {
  all_reduce(static_cast<void*>(buf), count, dtype_of<T>(), op);
}

/// Every rank's buf <- rank src's buf. Throws for src outside [0, world_size) or an MPI failure.
inline void broadcast(void* buf, int64_t count, DType dtype, int src) {
  detail::default_group("broadcast").broadcast(buf, count, dtype, src, Completion::Blocking);
}

template <typename T>
void broadcast(T* buf, int64_t count, int src) {
  broadcast(static_cast<void*>(buf), count, dtype_of<T>(), src);
}

/// out (world_size * count elements) <- [in of rank 0 | in of rank 1 | ...]; in: count elements.
/// `in` may be out + rank * count (in place). Throws for bad arguments or an MPI failure.
inline void all_gather(void* out, const void* in, int64_t count, DType dtype) {
  detail::default_group("all_gather").all_gather(out, in, count, dtype, Completion::Blocking);
}

template <typename T>
void all_gather(T* out, const T* in, int64_t count) {
  all_gather(static_cast<void*>(out), static_cast<const void*>(in), count, dtype_of<T>());
}

/// out (count elements) <- op over ranks of in[rank*count, (rank+1)*count); in: world_size*count
/// elements; out and in must not overlap. Throws for bad arguments or an MPI failure.
inline void reduce_scatter(void* out, const void* in, int64_t count, DType dtype, ReduceOp op = ReduceOp::SUM) {
  detail::default_group("reduce_scatter").reduce_scatter(out, in, count, dtype, op, Completion::Blocking);
}

template <typename T>
void reduce_scatter(T* out, const T* in, int64_t count, ReduceOp op = ReduceOp::SUM) {
  reduce_scatter(static_cast<void*>(out), static_cast<const void*>(in), count, dtype_of<T>(), op);
}

/// Returns when every rank has entered barrier() (waiting without burning a core). Throws on
/// an MPI failure.
inline void barrier() { detail::default_group("barrier").barrier(Completion::Blocking); }

// ---- asynchronous: start now, Work::wait() later ----------------------------------------------
// The buffers must stay valid and untouched until wait() returns (or is_completed() is true).

/// Starts all_reduce (MPI_Iallreduce); AVG's division runs in Work::wait().
inline Work all_reduce_async(void* buf, int64_t count, DType dtype, ReduceOp op = ReduceOp::SUM) {
  return detail::default_group("all_reduce_async")
      .all_reduce(buf, count, dtype, op, Completion::Async, "all_reduce_async");
}

/// Starts broadcast (MPI_Ibcast).
inline Work broadcast_async(void* buf, int64_t count, DType dtype, int src) {
  return detail::default_group("broadcast_async").broadcast(buf, count, dtype, src, Completion::Async, "broadcast_async");
}

/// Starts all_gather (MPI_Iallgather); same layout rules as all_gather.
inline Work all_gather_async(void* out, const void* in, int64_t count, DType dtype) {
  return detail::default_group("all_gather_async").all_gather(out, in, count, dtype, Completion::Async, "all_gather_async");
}

/// Starts reduce_scatter (MPI_Ireduce_scatter_block); AVG's division runs in Work::wait().
inline Work reduce_scatter_async(void* out, const void* in, int64_t count, DType dtype,
                                 ReduceOp op = ReduceOp::SUM) {
  return detail::default_group("reduce_scatter_async")
      .reduce_scatter(out, in, count, dtype, op, Completion::Async, "reduce_scatter_async");
}

/// Starts a barrier (MPI_Ibarrier): wait() returns once every rank has entered it.
inline Work barrier_async() {
  return detail::default_group("barrier_async").barrier(Completion::Async, "barrier_async");
}

}  TT_NAMESPACE_END  // namespace tinytorch::distributed

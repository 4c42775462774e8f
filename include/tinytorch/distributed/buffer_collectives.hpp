// tinytorch/distributed/buffer_collectives.hpp — collectives on raw contiguous CPU buffers.
//
// The five collectives of data-parallel training, each on `count` elements of `dtype` (N ranks,
// x_r = rank r's buffer, M = count * element_size bytes):
//
//   all_reduce(x, n, dtype, op)          x_r <- op(x_0, ..., x_{N-1})            every rank, in place
//   broadcast(x, n, dtype, src)          x_r <- x_src                            every rank
//   all_gather(out, in, n, dtype)        out_r = [in_0 | in_1 | ... | in_{N-1}]  out: N*n elements
//   reduce_scatter(out, in, n, dtype, op) out_r = op over ranks of in[r*n, (r+1)*n)  in: N*n elements
//   barrier()                            returns when every rank has called it
//
// all_reduce = reduce_scatter followed by all_gather; that identity is the ring algorithm
// (algorithms.hpp). Here the work is MPI's (MPI_Allreduce, MPI_Bcast, MPI_Allgather,
// MPI_Reduce_scatter_block, MPI_Barrier); the *_async forms use the non-blocking versions
// (MPI_Iallreduce, ...) and return a Work (work.hpp).
//
// Every argument is checked locally before any message is sent, and a bad one throws
// tinytorch::Error naming the collective and the values. Note what a local check cannot catch:
// if only *one* rank passes a bad argument, it throws while the others enter the collective and
// wait; run under ProcessGroupGuard so that the throwing rank aborts the job.
//
// AVG is SUM followed by "/ N" on every rank (MPI has no average); an int64 AVG throws (the
// division would truncate; PyTorch's gloo and NCCL refuse it as well).
// World size 1 (no mpirun, or a build without MPI): all_reduce/broadcast/barrier do nothing,
// all_gather/reduce_scatter copy `in` to `out`.
// MPI counts are `int`: a single call moves at most 2^31-1 elements (8 GiB of float32).
//
// Chapter: chapters/07-all-reduce.md. Reference: torch.distributed collectives; MPI 3.1 ch. 5.
#pragma once

#include <climits>
#include <cstdint>
#include <cstring>
#include <string>

#include "../core/dtype.hpp"
#include "errors.hpp"
#include "process_group.hpp"
#include "work.hpp"

namespace tinytorch::distributed {

namespace detail {

/// The checks every raw-buffer collective makes before sending anything.
inline void check_buffer_args(const char* op, const void* buf, int64_t count, const char* name = "buffer") {
  require_initialized(op);
  check(count >= 0, rank_prefix(), op, ": count must be >= 0, got ", count);
  check(count <= INT_MAX, rank_prefix(), op, ": count ", count,
        " exceeds MPI's int count limit (", INT_MAX, " elements); split the buffer");
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

/// x[i] /= n for the AVG reduction (float32 / float64 only; checked before).
inline void divide_by(void* x, int64_t count, DType dtype, int n) {
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(x);
    const T d = static_cast<T>(n);
    for (int64_t i = 0; i < count; ++i) p[i] /= d;
  });
}

}  // namespace detail

// ---- synchronous ------------------------------------------------------------------------------

/// In place: buf <- op over all ranks of buf. `buf` holds `count` elements of `dtype`.
/// Throws tinytorch::Error for a bad argument (before any message) or an MPI failure.
inline void all_reduce(void* buf, int64_t count, DType dtype, ReduceOp op = ReduceOp::SUM) {
  detail::check_buffer_args("all_reduce", buf, count);
  detail::check_reduce_op("all_reduce", op, dtype);
  auto& g = detail::group();
  if (g.world_size == 1 || count == 0) return;
#if TINYTORCH_WITH_MPI
  detail::mpi_check(MPI_Allreduce(MPI_IN_PLACE, buf, static_cast<int>(count), detail::mpi_datatype(dtype),
                                  detail::mpi_op(op), g.comm),
                    "MPI_Allreduce", "all_reduce");
  if (op == ReduceOp::AVG) detail::divide_by(buf, count, dtype, g.world_size);
#endif
}

/// Typed form: the dtype comes from T (float, double, int64_t).
template <typename T>
void all_reduce(T* buf, int64_t count, ReduceOp op = ReduceOp::SUM) {
  all_reduce(static_cast<void*>(buf), count, dtype_of<T>(), op);
}

/// Every rank's buf <- rank src's buf. Throws for src outside [0, world_size) or an MPI failure.
inline void broadcast(void* buf, int64_t count, DType dtype, int src) {
  detail::check_buffer_args("broadcast", buf, count);
  auto& g = detail::group();
  detail::check(src >= 0 && src < g.world_size, detail::rank_prefix(), "broadcast: src rank ", src,
                " is outside [0, ", g.world_size, ")");
  (void)dtype;
  if (g.world_size == 1 || count == 0) return;
#if TINYTORCH_WITH_MPI
  detail::mpi_check(MPI_Bcast(buf, static_cast<int>(count), detail::mpi_datatype(dtype), src, g.comm),
                    "MPI_Bcast", "broadcast");
#endif
}

template <typename T>
void broadcast(T* buf, int64_t count, int src) {
  broadcast(static_cast<void*>(buf), count, dtype_of<T>(), src);
}

/// out (world_size * count elements) <- [in of rank 0 | in of rank 1 | ...]; in: count elements.
/// `in` may be out + rank * count (in place). Throws for bad arguments or an MPI failure.
inline void all_gather(void* out, const void* in, int64_t count, DType dtype) {
  detail::check_buffer_args("all_gather", in, count, "input");
  auto& g = detail::group();
  detail::check_not_null("all_gather", out, count * g.world_size, "output");
  const size_t bytes = static_cast<size_t>(count) * element_size(dtype);
  const void* my_slot = static_cast<const char*>(out) + static_cast<size_t>(g.rank) * bytes;
  if (g.world_size == 1 || count == 0) {
    if (count > 0 && in != out) std::memmove(out, in, bytes);
    return;
  }
#if TINYTORCH_WITH_MPI
  const MPI_Datatype t = detail::mpi_datatype(dtype);
  detail::mpi_check(MPI_Allgather(in == my_slot ? MPI_IN_PLACE : in, static_cast<int>(count), t, out,
                                  static_cast<int>(count), t, g.comm),
                    "MPI_Allgather", "all_gather");
#else
  (void)my_slot;
#endif
}

template <typename T>
void all_gather(T* out, const T* in, int64_t count) {
  all_gather(static_cast<void*>(out), static_cast<const void*>(in), count, dtype_of<T>());
}

/// out (count elements) <- op over ranks of in[rank*count, (rank+1)*count); in: world_size*count
/// elements; out and in must not overlap. Throws for bad arguments or an MPI failure.
inline void reduce_scatter(void* out, const void* in, int64_t count, DType dtype, ReduceOp op = ReduceOp::SUM) {
  detail::check_buffer_args("reduce_scatter", out, count, "output");
  auto& g = detail::group();
  detail::check_not_null("reduce_scatter", in, count * g.world_size, "input");
  detail::check_reduce_op("reduce_scatter", op, dtype);
  const size_t bytes = static_cast<size_t>(count) * element_size(dtype);
  const char* a = static_cast<const char*>(in);
  const char* b = static_cast<const char*>(out);
  detail::check(count == 0 || b + bytes <= a || a + bytes * g.world_size <= b, detail::rank_prefix(),
                "reduce_scatter: output and input buffers overlap");
  if (g.world_size == 1 || count == 0) {
    if (count > 0) std::memcpy(out, in, bytes);
    return;
  }
#if TINYTORCH_WITH_MPI
  detail::mpi_check(MPI_Reduce_scatter_block(in, out, static_cast<int>(count), detail::mpi_datatype(dtype),
                                             detail::mpi_op(op), g.comm),
                    "MPI_Reduce_scatter_block", "reduce_scatter");
  if (op == ReduceOp::AVG) detail::divide_by(out, count, dtype, g.world_size);
#endif
}

template <typename T>
void reduce_scatter(T* out, const T* in, int64_t count, ReduceOp op = ReduceOp::SUM) {
  reduce_scatter(static_cast<void*>(out), static_cast<const void*>(in), count, dtype_of<T>(), op);
}

/// Returns when every rank has entered barrier(). Throws on an MPI failure.
inline void barrier() {
  detail::require_initialized("barrier");
  auto& g = detail::group();
  if (g.world_size == 1) return;
#if TINYTORCH_WITH_MPI
  detail::mpi_check(MPI_Barrier(g.comm), "MPI_Barrier", "barrier");
#endif
}

// ---- asynchronous: start now, Work::wait() later ----------------------------------------------
// The buffers must stay valid and untouched until wait() returns (or is_completed() is true).

/// Starts all_reduce (MPI_Iallreduce); AVG's division runs in Work::wait().
inline Work all_reduce_async(void* buf, int64_t count, DType dtype, ReduceOp op = ReduceOp::SUM) {
  detail::check_buffer_args("all_reduce_async", buf, count);
  detail::check_reduce_op("all_reduce_async", op, dtype);
  auto& g = detail::group();
  if (g.world_size == 1 || count == 0) return Work();
#if TINYTORCH_WITH_MPI
  MPI_Request req = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Iallreduce(MPI_IN_PLACE, buf, static_cast<int>(count), detail::mpi_datatype(dtype),
                                   detail::mpi_op(op), g.comm, &req),
                    "MPI_Iallreduce", "all_reduce_async");
  std::function<void()> finish;
  if (op == ReduceOp::AVG) {
    const int n = g.world_size;
    finish = [buf, count, dtype, n] { detail::divide_by(buf, count, dtype, n); };
  }
  return Work("all_reduce_async", req, std::move(finish));
#else
  return Work();
#endif
}

/// Starts broadcast (MPI_Ibcast).
inline Work broadcast_async(void* buf, int64_t count, DType dtype, int src) {
  detail::check_buffer_args("broadcast_async", buf, count);
  auto& g = detail::group();
  detail::check(src >= 0 && src < g.world_size, detail::rank_prefix(), "broadcast_async: src rank ", src,
                " is outside [0, ", g.world_size, ")");
  (void)dtype;
  if (g.world_size == 1 || count == 0) return Work();
#if TINYTORCH_WITH_MPI
  MPI_Request req = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Ibcast(buf, static_cast<int>(count), detail::mpi_datatype(dtype), src, g.comm, &req),
                    "MPI_Ibcast", "broadcast_async");
  return Work("broadcast_async", req, nullptr);
#else
  return Work();
#endif
}

/// Starts all_gather (MPI_Iallgather); same layout rules as all_gather.
inline Work all_gather_async(void* out, const void* in, int64_t count, DType dtype) {
  detail::check_buffer_args("all_gather_async", in, count, "input");
  auto& g = detail::group();
  detail::check_not_null("all_gather_async", out, count * g.world_size, "output");
  const size_t bytes = static_cast<size_t>(count) * element_size(dtype);
  const void* my_slot = static_cast<const char*>(out) + static_cast<size_t>(g.rank) * bytes;
  if (g.world_size == 1 || count == 0) {
    if (count > 0 && in != out) std::memmove(out, in, bytes);
    return Work();
  }
#if TINYTORCH_WITH_MPI
  const MPI_Datatype t = detail::mpi_datatype(dtype);
  MPI_Request req = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Iallgather(in == my_slot ? MPI_IN_PLACE : in, static_cast<int>(count), t, out,
                                   static_cast<int>(count), t, g.comm, &req),
                    "MPI_Iallgather", "all_gather_async");
  return Work("all_gather_async", req, nullptr);
#else
  (void)my_slot;
  return Work();
#endif
}

/// Starts reduce_scatter (MPI_Ireduce_scatter_block); AVG's division runs in Work::wait().
inline Work reduce_scatter_async(void* out, const void* in, int64_t count, DType dtype,
                                 ReduceOp op = ReduceOp::SUM) {
  detail::check_buffer_args("reduce_scatter_async", out, count, "output");
  auto& g = detail::group();
  detail::check_not_null("reduce_scatter_async", in, count * g.world_size, "input");
  detail::check_reduce_op("reduce_scatter_async", op, dtype);
  const size_t bytes = static_cast<size_t>(count) * element_size(dtype);
  const char* a = static_cast<const char*>(in);
  const char* b = static_cast<const char*>(out);
  detail::check(count == 0 || b + bytes <= a || a + bytes * g.world_size <= b, detail::rank_prefix(),
                "reduce_scatter_async: output and input buffers overlap");
  if (g.world_size == 1 || count == 0) {
    if (count > 0) std::memcpy(out, in, bytes);
    return Work();
  }
#if TINYTORCH_WITH_MPI
  MPI_Request req = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Ireduce_scatter_block(in, out, static_cast<int>(count), detail::mpi_datatype(dtype),
                                              detail::mpi_op(op), g.comm, &req),
                    "MPI_Ireduce_scatter_block", "reduce_scatter_async");
  std::function<void()> finish;
  if (op == ReduceOp::AVG) {
    const int n = g.world_size;
    finish = [out, count, dtype, n] { detail::divide_by(out, count, dtype, n); };
  }
  return Work("reduce_scatter_async", req, std::move(finish));
#else
  return Work();
#endif
}

/// Starts a barrier (MPI_Ibarrier): wait() returns once every rank has entered it.
inline Work barrier_async() {
  detail::require_initialized("barrier_async");
  auto& g = detail::group();
  if (g.world_size == 1) return Work();
#if TINYTORCH_WITH_MPI
  MPI_Request req = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Ibarrier(g.comm, &req), "MPI_Ibarrier", "barrier_async");
  return Work("barrier_async", req, nullptr);
#else
  return Work();
#endif
}

}  // namespace tinytorch::distributed

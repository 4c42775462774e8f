// tinytorch/distributed/nccl.hpp — all-reduce of raw GPU buffers over NCCL.
//
//   init_process_group(Backend::NCCL);                // MPI bootstrap, see nccl_context.hpp
//   float* d_grad;  cudaMalloc(&d_grad, n * sizeof(float));
//   nccl_all_reduce(d_grad, n, kFloat32, ReduceOp::AVG, stream);   // enqueued on `stream`
//   cudaStreamSynchronize(stream);                    // the result is there once the stream is
//
// NCCL calls are asynchronous with respect to the host: nccl_all_reduce returns once the
// operation is enqueued on `stream`. The reduction runs on the GPUs (NCCL picks ring, tree or
// NVLS for the topology). AVG maps to ncclAvg (NCCL >= 2.10); int64 AVG throws as on MPI.
// CUDA tensors: nccl_all_reduce / nccl_broadcast / nccl_all_gather on Tensors run on
// the communicator's own cudaStreamNonBlocking stream (nccl_context.hpp), ordered by events as
// llm.c's zero.cuh (multi_gpu_async_reduce_gradient):
//   cudaEventRecord(ready, compute)  ->  cudaStreamWaitEvent(nccl, ready)  ->  ncclAllReduce(.., nccl)
//   ->  cudaEventRecord(done, nccl)  ->  cudaStreamWaitEvent(compute, done)
// The compute stream is the legacy default stream (cudaStreamLegacy), where every kernel of the
// CUDA backend runs. No host synchronisation: a kernel launched afterwards waits for the
// collective on the GPU. The Tensor collectives of collectives.hpp (all_reduce, broadcast,
// all_gather into a tensor) come here for CUDA tensors when the group's backend is NCCL; the MPI
// backend stages them through host memory instead. DDP's buckets use the same ordering with one
// event pair per bucket (reducer.hpp), waiting on every `done` only when it finalises.
//
// Active only under nvcc with NCCL (TINYTORCH_WITH_NCCL = 1). In other builds the functions
// below do not exist and is_nccl_available() (process_group.hpp) is false.
// Build (one TU, as tests/cuda/test_nccl_allreduce.cu):
//   nvcc -std=c++17 -I include -I /usr/include/eigen3 $(mpicxx --showme:compile) prog.cu
//        -L/usr/local/cuda/lib64 -lnccl $(mpicxx --showme:link)          (one command line)
// Chapter: chapters/07-all-reduce.md ("NCCL: the same all-reduce on GPUs").
// Reference: NCCL docs, ncclAllReduce; karpathy/llm.c llmc/zero.cuh (multi_gpu_async_reduce_gradient).
#pragma once

#include "tinytorch/core/config.hpp"
#include "tinytorch/distributed/process_group.hpp"

#if TINYTORCH_WITH_NCCL

#include <cuda_runtime.h>
#include <nccl.h>

#include <climits>
#include <cstdint>

#include "tinytorch/distributed/buffer_collectives.hpp"
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/nccl_context.hpp"
#include "tinytorch/core/cuda_runtime.hpp"
#include "tinytorch/tensor.hpp"

TT_NAMESPACE_BEGIN namespace distributed {

namespace detail {
inline ncclDataType_t nccl_datatype(DType d) {
  switch (d) {
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    case DType::Int64: return ncclInt64;
    case DType::Float16: return ncclFloat16;
    case DType::BFloat16: return ncclBfloat16;
  }
  throw_error("nccl_datatype: unknown dtype");
}

inline ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return ncclSum;
    case ReduceOp::AVG: return ncclAvg;
    case ReduceOp::MAX: return ncclMax;
    case ReduceOp::MIN: return ncclMin;
  }
  throw_error("nccl_op: unknown ReduceOp");
}

inline const NcclContext& require_nccl(const char* op) {
  require_initialized(op);
  const auto& g = group();
  check(g.backend == Backend::NCCL && g.nccl.active(), rank_prefix(), op,
        ": the default process group was created with Backend::", backend_name(g.backend),
        "; call init_process_group(Backend::NCCL) to use NCCL");
  return g.nccl;
}
/// The stream every CUDA kernel of tinytorch runs on (one compute stream per device).
inline cudaStream_t compute_stream() { return cudaStreamLegacy; }

/// Two events (cudaEventDisableTiming): `ready` on the compute stream before a collective,
/// `done` on the NCCL stream after it. Created on the current device; freed by the destructor.
struct NcclEvents {
  cudaEvent_t ready = nullptr, done = nullptr;
  NcclEvents() {
    cuda_check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreateWithFlags", "NcclEvents");
    cuda_check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreateWithFlags", "NcclEvents");
  }
  ~NcclEvents() {
    if (ready != nullptr) cudaEventDestroy(ready);
    if (done != nullptr) cudaEventDestroy(done);
  }
  NcclEvents(const NcclEvents&) = delete;
  NcclEvents& operator=(const NcclEvents&) = delete;
};

/// Enqueues `body(nccl_stream)` after everything already enqueued on the compute stream:
/// record ev.ready on the compute stream, the NCCL stream waits for it, body, record ev.done on
/// the NCCL stream; with `join` the compute stream then waits for ev.done (later kernels see the
/// result). Returns once enqueued. On ctx.device (made current meanwhile).
template <class F>
void nccl_ordered(const NcclContext& ctx, const char* name, const NcclEvents& ev, bool join, F body) {
  backend::cuda::detail::ScopedDevice on(ctx.device);
  cuda_check(cudaEventRecord(ev.ready, compute_stream()), "cudaEventRecord", name);
  cuda_check(cudaStreamWaitEvent(ctx.stream, ev.ready, 0), "cudaStreamWaitEvent", name);
  body(ctx.stream);
  cuda_check(cudaEventRecord(ev.done, ctx.stream), "cudaEventRecord", name);
  if (join) cuda_check(cudaStreamWaitEvent(compute_stream(), ev.done, 0), "cudaStreamWaitEvent", name);
}

/// The compute stream waits (on the GPU) for a collective enqueued with join = false.
inline void nccl_join(const NcclContext& ctx, const char* name, const NcclEvents& ev) {
  backend::cuda::detail::ScopedDevice on(ctx.device);
  cuda_check(cudaStreamWaitEvent(compute_stream(), ev.done, 0), "cudaStreamWaitEvent", name);
}

/// The checks of a Tensor NCCL collective: defined, contiguous, on this rank's GPU.
inline void check_nccl_tensor(const char* op, const Tensor& t, const NcclContext& ctx, const char* what = "tensor") {
  check(t.defined(), rank_prefix(), op, ": ", what, " is an undefined Tensor");
  check(t.device() == Device::cuda(ctx.device), rank_prefix(), op, ": ", what, " is on ", t.device().str(),
        " but this rank's NCCL communicator uses cuda:", ctx.device);
  check(t.is_contiguous(), rank_prefix(), op, ": ", what, " must be contiguous (sizes ", shape_str(t.sizes()),
        ", strides ", shape_str(t.strides()), "); call .contiguous() first");
}
}  // namespace detail

/// The group's NCCL communicator (for code that calls NCCL directly). Throws if the group is not
/// an NCCL group.
inline ncclComm_t get_nccl_comm() { return detail::require_nccl("get_nccl_comm").comm; }

/// The CUDA device this rank's NCCL communicator uses (its local rank).
inline int get_nccl_device() { return detail::require_nccl("get_nccl_device").device; }

/// In place, on the GPU: dev_buf <- op over all ranks of dev_buf (`count` elements of `dtype`
/// in device memory of this rank's GPU), enqueued on `stream` (0 = the legacy default stream).
/// Returns once enqueued; synchronise the stream before reading the result on the host.
/// Throws tinytorch::Error for bad arguments (before any NCCL call) or a CUDA/NCCL failure.
inline void nccl_all_reduce(void* dev_buf, int64_t count, DType dtype, ReduceOp op = ReduceOp::SUM,
                            cudaStream_t stream = nullptr) {
  const char* name = "nccl_all_reduce";
  const detail::NcclContext& ctx = detail::require_nccl(name);
  detail::check(count >= 0, detail::rank_prefix(), name, ": count must be >= 0, got ", count);
  detail::check(count == 0 || dev_buf != nullptr, detail::rank_prefix(), name, ": dev_buf is a null pointer");
  detail::check_reduce_op(name, op, dtype);
  if (count == 0) return;
  cudaPointerAttributes attr{};
  detail::cuda_check(cudaPointerGetAttributes(&attr, dev_buf), "cudaPointerGetAttributes", name);
  detail::check(attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged, detail::rank_prefix(),
                name, ": dev_buf must point to CUDA device (or managed) memory, got a host pointer");
  detail::check(attr.type == cudaMemoryTypeManaged || attr.device == ctx.device, detail::rank_prefix(), name,
                ": dev_buf lives on cuda:", attr.device, " but this rank's NCCL communicator uses cuda:", ctx.device);
  detail::nccl_check(ncclAllReduce(dev_buf, dev_buf, static_cast<size_t>(count), detail::nccl_datatype(dtype),
                                   detail::nccl_op(op), ctx.comm, stream),
                     "ncclAllReduce", name, ctx.comm);
}

// ---- Tensor collectives on CUDA tensors (ordered by events; see the file comment) ------------

/// In place on this rank's GPU: t <- op over all ranks (ncclAllReduce on the NCCL stream; later
/// kernels on the compute stream wait for it). t: contiguous, on cuda:<this rank's device>.
inline void nccl_all_reduce(const Tensor& t, ReduceOp op = ReduceOp::SUM) {
  const char* name = "all_reduce (NCCL)";
  const detail::NcclContext& ctx = detail::require_nccl(name);
  detail::check_nccl_tensor(name, t, ctx);
  detail::check_reduce_op(name, op, t.dtype());
  if (t.numel() == 0) return;
  detail::NcclEvents ev;  // destroying an event whose work is pending is allowed (freed when done)
  detail::nccl_ordered(ctx, name, ev, true, [&](cudaStream_t s) {
    detail::nccl_check(ncclAllReduce(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()),
                                     detail::nccl_datatype(t.dtype()), detail::nccl_op(op), ctx.comm, s),
                       "ncclAllReduce", name, ctx.comm);
  });
}

/// t <- rank src's t (ncclBroadcast, in place).
inline void nccl_broadcast(const Tensor& t, int src) {
  const char* name = "broadcast (NCCL)";
  const detail::NcclContext& ctx = detail::require_nccl(name);
  detail::check_nccl_tensor(name, t, ctx);
  const int n = get_world_size();
  detail::check(src >= 0 && src < n, detail::rank_prefix(), name, ": src rank ", src, " is outside [0, ", n, ")");
  if (t.numel() == 0) return;
  detail::NcclEvents ev;
  detail::nccl_ordered(ctx, name, ev, true, [&](cudaStream_t s) {
    detail::nccl_check(ncclBroadcast(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()),
                                     detail::nccl_datatype(t.dtype()), src, ctx.comm, s),
                       "ncclBroadcast", name, ctx.comm);
  });
}

/// out (world_size * in.numel() elements) <- [in of rank 0 | in of rank 1 | ...] (ncclAllGather).
inline void nccl_all_gather(const Tensor& out, const Tensor& in) {
  const char* name = "all_gather (NCCL)";
  const detail::NcclContext& ctx = detail::require_nccl(name);
  detail::check_nccl_tensor(name, in, ctx, "input");
  detail::check_nccl_tensor(name, out, ctx, "output");
  detail::check(out.dtype() == in.dtype(), detail::rank_prefix(), name, ": output has dtype ",
                dtype_name(out.dtype()), " but input has dtype ", dtype_name(in.dtype()));
  const int n = get_world_size();
  detail::check(out.numel() == n * in.numel(), detail::rank_prefix(), name, ": output has ", out.numel(),
                " elements but world_size * input.numel() = ", n * in.numel());
  if (in.numel() == 0) return;
  detail::NcclEvents ev;
  detail::nccl_ordered(ctx, name, ev, true, [&](cudaStream_t s) {
    detail::nccl_check(ncclAllGather(in.raw_data(), out.raw_data(), static_cast<size_t>(in.numel()),
                                     detail::nccl_datatype(in.dtype()), ctx.comm, s),
                       "ncclAllGather", name, ctx.comm);
  });
}

}  TT_NAMESPACE_END  // namespace tinytorch::distributed

#endif  // TINYTORCH_WITH_NCCL

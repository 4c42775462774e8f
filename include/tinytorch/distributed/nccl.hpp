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
// In this issue NCCL works on raw device buffers only; Tensor collectives on CUDA tensors come
// with the CUDA backend.
//
// Active only under nvcc with NCCL (TINYTORCH_WITH_NCCL = 1). In other builds the functions
// below do not exist and is_nccl_available() (process_group.hpp) is false.
//
// Build (one TU, as tests/cuda/test_nccl_allreduce.cu):
//   nvcc -std=c++17 -I include -I /usr/include/eigen3 $(mpicxx --showme:compile) prog.cu
//        -L/usr/local/cuda/lib64 -lnccl $(mpicxx --showme:link)          (one command line)
//
// Chapter: chapters/07-all-reduce.md ("NCCL: the same all-reduce on GPUs").
// Reference: NCCL docs, ncclAllReduce; karpathy/llm.c llmc/zero.cuh (multi_gpu_async_reduce_gradient).
#pragma once

#include "../core/config.hpp"
#include "process_group.hpp"

#if TINYTORCH_WITH_NCCL

#include <cuda_runtime.h>
#include <nccl.h>

#include <climits>
#include <cstdint>

#include "buffer_collectives.hpp"
#include "errors.hpp"
#include "nccl_context.hpp"

TT_NAMESPACE_BEGIN namespace distributed {

namespace detail {
inline ncclDataType_t nccl_datatype(DType d) {
  switch (d) {
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    case DType::Int64: return ncclInt64;
  }
  throw_error("nccl_datatype: unknown dtype");
}

inline ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return ncclSum;
    case ReduceOp::AVG: return ncclAvg;
    case ReduceOp::MAX: return ncclMax;
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

}  TT_NAMESPACE_END  // namespace tinytorch::distributed

#endif  // TINYTORCH_WITH_NCCL

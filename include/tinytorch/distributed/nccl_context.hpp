// tinytorch/distributed/nccl_context.hpp — bootstrapping an NCCL communicator through MPI.
//
// Active only when TINYTORCH_WITH_NCCL is 1 (a translation unit compiled by nvcc, with MPI and
// <nccl.h> reachable); otherwise this header is empty. The bootstrap is llm.c's
// (llmc/zero.cuh, multi_gpu_config_init) and the NCCL documentation's "one device per process":
//
//   1. every rank selects its GPU: cudaSetDevice(local_rank)      (before any NCCL call)
//   2. rank 0 creates the communicator's identity: ncclGetUniqueId(&id)   (128 opaque bytes)
//   3. MPI broadcasts those bytes from rank 0 to every rank               (MPI_Bcast)
//   4. every rank joins: ncclCommInitRank(&comm, world_size, id, rank)
//   5. the communicator's own stream: cudaStreamCreateWithFlags(cudaStreamNonBlocking)
//
// Between the steps the ranks agree (an MPI all-reduce of an "ok" flag) that every rank
// succeeded, so that a rank without a GPU makes *every* rank throw instead of leaving the others
// blocked in step 3 or 4. NCCL refuses two ranks on one GPU ("Duplicate GPU detected"), so a
// world larger than the node's GPU count fails here with a clear message.
//
// Chapter: chapters/07-all-reduce.md ("NCCL: the same all-reduce on GPUs").
// Reference: karpathy/llm.c llmc/zero.cuh; NCCL docs "Creating a communicator" (example 2).
#pragma once

#include "tinytorch/core/config.hpp"

#if TINYTORCH_WITH_NCCL

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/mpi_include.hpp"

TT_NAMESPACE_BEGIN namespace distributed::detail {

/// Throws tinytorch::Error("rank r: <op>: <call> failed: cudaErrorX: <text>") unless err is success.
inline void cuda_check(cudaError_t err, const char* call, const std::string& op) {
  if (err == cudaSuccess) return;
  throw_error(rank_prefix() + op + ": " + call + " failed: " + cudaGetErrorName(err) + ": " +
              cudaGetErrorString(err));
}

/// Throws tinytorch::Error("rank r: <op>: <call> failed: <ncclGetErrorString> (<last error>)").
inline void nccl_check(ncclResult_t res, const char* call, const std::string& op,
                       ncclComm_t comm = nullptr) {
  if (res == ncclSuccess) return;
  std::string msg = rank_prefix() + op + ": " + call + " failed: " + ncclGetErrorString(res);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && last[0] != '\0') msg += std::string(" (") + last + ")";
  throw_error(msg);
}

/// True on every rank iff `ok` is true on every rank (an MPI all-reduce with MIN).
inline bool all_ranks_ok(bool ok, MPI_Comm comm, const char* op) {
  int mine = ok ? 1 : 0, all = 0;
  mpi_check(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce", op);
  return all == 1;
}

/// One NCCL communicator plus the GPU it lives on and the stream its collectives run on.
struct NcclContext {
  ncclComm_t comm = nullptr;
  int device = -1;  ///< the CUDA device this rank uses (= local rank)
  /// The communicator's own stream, cudaStreamNonBlocking: the legacy default stream (where our
  /// kernels run) "first waits on all blocking streams", so a blocking NCCL stream would
  /// serialise NCCL with every kernel. Ordered against the compute stream by events (nccl.hpp).
  cudaStream_t stream = nullptr;

  bool active() const { return comm != nullptr; }

  /// Runs the four bootstrap steps above. Throws tinytorch::Error on every rank if any rank fails.
  void init(int rank, int world_size, int local_rank, MPI_Comm mpi_comm) {
    const char* op = "init_process_group(Backend::NCCL)";

    // 1. select this rank's GPU (each rank checks, then all agree).
    std::string my_error;
    int ndev = 0;
    cudaError_t err = cudaGetDeviceCount(&ndev);
    if (err != cudaSuccess) {
      my_error = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(err);
    } else if (local_rank >= ndev) {
      my_error = "local rank " + std::to_string(local_rank) + " has no GPU of its own (this node has " +
                 std::to_string(ndev) +
                 " CUDA device(s)); NCCL needs one GPU per rank and refuses two ranks on one GPU";
    } else if ((err = cudaSetDevice(local_rank)) != cudaSuccess) {
      my_error = "cudaSetDevice(" + std::to_string(local_rank) + ") failed: " + cudaGetErrorString(err);
    }
    if (!all_ranks_ok(my_error.empty(), mpi_comm, op)) {
      throw_error(rank_prefix() + op + ": " +
                  (my_error.empty() ? "another rank could not select its GPU (see its message)"
                                    : my_error));
    }

    // 2 + 3. rank 0 creates the unique id and broadcasts it (with a status flag in front).
    struct {
      int ok;
      ncclUniqueId id;
    } msg{};
    msg.ok = 1;
    if (rank == 0) msg.ok = ncclGetUniqueId(&msg.id) == ncclSuccess ? 1 : 0;
    mpi_check(MPI_Bcast(&msg, sizeof(msg), MPI_BYTE, 0, mpi_comm), "MPI_Bcast", op);
    check(msg.ok == 1, rank_prefix(), op, ": ncclGetUniqueId failed on rank 0");

    // 4. every rank joins the communicator; then all agree that every rank did.
    ncclResult_t res = ncclCommInitRank(&comm, world_size, msg.id, rank);
    std::string init_error;
    if (res != ncclSuccess) {
      init_error = std::string("ncclCommInitRank failed: ") + ncclGetErrorString(res);
      const char* last = ncclGetLastError(nullptr);
      if (last != nullptr && last[0] != '\0') init_error += std::string(" (") + last + ")";
      comm = nullptr;
    }
    if (!all_ranks_ok(init_error.empty(), mpi_comm, op)) {
      destroy();
      throw_error(rank_prefix() + op + ": " +
                  (init_error.empty() ? "another rank failed ncclCommInitRank (see its message)"
                                      : init_error));
    }
    device = local_rank;
    // 5. the communicator's non-blocking stream (every rank has one, or every rank throws).
    err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (!all_ranks_ok(err == cudaSuccess, mpi_comm, op)) {
      if (err == cudaSuccess) cudaStreamDestroy(stream);
      stream = nullptr;
      destroy();
      throw_error(rank_prefix() + op + ": cudaStreamCreateWithFlags(cudaStreamNonBlocking) failed" +
                  (err == cudaSuccess ? std::string(" on another rank") : std::string(": ") + cudaGetErrorString(err)));
    }
  }

  /// Frees the communicator (ncclCommDestroy). Safe to call twice.
  void destroy() noexcept {
    if (stream != nullptr) {
      cudaStreamSynchronize(stream);  // nothing of ours may still run on it
      cudaStreamDestroy(stream);
    }
    stream = nullptr;
    if (comm != nullptr) ncclCommDestroy(comm);
    comm = nullptr;
    device = -1;
  }
};

}  TT_NAMESPACE_END  // namespace tinytorch::distributed::detail

#endif  // TINYTORCH_WITH_NCCL

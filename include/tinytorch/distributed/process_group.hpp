// tinytorch/distributed/process_group.hpp — the default process group: who am I, how many are we.
//
// A training job launched as `mpirun -np N prog` is N copies of one program. Each copy (a "rank")
// calls init_process_group() once; afterwards
//
//   get_rank()        r in [0, N)   this process's number in the job
//   get_world_size()  N             how many processes take part
//   get_local_rank()  l             this process's number among the ranks on the same machine
//                                   (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)); rank l uses GPU l
//
// Backends:
//   Backend::MPI   collectives on CPU memory travel over MPI (shared memory on one machine,
//                  the network across machines). The only backend for CPU tensors.
//   Backend::NCCL  additionally bootstraps an NCCL communicator (nccl_context.hpp) for GPU
//                  buffers; the group keeps its MPI communicator for CPU work. Needs a
//                  translation unit compiled by nvcc with NCCL (TINYTORCH_WITH_NCCL).
//
// Three ways to run, one program:
//   * under mpirun, built with MPI (mpicxx / tinytorch::mpi): N ranks;
//   * without mpirun, built with MPI: MPI starts as a "singleton", world size 1;
//   * built without MPI (plain g++): world size 1; every collective is a local no-op or copy.
//     If such a binary finds itself launched as one of several ranks (OMPI_COMM_WORLD_SIZE or
//     PMI_SIZE > 1 in the environment), init_process_group throws instead of letting every rank
//     silently train alone.
//
// Threads: MPI is initialised with MPI_Init_thread(MPI_THREAD_MULTIPLE) because DDP runs its
// all-reduces on a communication thread while the main thread computes. The level MPI actually
// provides is recorded; require_thread_multiple() throws if a caller needs it and it is missing.
//
// Lifetime: destroy_process_group() frees the communicators and, if init_process_group started
// MPI, calls MPI_Finalize. MPI cannot be started twice in one process, so a second
// init_process_group after that throws. Prefer ProcessGroupGuard (guard.hpp), which also turns an
// exception on one rank into MPI_Abort of the whole job instead of a hang.
//
// Chapter: chapters/07-all-reduce.md (and 06-distributed-data-parallel.md).
// Reference: torch.distributed (init_process_group, get_rank, get_world_size, ReduceOp);
//            PyTorch's ProcessGroupMPI; karpathy/llm.c llmc/zero.cuh (MPI -> NCCL bootstrap).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <utility>

#include "../core/check.hpp"
#include "../core/config.hpp"
#include "../core/dtype.hpp"
#include "errors.hpp"

#include "mpi_include.hpp"
#if TINYTORCH_WITH_NCCL
#include "nccl_context.hpp"
#endif

namespace tinytorch::distributed {

/// Which library carries the collectives (torch.distributed's backend strings "mpi", "nccl").
enum class Backend { MPI, NCCL };

/// How all_reduce / reduce_scatter combine the ranks' values (torch.distributed.ReduceOp).
///   SUM  x = x_0 + x_1 + ... + x_{N-1}
///   AVG  x = SUM / N          (float32/float64 only: an int64 AVG throws, as PyTorch's
///                              gloo/NCCL backends do, because the division would truncate)
///   MAX  x = max_r x_r
enum class ReduceOp { SUM, AVG, MAX };

inline const char* backend_name(Backend b) { return b == Backend::MPI ? "mpi" : "nccl"; }

inline const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return "SUM";
    case ReduceOp::AVG: return "AVG";
    case ReduceOp::MAX: return "MAX";
  }
  return "?";
}

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
#if TINYTORCH_WITH_MPI
  MPI_Comm comm = MPI_COMM_NULL;        ///< dup of MPI_COMM_WORLD, MPI_ERRORS_RETURN
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

/// Integer value of environment variable `name`, or -1 if it is unset or not a number.
inline long env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  return (end != nullptr && *end == '\0') ? x : -1;
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

#if TINYTORCH_WITH_MPI
/// MPI's name for a tinytorch dtype.
inline MPI_Datatype mpi_datatype(DType d) {
  switch (d) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    case DType::Int64: return MPI_INT64_T;
  }
  throw_error("mpi_datatype: unknown dtype");
}

/// MPI's reduction for SUM and MAX. AVG is SUM followed by a division by N (MPI has no average).
inline MPI_Op mpi_op(ReduceOp op) { return op == ReduceOp::MAX ? MPI_MAX : MPI_SUM; }

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
  std::cerr << "rank " << group().rank << ": " << what << "\nrank " << group().rank
            << ": uncaught exception; calling MPI_Abort so the other ranks do not hang" << std::endl;
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

/// Creates the default process group (torch.distributed.init_process_group).
///
/// MPI builds: MPI_Init_thread(MPI_THREAD_MULTIPLE) unless MPI is already initialised (then the
/// caller owns MPI and we never finalise it); the group communicates on a duplicate of
/// MPI_COMM_WORLD whose error handler is MPI_ERRORS_RETURN; the local rank comes from
/// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). Backend::NCCL then bootstraps NCCL as described in
/// nccl_context.hpp. With more than one rank, a std::terminate handler is installed that prints
/// "rank r: <what()>" and calls MPI_Abort (see guard.hpp).
///
/// Throws tinytorch::Error when: the group is already initialised; MPI was already finalised
/// (a second init after destroy_process_group); Backend::NCCL is asked for in a build without
/// NCCL; the program was built without MPI but launched as one of several ranks; the launcher's
/// world size disagrees with MPI's (a binary linked against a different MPI than mpirun's); any
/// MPI/CUDA/NCCL call fails.
inline void init_process_group(Backend backend = Backend::MPI) {
  auto& g = detail::group();
  detail::check(!g.initialized,
                "init_process_group: trying to initialize the default process group twice "
                "(call destroy_process_group() first)");
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
  detail::mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &g.comm), "MPI_Comm_dup", op);
  detail::mpi_check(MPI_Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", op);
  detail::mpi_check(MPI_Comm_rank(g.comm, &g.rank), "MPI_Comm_rank", op);
  detail::mpi_check(MPI_Comm_size(g.comm, &g.world_size), "MPI_Comm_size", op);
  detail::error_rank() = g.rank;

  // The local rank: split the world into groups of processes that can share memory (one per
  // machine); our rank in that group picks our GPU.
  detail::mpi_check(MPI_Comm_split_type(g.comm, MPI_COMM_TYPE_SHARED, g.rank, MPI_INFO_NULL,
                                        &g.local_comm),
                    "MPI_Comm_split_type", op);
  detail::mpi_check(MPI_Comm_set_errhandler(g.local_comm, MPI_ERRORS_RETURN),
                    "MPI_Comm_set_errhandler", op);
  detail::mpi_check(MPI_Comm_rank(g.local_comm, &g.local_rank), "MPI_Comm_rank", op);
  detail::mpi_check(MPI_Comm_size(g.local_comm, &g.local_world_size), "MPI_Comm_size", op);

  if (launched > 1 && g.world_size == 1) {
    int ws = g.world_size;
    // Every copy believes it is rank 0 of 1: mpirun and the linked MPI library do not match.
    MPI_Comm_free(&g.local_comm);
    MPI_Comm_free(&g.comm);
    detail::throw_error(::tinytorch::detail::str_cat(
        "init_process_group: launched as one of ", launched, " ranks (", launcher_var, "=", launched,
        ") but MPI reports a world of size ", ws,
        "; the program is linked against a different MPI library than the mpirun that started it"));
  }

  g.backend = backend;
#if TINYTORCH_WITH_NCCL
  if (backend == Backend::NCCL) {
    try {
      g.nccl.init(g.rank, g.world_size, g.local_rank, g.comm);
    } catch (...) {  // every rank throws together (see nccl_context.hpp); leave no communicator behind
      MPI_Comm_free(&g.local_comm);
      MPI_Comm_free(&g.comm);
      throw;
    }
  }
#endif
  if (g.world_size > 1) g.previous_terminate = std::set_terminate(&detail::terminate_with_mpi_abort);
  g.initialized = true;
#endif
}

/// Frees the default group (torch.distributed.destroy_process_group): NCCL communicator,
/// MPI communicators, the terminate handler; then MPI_Finalize if init_process_group started MPI.
/// Does nothing if the group is not initialised. Throws tinytorch::Error if an MPI call fails.
inline void destroy_process_group() {
  auto& g = detail::group();
  if (!g.initialized) return;
  g.initialized = false;
#if TINYTORCH_WITH_MPI
  const char* op = "destroy_process_group";
#if TINYTORCH_WITH_NCCL
  g.nccl.destroy();
#endif
  if (g.world_size > 1) std::set_terminate(g.previous_terminate);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // someone else finalised MPI already; the communicators died with it
  if (g.local_comm != MPI_COMM_NULL) detail::mpi_check(MPI_Comm_free(&g.local_comm), "MPI_Comm_free", op);
  if (g.comm != MPI_COMM_NULL) detail::mpi_check(MPI_Comm_free(&g.comm), "MPI_Comm_free", op);
  if (g.mpi_started_by_us) detail::mpi_check(MPI_Finalize(), "MPI_Finalize", op);
#endif
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
inline MPI_Comm get_mpi_comm() {
  detail::require_initialized("get_mpi_comm");
  return detail::group().comm;
}
#endif

}  // namespace tinytorch::distributed

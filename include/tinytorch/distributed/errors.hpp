// tinytorch/distributed/errors.hpp — how distributed code reports failure.
//
// Three rules, so that a failure never turns into a silent hang:
//   1. Arguments are checked locally, before any message is sent, and a bad one throws
//      tinytorch::Error naming the collective and the offending values.
//   2. Every MPI call is checked: the group's communicator uses MPI_ERRORS_RETURN (not MPI's
//      default MPI_ERRORS_ARE_FATAL), so an error comes back as a code that mpi_check turns into
//      tinytorch::Error("rank 1: all_reduce: MPI_Allreduce failed: <MPI_Error_string>").
//      CUDA and NCCL calls get the same treatment (cuda_check / nccl_check in nccl_context.hpp).
//   3. The last message thrown here is remembered (last_error()), so that ProcessGroupGuard can
//      print it with the rank when the exception unwinds through it, before calling MPI_Abort.
// The debug level (TINYTORCH_DISTRIBUTED_DEBUG, get_debug_level) lives here too: it decides how
// much the layer checks and says. And one way out when waiting any longer would be a hang: abort_job() prints "rank r: <why>"
// and calls MPI_Abort, which ends every rank of the job (ProcessGroupGuard and the collective
// watchdog of work.hpp use it).
//
// Chapter: chapters/07-all-reduce.md ("When a rank fails"). Reference: MPI 3.1 standard §8.3
// (error handlers), PyTorch's c10d error messages ("rank r: ...").
#pragma once

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <utility>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"

#include "tinytorch/distributed/mpi_include.hpp"

TT_NAMESPACE_BEGIN namespace distributed::detail {

/// This process's rank for error messages: set by init_process_group, -1 before.
inline int& error_rank() {
  static int rank = -1;
  return rank;
}

/// "rank 3: " (or "" before init_process_group, when the rank is not known yet).
inline std::string rank_prefix() {
  int r = error_rank();
  return r < 0 ? std::string() : "rank " + std::to_string(r) + ": ";
}

inline std::mutex& last_error_mutex() {
  static std::mutex m;
  return m;
}
inline std::string& last_error_storage() {
  static std::string s;
  return s;
}

/// The message of the last tinytorch::Error thrown by the distributed layer ("" if none).
inline std::string last_error() {
  std::lock_guard<std::mutex> lock(last_error_mutex());
  return last_error_storage();
}

/// Records `message` as last_error() and throws tinytorch::Error(message).
[[noreturn]] inline void throw_error(std::string message) {
  {
    std::lock_guard<std::mutex> lock(last_error_mutex());
    last_error_storage() = message;
  }
  throw ::tinytorch::Error(std::move(message));
}

/// check(ok, parts...): throws (and records) tinytorch::Error(parts...) when ok is false.
/// Like TT_CHECK, but goes through throw_error so the guard can report it.
template <typename... Args>
inline void check(bool ok, Args&&... parts) {
  if (!ok) throw_error(::tinytorch::detail::str_cat(std::forward<Args>(parts)...));
}

#if TINYTORCH_WITH_MPI
/// Turns a failed MPI call into tinytorch::Error. `call` is the MPI function ("MPI_Allreduce"),
/// `op` our operation ("all_reduce"). Example message:
///   "rank 1: all_reduce: MPI_Allreduce failed: MPI_ERR_TRUNCATE: message truncated"
inline void mpi_check(int code, const char* call, const std::string& op) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
  throw_error(rank_prefix() + op + ": " + call + " failed: " +
              (len > 0 ? std::string(text, static_cast<size_t>(len))
                       : "MPI error code " + std::to_string(code)));
}
#endif

}  TT_NAMESPACE_END  // namespace tinytorch::distributed::detail

TT_NAMESPACE_BEGIN namespace distributed {

/// How much the distributed layer checks and reports (PyTorch's TORCH_DISTRIBUTED_DEBUG; ours
/// is read from TINYTORCH_DISTRIBUTED_DEBUG=OFF|INFO|DETAIL by init_process_group).
///   OFF     nothing extra (the default)
///   INFO    each rank prints its group (rank, size, timeout) at init and DDP its buckets
///   DETAIL  INFO, plus: before every collective the ranks agree on it (process_group.hpp),
///           and DistributedDataParallel's forward checks that every rank runs it (unequal
///           numbers of steps per rank are an error at the first forward too many)
enum class DebugLevel { OFF, INFO, DETAIL };

inline const char* debug_level_name(DebugLevel d) {
  return d == DebugLevel::OFF ? "OFF" : d == DebugLevel::INFO ? "INFO" : "DETAIL";
}

namespace detail {
inline std::atomic<int>& debug_level_storage() {
  static std::atomic<int> level{static_cast<int>(DebugLevel::OFF)};
  return level;
}
}  // namespace detail

/// The debug level (torch.distributed.get_debug_level). Set from TINYTORCH_DISTRIBUTED_DEBUG by
/// init_process_group, or by set_debug_level. Must be the same on every rank.
inline DebugLevel get_debug_level() { return static_cast<DebugLevel>(detail::debug_level_storage().load()); }

/// Sets the debug level for this process (torch.distributed.set_debug_level). Every rank must
/// set the same level at the same point of the program (DETAIL adds a collective to each).
inline void set_debug_level(DebugLevel level) {
  detail::debug_level_storage() = static_cast<int>(level);
}

namespace detail {
/// MPI_Abort(MPI_COMM_WORLD, errorcode) when MPI is running, else (no MPI, or MPI already
/// finalising) std::_Exit(errorcode): no core dump, no destructors that could wait on a peer.
/// Prints nothing (abort_job prints first). Never returns.
[[noreturn]] inline void abort_now(int errorcode) {
#if TINYTORCH_WITH_MPI
  int started = 0, finalized = 0;
  MPI_Initialized(&started);
  MPI_Finalized(&finalized);
  if (started && !finalized) MPI_Abort(MPI_COMM_WORLD, errorcode);
#endif
  std::_Exit(errorcode);
}
}  // namespace detail

/// Prints "rank r: <message>" to stderr and ends the whole job: MPI_Abort(MPI_COMM_WORLD, code)
/// when MPI is running (every rank is killed and mpirun exits non-zero), std::_Exit(code) otherwise.
/// Never returns.
[[noreturn]] inline void abort_job(const std::string& message, int errorcode = 1) {
  const std::string prefix = "rank " + std::to_string(detail::error_rank()) + ": ";
  // Messages from the distributed layer already start with "rank r: "; do not say it twice.
  // One write, so that the lines of ranks failing at the same moment do not interleave.
  std::cerr << (message.rfind(prefix, 0) == 0 ? "" : prefix) + message + "\n" + prefix +
                   "aborting the job (MPI_Abort) so that the other ranks do not hang\n"
            << std::flush;
  detail::abort_now(errorcode);
}

}  TT_NAMESPACE_END  // namespace tinytorch::distributed

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
//
// Chapter: chapters/07-all-reduce.md ("When a rank fails"). Reference: MPI 3.1 standard §8.3
// (error handlers), PyTorch's c10d error messages ("rank r: ...").
#pragma once

#include <mutex>
#include <string>
#include <utility>

#include "../core/check.hpp"
#include "../core/config.hpp"

#include "mpi_include.hpp"

namespace tinytorch::distributed::detail {

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

}  // namespace tinytorch::distributed::detail

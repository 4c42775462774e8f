// tinytorch/distributed/guard.hpp — ProcessGroupGuard: init at the top of main, and a failing
// rank ends the whole job instead of leaving the others waiting forever.
//
// Collectives are rendezvous: if rank 1 throws and exits, rank 0 waits in its next all_reduce
// forever. So any failure becomes MPI_Abort(MPI_COMM_WORLD), which ends every rank. The guard:
//   constructor  init_process_group(backend)
//   destructor   normal exit: destroy_process_group() (frees the communicators, MPI_Finalize).
//                While an exception unwinds, with world size > 1: prints "rank r: <error>" and
//                calls MPI_Abort, the one place tinytorch ends the process (world size 1: the
//                group is destroyed and the exception goes on to its handler).
//   abort(e)     the same print and MPI_Abort, from a catch block.
// A destructor cannot see the exception unwinding through it, so it prints the last message
// tinytorch::distributed threw (detail::last_error()). For the exact message of any exception:
//   int main() {                                  // A: nothing catches; init_process_group's
//     dist::ProcessGroupGuard pg(dist::Backend::MPI);   // terminate handler prints "rank r:
//     train();                                    // <what()>" and calls MPI_Abort
//   }
//   int main() {                                  // B: the catch block hands it to the guard
//     dist::ProcessGroupGuard pg;
//     try { train(); } catch (const std::exception& e) { pg.abort(e); }
//   }
// `try { ProcessGroupGuard pg; train(); } catch (...) {}` still ends the job (the guard aborts
// while unwinding, with the last distributed error). What must not be done: catch without a guard
// and return from main, leaving the peers in a collective.
// Chapter: chapters/07-all-reduce.md (7.8, when a rank fails). Reference: MPI 3.1 8.7 (MPI_Abort);
// PyTorch's NCCL watchdog aborts after a timeout (work.hpp's does too, for a rank that never comes).
#pragma once

#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/process_group.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed {

/// RAII owner of the default process group; see the file comment for the main() patterns.
class ProcessGroupGuard {
 public:
  /// Calls init_process_group(backend, timeout); throws what it throws.
  explicit ProcessGroupGuard(Backend backend = Backend::MPI, std::chrono::milliseconds timeout = default_timeout())
      : uncaught_at_start_(std::uncaught_exceptions()) {
    init_process_group(backend, timeout);
  }

  ProcessGroupGuard(const ProcessGroupGuard&) = delete;
  ProcessGroupGuard& operator=(const ProcessGroupGuard&) = delete;

  /// Normal exit: destroy_process_group() (MPI_Finalize). Unwinding with world size > 1:
  /// abort_job("<last distributed error>").
  ~ProcessGroupGuard() {
    const bool unwinding = std::uncaught_exceptions() > uncaught_at_start_;
    auto& g = detail::group();
    if (unwinding && g.initialized && g.world_size > 1) {
      std::string last = detail::last_error();
      abort_job(last.empty()
                    ? std::string("an exception is unwinding through ProcessGroupGuard (its message "
                                  "is unknown here: catch it and call ProcessGroupGuard::abort(e))")
                    : last + "\n(the last tinytorch::distributed error; an exception is unwinding "
                             "through ProcessGroupGuard)");
    }
    try {
      destroy_process_group();
    } catch (const std::exception& e) {
      // E.g. DETAIL found that another rank is still training: with peers left, end the job.
      if (g.initialized && g.world_size > 1) {
        std::string what = e.what();  // "rank r: ..." already: say where, after the prefix
        const std::string prefix = detail::rank_prefix();
        if (what.rfind(prefix, 0) == 0) what.erase(0, prefix.size());
        abort_job(prefix + "destroy_process_group: " + what);
      }
      std::cerr << detail::rank_prefix() << "destroy_process_group: " << e.what() << std::endl;
    }
  }

  /// From a catch block: prints "rank r: <e.what()>" and ends the job (abort_job). Never returns.
  [[noreturn]] void abort(const std::exception& e) const { abort_job(e.what()); }

  /// Same with a message of your own.
  [[noreturn]] void abort(const std::string& message) const { abort_job(message); }

 private:
  int uncaught_at_start_;
};

}  TT_NAMESPACE_END  // namespace tinytorch::distributed

// tinytorch/distributed/guard.hpp — ProcessGroupGuard: init at the top of main, and a failing
// rank ends the whole job instead of leaving the others waiting forever.
//
// The problem. Collectives are rendezvous: all_reduce on rank 0 returns only when every rank
// has called it. If rank 1 throws (a bad shape, a missing file) and simply exits, rank 0 waits
// in its next all_reduce forever: the job hangs and burns its allocation. The cure is to turn
// any failure into MPI_Abort(MPI_COMM_WORLD), which kills every rank of the job.
//
// ProcessGroupGuard is an RAII object:
//   constructor  init_process_group(backend)
//   destructor   normal exit (no exception in flight): destroy_process_group() — frees the
//                communicators and calls MPI_Finalize.
//                During stack unwinding (std::uncaught_exceptions() grew since construction) with
//                world size > 1: prints "rank r: <error>" to stderr and calls MPI_Abort — the one
//                place where tinytorch ends the process. With world size 1 nobody can hang, so
//                the group is destroyed and the exception continues to its handler.
//   abort(e)     the same print + MPI_Abort, explicitly, from a catch block.
//
// A destructor cannot see the exception that is unwinding through it, so the guard prints the
// last message thrown by tinytorch::distributed (detail::last_error()). For the exact message of
// *any* exception use one of the two documented main() patterns:
//
//   // Pattern A: no try/catch. An exception nobody catches calls std::terminate without
//   // unwinding; init_process_group installed a terminate handler that prints
//   // "rank r: <what()>" and calls MPI_Abort.
//   int main() {
//     tinytorch::distributed::ProcessGroupGuard pg(tinytorch::distributed::Backend::MPI);
//     train();
//   }
//
//   // Pattern B: guard outside, try/catch inside; the catch block hands the exception to the
//   // guard, which prints "rank r: <what()>" and calls MPI_Abort.
//   int main() {
//     tinytorch::distributed::ProcessGroupGuard pg;
//     try { train(); } catch (const std::exception& e) { pg.abort(e); }
//   }
//
// Pattern C also ends the job, with less information: `try { ProcessGroupGuard pg; train(); }
// catch (...) { ... }` destroys the guard while the exception unwinds, before the catch block
// runs, so the guard aborts the job and prints the last tinytorch::distributed error. What must
// not be done is catching the exception without any guard and returning from main: that rank
// leaves while its peers wait in a collective.
//
// Chapter: chapters/07-all-reduce.md ("When a rank fails"). Reference: MPI 3.1 §8.7 (MPI_Abort);
// PyTorch's NCCL watchdog (it aborts communicators after a timeout; we abort at once; for a
// rank that never arrives, work.hpp's watchdog aborts after the group's timeout).
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

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
// PyTorch's NCCL watchdog (it aborts communicators after a timeout; we abort at once).
#pragma once

#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include "errors.hpp"
#include "process_group.hpp"

namespace tinytorch::distributed {

/// Prints "rank r: <message>" to stderr and ends the whole job: MPI_Abort(MPI_COMM_WORLD, code)
/// when MPI is running (every rank is killed and mpirun exits non-zero), std::abort() otherwise.
/// Never returns.
[[noreturn]] inline void abort_job(const std::string& message, int errorcode = 1) {
  const int rank = detail::group().initialized ? detail::group().rank : detail::error_rank();
  const std::string prefix = "rank " + std::to_string(rank) + ": ";
  // Messages from the distributed layer already start with "rank r: "; do not say it twice.
  std::cerr << (message.rfind(prefix, 0) == 0 ? "" : prefix) << message << "\n"
            << prefix << "aborting the job (MPI_Abort) so that the other ranks do not hang" << std::endl;
#if TINYTORCH_WITH_MPI
  int started = 0, finalized = 0;
  MPI_Initialized(&started);
  MPI_Finalized(&finalized);
  if (started && !finalized) MPI_Abort(MPI_COMM_WORLD, errorcode);
#else
  (void)errorcode;
#endif
  std::abort();
}

/// RAII owner of the default process group; see the file comment for the main() patterns.
class ProcessGroupGuard {
 public:
  /// Calls init_process_group(backend); throws what it throws.
  explicit ProcessGroupGuard(Backend backend = Backend::MPI)
      : uncaught_at_start_(std::uncaught_exceptions()) {
    init_process_group(backend);
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
      std::cerr << "rank " << g.rank << ": destroy_process_group: " << e.what() << std::endl;
    }
  }

  /// From a catch block: prints "rank r: <e.what()>" and ends the job (abort_job). Never returns.
  [[noreturn]] void abort(const std::exception& e) const { abort_job(e.what()); }

  /// Same with a message of your own.
  [[noreturn]] void abort(const std::string& message) const { abort_job(message); }

 private:
  int uncaught_at_start_;
};

}  // namespace tinytorch::distributed

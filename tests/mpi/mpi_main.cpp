// tests/mpi/mpi_main.cpp — the Catch2 main() shared by every tests/mpi/test_*.cpp executable.
//
// ctest runs these as `scripts/mpirun.sh -np N build/bin/test_<x>` for N = 2, 3, 4.
//   * MPI_Init_thread (MPI_THREAD_MULTIPLE requested) runs before the first test case and
//     MPI_Finalize after the last, so test cases may call tinytorch::distributed functions
//     freely; init_process_group() must therefore accept an MPI that is already initialised.
//   * After the last test case, destroy_process_group() (when a test left the default group
//     initialised) frees the group's communicators and stops the watchdog thread before
//     MPI_Finalize, as a program should; under AddressSanitizer (scripts/test.sh's build-asan)
//     nothing of tinytorch's is then left for LeakSanitizer to report. If it throws (a Work never
//     waited for), the message is printed and MPI_Abort ends every rank.
//   * Every rank runs the same test cases in declaration order (Catch2's default), so the
//     collectives in a test case line up across ranks.
//   * When a test case fails on one rank while others wait in a collective, the job would hang
//     until the ctest TIMEOUT. Instead the failing rank prints its failure and calls MPI_Abort,
//     which stops every rank at once. Set TT_MPI_TEST_NO_ABORT=1 to keep going instead.
//   * Output is not coloured (each rank writes to a pty); ctest adds --tag-output so every line
//     is prefixed with its rank, e.g. "[1,0]<stdout>:".
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <mpi.h>

#include <tinytorch/distributed/process_group.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace {

struct MpiAbortOnFailure : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseEnded(Catch::TestCaseStats const& stats) override {
    if (stats.totals.assertions.failed == 0) return;
    int size = 1, rank = 0, finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char* keep_going = std::getenv("TT_MPI_TEST_NO_ABORT");
    if (size == 1 || (keep_going && *keep_going && *keep_going != '0')) return;
    std::cout.flush();
    std::cerr << "[rank " << rank << "] test case '" << stats.testInfo.name
              << "' failed; calling MPI_Abort so the other ranks do not hang\n";
    std::cerr.flush();
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(MpiAbortOnFailure)

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);

  // mpirun hands each rank a pseudo-terminal, so Catch would colour its output even inside
  // ctest logs; colour only when asked for (--use-colour yes).
  Catch::Session session;
  const int bad_cli = session.applyCommandLine(argc, argv);
  if (bad_cli != 0) {
    MPI_Finalize();
    return bad_cli;
  }
  if (session.configData().useColour == Catch::UseColour::Auto) {
    session.configData().useColour = Catch::UseColour::No;
  }
  int failed = session.run();

  namespace dist = tinytorch::distributed;
  if (dist::is_initialized()) {
    try {
      dist::destroy_process_group();
    } catch (const std::exception& e) {
      // The other ranks may wait in destroy_process_group's barrier: end the job, do not hang.
      std::cerr << "mpi_main: destroy_process_group after the tests: " << e.what() << std::endl;
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
  return failed;
}

// tests/mpi/failing_rank.cpp — a program in which rank 1 fails while rank 0 waits in a
// collective; run by tests/mpi/failure_test.sh, which asserts that the whole job ends within
// seconds (instead of hanging) and that the error is printed with "rank 1:".
//
//   scripts/mpirun.sh -np 2 build/bin/failing_rank <mode>
//
// Modes (the three main() patterns of include/tinytorch/distributed/guard.hpp):
//   uncaught  pattern A: guard, no try/catch; rank 1 throws std::runtime_error. Nobody catches it,
//             so std::terminate runs; init_process_group's terminate handler prints
//             "rank 1: <what()>" and calls MPI_Abort.
//   abort     pattern B: guard outside, try/catch inside; the catch calls pg.abort(e).
//   unwind    pattern C: the guard inside the try; rank 1 passes a bad argument to broadcast,
//             which throws tinytorch::Error; the guard's destructor runs during unwinding, prints
//             the error and calls MPI_Abort before the catch block is reached.
//   ok        nobody fails: exits 0 (the guard finalises MPI normally).
//   launched  just init_process_group: in a build without MPI (TINYTORCH_WITH_MPI=0) started by
//             mpirun with 2 ranks, it throws "launched as one of 2 ranks".
// Chapter: chapters/07-all-reduce.md ("When a rank fails").
#include <tinytorch/distributed/buffer_collectives.hpp>
#include <tinytorch/distributed/guard.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace dist = tinytorch::distributed;

namespace {

// Rank 0 enters an all_reduce that rank 1 never joins: without MPI_Abort this waits forever.
void work(const std::string& mode) {
  float x = 1.0f;
  if (dist::get_rank() == 1) {
    if (mode == "unwind") dist::broadcast(&x, 1, 99);  // bad src: throws tinytorch::Error
    if (mode != "ok") throw std::runtime_error("rank-local failure in mode '" + mode + "' (e.g. a missing data file)");
  }
  dist::all_reduce(&x, 1);
  if (dist::get_rank() == 0) std::printf("all_reduce done: %g\n", x);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "ok";
  if (mode == "launched") {
    dist::ProcessGroupGuard pg(dist::Backend::MPI);  // throws in a no-MPI build under mpirun -np 2
    std::printf("world_size=%d\n", dist::get_world_size());
    return 0;
  }
  if (mode == "uncaught" || mode == "ok") {  // pattern A
    dist::ProcessGroupGuard pg(dist::Backend::MPI);
    work(mode);
    return 0;
  }
  if (mode == "abort") {  // pattern B
    dist::ProcessGroupGuard pg(dist::Backend::MPI);
    try {
      work(mode);
    } catch (const std::exception& e) {
      pg.abort(e);
    }
    return 0;
  }
  if (mode == "unwind") {  // pattern C
    try {
      dist::ProcessGroupGuard pg(dist::Backend::MPI);
      work(mode);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "not reached with more than one rank: %s\n", e.what());
      return 1;
    }
    return 0;
  }
  std::fprintf(stderr, "failing_rank: unknown mode '%s' (uncaught, abort, unwind, ok, launched)\n", mode.c_str());
  return 2;
}

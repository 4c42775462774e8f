// tests/mpi/hang_failing_rank.cpp — programs that used to hang forever, or to return garbage
// with exit 0, when the ranks disagree; run by tests/mpi/hang_failure_test.sh, which asserts
// that each ends within seconds with a message on every rank (or, for `slow`, succeeds without
// burning a core).
//
//   TINYTORCH_DIST_TIMEOUT=3 scripts/mpirun.sh -np 2 build/bin/hang_failing_rank <mode>
//
// Modes (rank 1 is the odd one out):
//   stopped        rank 1 stops itself (SIGSTOP) before an all_reduce: rank 0's watchdog reports
//                  the all_reduce and its sequence number after the timeout and aborts the job.
//   unequal_steps  rank 0 runs 5 all_reduces, rank 1 runs 4 and leaves (destroy_process_group):
//                  rank 0's watchdog names the all_reduce and ends the job; rank 1 waits in
//                  destroy_process_group (its barrier, or MPI_Finalize, watched with 60 s).
//   order          rank 0 calls all_reduce then broadcast, rank 1 the other order.
//   dtype          all_reduce of float64 on rank 0 and of int64 on rank 1.
//   op             all_reduce with SUM on rank 0 and MAX on rank 1.
//   root           broadcast from rank 0 on rank 0 and from rank 1 on rank 1.
//   count          all_reduce of 4 elements on rank 0 and of 5 on rank 1.
//   (order/dtype/op/root/count: with TINYTORCH_DISTRIBUTED_DEBUG=DETAIL every rank throws the
//    same "collective mismatch" error naming both sides; without it they time out, or MPI
//    returns garbage.)
//   send_unmatched rank 0 sends 1M float32 (too large for MPI to buffer) to rank 1 with tag 7,
//                  which never receives it: rank 0's watchdog names the send, the peer and the tag.
//   recv_size      rank 0 sends 3 float32 with tag 2, rank 1 receives 4: rank 1 throws naming
//                  both sizes, the peer and the tag, and the job ends (the guard's MPI_Abort).
//   slow           rank 1 sleeps 3 s before a barrier; rank 0 prints how much CPU time it used
//                  while waiting ("waited W s, cpu C s") and exits 0.
// Chapter: chapters/07-all-reduce.md ("Timeouts and the watchdog").
#include <tinytorch/distributed/buffer_collectives.hpp>
#include <tinytorch/distributed/guard.hpp>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

namespace dist = tinytorch::distributed;

namespace {

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void run(const std::string& mode) {
  const int rank = dist::get_rank();
  const bool odd = rank == 1;
  if (mode == "stopped") {
    if (odd) std::raise(SIGSTOP);
    float x = 1.0f;
    dist::all_reduce(&x, 1);
  } else if (mode == "unequal_steps") {
    for (int step = 0; step < (odd ? 4 : 5); ++step) {
      float x = 1.0f;
      dist::all_reduce(&x, 1);
    }
  } else if (mode == "order") {
    float x[4] = {1, 2, 3, 4};
    if (odd) dist::broadcast(x, 4, 0);
    dist::all_reduce(x, 4);
    if (!odd) dist::broadcast(x, 4, 0);
  } else if (mode == "dtype") {
    if (odd) {
      int64_t x[4] = {1, 2, 3, 4};
      dist::all_reduce(x, 4);
    } else {
      double x[4] = {1, 2, 3, 4};
      dist::all_reduce(x, 4);
    }
  } else if (mode == "op") {
    float x[4] = {1, 2, 3, 4};
    dist::all_reduce(x, 4, odd ? dist::ReduceOp::MAX : dist::ReduceOp::SUM);
  } else if (mode == "root") {
    float x[4] = {1, 2, 3, 4};
    dist::broadcast(x, 4, odd ? 1 : 0);
  } else if (mode == "count") {
    float x[5] = {1, 2, 3, 4, 5};
    dist::all_reduce(x, odd ? 5 : 4);
  } else if (mode == "send_unmatched") {
    std::vector<float> x(1 << 20, 1.0f);
    if (!odd) dist::get_default_group().send(x.data(), static_cast<int64_t>(x.size()), tinytorch::kFloat32, 1, 7,
                                             dist::Completion::Blocking);
    else std::this_thread::sleep_for(std::chrono::seconds(30));
  } else if (mode == "recv_size") {
    float x[4] = {1, 2, 3, 4};
    if (!odd) dist::get_default_group().send(x, 3, tinytorch::kFloat32, 1, 2, dist::Completion::Blocking);
    else dist::get_default_group().recv(x, 4, tinytorch::kFloat32, 0, 2, dist::Completion::Blocking);
    if (!odd) std::this_thread::sleep_for(std::chrono::seconds(30));  // rank 1's error must end the job
  } else if (mode == "slow") {
    if (odd) std::this_thread::sleep_for(std::chrono::seconds(3));
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    dist::barrier();
    const double cpu = cpu_seconds() - c0;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!odd) std::printf("waited %.2f s, cpu %.2f s\n", wall, cpu);
  } else {
    throw std::runtime_error("hang_failing_rank: unknown mode '" + mode +
                             "' (stopped, unequal_steps, order, dtype, op, root, count, send_unmatched, recv_size, slow)");
  }
  std::printf("rank %d: %s done\n", rank, mode.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "slow";
  dist::ProcessGroupGuard pg(dist::Backend::MPI);  // pattern A: an uncaught error aborts the job
  run(mode);
  return 0;
}

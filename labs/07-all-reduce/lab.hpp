// labs/07-all-reduce/lab.hpp — lab 07: ring all-reduce written as reduce-scatter + all-gather
// over point-to-point messages. What you implement is declared here; your file is ring.cpp.
//
// Every rank r of N holds a buffer x of `count` floats; afterwards every rank holds the sum over
// all ranks. The ring cuts x into N chunks; rank r sends to its right neighbour (r+1) mod N and
// receives from its left one (r-1) mod N:
//   reduce-scatter  N-1 steps; in step s rank r sends chunk (r-s) mod N and adds the chunk
//                   (r-s-1) mod N it receives into its own copy. Afterwards rank r holds the
//                   complete sum of chunk (r+1) mod N.
//   all-gather      N-1 more steps; in step s rank r sends chunk (r+1-s) mod N (complete) and
//                   stores the chunk (r-s) mod N it receives.
// Each rank sends 2(N-1) messages and, when N divides count, 2(N-1)/N x count x 4 bytes.
// Chapter: chapters/07-all-reduce.md (sections 7.2 and 7.3); the library's own version, to read
// once you are done: include/tinytorch/distributed/algorithms.hpp (ring_all_reduce).
// Reference: Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
// workstations" (2009).
#pragma once

#include <tinytorch/distributed.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace lab07 {

/// Given, not a task: the point-to-point messages of the ring, on a process group.
class Peers {
 public:
  explicit Peers(tinytorch::distributed::ProcessGroup& group) : group_(group) {}
  int rank() const { return group_.rank(); }
  int size() const { return group_.size(); }

  /// Sends send[0, send_count) to rank `to` and receives recv_count floats from rank `from` into
  /// recv[0, recv_count), both at once (MPI_Sendrecv's semantics), so a ring in which every rank
  /// sends first cannot deadlock. recv must not overlap send. Throws tinytorch::Error for a peer
  /// outside [0, size()), a negative count, or a message longer than recv_count (MPI_ERR_TRUNCATE);
  /// a peer that never answers ends the job after the group's timeout (TINYTORCH_DIST_TIMEOUT,
  /// 20 s under scripts/lab.sh) with a report naming this call.
  void sendrecv(const float* send, int64_t send_count, int to, float* recv, int64_t recv_count, int from);

  /// Bytes and messages this rank has sent through sendrecv so far.
  int64_t bytes_sent() const { return bytes_sent_; }
  int64_t messages_sent() const { return messages_sent_; }

 private:
  tinytorch::distributed::ProcessGroup& group_;
  int64_t bytes_sent_ = 0;
  int64_t messages_sent_ = 0;
};

// ---- your tasks (ring.cpp) ---------------------------------------------------------------------

/// Task chunks. The chunk boundaries for cutting `count` elements into `world` nearly equal
/// chunks, as a vector of world + 1 offsets: chunk c is [off[c], off[c+1]). The first
/// count % world chunks have one element more (count = 10, world = 4: 0 3 6 8 10). count may be
/// smaller than world (some chunks empty) or 0.
std::vector<int64_t> chunk_offsets(int64_t count, int world);

/// Task reduce_scatter. The ring's first phase on x[0, count) in place: afterwards chunk
/// (r+1) mod N of this rank's x holds the sum of that chunk over all ranks (the other chunks
/// hold partial sums: not checked). Uses chunk_offsets and peers.sendrecv only.
void ring_reduce_scatter(float* x, int64_t count, Peers& peers);

/// Task all_gather. The ring's second phase: on entry chunk (r+1) mod N of this rank's x is
/// complete (the others may hold anything); afterwards every chunk is, on every rank.
void ring_all_gather(float* x, int64_t count, Peers& peers);

/// Task all_reduce. x[0, count) on every rank becomes the sum over all ranks (MPI_Allreduce
/// with MPI_SUM), by the two phases above: 2(N-1) messages per rank.
void ring_all_reduce(float* x, int64_t count, Peers& peers);

// ---- given: Peers::sendrecv ---------------------------------------------------------------------

inline void Peers::sendrecv(const float* send, int64_t send_count, int to, float* recv, int64_t recv_count,
                            int from) {
  namespace dist = tinytorch::distributed;
  const int n = size();
  dist::detail::check(to >= 0 && to < n && from >= 0 && from < n, "lab07 sendrecv: rank ", rank(), " of ", n,
           ": peers must be in [0, ", n, "), got to=", to, " from=", from);
  dist::detail::check(send_count >= 0 && recv_count >= 0 && send_count < (int64_t{1} << 31) && recv_count < (int64_t{1} << 31),
           "lab07 sendrecv: rank ", rank(), ": counts must be in [0, 2^31), got send_count=", send_count,
           " recv_count=", recv_count);
  constexpr int kTag = 0x1ab7;
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  const std::string op = "lab07 sendrecv";
  dist::detail::mpi_check(MPI_Irecv(recv, static_cast<int>(recv_count), MPI_FLOAT, from, kTag, group_.mpi_comm(),
                                    &requests[0]),
                          "MPI_Irecv", op);
  dist::detail::mpi_check(MPI_Isend(send, static_cast<int>(send_count), MPI_FLOAT, to, kTag, group_.mpi_comm(),
                                    &requests[1]),
                          "MPI_Isend", op);
  // Wait for both, watched by the watchdog like every collective, keeping the statuses so that a
  // message of the wrong length is reported as such.
  const int me = rank();
  MPI_Status statuses[2];
  {
    dist::detail::WatchScope watch(
        [me, to, from, send_count, recv_count] {
          return "lab07 sendrecv on rank " + std::to_string(me) + ": sending " + std::to_string(send_count) +
                 " floats to rank " + std::to_string(to) + ", receiving " + std::to_string(recv_count) +
                 " floats from rank " + std::to_string(from) + " (does rank " + std::to_string(from) +
                 " send to rank " + std::to_string(me) + " in the same step?)";
        },
        group_.timeout());
    int done = 0;
    const auto start = std::chrono::steady_clock::now();
    while (!done) {
      const int rc = MPI_Testall(2, requests, &done, statuses);
      if (rc == MPI_ERR_IN_STATUS && statuses[0].MPI_ERROR == MPI_ERR_TRUNCATE)
        dist::detail::check(false, "lab07 sendrecv: rank ", me, " expected ", recv_count, " floats from rank ", from,
                            " but rank ", from, " sent more (MPI_ERR_TRUNCATE): do both ranks agree on the chunk?");
      dist::detail::mpi_check(rc, "MPI_Testall", op);
      if (done) break;
      if (std::chrono::steady_clock::now() - start < std::chrono::seconds(1))
        std::this_thread::yield();  // a quick answer is the common case
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // do not burn a core waiting
    }
  }
  int received = 0;
  MPI_Get_count(&statuses[0], MPI_FLOAT, &received);
  dist::detail::check(received == recv_count, "lab07 sendrecv: rank ", me, " expected ", recv_count,
                      " floats from rank ", from, " but received ", received,
                      ": do both ranks agree on the chunk?");
  bytes_sent_ += send_count * static_cast<int64_t>(sizeof(float));
  messages_sent_ += 1;
}

}  // namespace lab07

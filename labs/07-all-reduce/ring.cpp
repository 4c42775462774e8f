// labs/07-all-reduce/ring.cpp — your ring all-reduce (lab 07; the tasks are in lab.hpp).
//
// Check your work:   scripts/lab.sh check 07, from the tinytorch clone (add the --dir you gave to start)
// Each function below is one task. Use chunk_offsets for the chunk boundaries and
// peers.sendrecv(send, send_count, to, recv, recv_count, from) for every message: in each step
// a rank sends to its right neighbour and receives from its left one at the same time.
// Chapter: chapters/07-all-reduce.md, sections 7.2-7.3.
// BEGIN REFERENCE ONLY
#ifndef TT_LAB_REFERENCE
#error "labs/07-all-reduce/ring.cpp is the reference solution: a student build must compile the student's copy (scripts/lab.sh start 07)"
#endif
// END REFERENCE ONLY
#include "lab.hpp"

#include <vector>

namespace lab07 {

std::vector<int64_t> chunk_offsets(int64_t count, int world) {
  // BEGIN SOLUTION chunks
  std::vector<int64_t> off(static_cast<size_t>(world) + 1, 0);
  const int64_t base = count / world, extra = count % world;
  for (int c = 0; c < world; ++c) off[c + 1] = off[c] + base + (c < extra ? 1 : 0);
  return off;
  // END SOLUTION
}

/// a mod n in [0, n), also for negative a (C++'s % keeps the sign of a: -1 % 4 == -1).
inline int mod(int a, int n) { return ((a % n) + n) % n; }

void ring_reduce_scatter(float* x, int64_t count, Peers& peers) {
  // BEGIN SOLUTION reduce_scatter
  const int N = peers.size(), r = peers.rank();
  if (N == 1) return;
  const std::vector<int64_t> off = chunk_offsets(count, N);
  std::vector<float> incoming(static_cast<size_t>(off[1] - off[0]));  // chunk 0 is the largest
  for (int s = 0; s < N - 1; ++s) {
    const int send_c = mod(r - s, N), recv_c = mod(r - s - 1, N);
    const int64_t recv_n = off[recv_c + 1] - off[recv_c];
    peers.sendrecv(x + off[send_c], off[send_c + 1] - off[send_c], (r + 1) % N, incoming.data(), recv_n,
                   mod(r - 1, N));
    for (int64_t i = 0; i < recv_n; ++i) x[off[recv_c] + i] += incoming[i];
  }
  // END SOLUTION
}

void ring_all_gather(float* x, int64_t count, Peers& peers) {
  // BEGIN SOLUTION all_gather
  const int N = peers.size(), r = peers.rank();
  if (N == 1) return;
  const std::vector<int64_t> off = chunk_offsets(count, N);
  for (int s = 0; s < N - 1; ++s) {
    const int send_c = mod(r + 1 - s, N), recv_c = mod(r - s, N);
    peers.sendrecv(x + off[send_c], off[send_c + 1] - off[send_c], (r + 1) % N, x + off[recv_c],
                   off[recv_c + 1] - off[recv_c], mod(r - 1, N));
  }
  // END SOLUTION
}

void ring_all_reduce(float* x, int64_t count, Peers& peers) {
  // BEGIN SOLUTION all_reduce
  ring_reduce_scatter(x, count, peers);
  ring_all_gather(x, count, peers);
  // END SOLUTION
}

}  // namespace lab07

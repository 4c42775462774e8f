// labs/07-all-reduce/test_ring.cpp — the checks of lab 07, one Catch2 tag per task.
//
// Run on 2, 3 and 4 ranks by scripts/lab.sh check 07 (each task in its own mpirun). The reference
// for every value is MPI_Allreduce itself; data are integer-valued, so every summation order gives
// the same exact float sums and results compare with ==. Sizes cover 0, 1, N-1 (empty chunks),
// N, N+1 (uneven chunks) and two larger odd counts. A failure names the rank, the count, the
// chunk and the first wrong element.
#include <catch2/catch.hpp>

#include "lab.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace dist = tinytorch::distributed;

namespace {

dist::ProcessGroup& world() {
  if (!dist::is_initialized()) dist::init_process_group(dist::Backend::MPI);
  return dist::get_default_group();
}

std::vector<int64_t> counts_for(int n) { return {0, 1, n - 1, n, n + 1, 1000, 4099}; }

std::vector<float> rank_data(int64_t count, int rank) {
  std::vector<float> x(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) x[i] = static_cast<float>((i * 7 + rank * 13 + (i % 5) * rank) % 101 - 50);
  return x;
}

// The reference: MPI_Allreduce of every rank's data.
std::vector<float> mpi_sum(const std::vector<float>& x, dist::ProcessGroup& g) {
  std::vector<float> out(x.size());
  MPI_Allreduce(x.data(), out.data(), static_cast<int>(x.size()), MPI_FLOAT, MPI_SUM, g.mpi_comm());
  return out;
}

// Chunk boundaries written independently of the student's chunk_offsets.
int64_t chunk_begin(int64_t count, int n, int c) { return c * (count / n) + std::min<int64_t>(c, count % n); }

// "" when got[b, e) == want[b, e), else the first difference.
std::string mismatch(const std::vector<float>& got, const std::vector<float>& want, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; ++i)
    if (!(got[i] == want[i])) {
      std::ostringstream os;
      os << "x[" << i << "] = " << got[i] << ", expected " << want[i] << " (the sum over all ranks)";
      return os.str();
    }
  return "";
}

void expect_same(const std::string& what, const std::vector<float>& got, const std::vector<float>& want, int64_t b,
                 int64_t e) {
  const std::string m = mismatch(got, want, b, e);
  if (m.empty())
    SUCCEED(what);
  else
    FAIL_CHECK(what << ": " << m);
}

}  // namespace

TEST_CASE("chunk_offsets cuts count elements into N nearly equal chunks", "[task:chunks]") {
  CHECK(lab07::chunk_offsets(10, 4) == std::vector<int64_t>{0, 3, 6, 8, 10});
  CHECK(lab07::chunk_offsets(12, 3) == std::vector<int64_t>{0, 4, 8, 12});
  CHECK(lab07::chunk_offsets(2, 4) == std::vector<int64_t>{0, 1, 2, 2, 2});
  CHECK(lab07::chunk_offsets(0, 3) == std::vector<int64_t>{0, 0, 0, 0});
  CHECK(lab07::chunk_offsets(7, 1) == std::vector<int64_t>{0, 7});
  for (int n = 1; n <= 5; ++n)
    for (int64_t count = 0; count <= 23; ++count) {
      INFO("chunk_offsets(" << count << ", " << n << ")");
      const std::vector<int64_t> off = lab07::chunk_offsets(count, n);
      REQUIRE(off.size() == static_cast<size_t>(n) + 1);
      for (int c = 0; c <= n; ++c) CHECK(off[c] == chunk_begin(count, n, c));
    }
}

TEST_CASE("reduce-scatter leaves the sum of chunk (r+1) mod N on rank r", "[task:reduce_scatter]") {
  dist::ProcessGroup& g = world();
  lab07::Peers peers(g);
  const int n = g.size(), r = g.rank();
  for (int64_t count : counts_for(n)) {
    std::vector<float> x = rank_data(count, r);
    const std::vector<float> want = mpi_sum(x, g);
    lab07::ring_reduce_scatter(x.data(), count, peers);
    const int mine = (r + 1) % n;
    std::ostringstream what;
    what << "rank " << r << " of " << n << ", count " << count << ", chunk " << mine << " ["
         << chunk_begin(count, n, mine) << ", " << chunk_begin(count, n, mine + 1) << ")";
    expect_same(what.str(), x, want, chunk_begin(count, n, mine), chunk_begin(count, n, mine + 1));
  }
}

TEST_CASE("all-gather passes the finished chunks around the ring", "[task:all_gather]") {
  dist::ProcessGroup& g = world();
  lab07::Peers peers(g);
  const int n = g.size(), r = g.rank();
  for (int64_t count : counts_for(n)) {
    const std::vector<float> want = mpi_sum(rank_data(count, r), g);
    // On entry only chunk (r+1) mod N is complete; the others hold NaN.
    std::vector<float> x(static_cast<size_t>(count), std::numeric_limits<float>::quiet_NaN());
    const int mine = (r + 1) % n;
    for (int64_t i = chunk_begin(count, n, mine); i < chunk_begin(count, n, mine + 1); ++i) x[i] = want[i];
    lab07::ring_all_gather(x.data(), count, peers);
    std::ostringstream what;
    what << "rank " << r << " of " << n << ", count " << count << ", after all-gather";
    expect_same(what.str(), x, want, 0, count);
  }
}

TEST_CASE("ring all-reduce equals MPI_Allreduce and sends 2(N-1)/N x M bytes", "[task:all_reduce]") {
  dist::ProcessGroup& g = world();
  const int n = g.size(), r = g.rank();
  for (int64_t count : counts_for(n)) {
    lab07::Peers peers(g);
    std::vector<float> x = rank_data(count, r);
    const std::vector<float> want = mpi_sum(x, g);
    lab07::ring_all_reduce(x.data(), count, peers);
    std::ostringstream what;
    what << "rank " << r << " of " << n << ", count " << count;
    expect_same(what.str(), x, want, 0, count);
    INFO(what.str() << ": bytes and messages this rank sent");
    CHECK(peers.messages_sent() == 2 * (n - 1));
    CHECK(peers.bytes_sent() == dist::ring_bytes_sent(count, sizeof(float), n, r));
    if (count % n == 0) CHECK(peers.bytes_sent() * n == 2 * (n - 1) * count * static_cast<int64_t>(sizeof(float)));
  }
}

// tests/mpi/test_algorithms.cpp — the teaching all-reduce algorithms (ring, parameter server,
// tree) give exactly MPI_Allreduce's answer, and send exactly the bytes the cost model says.
//
// Run by ctest on 2, 3 and 4 ranks (scripts/mpirun.sh -np N build/bin/test_algorithms).
// Data are integer-valued, so every summation order gives the same, exact result (float32 sums
// stay below 2^24), and results can be compared with ==. Sizes cover the awkward cases: 0,
// 1, N-1 (some ring chunks empty), N, N+1 (uneven chunks), 1000, 65537 (odd, several pipeline
// segments), and a tiny segment size that cuts every message into many odd pieces.
// Byte counters: ring = 2(N-1)/N * M exactly when N divides the count (ring_bytes_sent otherwise),
// parameter server = (N-1)*M on rank 0 and M elsewhere, tree = M per tree edge.
// Chapter: chapters/07-all-reduce.md. Catch2 tag: [distributed][algorithms].
#include <catch2/catch.hpp>

#include <tinytorch/distributed/algorithms.hpp>  // (the umbrella <tinytorch/distributed.hpp> works too)

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace dist = tinytorch::distributed;
using dist::Algorithm;
using dist::ReduceOp;

namespace {

// The MPI main (tests/mpi/mpi_main.cpp) started MPI; the group is created once and kept.
void ensure_group() {
  if (!dist::is_initialized()) dist::init_process_group(dist::Backend::MPI);
}

// Integer-valued data that differ between ranks (so MAX is not trivial): in [-50, 50].
template <typename T>
std::vector<T> make_data(int64_t count, int rank) {
  std::vector<T> x(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) x[i] = static_cast<T>((i * 7 + rank * 13 + (i % 5) * rank) % 101 - 50);
  return x;
}

// The reference: MPI_Allreduce (SUM, then "/ N" for AVG, exactly like the algorithms).
template <typename T>
std::vector<T> reference(std::vector<T> x, ReduceOp op) {
  dist::all_reduce(x.data(), static_cast<int64_t>(x.size()), op);
  return x;
}

template <typename T>
void check_all(const std::vector<ReduceOp>& ops, const std::vector<int64_t>& counts, const dist::AlgorithmOptions& opt) {
  const int N = dist::get_world_size(), r = dist::get_rank();
  for (Algorithm algo : {Algorithm::Ring, Algorithm::ParameterServer, Algorithm::Tree}) {
    for (ReduceOp op : ops) {
      for (int64_t count : counts) {
        INFO("algorithm " << dist::algorithm_name(algo) << ", op " << dist::reduce_op_name(op) << ", dtype "
                          << tinytorch::dtype_name(tinytorch::dtype_of<T>()) << ", count " << count << ", world "
                          << N << ", rank " << r << ", segment_bytes " << opt.segment_bytes);
        std::vector<T> x = make_data<T>(count, r);
        const std::vector<T> expected = reference(x, op);
        dist::CommStats st = dist::all_reduce(x.data(), count, tinytorch::dtype_of<T>(), op, algo, opt);
        REQUIRE(x == expected);

        const int64_t es = sizeof(T);
        int64_t want = 0;
        if (algo == Algorithm::Ring) want = dist::ring_bytes_sent(count, es, N, r);
        if (algo == Algorithm::ParameterServer) want = dist::parameter_server_bytes_sent(count, es, N, r);
        if (algo == Algorithm::Tree) want = dist::tree_bytes_sent(count, es, N, r);
        CHECK(st.bytes_sent == want);
        // Every byte sent is received by someone: the totals over the ranks agree.
        int64_t totals[2] = {st.bytes_sent, st.bytes_received};
        dist::all_reduce(totals, 2, ReduceOp::SUM);
        CHECK(totals[0] == totals[1]);
      }
    }
  }
}

std::vector<int64_t> awkward_counts() {
  const int64_t N = dist::get_world_size();
  return {0, 1, N - 1, N, N + 1, 7, 1000, 65537};
}

}  // namespace

TEST_CASE("algorithms equal MPI_Allreduce for float32", "[distributed][algorithms]") {
  ensure_group();
  check_all<float>({ReduceOp::SUM, ReduceOp::AVG, ReduceOp::MAX, ReduceOp::MIN}, awkward_counts(), {});
}

TEST_CASE("algorithms equal MPI_Allreduce for float64", "[distributed][algorithms]") {
  ensure_group();
  check_all<double>({ReduceOp::SUM, ReduceOp::AVG, ReduceOp::MAX, ReduceOp::MIN}, awkward_counts(), {});
}

TEST_CASE("algorithms equal MPI_Allreduce for int64", "[distributed][algorithms]") {
  ensure_group();
  check_all<int64_t>({ReduceOp::SUM, ReduceOp::MAX, ReduceOp::MIN}, awkward_counts(), {});
}

TEST_CASE("algorithms equal MPI_Allreduce for float16 and bfloat16", "[ch11][distributed][algorithms]") {
  ensure_group();
  // 16-bit AVG divides before the sum; v / N is exact for N a power of two only, and then every
  // order of the sum gives the same result (for N = 3 see the next test case).
  const int N = dist::get_world_size();
  std::vector<ReduceOp> ops = {ReduceOp::SUM, ReduceOp::MAX, ReduceOp::MIN};
  if ((N & (N - 1)) == 0) ops.push_back(ReduceOp::AVG);
  check_all<tinytorch::Half>(ops, awkward_counts(), {});
  check_all<tinytorch::BFloat16>(ops, awkward_counts(), {});
}

// MPI has no 16-bit float: the process group reduces float16/bfloat16 with a user-defined
// MPI_Op that adds in float32 and rounds each hop. On integer data (|sum| <= 200: exact in both
// types) the result is the exact sum. AVG divides each value by N first (NCCL's ncclAvg): exact
// for N a power of two, within N roundings of the terms' size (50) otherwise.
template <typename H>
void check_16bit_exact(double eps) {
  const int N = dist::get_world_size(), r = dist::get_rank();
  const int64_t count = 1000;
  for (ReduceOp op : {ReduceOp::SUM, ReduceOp::AVG, ReduceOp::MAX, ReduceOp::MIN}) {
    INFO("op " << dist::reduce_op_name(op) << ", dtype " << tinytorch::dtype_name(tinytorch::dtype_of<H>()));
    std::vector<H> x = make_data<H>(count, r);
    dist::all_reduce(x.data(), count, op);
    for (int64_t i = 0; i < count; ++i) {
      int64_t sum = 0, mx = -1000, mn = 1000;
      for (int q = 0; q < N; ++q) {
        const int64_t v = static_cast<int64_t>(static_cast<float>(make_data<H>(count, q)[i]));
        sum += v;
        mx = std::max(mx, v);
        mn = std::min(mn, v);
      }
      const double want = op == ReduceOp::SUM   ? static_cast<double>(sum)
                          : op == ReduceOp::MAX ? static_cast<double>(mx)
                          : op == ReduceOp::MIN ? static_cast<double>(mn)
                                                : static_cast<double>(sum) / N;
      if (op != ReduceOp::AVG || (N & (N - 1)) == 0) REQUIRE(static_cast<double>(x[i]) == want);
      else REQUIRE(std::abs(static_cast<double>(x[i]) - want) <= N * eps * 50);
    }
  }
}

TEST_CASE("float16 and bfloat16 all-reduce: exact sums of integers, AVG rounded once", "[ch11][distributed][algorithms]") {
  ensure_group();
  check_16bit_exact<tinytorch::Half>(0x1p-10);
  check_16bit_exact<tinytorch::BFloat16>(0x1p-7);
  // An average whose sum would overflow float16 (N x 60000 > 65504) stays in range, on MPI and
  // on every algorithm (NCCL's ncclAvg gives 60000 too).
  for (Algorithm algo : {Algorithm::MPI, Algorithm::Ring, Algorithm::ParameterServer, Algorithm::Tree}) {
    INFO("algorithm " << dist::algorithm_name(algo));
    std::vector<tinytorch::Half> x(5, tinytorch::Half(60000.0f));
    dist::all_reduce(x.data(), 5, tinytorch::kFloat16, ReduceOp::AVG, algo);
    for (const auto& v : x) CHECK(static_cast<float>(v) == 60000.0f);
  }
}

TEST_CASE("algorithms with tiny pipeline segments and deep receive windows", "[distributed][algorithms]") {
  ensure_group();
  dist::AlgorithmOptions opt;
  opt.segment_bytes = 24;  // 6 floats / 3 doubles per message: many segments, odd remainders
  opt.recv_depth = 3;
  check_all<float>({ReduceOp::SUM, ReduceOp::MAX}, {1, 5, 97, 1001}, opt);
  check_all<double>({ReduceOp::AVG}, {2, 96, 1003}, opt);
  opt.segment_bytes = 8;  // one int64 per message
  opt.recv_depth = 1;     // no look-ahead at all
  check_all<int64_t>({ReduceOp::SUM}, {3, 50}, opt);
}

TEST_CASE("large buffer: several default-size segments per chunk", "[distributed][algorithms]") {
  ensure_group();
  const int64_t count = (int64_t{1} << 20) + 3;  // 4 MiB of float32, not divisible by 2, 3 or 4
  check_all<float>({ReduceOp::SUM}, {count}, {});
}

TEST_CASE("ring sends exactly 2(N-1)/N * M when N divides the count", "[distributed][algorithms]") {
  ensure_group();
  const int N = dist::get_world_size();
  const int64_t count = 1000 * N;
  const int64_t M = count * static_cast<int64_t>(sizeof(float));
  std::vector<float> x = make_data<float>(count, dist::get_rank());
  dist::CommStats st = dist::ring_all_reduce(x.data(), count, ReduceOp::SUM);
  CHECK(st.bytes_sent == 2 * (N - 1) * M / N);
  CHECK(st.bytes_received == 2 * (N - 1) * M / N);
  CHECK(st.steps == 2 * (N - 1));  // N-1 reduce-scatter steps + N-1 all-gather steps

  // The parameter server's rank 0 carries (N-1) * M each way; a worker M.
  std::vector<float> y = make_data<float>(count, dist::get_rank());
  dist::CommStats ps = dist::parameter_server_all_reduce(y.data(), count, ReduceOp::SUM);
  CHECK(ps.bytes_sent == (dist::get_rank() == 0 ? (N - 1) * M : M));
  CHECK(ps.bytes_received == (dist::get_rank() == 0 ? (N - 1) * M : M));
}

TEST_CASE("the plain ring gives the pipelined ring's bits, bytes and steps", "[ch07][distributed][algorithms]") {
  ensure_group();
  const int N = dist::get_world_size(), r = dist::get_rank();
  for (ReduceOp op : {ReduceOp::SUM, ReduceOp::AVG, ReduceOp::MAX}) {
    for (int64_t count : awkward_counts()) {
      INFO("op " << dist::reduce_op_name(op) << ", count " << count << ", world " << N << ", rank " << r);
      std::vector<float> plain = make_data<float>(count, r), piped = plain;
      // Non-integer data: the plain ring must add in exactly the pipelined ring's order.
      for (size_t i = 0; i < plain.size(); ++i) plain[i] = piped[i] = piped[i] / 3.0f + 0.1f * static_cast<float>(r);
      dist::AlgorithmOptions tiny;
      tiny.segment_bytes = 12;  // the pipelined ring in many odd pieces
      const dist::CommStats a = dist::ring_all_reduce_naive(plain.data(), count, op);
      const dist::CommStats b = dist::ring_all_reduce(piped.data(), count, op, tiny);
      CHECK(plain == piped);
      CHECK(a.bytes_sent == dist::ring_bytes_sent(count, sizeof(float), N, r));
      CHECK(a.bytes_sent == b.bytes_sent);
      CHECK(a.bytes_received == b.bytes_received);
      CHECK(a.steps == b.steps);
    }
  }
  std::vector<int64_t> ints = make_data<int64_t>(10, r);
  CHECK_THROWS_WITH(dist::ring_all_reduce_naive(ints.data(), 10, ReduceOp::AVG),
                    Catch::Contains("ring_all_reduce_naive"));
}

TEST_CASE("algorithm names", "[distributed][algorithms]") {
  ensure_group();
  CHECK(dist::algorithm_from_name("ring") == Algorithm::Ring);
  CHECK(dist::algorithm_from_name("parameter_server") == Algorithm::ParameterServer);
  CHECK(dist::algorithm_from_name("ps") == Algorithm::ParameterServer);
  CHECK(dist::algorithm_from_name("tree") == Algorithm::Tree);
  CHECK(dist::algorithm_from_name("mpi") == Algorithm::MPI);
  CHECK(std::string(dist::algorithm_name(Algorithm::ParameterServer)) == "parameter_server");
  CHECK_THROWS_WITH(dist::algorithm_from_name("butterfly"),
                    Catch::Contains("unknown algorithm \"butterfly\"") &&
                        Catch::Contains("mpi, ring, parameter_server, tree"));

  std::vector<float> x = make_data<float>(10, dist::get_rank());
  const std::vector<float> expected = reference(x, ReduceOp::SUM);
  dist::all_reduce(x.data(), 10, tinytorch::kFloat32, ReduceOp::SUM, "tree");
  CHECK(x == expected);
}

TEST_CASE("algorithm argument errors are thrown locally, before any message", "[distributed][algorithms]") {
  ensure_group();
  std::vector<int64_t> xi(8, 1);
  CHECK_THROWS_WITH(dist::ring_all_reduce(xi.data(), 8, ReduceOp::AVG),
                    Catch::Contains("ring_all_reduce: ReduceOp::AVG is not supported for torch.int64"));
  CHECK_THROWS_WITH(dist::tree_all_reduce(xi.data(), -1, ReduceOp::SUM),
                    Catch::Contains("tree_all_reduce: count must be >= 0, got -1"));
  std::vector<float> x(8, 1.0f);
  dist::AlgorithmOptions bad;
  bad.segment_bytes = 2;
  CHECK_THROWS_WITH(dist::parameter_server_all_reduce(x.data(), 8, ReduceOp::SUM, bad),
                    Catch::Contains("segment_bytes must be in [4, 2^30], got 2"));
  // The error message carries this rank.
  CHECK_THROWS_WITH(dist::ring_all_reduce(static_cast<float*>(nullptr), 4, ReduceOp::SUM),
                    Catch::Contains("rank " + std::to_string(dist::get_rank()) + ": ring_all_reduce: buffer is a null pointer"));
  // Nothing was sent: a collective afterwards still lines up on every rank.
  float one = 1.0f;
  dist::all_reduce(&one, 1, ReduceOp::SUM);
  CHECK(one == static_cast<float>(dist::get_world_size()));
}

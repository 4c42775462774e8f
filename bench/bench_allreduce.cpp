// bench/bench_allreduce.cpp — an nccl-tests style table for MPI_Allreduce and the three
// teaching algorithms (ring, parameter_server, tree), on float32 SUM.
//
//   scripts/mpirun.sh -np 2 build/bin/bench_allreduce [--csv chapters/data/allreduce_np2.csv]
//
// For each size M (4 KiB .. 64 MiB, x4 steps) and each repetition, the algorithms run in turn
// (interleaved, so a slow phase of the machine hits all of them alike). One measurement =
//   barrier; t0; `iters` all-reduces; t1;  time = (t1 - t0) / iters   on each rank,
// then the max over ranks (the collective is done when the slowest rank is done). The table shows
// the median over repetitions. Every rank runs the same fixed number of collectives (iters is a
// function of M only), so the ranks never disagree about what comes next.
//
// Columns (nccl-tests doc/PERFORMANCE.md, GB = 1e9 bytes):
//   time_us  median time of one all-reduce
//   algbw    M / time                              what the application sees
//   busbw    algbw * 2(N-1)/N                      comparable with a link's bandwidth: a
//                                                  bandwidth-optimal all-reduce moves 2(N-1)/N * M
//                                                  bytes over each rank's link
//   vs_mpi   time(MPI_Allreduce) / time(algo)      > 1: faster than MPI
//
// Chapter: chapters/07-all-reduce.md (the table and the plot made from --csv by
// scripts/plot_busbw.py). Reference: NVIDIA/nccl-tests src/all_reduce.cu, doc/PERFORMANCE.md.
#include <tinytorch/distributed/algorithms.hpp>
#include <tinytorch/distributed/guard.hpp>
#include <tinytorch/distributed/model_agreement.hpp>

#include "../examples/flags.hpp"
#include "bench_common.hpp"  // bench::report_load

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <utility>
#include <string>
#include <vector>

namespace dist = tinytorch::distributed;

namespace {

struct Options {
  int64_t min_bytes = 4 << 10;
  int64_t max_bytes = 64 << 20;
  int64_t factor = 4;
  int reps = 7;
  int64_t bytes_per_measurement = 64 << 20;  ///< iters = clamp(this / M, 2, 1000)
  std::vector<std::string> algos = {"mpi", "ring", "parameter_server", "tree"};
  std::string csv;
  bool check = true;
  dist::AlgorithmOptions algo_options;
};

/// One column of the comparison: an algorithm with its options, labelled as given on the command
/// line ("ring", "ring:65536:4").
struct Variant {
  std::string label;
  dist::Algorithm algo;
  dist::AlgorithmOptions opt;
};

constexpr int64_t kMaxBytes = int64_t{1} << 30;  ///< the largest message, segment and copy segment (1 GiB)

/// `text` as an integer in [lo, hi]; throws std::invalid_argument naming the flag and the value.
int64_t parse_int(const std::string& flag, const std::string& text, int64_t lo, int64_t hi) {
  return flags::parse_integer("bench_allreduce", flag, text, lo, hi);
}

/// Parses "name[:segment_bytes[:depth[:copy_segment_bytes]]]"; throws tinytorch::Error on a bad name,
/// std::invalid_argument on a bad number.
Variant parse_variant(const std::string& spec, const dist::AlgorithmOptions& defaults) {
  Variant v{spec, dist::Algorithm::MPI, defaults};
  const size_t c1 = spec.find(':');
  v.algo = dist::algorithm_from_name(spec.substr(0, c1));
  if (c1 != std::string::npos) {
    const size_t c2 = spec.find(':', c1 + 1);
    const std::string flag = "--algos " + spec + ": segment_bytes";
    v.opt.segment_bytes =
        parse_int(flag, spec.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1), 4, kMaxBytes);
    if (c2 != std::string::npos) {
      const size_t c3 = spec.find(':', c2 + 1);
      v.opt.recv_depth = static_cast<int>(parse_int(
          "--algos " + spec + ": depth", spec.substr(c2 + 1, c3 == std::string::npos ? std::string::npos : c3 - c2 - 1),
          1, 16));
      if (c3 != std::string::npos)
        v.opt.copy_segment_bytes = parse_int("--algos " + spec + ": copy_segment", spec.substr(c3 + 1), 0, kMaxBytes);
    }
  }
  return v;
}

void usage() {
  std::cout << "bench_allreduce [options]   (run under scripts/mpirun.sh -np N)\n"
               "  --min-bytes B        smallest message, 4 .. 2^30 (default 4096)\n"
               "  --max-bytes B        largest message, min-bytes .. 2^30 (default 67108864)\n"
               "  --factor F           size step, 2 .. 1024 (default 4)\n"
               "  --reps R             repetitions per size and algorithm, 1 .. 10000; the median is shown (default 7)\n"
               "  --algos a,b,...      from mpi,ring,parameter_server,tree (default: all four); an algorithm\n"
               "                       may carry its own options as name:segment_bytes[:depth[:copy_segment]],\n"
               "                       e.g. --algos mpi,ring:65536:2,ring:262144:4 compares segment sizes\n"
               "  --segment-bytes S    pipeline segment of the teaching algorithms, 4 .. 2^30 (default 131072)\n"
               "  --depth D            receives posted ahead, 1 .. 16 (default 2)\n"
               "  --csv FILE           also write one row per (size, algorithm) to FILE (rank 0)\n"
               "  --no-check           skip the correctness check against MPI_Allreduce\n";
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw tinytorch::Error("bench_allreduce: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--min-bytes") o.min_bytes = parse_int(a, value(), 4, kMaxBytes);
    else if (a == "--max-bytes") o.max_bytes = parse_int(a, value(), 4, kMaxBytes);
    else if (a == "--factor") o.factor = parse_int(a, value(), 2, 1024);
    else if (a == "--reps") o.reps = static_cast<int>(parse_int(a, value(), 1, 10000));
    else if (a == "--algos") o.algos = split(value());
    else if (a == "--segment-bytes") o.algo_options.segment_bytes = parse_int(a, value(), 4, kMaxBytes);
    else if (a == "--depth") o.algo_options.recv_depth = static_cast<int>(parse_int(a, value(), 1, 16));
    else if (a == "--csv") o.csv = value();
    else if (a == "--no-check") o.check = false;
    else if (a == "--help" || a == "-h") { usage(); std::exit(0); }
    else throw tinytorch::Error("bench_allreduce: unknown option " + a + " (see --help)");
  }
  if (o.max_bytes < o.min_bytes)
    throw tinytorch::Error("bench_allreduce: --max-bytes " + std::to_string(o.max_bytes) + " is less than --min-bytes " +
                           std::to_string(o.min_bytes));
  if (o.algos.empty()) throw tinytorch::Error("bench_allreduce: --algos names no algorithm");
  return o;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// One measurement: seconds per all-reduce on the slowest rank. Algorithm::MPI calls
/// MPI_Allreduce itself, the reference, without our process group's arrival barrier and watchdog
/// (process_group.hpp) around it; the teaching algorithms run as the library runs them.
double measure(dist::Algorithm algo, float* x, int64_t count, int iters, const dist::AlgorithmOptions& opt) {
  dist::barrier();
  const double t0 = now_s();
  if (algo == dist::Algorithm::MPI) {
#if TINYTORCH_WITH_MPI
    for (int i = 0; i < iters; ++i)
      MPI_Allreduce(MPI_IN_PLACE, x, static_cast<int>(count), MPI_FLOAT, MPI_SUM, dist::get_mpi_comm());
#endif
  } else {
    for (int i = 0; i < iters; ++i) dist::all_reduce(x, count, tinytorch::kFloat32, dist::ReduceOp::SUM, algo, opt);
  }
  double t = (now_s() - t0) / iters;
  dist::all_reduce(&t, 1, dist::ReduceOp::MAX);
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Each algorithm's result equals MPI_Allreduce's on integer-valued data (exact in float32).
bool check_correct(dist::Algorithm algo, int64_t count, const dist::AlgorithmOptions& opt) {
  const int r = dist::get_rank();
  std::vector<float> x(static_cast<size_t>(count)), ref;
  for (int64_t i = 0; i < count; ++i) x[i] = static_cast<float>((i + 3 * r) % 17);
  ref = x;
  dist::all_reduce(ref.data(), count, dist::ReduceOp::SUM);
  dist::all_reduce(x.data(), count, tinytorch::kFloat32, dist::ReduceOp::SUM, algo, opt);
  int64_t bad = x == ref ? 0 : 1;
  dist::all_reduce(&bad, 1, dist::ReduceOp::SUM);  // every rank learns whether any rank failed
  return bad == 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Options first, before MPI: a bad value is a message and exit code 2 on every rank.
  Options o;
  std::vector<Variant> variants;
  try {
    o = parse(argc, argv);
    for (const auto& spec : o.algos) variants.push_back(parse_variant(spec, o.algo_options));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  dist::ProcessGroupGuard pg(dist::Backend::MPI);
  try {
    dist::check_same_command_line("bench_allreduce", argc, argv);  // the same sizes and algorithms everywhere
    const int N = dist::get_world_size(), rank = dist::get_rank();
    const size_t V = variants.size();
    const bench::LoadWatch watch;  // every rank's core is busy (MPI spins): the times need N idle cores
    const double cpu0 = bench::LoadWatch::process_cpu_seconds();

    std::vector<int64_t> sizes;
    for (int64_t m = o.min_bytes; m <= o.max_bytes; m *= o.factor) sizes.push_back(m / 4 * 4);

    const int64_t max_count = sizes.back() / 4;
    std::vector<float> buf(static_cast<size_t>(max_count), 0.0f);  // zeros: SUM keeps them zero

    if (o.check) {
      for (const Variant& v : variants)
        for (int64_t count : {int64_t{1}, int64_t{N - 1}, int64_t{1000003}})
          if (!check_correct(v.algo, count, v.opt))
            throw tinytorch::Error("bench_allreduce: " + v.label + " disagrees with MPI_Allreduce at count " +
                                   std::to_string(count));
    }

    if (rank == 0) {
      std::printf("# bench_allreduce: %d ranks, float32 SUM, median of %d reps of max-over-ranks time,"
                  " algorithms interleaved; segment %lld B, depth %d\n",
                  N, o.reps, static_cast<long long>(o.algo_options.segment_bytes), o.algo_options.recv_depth);
      std::printf("# busbw = algbw * 2(N-1)/N = algbw * %.3f\n", 2.0 * (N - 1) / N);
      std::printf("%12s %10s  %-17s %6s %11s %10s %10s %7s\n", "size(B)", "count", "algo", "iters", "time_us",
                  "algbw_GBs", "busbw_GBs", "vs_mpi");
    }

    std::ofstream csv;
    if (rank == 0 && !o.csv.empty()) {
      csv.open(o.csv);
      if (!csv) throw tinytorch::Error("bench_allreduce: cannot write " + o.csv);
      csv << "world_size,size_bytes,count,algo,iters,reps,time_us,time_us_min,time_us_max,algbw_gbs,busbw_gbs\n";
    }

    const double bus_factor = N > 1 ? 2.0 * (N - 1) / N : 1.0;
    std::vector<std::pair<int64_t, double>> ring_vs_mpi;  // (M, time_mpi / time_ring), for the summary
    for (int64_t M : sizes) {
      const int64_t count = M / 4;
      const int iters = static_cast<int>(std::clamp<int64_t>(o.bytes_per_measurement / M, 2, 1000));
      std::vector<std::vector<double>> times(V);
      for (size_t a = 0; a < V; ++a) measure(variants[a].algo, buf.data(), count, 1, variants[a].opt);  // warm-up
      for (int rep = 0; rep < o.reps; ++rep)
        for (size_t a = 0; a < V; ++a)  // interleaved: mpi, ring, ..., mpi, ring, ...
          times[a].push_back(measure(variants[a].algo, buf.data(), count, iters, variants[a].opt));

      double mpi_time = -1;
      for (size_t a = 0; a < V; ++a)
        if (variants[a].algo == dist::Algorithm::MPI && mpi_time < 0) mpi_time = median(times[a]);
      for (size_t a = 0; a < V; ++a) {
        const double t = median(times[a]);
        const double algbw = static_cast<double>(M) / t / 1e9, busbw = algbw * bus_factor;
        const double vs = mpi_time > 0 ? mpi_time / t : 0.0;
        if (variants[a].algo == dist::Algorithm::Ring && mpi_time > 0) ring_vs_mpi.push_back({M, vs});
        if (rank != 0) continue;
        std::printf("%12lld %10lld  %-17s %6d %11.1f %10.3f %10.3f %7.2f\n", static_cast<long long>(M),
                    static_cast<long long>(count), variants[a].label.c_str(), iters, t * 1e6, algbw, busbw, vs);
        if (csv) {
          auto [lo, hi] = std::minmax_element(times[a].begin(), times[a].end());
          csv << N << ',' << M << ',' << count << ',' << variants[a].label << ',' << iters << ',' << o.reps << ','
              << t * 1e6 << ',' << *lo * 1e6 << ',' << *hi * 1e6 << ',' << algbw << ',' << busbw << '\n';
        }
      }
      if (rank == 0) std::fflush(stdout);
    }
    // Who sent what: one more all-reduce of the largest size per algorithm, with its CommStats
    // gathered on rank 0 (bytes sent by each rank, in units of M).
    {
      const int64_t M = sizes.back(), count = M / 4;
      if (rank == 0) std::printf("# bytes sent per rank / M at M = %lld B (ranks 0..%d):\n", static_cast<long long>(M), N - 1);
      for (const Variant& v : variants) {
        if (v.algo == dist::Algorithm::MPI) continue;
        const dist::CommStats st =
            dist::all_reduce(buf.data(), count, tinytorch::kFloat32, dist::ReduceOp::SUM, v.algo, v.opt);
        std::vector<int64_t> sent(static_cast<size_t>(N));
        dist::all_gather(sent.data(), &st.bytes_sent, 1);
        if (rank != 0) continue;
        std::printf("#   %-17s", v.label.c_str());
        for (int64_t b : sent) std::printf(" %6.3f", static_cast<double>(b) / static_cast<double>(M));
        std::printf("\n");
      }
      if (rank == 0)
        std::printf("#   (ring: 2(N-1)/N = %.3f on every rank; parameter_server: N-1 = %d on rank 0, 1 elsewhere)\n",
                    2.0 * (N - 1) / N, N - 1);
    }
    if (rank == 0 && !ring_vs_mpi.empty()) {
      // The tuning target of chapters/07-all-reduce.md: ring >= 0.95x MPI from 1 MiB up.
      double worst = 1e30;
      for (auto [M, vs] : ring_vs_mpi)
        if (M >= (1 << 20)) worst = std::min(worst, vs);
      if (worst < 1e30) std::printf("# ring vs MPI_Allreduce, sizes >= 1 MiB: worst %.2fx\n", worst);
    }
    if (rank == 0 && !o.csv.empty()) std::printf("# wrote %s\n", o.csv.c_str());
    bench::report_load(watch, cpu0, "the times (one rank per core)", "# ");  // as comments of the table
  } catch (const std::exception& e) {
    pg.abort(e);
  }
  return 0;
}

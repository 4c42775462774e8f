// bench/benchmark_main.hpp — Google Benchmark's BENCHMARK_MAIN, followed by the load line (and
// warning) of load_watch.hpp, for the benches that need no main of their own:
//
//   int main(int argc, char** argv) { return bench::benchmark_main(argc, argv, 1, "the step times"); }
//
// idle_cores_needed: how many cores the figures need to themselves (1 for a one-thread bench).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <iostream>

#include "load_watch.hpp"

namespace bench {

inline int benchmark_main(int argc, char** argv, int idle_cores_needed, const char* figure) {
  const LoadWatch watch;
  const double cpu0 = LoadWatch::process_cpu_seconds();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::cout.flush();  // the benchmark's table (std::cout) before our line (stdio)
  watch.report(stdout, LoadWatch::process_cpu_seconds() - cpu0, idle_cores_needed, figure);
  return 0;
}

}  // namespace bench

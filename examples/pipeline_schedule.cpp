// examples/pipeline_schedule.cpp — pipeline parallelism's schedules on paper: GPipe and 1F1B
// simulated for P stages and M micro-batches (distributed/pipeline_schedule.hpp), no ranks needed.
//
// Prints, for P = --stages:
//   * a table over M = 1, 2, 4, ..., 32: the book's efficiency M / (M + P - 1), the simulated
//     busy fraction of each schedule (equal to it), and the activations stage 0 keeps at its peak
//     (GPipe: M micro-batches; 1F1B: at most P);
//   * each schedule's timeline for M = --microbatches, one row per stage, one character pair per
//     time unit ('F3' = forward of micro-batch 3, '--' its later units, '..' idle), with a backward
//     taking --backward-ratio times a forward;
//   * with --trace PREFIX, the same placements as Chrome traces PREFIX.gpipe.json and
//     PREFIX.1f1b.json (written atomically; open in chrome://tracing or ui.perfetto.dev).
//   build/bin/pipeline_schedule                       # P = 8: the book's 36% (M = 4) and 82% (M = 32)
//   build/bin/pipeline_schedule --stages 4 --microbatches 6 --backward-ratio 2
// Chapter: chapters/12-model-parallelism.md (12.6). Reference: Machine Learning Systems, "Pipeline
// Parallelism"; GPipe (Huang et al., 2019); 1F1B (Narayanan et al., 2021).
#include <tinytorch/distributed/pipeline_schedule.hpp>
#include <tinytorch/serialization.hpp>  // detail::write_file_atomically

#include <cstdio>
#include <string>

#include "flags.hpp"

namespace pp = tinytorch::distributed::pipeline;

int main(int argc, char** argv) {
  int64_t stages = 8, microbatches = 4;
  double backward_ratio = 1.0;
  std::string trace;
  CLI::App app{"tinytorch pipeline_schedule: GPipe and 1F1B pipeline schedules, simulated"};
  app.option_defaults()->always_capture_default();
  app.add_option("--stages", stages, "pipeline stages P")->check(flags::integer_in(1, 64));
  app.add_option("--microbatches", microbatches, "micro-batches M of the timelines")->check(flags::integer_in(1, 64));
  app.add_option("--backward-ratio", backward_ratio, "a backward's time in forwards (whole numbers draw best)")
      ->check(flags::real_in(1, 8));
  app.add_option("--trace", trace, "write the timelines as Chrome traces PREFIX.gpipe.json and PREFIX.1f1b.json");
  CLI11_PARSE(app, argc, argv);
  try {
    std::printf("P = %lld stages; efficiency = busy time / (P x makespan); peak = activations stage 0 keeps\n",
                static_cast<long long>(stages));
    std::printf("%4s %16s %16s %16s %12s %12s\n", "M", "M/(M+P-1)", "GPipe (sim)", "1F1B (sim)", "GPipe peak",
                "1F1B peak");
    for (int64_t m = 1; m <= 32; m *= 2) {
      const pp::Simulation g = pp::simulate(pp::Schedule::GPipe, stages, m, 1, backward_ratio);
      const pp::Simulation f = pp::simulate(pp::Schedule::OneFOneB, stages, m, 1, backward_ratio);
      std::printf("%4lld %15.1f%% %15.1f%% %15.1f%% %12lld %12lld\n", static_cast<long long>(m),
                  100 * pp::pipeline_efficiency(stages, m), 100 * (1 - g.bubble_fraction), 100 * (1 - f.bubble_fraction),
                  static_cast<long long>(g.peak_in_flight[0]), static_cast<long long>(f.peak_in_flight[0]));
    }
    for (auto schedule : {pp::Schedule::GPipe, pp::Schedule::OneFOneB}) {
      const pp::Simulation sim = pp::simulate(schedule, stages, microbatches, 1, backward_ratio);
      std::printf("\n%s, P = %lld, M = %lld, backward = %g x forward: makespan %g units, bubble %.1f%%\n",
                  pp::schedule_name(schedule), static_cast<long long>(stages), static_cast<long long>(microbatches),
                  backward_ratio, sim.makespan, 100 * sim.bubble_fraction);
      std::printf("%s", pp::timeline(sim).c_str());
      if (!trace.empty()) {
        const std::string path = trace + (schedule == pp::Schedule::GPipe ? ".gpipe.json" : ".1f1b.json");
        tinytorch::detail::write_file_atomically(path, pp::chrome_trace(sim), "pipeline_schedule");
        std::printf("trace: %s\n", path.c_str());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipeline_schedule: %s\n", e.what());
    return 1;
  }
  return 0;
}

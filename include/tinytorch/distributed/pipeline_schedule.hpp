// tinytorch/distributed/pipeline_schedule.hpp — pipeline-parallel schedules, simulated: which
// micro-batch each stage runs when, the bubble, and the activations each stage keeps.
//
// A model cut into P stages (stage s on rank s) trains a batch split into M micro-batches. F(s, m)
// is stage s's forward of micro-batch m, B(s, m) its backward. The dependencies:
//   F(s, m) after F(s-1, m)             (the activation arrives from the stage before)
//   B(s, m) after B(s+1, m)             (the gradient arrives from the stage after),
//           and B(P-1, m) after F(P-1, m) (the loss)
// and each stage runs its own ops one at a time, in the order its schedule gives:
//   GPipe (all forward, all backward; Huang et al. 2019):  F0 F1 ... F(M-1), B0 B1 ... B(M-1)
//   1F1B (PipeDream-Flush, Megatron-LM's non-interleaved schedule; Narayanan et al. 2021):
//     stage s first runs w = min(P - 1 - s, M) warm-up forwards, then alternates one forward and
//     one backward (F(w), B0, F(w+1), B1, ...) until its forwards are done, then the remaining
//     backwards: at most w + 1 micro-batches are in flight on stage s, instead of GPipe's M.
// simulate() places every op as early as its dependencies and its stage allow, with a forward
// taking t_forward and a backward t_backward time units (communication free). Both schedules take
//   makespan = (M + P - 1) (t_forward + t_backward)
// of which each stage is busy M (t_forward + t_backward): the bubble fraction is
//   (P - 1) / (M + P - 1), the efficiency M / (M + P - 1)
// (the book's pipeline-efficiency formula: P = 8, M = 4 -> 36%, M = 32 -> 82%). They differ in
// memory: peak_in_flight (forwards done whose backward has not run yet, i.e. activations kept) is
// M on every stage for GPipe, min(P - s, M) on stage s for 1F1B.
// Output: timeline() draws one row per stage, one character per time unit ('F'/'B' and the
// micro-batch, '.' idle); chrome_trace() gives the same as Trace Event Format JSON (pid 0, one
// thread per stage, 1 time unit = 1 ms), for chrome://tracing or ui.perfetto.dev.
// Errors (tinytorch::Error): P or M below 1, a non-positive duration, an order that deadlocks.
// Chapter: chapters/12-model-parallelism.md (12.6, pipeline parallelism). Reference: GPipe
// (Huang et al., 2019); PipeDream-Flush / 1F1B (Narayanan et al., "Memory-Efficient Pipeline-
// Parallel DNN Training", 2021; Megatron-LM); torch.distributed.pipelining's ScheduleGPipe and
// Schedule1F1B; picotron's pipeline_parallel.py; Machine Learning Systems, "Pipeline Parallelism".
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed::pipeline {

enum class Schedule { GPipe, OneFOneB };

inline const char* schedule_name(Schedule s) { return s == Schedule::GPipe ? "GPipe" : "1F1B"; }

/// One forward or backward of one micro-batch.
struct Op {
  bool forward = true;
  int64_t microbatch = 0;
  bool operator==(const Op& o) const { return forward == o.forward && microbatch == o.microbatch; }
};

/// An op placed in time on its stage: [start, end).
struct Slot {
  int64_t stage = 0;
  Op op;
  double start = 0, end = 0;
};

/// The order in which stage `stage` of `stages` runs the forwards and backwards of `microbatches`.
inline std::vector<Op> stage_order(Schedule schedule, int64_t stages, int64_t microbatches, int64_t stage) {
  TT_CHECK(stages >= 1 && microbatches >= 1, "pipeline: need at least 1 stage and 1 micro-batch, got ", stages,
           " stages and ", microbatches, " micro-batches");
  TT_CHECK(stage >= 0 && stage < stages, "pipeline: stage ", stage, " out of range for ", stages, " stages");
  std::vector<Op> order;
  if (schedule == Schedule::GPipe) {
    for (int64_t m = 0; m < microbatches; ++m) order.push_back({true, m});
    for (int64_t m = 0; m < microbatches; ++m) order.push_back({false, m});
    return order;
  }
  const int64_t warmup = std::min(stages - 1 - stage, microbatches);
  int64_t next_f = 0, next_b = 0;
  for (; next_f < warmup; ++next_f) order.push_back({true, next_f});
  while (next_f < microbatches) {  // steady state: one forward, one backward
    order.push_back({true, next_f++});
    order.push_back({false, next_b++});
  }
  while (next_b < microbatches) order.push_back({false, next_b++});  // cool-down
  return order;
}

/// What simulate() returns: every op placed in time, and the figures derived from the placement.
struct Simulation {
  Schedule schedule;
  int64_t stages = 0, microbatches = 0;
  double t_forward = 1, t_backward = 1;
  std::vector<Slot> slots;                 ///< in the order they were placed
  double makespan = 0;                     ///< the end of the last op
  double bubble_fraction = 0;              ///< idle time / (stages x makespan)
  std::vector<int64_t> peak_in_flight;     ///< per stage: the most forwards awaiting their backward
};

/// Places every op of `schedule` as early as its dependencies and its stage allow (file comment).
inline Simulation simulate(Schedule schedule, int64_t stages, int64_t microbatches, double t_forward = 1.0,
                           double t_backward = 1.0) {
  TT_CHECK(stages >= 1 && microbatches >= 1, "pipeline: need at least 1 stage and 1 micro-batch, got ", stages,
           " stages and ", microbatches, " micro-batches");
  TT_CHECK(t_forward > 0 && t_backward > 0, "pipeline: durations must be positive, got forward ", t_forward,
           " and backward ", t_backward);
  Simulation sim{schedule, stages, microbatches, t_forward, t_backward, {}, 0, 0, {}};
  const size_t P = static_cast<size_t>(stages), M = static_cast<size_t>(microbatches);
  std::vector<std::vector<Op>> order(P);
  for (size_t s = 0; s < P; ++s) order[s] = stage_order(schedule, stages, microbatches, static_cast<int64_t>(s));
  // end time of F(s, m) and B(s, m); < 0 while not placed
  std::vector<std::vector<double>> f_end(P, std::vector<double>(M, -1)), b_end(P, std::vector<double>(M, -1));
  std::vector<size_t> next(P, 0);
  std::vector<double> free_at(P, 0);
  sim.peak_in_flight.assign(P, 0);
  std::vector<int64_t> in_flight(P, 0);
  size_t placed = 0, total = 2 * P * M;
  while (placed < total) {
    bool progress = false;
    for (size_t s = 0; s < P; ++s) {
      if (next[s] == order[s].size()) continue;
      const Op op = order[s][next[s]];
      const size_t m = static_cast<size_t>(op.microbatch);
      double ready = 0;
      if (op.forward) {
        if (s > 0 && f_end[s - 1][m] < 0) continue;
        ready = s > 0 ? f_end[s - 1][m] : 0;
      } else {
        if (s + 1 < P ? b_end[s + 1][m] < 0 : f_end[s][m] < 0) continue;
        ready = s + 1 < P ? b_end[s + 1][m] : f_end[s][m];
      }
      const double start = std::max(ready, free_at[s]);
      const double end = start + (op.forward ? t_forward : t_backward);
      (op.forward ? f_end : b_end)[s][m] = end;
      free_at[s] = end;
      in_flight[s] += op.forward ? 1 : -1;
      sim.peak_in_flight[s] = std::max(sim.peak_in_flight[s], in_flight[s]);
      sim.slots.push_back({static_cast<int64_t>(s), op, start, end});
      sim.makespan = std::max(sim.makespan, end);
      ++next[s];
      ++placed;
      progress = true;
    }
    TT_CHECK(progress, "pipeline: the ", schedule_name(schedule), " order deadlocks (", placed, " of ", total,
             " ops placed)");
  }
  const double busy = static_cast<double>(M) * (t_forward + t_backward) * static_cast<double>(P);
  sim.bubble_fraction = 1.0 - busy / (static_cast<double>(P) * sim.makespan);
  return sim;
}

/// The book's pipeline efficiency M / (M + P - 1) (the bubble is (P - 1) / (M + P - 1)).
inline double pipeline_efficiency(int64_t stages, int64_t microbatches) {
  return static_cast<double>(microbatches) / static_cast<double>(microbatches + stages - 1);
}

/// One row per stage, one character per time unit (durations must be whole units): 'F' or 'B'
/// followed by the micro-batch's last digit for a unit the op starts in, '-' for its later
/// units, '.' idle. E.g. P = 2, M = 2, GPipe:  "stage 0: F0F1....B0B1" ...
inline std::string timeline(const Simulation& sim) {
  const auto units = static_cast<size_t>(sim.makespan + 0.5);
  std::string out;
  for (int64_t s = 0; s < sim.stages; ++s) {
    std::string row(2 * units, '.');
    for (const Slot& slot : sim.slots) {
      if (slot.stage != s) continue;
      for (auto u = static_cast<size_t>(slot.start + 0.5); u < static_cast<size_t>(slot.end + 0.5); ++u) {
        const bool first = u == static_cast<size_t>(slot.start + 0.5);
        row[2 * u] = first ? (slot.op.forward ? 'F' : 'B') : '-';
        row[2 * u + 1] = first ? static_cast<char>('0' + slot.op.microbatch % 10) : '-';
      }
    }
    out += "stage " + std::to_string(s) + ": " + row + "\n";
  }
  return out;
}

/// The placement as Chrome-trace JSON: one complete event per op ("F3", "B3"), pid 0, tid = stage,
/// one time unit = 1000 us.
inline std::string chrome_trace(const Simulation& sim) {
  std::string j = "{\"traceEvents\": [\n";
  char buf[256];
  for (int64_t s = 0; s < sim.stages; ++s) {
    std::snprintf(buf, sizeof buf,
                  "  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": %lld, \"args\": {\"name\": "
                  "\"stage %lld\"}},\n",
                  static_cast<long long>(s), static_cast<long long>(s));
    j += buf;
  }
  for (size_t i = 0; i < sim.slots.size(); ++i) {
    const Slot& sl = sim.slots[i];
    std::snprintf(buf, sizeof buf, "  {\"name\": \"%c%lld\", \"ph\": \"X\", \"pid\": 0, \"tid\": %lld, \"ts\": %.0f, \"dur\": %.0f}%s\n",
                  sl.op.forward ? 'F' : 'B', static_cast<long long>(sl.op.microbatch), static_cast<long long>(sl.stage),
                  sl.start * 1000, (sl.end - sl.start) * 1000, i + 1 < sim.slots.size() ? "," : "");
    j += buf;
  }
  return j + "]}\n";
}

}  TT_NAMESPACE_END  // namespace tinytorch::distributed::pipeline

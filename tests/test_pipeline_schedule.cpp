// tests/test_pipeline_schedule.cpp — distributed/pipeline_schedule.hpp: GPipe's and 1F1B's orders,
// the simulated placement (dependencies kept, one op at a time per stage), the bubble against the
// book's formula (P = 8: M = 4 -> 36%, M = 32 -> 82%), the activations in flight (GPipe M,
// 1F1B min(P - s, M)), the timeline text, the Chrome trace, errors.
// Tag: [pipeline]. Chapter: chapters/12-model-parallelism.md.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <vector>
#include <string>
#include <utility>

#include <tinytorch/distributed/pipeline_schedule.hpp>

namespace pp = tinytorch::distributed::pipeline;
using Catch::Contains;

namespace {

std::string order_str(const std::vector<pp::Op>& ops) {
  std::string s;
  for (const auto& o : ops) s += (o.forward ? "F" : "B") + std::to_string(o.microbatch) + " ";
  return s;
}

}  // namespace

TEST_CASE("pipeline: the per-stage orders of GPipe and 1F1B", "[pipeline]") {
  CHECK(order_str(pp::stage_order(pp::Schedule::GPipe, 4, 3, 2)) == "F0 F1 F2 B0 B1 B2 ");
  // 1F1B, P = 4, M = 6: stage s warms up with P - 1 - s forwards
  CHECK(order_str(pp::stage_order(pp::Schedule::OneFOneB, 4, 6, 0)) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
  CHECK(order_str(pp::stage_order(pp::Schedule::OneFOneB, 4, 6, 2)) == "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5 ");
  CHECK(order_str(pp::stage_order(pp::Schedule::OneFOneB, 4, 6, 3)) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 ");
  // fewer micro-batches than the warm-up wants: all forwards, then all backwards
  CHECK(order_str(pp::stage_order(pp::Schedule::OneFOneB, 8, 2, 0)) == "F0 F1 B0 B1 ");
}

TEST_CASE("pipeline: simulated bubbles equal (P - 1) / (M + P - 1); the book's P = 8 figures", "[pipeline]") {
  for (auto schedule : {pp::Schedule::GPipe, pp::Schedule::OneFOneB})
    for (int64_t P : {1, 2, 4, 8})
      for (int64_t M : {1, 2, 4, 8, 32})
        for (auto [tf, tb] : {std::pair<double, double>{1, 1}, {1, 2}}) {
          INFO(pp::schedule_name(schedule) << " P=" << P << " M=" << M << " tf=" << tf << " tb=" << tb);
          const pp::Simulation sim = pp::simulate(schedule, P, M, tf, tb);
          CHECK(sim.slots.size() == static_cast<size_t>(2 * P * M));
          CHECK(sim.makespan == Approx((M + P - 1) * (tf + tb)));
          CHECK(1.0 - sim.bubble_fraction == Approx(pp::pipeline_efficiency(P, M)));
          // every dependency kept, one op at a time per stage
          std::map<std::tuple<int64_t, bool, int64_t>, pp::Slot> at;
          std::map<int64_t, std::vector<std::pair<double, double>>> per_stage;
          for (const auto& s : sim.slots) {
            at[{s.stage, s.op.forward, s.op.microbatch}] = s;
            per_stage[s.stage].push_back({s.start, s.end});
          }
          bool deps_kept = true, one_at_a_time = true;
          for (const auto& s : sim.slots) {
            const int64_t m = s.op.microbatch;
            if (s.op.forward && s.stage > 0) deps_kept &= s.start >= at[{s.stage - 1, true, m}].end;
            if (!s.op.forward)
              deps_kept &= s.start >= (s.stage + 1 < P ? at[{s.stage + 1, false, m}].end : at[{s.stage, true, m}].end);
          }
          for (auto& [stage, spans] : per_stage) {
            std::sort(spans.begin(), spans.end());
            for (size_t i = 1; i < spans.size(); ++i) one_at_a_time &= spans[i - 1].second <= spans[i].first;
          }
          CHECK(deps_kept);
          CHECK(one_at_a_time);
          for (int64_t s = 0; s < P; ++s)
            CHECK(sim.peak_in_flight[static_cast<size_t>(s)] == (schedule == pp::Schedule::GPipe ? M : std::min(P - s, M)));
        }
  // the book: P = 8 stages, M = 4 micro-batches -> 36% efficiency, M = 32 -> 82%
  CHECK(std::round(100 * pp::pipeline_efficiency(8, 4)) == 36);
  CHECK(std::round(100 * pp::pipeline_efficiency(8, 32)) == 82);
  CHECK(std::round(100 * (1 - pp::simulate(pp::Schedule::OneFOneB, 8, 32).bubble_fraction)) == 82);
}

TEST_CASE("pipeline: the timeline and the Chrome trace", "[pipeline]") {
  const pp::Simulation g = pp::simulate(pp::Schedule::GPipe, 2, 2);
  CHECK(pp::timeline(g) ==
        "stage 0: F0F1....B0B1\n"
        "stage 1: ..F0F1B0B1..\n");
  const pp::Simulation f = pp::simulate(pp::Schedule::OneFOneB, 3, 3, 1, 2);
  CHECK(pp::timeline(f) ==
        "stage 0: F0F1F2........B0--..B1--..B2--\n"
        "stage 1: ..F0F1....B0--F2B1--..B2--....\n"
        "stage 2: ....F0B0--F1B1--F2B2--........\n");
  const std::string j = pp::chrome_trace(g);
  CHECK_THAT(j, Contains("{\"name\": \"F1\", \"ph\": \"X\", \"pid\": 0, \"tid\": 1, \"ts\": 2000, \"dur\": 1000}"));
  CHECK_THAT(j, Contains("\"args\": {\"name\": \"stage 1\"}"));
}

TEST_CASE("pipeline: errors", "[pipeline]") {
  REQUIRE_THROWS_WITH(pp::simulate(pp::Schedule::GPipe, 0, 4), Contains("need at least 1 stage and 1 micro-batch"));
  REQUIRE_THROWS_WITH(pp::simulate(pp::Schedule::GPipe, 2, 0), Contains("need at least 1 stage and 1 micro-batch"));
  REQUIRE_THROWS_WITH(pp::simulate(pp::Schedule::GPipe, 2, 2, 0, 1), Contains("durations must be positive"));
  REQUIRE_THROWS_WITH(pp::stage_order(pp::Schedule::GPipe, 2, 2, 2), Contains("stage 2 out of range for 2 stages"));
}

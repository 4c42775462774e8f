// tests/test_examples.cpp — the examples print PyTorch's numbers.
//
// example_single's loop (examples/single_loop.hpp, the code the binary runs) against the losses
// PyTorch computes for the same fixed weights (tests/reference/gen_examples.py), at 1e-6; and
// example_dp's (examples/dp_loop.hpp: the same loop through DataParallel) against the same.
#include <catch2/catch.hpp>

#include "../examples/dp_loop.hpp"
#include "../examples/single_loop.hpp"
#include "reference/examples_ref.hpp"

TEST_CASE("example_single matches PyTorch's losses", "[ch01][examples]") {
  std::vector<double> losses = examples::train_single(5);
  const auto& ref = examples_reference::example_single_losses;
  REQUIRE(losses.size() == ref.size());
  for (size_t k = 0; k < ref.size(); ++k) {
    INFO("epoch " << k);
    CHECK(losses[k] == Approx(ref[k]).epsilon(0).margin(1e-6));
  }
}

TEST_CASE("example_single with --random-init is reproducible and still learns", "[ch01][examples]") {
  std::vector<double> a = examples::train_single(20, true, 7);
  std::vector<double> b = examples::train_single(20, true, 7);
  REQUIRE(a == b);
  CHECK(a.back() < a.front());
}

TEST_CASE("example_dp prints example_single's losses (PyTorch's) on 1, 2 and 3 replicas", "[ch05][examples]") {
  const auto& ref = examples_reference::example_single_losses;
  for (int replicas : {1, 2, 3}) {
    INFO(replicas << " replicas");
    std::vector<double> losses = examples::train_dp(5, replicas);
    REQUIRE(losses.size() == ref.size());
    for (size_t k = 0; k < ref.size(); ++k) CHECK(losses[k] == Approx(ref[k]).epsilon(0).margin(1e-6));
  }
  // with random init too, DataParallel follows the single-module run
  std::vector<double> single = examples::train_single(20, true, 7), dp = examples::train_dp(20, 2, true, 7);
  REQUIRE(single.size() == dp.size());
  for (size_t k = 0; k < single.size(); ++k) CHECK(dp[k] == Approx(single[k]).epsilon(0).margin(1e-6));
}

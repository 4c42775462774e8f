// tests/test_examples.cpp — the examples print PyTorch's numbers.
//
// example_single's loop (examples/single_loop.hpp, the code the binary runs) against the losses
// PyTorch computes for the same fixed weights (tests/reference/gen_examples.py), at 1e-6.
#include <catch2/catch.hpp>

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

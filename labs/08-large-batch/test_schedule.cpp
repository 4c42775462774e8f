// labs/08-large-batch/test_schedule.cpp — the checks of lab 08, one Catch2 tag per task.
//
// References: reference.hpp, written by gen_reference.py with PyTorch's LinearLR,
// CosineAnnealingLR and SequentialLR (the lr in effect at each iteration); the scaling rule's
// numbers are train_mnist's (chapter 8.2: "lr 0.02 x 2 ranks = 0.04") and Goyal et al.'s
// (base lr 0.1 for batch 256; batch 8192 -> 3.2).
#include <catch2/catch.hpp>

#include "lab.hpp"
#include "reference.hpp"

#include <cmath>
#include <sstream>
#include <string>

namespace {

void expect_close(const std::string& what, double got, double want, double rtol = 1e-10) {
  if (std::abs(got - want) <= rtol * std::abs(want) + 1e-15) {
    SUCCEED(what);
  } else {
    std::ostringstream os;
    os.precision(17);
    os << what << " = " << got << ", expected " << want;
    FAIL_CHECK(os.str());
  }
}

}  // namespace

TEST_CASE("global_batch and scaled_lr apply the linear scaling rule", "[task:scaling]") {
  CHECK(lab08::global_batch(64, 1, 1) == 64);
  CHECK(lab08::global_batch(64, 2, 1) == 128);
  CHECK(lab08::global_batch(64, 8, 1) == 512);
  CHECK(lab08::global_batch(32, 4, 3) == 384);
  expect_close("scaled_lr(0.02, 64, 128) (train_mnist on 2 ranks: 0.04)", lab08::scaled_lr(0.02, 64, 128), 0.04);
  expect_close("scaled_lr(0.02, 64, 512) (8 ranks: 0.16)", lab08::scaled_lr(0.02, 64, 512), 0.16);
  expect_close("scaled_lr(0.1, 256, 8192) (Goyal et al.: 3.2)", lab08::scaled_lr(0.1, 256, 8192), 3.2);
  expect_close("scaled_lr(0.02, 64, 32) (a smaller batch scales down)", lab08::scaled_lr(0.02, 64, 32), 0.01);
}

TEST_CASE("linear_warmup_lr follows PyTorch's LinearLR", "[task:warmup]") {
  for (const lab08_ref::Warmup& c : lab08_ref::warmups)
    for (size_t t = 0; t < c.lrs.size(); ++t) {
      std::ostringstream what;
      what << "LinearLR(lr " << c.lr << ", start_factor " << c.start_factor << ", end_factor " << c.end_factor
           << ", total_iters " << c.total_iters << "): lr at iteration " << t;
      expect_close(what.str(), lab08::linear_warmup_lr(c.lr, c.start_factor, c.end_factor, c.total_iters, t), c.lrs[t]);
    }
}

TEST_CASE("warmup_cosine_lr follows train_mnist's SequentialLR(LinearLR, CosineAnnealingLR)", "[task:schedule]") {
  for (const lab08_ref::Schedule& c : lab08_ref::schedules)
    for (size_t t = 0; t < c.lrs.size(); ++t) {
      std::ostringstream what;
      what << "lr " << c.lr << ", start_factor " << c.start_factor << ", " << c.warmup_iters << " warmup of "
           << c.total_iters << " iterations: lr at iteration " << t;
      expect_close(what.str(), lab08::warmup_cosine_lr(c.lr, c.start_factor, c.warmup_iters, c.total_iters, t),
                   c.lrs[t]);
    }
}

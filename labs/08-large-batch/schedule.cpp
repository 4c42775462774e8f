// labs/08-large-batch/schedule.cpp — your scaling rule and warmup schedule (lab 08; the tasks are
// in lab.hpp).
//
// Check your work:   scripts/lab.sh check 08, from the tinytorch clone (add the --dir you gave to start)
// Chapter: chapters/08-large-batch.md, sections 8.1-8.2.
// BEGIN REFERENCE ONLY
#ifndef TT_LAB_REFERENCE
#error "labs/08-large-batch/schedule.cpp is the reference solution: a student build must compile the student's copy (scripts/lab.sh start 08)"
#endif
// END REFERENCE ONLY
#include "lab.hpp"

#include <algorithm>
#include <cmath>

namespace lab08 {

int64_t global_batch(int64_t batch_per_rank, int64_t world_size, int64_t accumulation_steps) {
  // BEGIN SOLUTION scaling
  return batch_per_rank * world_size * accumulation_steps;
  // END SOLUTION
}

double scaled_lr(double base_lr, int64_t base_batch, int64_t batch) {
  // BEGIN SOLUTION scaling
  return base_lr * static_cast<double>(batch) / static_cast<double>(base_batch);
  // END SOLUTION
}

double linear_warmup_lr(double lr, double start_factor, double end_factor, int64_t total_iters, int64_t t) {
  // BEGIN SOLUTION warmup
  const double progress = static_cast<double>(std::min(t, total_iters)) / static_cast<double>(total_iters);
  return lr * (start_factor + (end_factor - start_factor) * progress);
  // END SOLUTION
}

double warmup_cosine_lr(double lr, double start_factor, int64_t warmup_iters, int64_t total_iters, int64_t t) {
  // BEGIN SOLUTION schedule
  if (t < warmup_iters) return linear_warmup_lr(lr, start_factor, 1.0, warmup_iters, t);
  const double pi = std::acos(-1.0);
  const double x = static_cast<double>(t - warmup_iters) / static_cast<double>(total_iters - warmup_iters);
  return lr * (1 + std::cos(pi * x)) / 2;
  // END SOLUTION
}

}  // namespace lab08

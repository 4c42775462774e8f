// labs/08-large-batch/lab.hpp — lab 08: the linear scaling rule and gradual warmup, as
// train_mnist applies them. Your file is schedule.cpp.
//
// Linear scaling rule (Goyal et al. 2017): when the batch grows k-fold, so does the learning rate:
//   global batch = batch per rank x ranks x accumulation steps;  lr = base_lr x global / base_batch
// Gradual warmup, PyTorch's LinearLR(start_factor, end_factor, total_iters): at iteration t
//   lr_t = lr x (start_factor + (end_factor - start_factor) x min(t, total_iters) / total_iters)
// train_mnist's schedule (chapter 8.2), stepped every iteration: K warmup iterations of LinearLR
// from start_factor x lr to lr, then cosine decay (CosineAnnealingLR, eta_min 0) over the T - K
// iterations left:   lr_t = lr x (1 + cos(pi x (t - K) / (T - K))) / 2   for K <= t < T;
// with K = 0, the cosine over all T iterations. Iterations count from 0 (the lr of the first
// optimizer.step() is lr_0).
// Chapter: chapters/08-large-batch.md (8.1 the rule, 8.2 what train_mnist does). The library's
// schedulers, to compare with once you are done: include/tinytorch/optim/lr_scheduler.hpp
// (LinearLR, CosineAnnealingLR, SequentialLR). References: Goyal et al., "Accurate, Large
// Minibatch SGD: Training ImageNet in 1 Hour" (2017), sections 2.1-2.2; PyTorch's
// torch/optim/lr_scheduler.py.
#pragma once

#include <tinytorch/core/check.hpp>  // tinytorch::NotImplemented, which the skeleton throws

#include <cstdint>

namespace lab08 {

/// Task scaling. The samples one optimizer step sees: batch_per_rank x world_size x
/// accumulation_steps (all >= 1).
int64_t global_batch(int64_t batch_per_rank, int64_t world_size, int64_t accumulation_steps);

/// Task scaling. The linear scaling rule: base_lr tuned for base_batch samples per step, scaled to
/// a step of `batch` samples.
double scaled_lr(double base_lr, int64_t base_batch, int64_t batch);

/// Task warmup. PyTorch's LinearLR: the learning rate in effect at iteration t >= 0 (the formula
/// above; constant at lr x end_factor from t = total_iters on). total_iters >= 1.
double linear_warmup_lr(double lr, double start_factor, double end_factor, int64_t total_iters, int64_t t);

/// Task schedule. train_mnist's schedule: warmup_iters (K >= 0) iterations of LinearLR from
/// start_factor to 1, then cosine decay to 0 over total_iters - K iterations; the learning rate at
/// iteration t, 0 <= t < total_iters.
double warmup_cosine_lr(double lr, double start_factor, int64_t warmup_iters, int64_t total_iters, int64_t t);

}  // namespace lab08

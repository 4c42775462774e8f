// labs/09-gradient-accumulation/lab.hpp — lab 09: gradient accumulation, in one process and
// under DistributedDataParallel. Your file is accumulate.cpp.
//
// The accumulation identity (chapter 9.1): for a batch of B samples cut into k micro-batches
// x_1..x_k of sizes b_j, with L the mean loss over the batch,
//   dL/dtheta = sum_j (b_j / B) dL_j/dtheta          (L_j: the mean loss over micro-batch j)
// so backward() on L_j * b_j / B for every j, without zero_grad in between, leaves in .grad the
// gradient of the whole batch (equal sizes: scale each L_j by 1/k), and one optimizer step then
// equals one step on the whole batch, in the memory of one micro-batch.
// Under DDP (chapter 9.3) each synced backward all-reduces: k of them per step. Inside
// `auto guard = ddp.no_sync();` backwards accumulate locally; the first synced backward after it
// all-reduces the accumulated sum, so one all-reduce per step suffices: run micro-batches 1..k-1
// inside no_sync, the last one outside.
// Useful: x.narrow(0, start, length), x.size(0), loss * scale (or loss / k), loss.item<double>().
// Chapter: chapters/09-gradient-accumulation.md (9.1-9.3). The library's test of the same identity:
// tests/mpi/test_ddp.cpp ("no_sync over k micro-steps ..."). Reference: PyTorch's DDP docs
// (no_sync); Goyal et al. 2017 for the scaling that makes the identity exact.
#pragma once

#include <tinytorch/tinytorch.hpp>
#include <tinytorch/distributed.hpp>

#include <cstdint>

namespace lab09 {

/// Task accumulate. One optimizer step on the batch (x (B, ...), y (B, ...)) computed as k
/// micro-batches of consecutive rows (the sizes of x.chunk(k): ceil(B / k) rows each, the last
/// one smaller): zero the gradients once, backward on each micro-batch's loss scaled by
/// b_j / B, then optimizer.step(). Returns the batch's mean loss, sum_j L_j b_j / B.
/// 1 <= k <= B.
double accumulate_step(tinytorch::nn::Module& model, tinytorch::optim::Optimizer& optimizer,
                       tinytorch::nn::Loss& loss_fn, const tinytorch::Tensor& x, const tinytorch::Tensor& y, int64_t k);

/// Task no_sync. The same on a DDP model: this rank's batch (x, y) in k micro-batches as above,
/// the first k-1 backwards inside ddp.no_sync(), the last one synced, so that gradients are
/// all-reduced once per step; then optimizer.step(). Returns this rank's mean loss.
double ddp_accumulate_step(tinytorch::distributed::DistributedDataParallel& ddp,
                           tinytorch::optim::Optimizer& optimizer, tinytorch::nn::Loss& loss_fn,
                           const tinytorch::Tensor& x, const tinytorch::Tensor& y, int64_t k);

}  // namespace lab09

// labs/06-distributed-data-parallel/lab.hpp — lab 06: the heart of DistributedDataParallel, the
// gradient buckets and the hooks that all-reduce them during backward. Your file is buckets.cpp.
//
// Buckets (chapter 6.5, PyTorch's compute_bucket_assignment_by_size): walk the parameters in
// registration order, adding each one's bytes to the open bucket; once the bucket holds at least
// the current limit, close it and move to the next limit (limits = {first bucket, the others},
// e.g. {1 MiB, 25 MiB}; the last limit repeats). Leftovers form a last bucket. Then reverse the
// list: backward produces the last layer's gradients first, so bucket 0 holds the last-registered
// parameters. Example (the chapter's): bytes 0.5, 0.75, 10, 20, 3 MiB with limits {1, 25} MiB ->
// {0,1} {2,3} {4} -> reversed: {4} {2,3} {0,1}. Indices inside a bucket stay ascending.
// One backward (chapter 6.6): the engine calls each parameter's post-accumulate-grad hook right
// after its .grad is final. When every parameter of a bucket has reported, the bucket is ready;
// ready buckets are reduced strictly in bucket order (0, 1, 2, ...) -- every rank must issue the
// same sequence of collectives, whatever order its gradients arrive in. Reducing a bucket:
// flatten its parameters' .grad into one buffer, divide by the world size, all-reduce (SUM),
// copy each slice back into its .grad: every rank ends with the average gradient.
// Useful: tinytorch::cat(ts, 0), t.reshape({-1}), t.narrow(0, start, n), t.view_as(u) or
// reshape(u.sizes()), dst.copy_(src), tinytorch::distributed::all_reduce(t, ReduceOp::SUM),
// tinytorch::distributed::get_world_size(), p.grad(), tinytorch::NoGradGuard.
// Chapter: chapters/06-distributed-data-parallel.md (6.5 construction: buckets and hooks, 6.6 one
// iteration). The library's versions, to compare with once you are done:
// include/tinytorch/distributed/reducer.hpp (compute_bucket_assignment_by_size, the Reducer).
// Reference: PyTorch's torch/csrc/distributed/c10d/reducer.cpp; Li et al., "PyTorch
// Distributed" (VLDB 2020), section 3.2.
#pragma once

#include <tinytorch/tinytorch.hpp>
#include <tinytorch/distributed.hpp>

#include <cstdint>
#include <vector>

namespace lab06 {

/// Task assign. The buckets for parameters of `bytes[i]` bytes (registration order) under
/// `limits` (>= 1 entry, each > 0), in DDP's order: the assignment described above, reversed.
std::vector<std::vector<size_t>> assign_buckets(const std::vector<int64_t>& bytes, const std::vector<int64_t>& limits);

/// Averages the gradients of `params` across ranks bucket by bucket during backward.
class BucketedAllReduce {
 public:
  /// Given: keeps the parameters and buckets (indices into params, DDP's order) and registers a
  /// post-accumulate-grad hook on every parameter that calls on_grad_ready(its index).
  BucketedAllReduce(std::vector<tinytorch::Tensor> params, std::vector<std::vector<size_t>> buckets)
      : params_(std::move(params)), buckets_(std::move(buckets)) {
    bucket_of_.assign(params_.size(), 0);
    for (size_t b = 0; b < buckets_.size(); ++b)
      for (size_t i : buckets_[b]) bucket_of_[i] = b;
    missing_.assign(buckets_.size(), 0);
    for (size_t b = 0; b < buckets_.size(); ++b) missing_[b] = buckets_[b].size();
    for (size_t i = 0; i < params_.size(); ++i)
      params_[i].register_post_accumulate_grad_hook([this, i](tinytorch::Tensor&) { on_grad_ready(i); });
  }

  /// Task reduce. Bucket b: its parameters' .grad flattened into one buffer, divided by the world
  /// size, all-reduced with SUM, and copied back into each .grad (same shape as before); appends
  /// b to launch_order().
  void reduce_bucket(size_t b);

  /// Task hooks. Called once per parameter per backward, in whatever order backward produces the
  /// gradients. Marks parameter i ready; while the next bucket in order (next_bucket_) has no
  /// missing parameter, reduces it and moves on. After the last bucket, resets the counts for the
  /// next backward. Use the members below (missing_[b]: parameters of bucket b not yet ready).
  void on_grad_ready(size_t i);

  /// The buckets in the order reduce_bucket ran them, over all backwards so far.
  const std::vector<size_t>& launch_order() const { return launch_order_; }

 private:
  std::vector<tinytorch::Tensor> params_;
  std::vector<std::vector<size_t>> buckets_;
  std::vector<size_t> bucket_of_;  // parameter index -> its bucket
  std::vector<size_t> missing_;    // per bucket: parameters whose gradient has not arrived yet
  size_t next_bucket_ = 0;         // the next bucket to reduce
  std::vector<size_t> launch_order_;
};

}  // namespace lab06

// labs/04-data-pipeline/pipeline.cpp — your collation, batching and sampler (lab 04; the tasks
// are in lab.hpp).
//
// Check your work:   scripts/lab.sh check 04, from the tinytorch clone (add the --dir you gave to start)
// Chapter: chapters/04-data-pipeline.md (4.2-4.4), chapters/06-distributed-data-parallel.md (6.4).
// BEGIN REFERENCE ONLY
#ifndef TT_LAB_REFERENCE
#error "labs/04-data-pipeline/pipeline.cpp is the reference solution: a student build must compile the student's copy (scripts/lab.sh start 04)"
#endif
// END REFERENCE ONLY
#include "lab.hpp"

#include <algorithm>

namespace lab04 {

using tinytorch::Tensor;
using tinytorch::data::Example;

Example collate(const std::vector<Example>& samples) {
  // BEGIN SOLUTION collate
  TT_CHECK(!samples.empty(), "collate: expected at least one sample");
  std::vector<Tensor> xs, ys;
  for (size_t i = 0; i < samples.size(); ++i) {
    TT_CHECK(samples[i].data.sizes() == samples[0].data.sizes(), "collate: sample ", i, " has data of shape ",
             tinytorch::shape_str(samples[i].data.sizes()), " but sample 0 has ",
             tinytorch::shape_str(samples[0].data.sizes()));
    TT_CHECK(samples[i].target.sizes() == samples[0].target.sizes(), "collate: sample ", i,
             " has a target of shape ", tinytorch::shape_str(samples[i].target.sizes()), " but sample 0 has ",
             tinytorch::shape_str(samples[0].target.sizes()));
    xs.push_back(samples[i].data);
    ys.push_back(samples[i].target);
  }
  return {tinytorch::stack(xs, 0), tinytorch::stack(ys, 0)};
  // END SOLUTION
}

std::vector<std::vector<int64_t>> batch_indices(const std::vector<int64_t>& order, int64_t batch_size, bool drop_last) {
  // BEGIN SOLUTION batches
  std::vector<std::vector<int64_t>> out;
  const int64_t n = static_cast<int64_t>(order.size());
  for (int64_t start = 0; start < n; start += batch_size) {
    const int64_t end = std::min(n, start + batch_size);
    if (drop_last && end - start < batch_size) break;
    out.emplace_back(order.begin() + start, order.begin() + end);
  }
  return out;
  // END SOLUTION
}

std::vector<int64_t> shard_indices(const std::vector<int64_t>& order, int64_t num_replicas, int64_t rank,
                                   bool drop_last) {
  // BEGIN SOLUTION shard
  const int64_t L = static_cast<int64_t>(order.size());
  const int64_t num_samples = (drop_last && L % num_replicas != 0) ? L / num_replicas
                                                                    : (L + num_replicas - 1) / num_replicas;
  const int64_t total = num_samples * num_replicas;
  std::vector<int64_t> all = order;
  if (drop_last) all.resize(static_cast<size_t>(total));
  for (size_t i = 0; static_cast<int64_t>(all.size()) < total; ++i) all.push_back(order[i % order.size()]);
  std::vector<int64_t> mine;
  for (int64_t i = rank; i < total; i += num_replicas) mine.push_back(all[static_cast<size_t>(i)]);
  return mine;
  // END SOLUTION
}

std::vector<int64_t> LabDistributedSampler::indices() {
  // BEGIN SOLUTION sampler
  std::vector<int64_t> order;
  if (shuffle_) {
    tinytorch::Generator g(seed_ + static_cast<uint64_t>(epoch_));
    order = tinytorch::randperm(size_, &g).tolist<int64_t>();
  } else {
    for (int64_t i = 0; i < size_; ++i) order.push_back(i);
  }
  return shard_indices(order, num_replicas_, rank_, drop_last_);
  // END SOLUTION
}

size_t LabDistributedSampler::size() const {
  // BEGIN SOLUTION sampler
  const int64_t n = (drop_last_ && size_ % num_replicas_ != 0) ? size_ / num_replicas_
                                                               : (size_ + num_replicas_ - 1) / num_replicas_;
  return static_cast<size_t>(n);
  // END SOLUTION
}

void LabDistributedSampler::set_epoch(int64_t epoch) {
  // BEGIN SOLUTION sampler
  epoch_ = epoch;
  // END SOLUTION
}

}  // namespace lab04

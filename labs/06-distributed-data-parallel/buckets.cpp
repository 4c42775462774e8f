// labs/06-distributed-data-parallel/buckets.cpp — your bucket assignment and bucketed all-reduce
// (lab 06; the tasks are in lab.hpp).
//
// Check your work:   scripts/lab.sh check 06, from the tinytorch clone (add the --dir you gave to start)
// Chapter: chapters/06-distributed-data-parallel.md, sections 6.5-6.6.
// BEGIN REFERENCE ONLY
#ifndef TT_LAB_REFERENCE
#error "labs/06-distributed-data-parallel/buckets.cpp is the reference solution: a student build must compile the student's copy (scripts/lab.sh start 06)"
#endif
// END REFERENCE ONLY
#include "lab.hpp"

#include <algorithm>

namespace lab06 {

using tinytorch::Tensor;
namespace dist = tinytorch::distributed;

std::vector<std::vector<size_t>> assign_buckets(const std::vector<int64_t>& bytes, const std::vector<int64_t>& limits) {
  // BEGIN SOLUTION assign
  std::vector<std::vector<size_t>> buckets;
  std::vector<size_t> open;
  int64_t open_bytes = 0;
  size_t limit = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    open.push_back(i);
    open_bytes += bytes[i];
    if (open_bytes >= limits[limit]) {
      buckets.push_back(open);
      open.clear();
      open_bytes = 0;
      if (limit + 1 < limits.size()) ++limit;
    }
  }
  if (!open.empty()) buckets.push_back(open);
  std::reverse(buckets.begin(), buckets.end());  // bucket 0: the last-registered parameters
  return buckets;
  // END SOLUTION
}

void BucketedAllReduce::reduce_bucket(size_t b) {
  // BEGIN SOLUTION reduce
  tinytorch::NoGradGuard no_grad;
  std::vector<Tensor> flat;
  for (size_t i : buckets_[b]) flat.push_back(params_[i].grad().reshape({-1}));
  Tensor buffer = tinytorch::cat(flat, 0) / static_cast<double>(dist::get_world_size());
  dist::all_reduce(buffer, dist::ReduceOp::SUM);
  int64_t offset = 0;
  for (size_t i : buckets_[b]) {
    Tensor g = params_[i].grad();
    g.copy_(buffer.narrow(0, offset, g.numel()).reshape(g.sizes()));
    offset += g.numel();
  }
  launch_order_.push_back(b);
  // END SOLUTION
}

void BucketedAllReduce::on_grad_ready(size_t i) {
  // BEGIN SOLUTION hooks
  missing_[bucket_of_[i]] -= 1;
  while (next_bucket_ < buckets_.size() && missing_[next_bucket_] == 0) reduce_bucket(next_bucket_++);
  if (next_bucket_ == buckets_.size()) {  // this backward is done: arm for the next one
    next_bucket_ = 0;
    for (size_t b = 0; b < buckets_.size(); ++b) missing_[b] = buckets_[b].size();
  }
  // END SOLUTION
}

}  // namespace lab06

// labs/04-data-pipeline/lab.hpp — lab 04: collation, batching and the distributed sampler, the
// parts of a DataLoader between a Dataset and the training loop. Your file is pipeline.cpp.
//
//   Dataset            size() samples; get(i) -> Example {data (...), target (...)}
//   Sampler            one epoch's order of indices: 0..L-1, a permutation, or one rank's share
//   batch_indices      the order cut into batches of batch_size (the last shorter, or dropped)
//   collate            the samples of a batch stacked: data (B, ...), target (B, ...)
// DistributedSampler (PyTorch's torch.utils.data.DistributedSampler), for W replicas:
//   num_samples = ceil(L / W), or floor(L / W) when drop_last and W does not divide L
//   total_size  = num_samples * W
//   order       = randperm(L) from Generator(seed + epoch) if shuffle, else 0..L-1
//   !drop_last: pad the order to total_size by repeating it from its start (as often as needed)
//    drop_last: cut it to total_size
//   rank r gets order[r], order[r + W], order[r + 2W], ...  (num_samples of them)
//   e.g. L = 10, W = 4: rank 0 gets 0 4 8, rank 1 1 5 9, rank 2 2 6 0, rank 3 3 7 1.
// Useful: tinytorch::stack(tensors, 0), t.sizes(), tinytorch::Generator g(seed),
// tinytorch::randperm(n, &g) (an int64 tensor; .tolist<int64_t>()).
// Chapter: chapters/04-data-pipeline.md (4.2 collation, 4.3 samplers, 4.4 batches) and
// chapters/06-distributed-data-parallel.md (6.4 DistributedSampler and set_epoch). The library's
// versions, to compare with once you are done: include/tinytorch/data/sampler.hpp,
// dataloader.hpp, dataset.hpp (Dataset::get_batch). Reference: PyTorch's
// torch/utils/data/sampler.py (BatchSampler) and distributed.py (DistributedSampler).
#pragma once

#include <tinytorch/tinytorch.hpp>

#include <cstdint>
#include <vector>

namespace lab04 {

/// Task collate. Stacks the samples along a new dim 0: data (B, ...), target (B, ...), B =
/// samples.size(). Throws tinytorch::Error (message starting "collate:") for no samples, or a
/// sample whose data or target shape differs from sample 0's (name the sample and both shapes).
tinytorch::data::Example collate(const std::vector<tinytorch::data::Example>& samples);

/// Task batches. The order cut into consecutive batches of batch_size (batch_size >= 1); the last
/// batch is shorter when batch_size does not divide the length, or dropped when drop_last.
std::vector<std::vector<int64_t>> batch_indices(const std::vector<int64_t>& order, int64_t batch_size, bool drop_last);

/// Task shard. Rank `rank`'s share of an epoch's order (the rule above: pad or cut to total_size,
/// then every num_replicas-th index from position rank). order holds the dataset's L indices.
std::vector<int64_t> shard_indices(const std::vector<int64_t>& order, int64_t num_replicas, int64_t rank,
                                   bool drop_last);

/// Task sampler. DistributedSampler as a data::Sampler: indices() is shard_indices of 0..L-1 or,
/// with shuffle, of randperm(L) drawn from a Generator seeded with seed + epoch (the same order
/// on every rank, a new one each epoch); size() is num_samples; set_epoch(e) sets the epoch.
class LabDistributedSampler : public tinytorch::data::Sampler {
 public:
  LabDistributedSampler(int64_t dataset_size, int64_t num_replicas, int64_t rank, bool shuffle = true,
                        uint64_t seed = 0, bool drop_last = false)
      : size_(dataset_size), num_replicas_(num_replicas), rank_(rank), shuffle_(shuffle), seed_(seed),
        drop_last_(drop_last) {}
  std::vector<int64_t> indices() override;
  size_t size() const override;
  void set_epoch(int64_t epoch) override;

 private:
  int64_t size_, num_replicas_, rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  int64_t epoch_ = 0;
};

}  // namespace lab04

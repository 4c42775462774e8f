// tinytorch/data/sampler.hpp — samplers: the order in which a DataLoader visits a dataset.
//
// A Sampler produces, for one epoch, the list of dataset indices to visit (PyTorch's
// Sampler.__iter__, materialised as a vector; size() is __len__):
//
//   SequentialSampler(n)       0, 1, ..., n-1 every epoch
//   RandomSampler(n, seed)     a fresh permutation of 0..n-1 every epoch (randperm); the sequence
//                              of permutations is reproducible from the seed
//   DistributedSampler(L, W, r, shuffle, seed, drop_last)
//                              rank r's share of one epoch, for W data-parallel replicas:
//       num_samples = ceil(L / W), or floor(L / W) if drop_last and W does not divide L
//       total_size  = num_samples * W
//       indices     = randperm(L) from Generator(seed + epoch) if shuffle, else 0..L-1
//       !drop_last: pad to total_size by repeating indices from the start of the list
//                   (the whole list as many times as needed when the padding is longer than L)
//        drop_last: truncate to total_size (the tail is dropped)
//       rank r gets indices[r : total_size : W]   (strided, not a contiguous block)
//   e.g. L=10, W=4, no shuffle: rank0 0,4,8  rank1 1,5,9  rank2 2,6,0  rank3 3,7,1.
//   Every rank computes the same permutation (same seed + epoch), so the shards are disjoint
//   (up to the padding) and together cover the dataset; every rank gets num_samples indices,
//   hence the same number of batches, which keeps DDP's collectives matched.
//   Call set_epoch(e) before each epoch, or every epoch repeats the same order (PyTorch's warning).
//
// Our Generator's stream differs from PyTorch's, so shuffled orders are not PyTorch's; the
// unshuffled ones are identical (tests/reference/gen_sampler.py checks them against PyTorch).
// Chapter: chapters/04-data-pipeline.md; DistributedSampler: chapters/06-distributed-data-parallel.md.
// Reference: PyTorch 2.x torch/utils/data/sampler.py and torch/utils/data/distributed.py.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "tinytorch/ops/creation.hpp"
#include "tinytorch/data/dataset.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace data {

/// The order of one epoch (torch.utils.data.Sampler).
class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The dataset indices of one epoch, in visiting order; size() of them. Samplers that shuffle
  /// return a new order on each call (RandomSampler) or per set_epoch (DistributedSampler).
  virtual std::vector<int64_t> indices() = 0;
  /// Number of indices per epoch (len(sampler)).
  virtual size_t size() const = 0;
  /// Tells the sampler which epoch starts next; a no-op except for DistributedSampler.
  virtual void set_epoch(int64_t /*epoch*/) {}
};

namespace detail {
/// randperm(n) as a vector (the permutation our Generator produces for this state).
inline std::vector<int64_t> randperm_vector(int64_t n, Generator* gen) {
  Tensor p = randperm(n, gen);  // (n,) int64
  const int64_t* d = p.data_ptr<int64_t>();
  return std::vector<int64_t>(d, d + n);
}
}  // namespace detail

/// 0, 1, ..., n-1 every epoch (torch.utils.data.SequentialSampler). Throws if n < 0.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n) : n_(n) {
    TT_CHECK(n >= 0, "SequentialSampler: number of samples must be non-negative, got ", n);
  }
  std::vector<int64_t> indices() override {
    std::vector<int64_t> idx(static_cast<size_t>(n_));
    for (int64_t i = 0; i < n_; ++i) idx[static_cast<size_t>(i)] = i;
    return idx;
  }
  size_t size() const override { return static_cast<size_t>(n_); }

 private:
  int64_t n_;
};

/// A new random permutation of 0..n-1 on each indices() call (torch.utils.data.RandomSampler,
/// without replacement).
///   RandomSampler(n, seed): owns Generator(seed); epoch k's order depends only on the seed and k.
///   RandomSampler(n, &gen): draws from a generator the caller owns (it must outlive the sampler).
///   RandomSampler(n):       like PyTorch without a generator: each epoch seeds a fresh Generator
///                           from the default generator, so tinytorch::manual_seed(s) makes the
///                           whole run reproducible.
/// Throws if n < 0.
class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(int64_t n, Generator* gen = nullptr) : n_(n), external_(gen) { check(); }
  /// (A template so that RandomSampler(n, 0) means seed 0, not a null Generator*.)
  template <typename Int, std::enable_if_t<std::is_integral_v<Int>, int> = 0>
  RandomSampler(int64_t n, Int seed)
      : n_(n), own_(std::make_unique<Generator>(static_cast<uint64_t>(seed))) {
    check();
  }

  std::vector<int64_t> indices() override {
    if (own_) return detail::randperm_vector(n_, own_.get());
    if (external_) return detail::randperm_vector(n_, external_);
    Generator g(default_generator().next_u64());
    return detail::randperm_vector(n_, &g);
  }
  size_t size() const override { return static_cast<size_t>(n_); }

 private:
  void check() const { TT_CHECK(n_ >= 0, "RandomSampler: number of samples must be non-negative, got ", n_); }
  int64_t n_;
  Generator* external_ = nullptr;
  std::unique_ptr<Generator> own_;
};

/// Rank `rank`'s share of each epoch when `num_replicas` processes train data-parallel
/// (torch.utils.data.distributed.DistributedSampler; index semantics in the file comment).
///   dataset_size L >= 0, num_replicas W >= 1, 0 <= rank < W; size() = num_samples.
/// Unlike PyTorch, num_replicas and rank are not read from a process group (data/ does not
/// depend on distributed/): pass process_group.world_size() and .rank().
/// Throws tinytorch::Error:
///   "DistributedSampler: Invalid rank 3, rank should be in the interval [0, 1]" (PyTorch's text),
///   "DistributedSampler: num_replicas should be a positive integer, got 0" (PyTorch reports this
///   case through the rank message), and for a negative dataset size.
class DistributedSampler : public Sampler {
 public:
  DistributedSampler(int64_t dataset_size, int64_t num_replicas, int64_t rank, bool shuffle = true,
                     uint64_t seed = 0, bool drop_last = false)
      : size_(dataset_size), num_replicas_(num_replicas), rank_(rank), shuffle_(shuffle), seed_(seed),
        drop_last_(drop_last) {
    TT_CHECK(dataset_size >= 0, "DistributedSampler: dataset size must be non-negative, got ", dataset_size);
    TT_CHECK(num_replicas >= 1, "DistributedSampler: num_replicas should be a positive integer, got ",
             num_replicas);
    TT_CHECK(rank >= 0 && rank < num_replicas, "DistributedSampler: Invalid rank ", rank,
             ", rank should be in the interval [0, ", num_replicas - 1, "]");
    // ceil((L - W) / W) == floor(L / W) when W does not divide L (PyTorch's drop_last formula).
    num_samples_ = (drop_last && size_ % num_replicas_ != 0) ? size_ / num_replicas_
                                                             : (size_ + num_replicas_ - 1) / num_replicas_;
    total_size_ = num_samples_ * num_replicas_;
  }
  /// Same, with dataset_size = dataset.size().
  DistributedSampler(const Dataset& dataset, int64_t num_replicas, int64_t rank, bool shuffle = true,
                     uint64_t seed = 0, bool drop_last = false)
      : DistributedSampler(static_cast<int64_t>(dataset.size()), num_replicas, rank, shuffle, seed, drop_last) {}

  /// This rank's num_samples indices for the current epoch (see the file comment).
  std::vector<int64_t> indices() override {
    std::vector<int64_t> all;
    if (shuffle_) {
      Generator g(seed_ + static_cast<uint64_t>(epoch_));  // same on every rank
      all = detail::randperm_vector(size_, &g);
    } else {
      all.resize(static_cast<size_t>(size_));
      for (int64_t i = 0; i < size_; ++i) all[static_cast<size_t>(i)] = i;
    }
    const size_t total = static_cast<size_t>(total_size_);
    if (!drop_last_) {
      // Pad by repeating from the start; wraps around the whole list as often as needed.
      const size_t n = all.size();
      for (size_t i = 0; all.size() < total; ++i) all.push_back(all[i % n]);
    } else {
      all.resize(total);  // drop the tail
    }
    std::vector<int64_t> mine;
    mine.reserve(static_cast<size_t>(num_samples_));
    for (int64_t i = rank_; i < total_size_; i += num_replicas_) mine.push_back(all[static_cast<size_t>(i)]);
    return mine;
  }
  size_t size() const override { return static_cast<size_t>(num_samples_); }
  /// Stores the epoch; with shuffle the next indices() uses Generator(seed + epoch).
  void set_epoch(int64_t epoch) override { epoch_ = epoch; }

  int64_t epoch() const { return epoch_; }
  int64_t num_replicas() const { return num_replicas_; }
  int64_t rank() const { return rank_; }
  int64_t num_samples() const { return num_samples_; }
  int64_t total_size() const { return total_size_; }
  bool shuffle() const { return shuffle_; }
  bool drop_last() const { return drop_last_; }
  uint64_t seed() const { return seed_; }

 private:
  int64_t size_;
  int64_t num_replicas_;
  int64_t rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  int64_t epoch_ = 0;
  int64_t num_samples_ = 0;
  int64_t total_size_ = 0;
};

}  TT_NAMESPACE_END  // namespace tinytorch::data

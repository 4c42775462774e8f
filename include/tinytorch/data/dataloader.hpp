// tinytorch/data/dataloader.hpp — DataLoader: a dataset cut into mini-batches, epoch by epoch.
//
//   DataLoaderOptions opts;  opts.batch_size = 64;  opts.shuffle = true;  opts.seed = 0;
//   DataLoader loader(dataset, opts);
//   for (int epoch = 0; epoch < 10; ++epoch)
//     for (auto& batch : loader) { ... batch.data: (B, ...), batch.target: (B, ...) ... }
//
// What one epoch is (PyTorch's DataLoader with its default BatchSampler, num_workers=0):
//   indices = sampler.indices()                       n = len(sampler) of them
//   batch k = dataset.get_batch(indices[k*bs : (k+1)*bs])     B = bs, the last one may be shorter
//   len(loader) = ceil(n / bs), or floor(n / bs) with drop_last (the short last batch is dropped)
// The sampler is options.sampler if given, else RandomSampler when shuffle, else SequentialSampler.
// Every begin() starts a new epoch, i.e. asks the sampler for a new order (a new permutation
// when shuffling; for a DistributedSampler, call sampler.set_epoch(e) first, as in PyTorch).
// The loader's drop_last (drop the short last *batch*) is independent of DistributedSampler's
// drop_last (drop the dataset's tail so that it divides among the replicas).
//
// It is single-threaded on purpose: a batch is a gather of rows (TensorDataset::get_batch, one
// memcpy per sample), far cheaper than the forward/backward pass it feeds; no workers, no pinning.
//
// Chapter: chapters/01-training-loop.md, chapters/04-data-pipeline.md.
// Reference: PyTorch 2.x torch.utils.data.DataLoader and BatchSampler (torch/utils/data/).
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "dataset.hpp"
#include "sampler.hpp"

namespace tinytorch::data {

/// DataLoader settings, with PyTorch's defaults. A plain struct: set the fields you need.
struct DataLoaderOptions {
  int64_t batch_size = 1;   ///< samples per batch; must be > 0
  bool shuffle = false;     ///< visit the samples in a new random order every epoch (RandomSampler)
  bool drop_last = false;   ///< drop the last batch when it is shorter than batch_size
  /// Custom order (e.g. a DistributedSampler); mutually exclusive with shuffle.
  std::shared_ptr<Sampler> sampler = nullptr;
  /// With shuffle: seed of the loader's own Generator, so the sequence of epoch orders is
  /// reproducible. Without seed and generator, each epoch's order is seeded from the default
  /// generator (tinytorch::manual_seed), as PyTorch does. Ignored without shuffle.
  std::optional<uint64_t> seed = std::nullopt;
  /// With shuffle: draw permutations from this generator (owned by the caller, must outlive
  /// the loader). Mutually exclusive with seed. Ignored without shuffle.
  Generator* generator = nullptr;
};

/// Iterates over a Dataset in mini-batches of Example{data (B, ...), target (B, ...)}.
///
/// The dataset is held by shared_ptr; the Dataset& constructor does not own it (it must outlive
/// the loader), a Dataset temporary is moved into the loader.
/// Throws tinytorch::Error (messages follow PyTorch's):
///   batch_size <= 0     "DataLoader: batch_size should be a positive integer value, but got batch_size=0"
///   shuffle + sampler   "DataLoader: sampler option is mutually exclusive with shuffle"
///   seed + generator    "DataLoader: pass either seed or generator, not both"
///   a null dataset.
class DataLoader {
 public:
  DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options = {})
      : dataset_(std::move(dataset)), options_(std::move(options)) {
    TT_CHECK(dataset_ != nullptr, "DataLoader: dataset is null");
    TT_CHECK(options_.batch_size > 0, "DataLoader: batch_size should be a positive integer value, but got "
             "batch_size=", options_.batch_size);
    TT_CHECK(!(options_.shuffle && options_.sampler), "DataLoader: sampler option is mutually exclusive with shuffle");
    TT_CHECK(!(options_.seed && options_.generator), "DataLoader: pass either seed or generator, not both");
    const int64_t n = static_cast<int64_t>(dataset_->size());
    if (options_.sampler) {
      sampler_ = options_.sampler;
    } else if (options_.shuffle) {
      if (options_.seed) sampler_ = std::make_shared<RandomSampler>(n, *options_.seed);
      else sampler_ = std::make_shared<RandomSampler>(n, options_.generator);
    } else {
      sampler_ = std::make_shared<SequentialSampler>(n);
    }
  }
  /// Non-owning: `dataset` must outlive the loader.
  DataLoader(Dataset& dataset, DataLoaderOptions options = {})
      : DataLoader(std::shared_ptr<Dataset>(&dataset, [](Dataset*) {}), std::move(options)) {}
  /// Takes a dataset temporary, e.g. DataLoader(TensorDataset(x, y), opts).
  template <typename D, std::enable_if_t<std::is_base_of_v<Dataset, D> && !std::is_lvalue_reference_v<D>, int> = 0>
  DataLoader(D&& dataset, DataLoaderOptions options = {})
      : DataLoader(std::shared_ptr<Dataset>(std::make_shared<D>(std::move(dataset))), std::move(options)) {}

  /// Input iterator over one epoch's batches. operator* returns a reference to the current
  /// batch (so `for (auto& batch : loader)` works); the batch is built on first access.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Example;
    using difference_type = std::ptrdiff_t;
    using pointer = Example*;
    using reference = Example&;

    Iterator() = default;
    Example& operator*() {
      load();
      return current_;
    }
    Example* operator->() { return &**this; }
    Iterator& operator++() {
      ++pos_;
      loaded_ = false;
      current_ = Example{};
      return *this;
    }
    void operator++(int) { ++*this; }
    bool operator==(const Iterator& o) const { return pos_ == o.pos_; }
    bool operator!=(const Iterator& o) const { return pos_ != o.pos_; }

   private:
    friend class DataLoader;
    Iterator(Dataset* dataset, std::shared_ptr<const std::vector<int64_t>> indices, size_t batch_size, size_t pos)
        : dataset_(dataset), indices_(std::move(indices)), batch_size_(batch_size), pos_(pos) {}
    void load() {
      if (loaded_) return;
      TT_CHECK(dataset_ && indices_, "DataLoader::Iterator: dereferencing an end or default iterator");
      const size_t lo = pos_ * batch_size_;
      TT_CHECK(lo < indices_->size(), "DataLoader::Iterator: dereferencing past the last batch");
      const size_t hi = std::min(lo + batch_size_, indices_->size());
      const std::vector<int64_t> batch(indices_->begin() + static_cast<std::ptrdiff_t>(lo),
                                       indices_->begin() + static_cast<std::ptrdiff_t>(hi));
      current_ = dataset_->get_batch(batch);
      loaded_ = true;
    }

    Dataset* dataset_ = nullptr;
    std::shared_ptr<const std::vector<int64_t>> indices_;  // this epoch's order
    size_t batch_size_ = 1;
    size_t pos_ = 0;  // batch number
    bool loaded_ = false;
    Example current_;
  };

  /// Starts a new epoch: asks the sampler for its order. Throws if the sampler returns a number
  /// of indices different from its size().
  Iterator begin() {
    auto idx = std::make_shared<const std::vector<int64_t>>(sampler_->indices());
    TT_CHECK(idx->size() == sampler_->size(), "DataLoader: sampler returned ", idx->size(),
             " indices but its size() is ", sampler_->size());
    return Iterator(dataset_.get(), std::move(idx), batch_size(), 0);
  }
  Iterator end() { return Iterator(nullptr, nullptr, batch_size(), size()); }

  /// Number of batches per epoch (len(loader)): ceil(n / batch_size), or floor with drop_last,
  /// where n = sampler().size().
  size_t size() const {
    const size_t n = sampler_->size(), bs = batch_size();
    return options_.drop_last ? n / bs : (n + bs - 1) / bs;
  }
  size_t batch_size() const { return static_cast<size_t>(options_.batch_size); }
  bool drop_last() const { return options_.drop_last; }
  const DataLoaderOptions& options() const { return options_; }
  Dataset& dataset() const { return *dataset_; }
  /// The sampler in use (e.g. to call set_epoch on a DistributedSampler).
  Sampler& sampler() const { return *sampler_; }

 private:
  std::shared_ptr<Dataset> dataset_;
  DataLoaderOptions options_;
  std::shared_ptr<Sampler> sampler_;
};

}  // namespace tinytorch::data

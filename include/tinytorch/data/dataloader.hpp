// tinytorch/data/dataloader.hpp — DataLoader: a dataset cut into mini-batches, epoch by epoch,
// optionally built ahead of time by background worker threads.
//   DataLoaderOptions opts;  opts.batch_size = 64;  opts.shuffle = true;  opts.seed = 0;
//   opts.num_workers = 2;                             // optional: 2 threads build batches ahead
//   DataLoader loader(dataset, opts);
//   for (int epoch = 0; epoch < 10; ++epoch)
//     for (auto& batch : loader) { ... batch.data: (B, ...), batch.target: (B, ...) ... }
// What one epoch is (PyTorch's DataLoader with its default BatchSampler):
//   indices = sampler.indices()                       n = len(sampler) of them
//   batch k = dataset.get_batch(indices[k*bs : (k+1)*bs])     B = bs, the last one may be shorter
//   len(loader) = ceil(n / bs), or floor(n / bs) with drop_last (the short last batch is dropped)
// The sampler is options.sampler if given, else RandomSampler when shuffle, else SequentialSampler.
// Every begin() starts a new epoch, i.e. asks the sampler for a new order (a new permutation
// when shuffling; for a DistributedSampler, call sampler.set_epoch(e) first, as in PyTorch).
// The loader's drop_last (drop the short last *batch*) is independent of DistributedSampler's
// drop_last (drop the dataset's tail so that it divides among the replicas).
// Where batches are built (PyTorch's num_workers and prefetch_factor):
//   num_workers = 0   the main thread calls get_batch when the iterator is dereferenced: loading
//                     and the training step take turns, step time = t_load + t_compute.
//   num_workers = W   begin() starts W threads that build batches 0, 1, 2, ... ahead, at most
//                     prefetch_factor * W of them (default 2W) not yet taken by the loop; the
//                     loop takes them in sampler order. While the model computes on batch k the
//                     workers build k+1, k+2, ...: step time -> max(t_load / W, t_compute).
//   The batches are the same tensors, in the same order, whatever num_workers is (PyTorch's
//   in_order=True default): a worker that finishes early parks its batch in a slot until the
//   loop reaches it. An exception thrown by get_batch in a worker is caught there and rethrown by
//   the main thread when it dereferences that batch. Destroying the iterator (the end of the
//   range-for, a break, an exception) stops the workers and joins them; a worker inside get_batch
//   finishes that call first.
// Chapter: chapters/04-data-pipeline.md (also 01). Reference: torch.utils.data.DataLoader.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "tinytorch/data/dataset.hpp"
#include "tinytorch/data/sampler.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace data {

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
  /// How many background threads build batches ahead of the training loop (PyTorch's
  /// num_workers). 0 (the default): batches are built in the main thread, when the loop asks for
  /// them. W > 0: begin() starts W worker threads, which call dataset.get_batch concurrently, so
  /// get_batch must be safe to call from several threads at once (TensorDataset's is: it only
  /// reads the dataset's tensors). Must be >= 0.
  ///
  /// Threads, not processes (PyTorch forks worker processes): a C++ thread runs on its own core
  /// with no interpreter lock to get around, and it shares the dataset's memory, so a finished
  /// batch is handed to the loop as it is, where PyTorch's workers must send theirs through
  /// shared memory and a queue. Hence no worker_init_fn, get_worker_info, persistent_workers or
  /// timeout. One consequence: workers share one Dataset object (not a copy each), and a get_batch
  /// that draws random numbers from a shared generator gets them in a thread-scheduling order.
  int64_t num_workers = 0;
  /// With num_workers = W > 0: at most prefetch_factor * W batches are built or waiting ahead
  /// of the loop (PyTorch's prefetch_factor; std::nullopt means PyTorch's default, 2, which the
  /// constructor writes here). Memory: up to that many batches live at once, plus the one in use.
  /// Must be left unset with num_workers = 0 (PyTorch's error), and be positive: PyTorch 2.x
  /// lets 0 through, which requests no batch at all (1.x asserts > 0); we refuse it.
  std::optional<int64_t> prefetch_factor = std::nullopt;
};

namespace detail {

/// The worker threads of one epoch (DataLoaderOptions::num_workers > 0); owned by the epoch's
/// iterator (and its copies) through a shared_ptr, joined by the destructor.
///
/// Batch k (of num_batches) is built by whichever worker claims it next, and parked in slot
/// k % slots.size() until take(k). A worker may claim batch k only while k < next_take +
/// slots.size() (the prefetch window): so at most slots.size() = prefetch_factor * num_workers
/// batches are claimed but not yet taken, and batch k's slot was emptied by taking k - slots.size().
class PrefetchWorkers {
 public:
  PrefetchWorkers(std::shared_ptr<Dataset> dataset, std::shared_ptr<const std::vector<int64_t>> indices,
                  size_t batch_size, size_t num_batches, size_t num_workers, size_t window);
  PrefetchWorkers(const PrefetchWorkers&) = delete;
  PrefetchWorkers& operator=(const PrefetchWorkers&) = delete;
  ~PrefetchWorkers() { shutdown(); }

  /// Batch k, waiting for a worker to finish it; rethrows the exception its get_batch threw.
  /// Batches between the last one taken and k are built and dropped (the iterator skipped them).
  /// Throws tinytorch::Error if batch k was already taken (an iterator copy going back).
  Example take(size_t k);

 private:
  struct Slot {
    bool ready = false;
    Example batch;
    std::exception_ptr error;  // what get_batch threw, rethrown by take()
  };

  void run();

  void shutdown();

  std::shared_ptr<Dataset> dataset_;                    // kept alive while the workers run
  std::shared_ptr<const std::vector<int64_t>> indices_;  // this epoch's order
  size_t batch_size_;
  size_t num_batches_;
  std::mutex mutex_;
  std::condition_variable ready_;  // a slot was filled (the loop waits on it)
  std::condition_variable space_;  // the window moved, or stop (the workers wait on it)
  std::vector<Slot> slots_;        // guarded by mutex_
  size_t next_claim_ = 0;          // next batch a worker builds
  size_t next_take_ = 0;           // next batch the loop takes
  bool stop_ = false;
  std::vector<std::thread> threads_;  // last member: started after, joined before the rest goes
};

}  // namespace detail

/// Iterates over a Dataset in mini-batches of Example{data (B, ...), target (B, ...)}.
///
/// The dataset is held by shared_ptr; the Dataset& constructor does not own it (it must outlive
/// the loader), a Dataset temporary is moved into the loader.
/// Throws tinytorch::Error (messages follow PyTorch's):
///   batch_size <= 0     "DataLoader: batch_size should be a positive integer value, but got batch_size=0"
///   shuffle + sampler   "DataLoader: sampler option is mutually exclusive with shuffle"
///   seed + generator    "DataLoader: pass either seed or generator, not both"
///   num_workers < 0     "DataLoader: num_workers option should be non-negative; use num_workers=0 to
///                       disable multiprocessing."
///   prefetch_factor set with num_workers = 0
///                       "DataLoader: prefetch_factor option could only be specified in multiprocessing.
///                       let num_workers > 0 to enable multiprocessing, ..."
///   prefetch_factor < 0 "DataLoader: prefetch_factor option should be non-negative"; = 0 refused too
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
    TT_CHECK(options_.num_workers >= 0, "DataLoader: num_workers option should be non-negative; use "
             "num_workers=0 to disable multiprocessing. (got num_workers=", options_.num_workers, ")");
    if (options_.num_workers == 0) {
      TT_CHECK(!options_.prefetch_factor, "DataLoader: prefetch_factor option could only be specified in "
               "multiprocessing. let num_workers > 0 to enable multiprocessing, otherwise leave prefetch_factor "
               "unset (got num_workers=0, prefetch_factor=", options_.prefetch_factor.value_or(0), ")");
    } else {
      if (!options_.prefetch_factor) options_.prefetch_factor = 2;  // PyTorch's default
      TT_CHECK(*options_.prefetch_factor >= 0, "DataLoader: prefetch_factor option should be non-negative (got "
               "prefetch_factor=", *options_.prefetch_factor, ")");
      TT_CHECK(*options_.prefetch_factor > 0, "DataLoader: prefetch_factor=0 would let the workers load no batch "
               "ahead; use a positive prefetch_factor (default 2)");
    }
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
  /// batch (so `for (auto& batch : loader)` works). num_workers = 0: the batch is built on first
  /// access. num_workers > 0: it is taken from the workers (waiting if it is not ready yet);
  /// copies of an iterator share the epoch's workers, which stop when the last copy is destroyed.
  /// An iterator keeps the dataset alive (it may outlive its loader, as in PyTorch).
  /// An exception from get_batch is thrown by operator* (again if it is called again); ++ then
  /// moves on to the next batch.
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
      error_ = nullptr;
      current_ = Example{};
      return *this;
    }
    void operator++(int) { ++*this; }
    bool operator==(const Iterator& o) const { return pos_ == o.pos_; }
    bool operator!=(const Iterator& o) const { return pos_ != o.pos_; }

   private:
    friend class DataLoader;
    Iterator(std::shared_ptr<Dataset> dataset, std::shared_ptr<const std::vector<int64_t>> indices,
             size_t batch_size, size_t num_batches, size_t pos,
             std::shared_ptr<detail::PrefetchWorkers> workers = nullptr)
        : dataset_(std::move(dataset)), indices_(std::move(indices)), batch_size_(batch_size),
          num_batches_(num_batches), pos_(pos), workers_(std::move(workers)) {}
    void load() {
      if (loaded_) return;
      if (error_) std::rethrow_exception(error_);
      TT_CHECK(dataset_ && indices_, "DataLoader::Iterator: dereferencing an end or default iterator");
      // pos_ < num_batches_, not just pos_ * batch_size_ < n: with drop_last the short last batch
      // lies past the end and must not be returned.
      TT_CHECK(pos_ < num_batches_, "DataLoader::Iterator: dereferencing past the last batch (batch ", pos_, " of ",
               num_batches_, ")");
      const size_t lo = pos_ * batch_size_;
      if (workers_) {
        try {
          current_ = workers_->take(pos_);
        } catch (...) {
          error_ = std::current_exception();  // taken once: keep it for a second dereference
          throw;
        }
      } else {
        const size_t hi = std::min(lo + batch_size_, indices_->size());
        const std::vector<int64_t> batch(indices_->begin() + static_cast<std::ptrdiff_t>(lo),
                                         indices_->begin() + static_cast<std::ptrdiff_t>(hi));
        current_ = dataset_->get_batch(batch);
      }
      loaded_ = true;
    }

    // Shared with the loader: an iterator may outlive a loader that owns its dataset (as a
    // PyTorch iterator keeps its loader alive), e.g. auto it = DataLoader(TensorDataset(x, y)).begin().
    std::shared_ptr<Dataset> dataset_;
    std::shared_ptr<const std::vector<int64_t>> indices_;  // this epoch's order
    size_t batch_size_ = 1;
    size_t num_batches_ = 0;  // len(loader) for this epoch
    size_t pos_ = 0;  // batch number
    bool loaded_ = false;
    Example current_;
    std::shared_ptr<detail::PrefetchWorkers> workers_;  // null with num_workers = 0
    std::exception_ptr error_;                          // this batch's get_batch error (workers)
  };

  /// Starts a new epoch: asks the sampler for its order and, with num_workers > 0, starts the
  /// workers, which begin building batches at once (as PyTorch's iter(loader) does). Throws if
  /// the sampler returns a number of indices different from its size(), or if a thread cannot
  /// be started.
  Iterator begin();
  Iterator end() { return Iterator(nullptr, nullptr, batch_size(), size(), size()); }

  /// Number of batches per epoch (len(loader)): ceil(n / batch_size), or floor with drop_last,
  /// where n = sampler().size().
  size_t size() const;
  size_t batch_size() const { return static_cast<size_t>(options_.batch_size); }
  bool drop_last() const { return options_.drop_last; }
  int64_t num_workers() const { return options_.num_workers; }
  const DataLoaderOptions& options() const { return options_; }
  Dataset& dataset() const { return *dataset_; }
  /// The sampler in use (e.g. to call set_epoch on a DistributedSampler).
  Sampler& sampler() const { return *sampler_; }

 private:
  std::shared_ptr<Dataset> dataset_;
  DataLoaderOptions options_;
  std::shared_ptr<Sampler> sampler_;
};

}  TT_NAMESPACE_END  // namespace tinytorch::data

#if TT_HEADER_ONLY
#include "tinytorch/data/dataloader.ipp"
#endif

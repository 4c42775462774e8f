// tinytorch/data/dataloader.ipp — the bodies of dataloader.hpp: the prefetch workers (threads,
// queue, shutdown) and DataLoader's batching.
//
// Not a header to include: dataloader.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The declarations and their documentation are in dataloader.hpp.
// Chapter: chapters/04-data-pipeline.md.
#pragma once

#include "tinytorch/data/dataloader.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace data {

TT_DECL detail::PrefetchWorkers::PrefetchWorkers(std::shared_ptr<Dataset> dataset,
    std::shared_ptr<const std::vector<int64_t>> indices, size_t batch_size, size_t num_batches, size_t num_workers,
    size_t window)
    : dataset_(std::move(dataset)), indices_(std::move(indices)), batch_size_(batch_size), num_batches_(num_batches),
      slots_(std::max<size_t>(1, std::min(window, num_batches))) {
  const size_t n = std::min(num_workers, num_batches);  // more threads than batches would idle
  threads_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    try {
      threads_.emplace_back([this] { run(); });
    } catch (const std::system_error& e) {
      shutdown();
      TT_CHECK(false, "DataLoader: could not start worker thread ", i + 1, " of ", n, " (num_workers=",
               num_workers, "): ", e.what());
    }
  }
}

TT_DECL Example detail::PrefetchWorkers::take(size_t k) {
  Slot got;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    TT_CHECK(k < num_batches_, "DataLoader::Iterator: dereferencing past the last batch (batch ", k, " of ",
             num_batches_, ")");
    TT_CHECK(k >= next_take_, "DataLoader::Iterator: batch ", k, " was already taken; with num_workers > 0 "
             "an epoch's batches are read once, in order (call begin() for a new epoch)");
    for (;;) {
      Slot& slot = slots_[next_take_ % slots_.size()];
      ready_.wait(lock, [&] { return slot.ready; });
      got = std::move(slot);
      slot = Slot{};
      ++next_take_;
      space_.notify_all();  // the window moved on: workers may claim one more batch
      if (next_take_ == k + 1) break;
    }
  }
  if (got.error) std::rethrow_exception(got.error);
  return std::move(got.batch);
}

TT_DECL void detail::PrefetchWorkers::run() {
  for (;;) {
    size_t k = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      space_.wait(lock, [&] {
        return stop_ || next_claim_ >= num_batches_ || next_claim_ < next_take_ + slots_.size();
      });
      if (stop_ || next_claim_ >= num_batches_) return;
      k = next_claim_++;
    }
    Slot done;
    done.ready = true;
    try {
      const size_t lo = k * batch_size_, hi = std::min(lo + batch_size_, indices_->size());
      const std::vector<int64_t> batch(indices_->begin() + static_cast<std::ptrdiff_t>(lo),
                                       indices_->begin() + static_cast<std::ptrdiff_t>(hi));
      done.batch = dataset_->get_batch(batch);
    } catch (...) {
      done.error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slots_[k % slots_.size()] = std::move(done);
    }
    ready_.notify_all();
  }
}

TT_DECL void detail::PrefetchWorkers::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  space_.notify_all();
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
}

TT_DECL DataLoader::Iterator DataLoader::begin() {
  auto idx = std::make_shared<const std::vector<int64_t>>(sampler_->indices());
  TT_CHECK(idx->size() == sampler_->size(), "DataLoader: sampler returned ", idx->size(),
           " indices but its size() is ", sampler_->size());
  std::shared_ptr<detail::PrefetchWorkers> workers;
  const size_t batches = size();
  if (options_.num_workers > 0 && batches > 0) {
    const size_t w = static_cast<size_t>(options_.num_workers), pf = static_cast<size_t>(*options_.prefetch_factor);
    const size_t window = pf > batches / w ? batches : pf * w;  // prefetch_factor * W, no overflow
    workers = std::make_shared<detail::PrefetchWorkers>(dataset_, idx, batch_size(), batches, w, window);
  }
  return Iterator(dataset_, std::move(idx), batch_size(), batches, 0, std::move(workers));
}

TT_DECL size_t DataLoader::size() const {
  const size_t n = sampler_->size(), bs = batch_size();
  return options_.drop_last ? n / bs : (n + bs - 1) / bs;
}

}  TT_NAMESPACE_END  // namespace tinytorch::data

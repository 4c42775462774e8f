// examples/data_pipeline.hpp — the pieces of examples/data_pipeline.cpp: a dataset whose
// get_batch costs a known time, a stand-in for the training step, and one timed epoch.
//
//   DecodeCostDataset ds(400, 5.0, Decode::kSleep);   // 400 samples, 5 ms of "decoding" each
//   EpochStats s = run_epoch(loader, 10.0);            // every batch: wait for it, then 10 ms of compute
//
// Samples are synthetic and exact: data[i] = ((16 i + j) mod 97) for j = 0..15 (float32, (16)),
// target[i] = i (int64: the sample's index, standing in for its label). checksum = sum over batches k of (k + 1) * (sum of batch k's
// data and targets), an integer that changes if any batch differs or comes in another order:
// every num_workers must give the same one (tests [ch04] in tests/test_data.cpp).
// Chapter: chapters/04-data-pipeline.md.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include <tinytorch/data/dataloader.hpp>

namespace examples {

/// How a simulated cost is spent: sleeping (no CPU used: I/O from a disk or a network for
/// get_batch; for the step, an accelerator computing while the host thread waits for it) or
/// spinning (CPU work such as JPEG decoding, which competes with everything else for the cores).
enum class Decode { kSleep, kSpin };

/// n iterations of a loop the compiler cannot remove.
inline void spin_iterations(uint64_t n) {
  volatile uint64_t x = 0;
  for (uint64_t i = 0; i < n; ++i) x = x + i;
}

/// Loop iterations per millisecond on one idle core: the best of 20 trials of 2^16 iterations
/// (measured once; the best trial is the one no other thread interrupted).
inline double iterations_per_ms() {
  static const double rate = [] {
    double best = 0;
    for (int t = 0; t < 20; ++t) {
      const auto t0 = std::chrono::steady_clock::now();
      spin_iterations(uint64_t{1} << 16);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (ms > 0) best = std::max(best, 65536.0 / ms);
    }
    return best > 0 ? best : 1e6;
  }();
  return rate;
}

/// A fixed amount of CPU work that takes `ms` milliseconds on an idle core. On a busy machine
/// (more runnable threads than cores) it takes longer, as real decoding would.
inline void busy_work(double ms) { spin_iterations(static_cast<uint64_t>(ms * iterations_per_ms())); }

inline void spend(double ms, Decode how) {
  if (ms <= 0) return;
  if (how == Decode::kSleep) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
  else busy_work(ms);
}

/// n synthetic samples (see the file comment) whose loading costs decode_ms per sample:
/// get(i) spends decode_ms, get_batch(B indices) spends B * decode_ms, then gathers the rows.
/// Thread-safe: several DataLoader workers may call get_batch at once.
class DecodeCostDataset : public tinytorch::data::Dataset {
 public:
  DecodeCostDataset(int64_t n, double decode_ms, Decode how = Decode::kSleep)
      : rows_(make_rows(n)), decode_ms_(decode_ms), how_(how) {}
  size_t size() const override { return rows_.size(); }
  tinytorch::data::Example get(int64_t i) override {
    spend(decode_ms_, how_);
    return rows_.get(i);
  }
  tinytorch::data::Example get_batch(const std::vector<int64_t>& idx) override {
    spend(decode_ms_ * static_cast<double>(idx.size()), how_);
    return rows_.get_batch(idx);
  }

 private:
  static tinytorch::data::TensorDataset make_rows(int64_t n) {
    using namespace tinytorch;
    Tensor x = zeros({n, 16}, kFloat32);
    float* p = x.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < 16; ++j) p[i * 16 + j] = static_cast<float>((16 * i + j) % 97);
    return tinytorch::data::TensorDataset(x, arange(0.0, static_cast<double>(n), 1.0, kInt64));
  }
  tinytorch::data::TensorDataset rows_;
  double decode_ms_;
  Decode how_;
};

/// What one epoch took. wait: time the step spent waiting for its batch (inside the loader's
/// begin() and operator*); compute: time in the step itself.
struct EpochStats {
  int64_t batches = 0;
  int64_t samples = 0;
  double seconds = 0, wait_seconds = 0, compute_seconds = 0;
  int64_t checksum = 0;
  std::vector<int64_t> first_batch;  // the first batch's sample indices (its targets)
  double utilisation() const { return seconds > 0 ? compute_seconds / seconds : 0; }
  double waiting() const { return seconds > 0 ? wait_seconds / seconds : 0; }
};

/// One epoch of `loader`: for every batch, wait for it, fold it into the checksum, then spend
/// compute_ms in the step (the main thread stands in for the accelerator), as `how` says.
inline EpochStats run_epoch(tinytorch::data::DataLoader& loader, double compute_ms, Decode how = Decode::kSleep) {
  using Clock = std::chrono::steady_clock;
  const auto sec = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  EpochStats s;
  const auto t0 = Clock::now();
  auto it = loader.begin();
  s.wait_seconds += sec(Clock::now() - t0);
  for (; it != loader.end(); ++it) {
    const auto w0 = Clock::now();
    tinytorch::data::Example& b = *it;  // num_workers = 0: built now; else taken from the workers
    s.wait_seconds += sec(Clock::now() - w0);
    const std::vector<int64_t> targets = b.target.tolist<int64_t>();
    int64_t sum = 0;
    for (float v : b.data.tolist<float>()) sum += static_cast<int64_t>(v);
    for (int64_t t : targets) sum += t;
    if (s.batches == 0) s.first_batch = targets;
    ++s.batches;
    s.samples += b.target.size(0);
    s.checksum += s.batches * sum;
    const auto c0 = Clock::now();
    spend(compute_ms, how);
    s.compute_seconds += sec(Clock::now() - c0);
  }
  s.seconds = sec(Clock::now() - t0);
  return s;
}

/// The epoch time the pipeline model predicts, in ms, for batches costing load_ms[k] to build
/// and compute_ms to consume, with W = num_workers threads and a window of `window` batches
/// (prefetch_factor * W), replaying DataLoader's schedule with exact costs:
///   W = 0:  every batch is built, then consumed: T = sum_k (load_k + compute)
///   W > 0:  batch k is claimed, in order, by the first free worker, but not before batch
///           k - window was taken; it is ready load_k later; the step takes it when it is ready
///           and the previous step is done. In steady state a step takes max(load / W, compute);
///           the first batch costs a whole load_0 of waiting (the pipeline fills).
inline double predicted_epoch_ms(const std::vector<double>& load_ms, double compute_ms, int64_t W, int64_t window) {
  if (W == 0) {
    double t = 0;
    for (double l : load_ms) t += l + compute_ms;
    return t;
  }
  std::vector<double> worker_free(static_cast<size_t>(W), 0.0), taken(load_ms.size(), 0.0);
  double step_end = 0;
  for (size_t k = 0; k < load_ms.size(); ++k) {
    auto w = std::min_element(worker_free.begin(), worker_free.end());
    double claim = *w;
    if (k >= static_cast<size_t>(window)) claim = std::max(claim, taken[k - static_cast<size_t>(window)]);
    const double ready = claim + load_ms[k];
    *w = ready;
    taken[k] = std::max(ready, step_end);
    step_end = taken[k] + compute_ms;
  }
  return step_end;
}

}  // namespace examples

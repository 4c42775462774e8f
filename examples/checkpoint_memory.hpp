// examples/checkpoint_memory.hpp — one training step of a deep MLP with and without activation
// checkpointing, and with gradient accumulation, measured with the allocator's peak counter. Shared by examples/checkpoint_memory.cpp
// and its test (tests/test_accumulation.cpp, "[ch09]"), so the test checks the numbers the
// example prints.
//
//   model: L blocks, block = ReLU(Linear(H, H)); x: (B, H) ~ N(0, 1); target: (B, H) ~ N(0, 1)
//   step:  reset_peak_memory_stats(); loss = mse_loss(forward(x), target); loss.backward()
//   forward: plain model(x), or utils::checkpoint_sequential(model, segments, x)
//   accumulation: k micro-batches of B/k rows, each loss / k, k backwards into the same .grad
// Reported: the peak of memory_allocated() during the step minus what was allocated before it
// (parameters, x, target): activations, the graph's saved tensors and the gradients. All byte
// counts are exact and deterministic (core/allocator.hpp counts every tensor storage's nbytes).
// Chapter: chapters/09-gradient-accumulation.md ("Activation checkpointing: the numbers").
#pragma once

#include <tinytorch/tinytorch.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace examples {

/// ReLU(Linear(H, H)) that counts its forward calls (how many layer forwards a step costs).
class CountedBlock : public tinytorch::nn::Module {
 public:
  CountedBlock(int64_t h, std::shared_ptr<int64_t> calls) : calls_(std::move(calls)) {
    fc = register_module("fc", std::make_shared<tinytorch::nn::Linear>(h, h));
  }
  tinytorch::Tensor forward(const tinytorch::Tensor& x) override {  // x: (B, H) -> (B, H)
    ++*calls_;
    return tinytorch::relu(fc->forward(x));
  }
  std::string name() const override { return "CountedBlock"; }
  std::shared_ptr<tinytorch::nn::Linear> fc;

 private:
  std::shared_ptr<int64_t> calls_;
};

struct CheckpointMemoryResult {
  int64_t segments = 0;         ///< 0: no checkpointing
  size_t baseline_bytes = 0;    ///< allocated before the step: parameters, x, target
  size_t peak_bytes = 0;        ///< max_memory_allocated() during the step, minus baseline_bytes
  size_t after_bytes = 0;       ///< allocated after backward (loss dropped), minus baseline: the gradients
  int64_t layer_forwards = 0;   ///< block forwards in the step (L without checkpointing)
  double loss = 0;
  double seconds = 0;           ///< wall time of the step (printout only; never asserted)
  std::vector<double> grads;    ///< every parameter's gradient, flattened, in parameters() order
};

/// The L-block MLP, its input and its target, drawn from manual_seed(seed): the same numbers for
/// every run with the same seed. `calls` counts the blocks' forwards.
inline void make_deep_mlp(int64_t L, int64_t H, int64_t B, uint64_t seed, const std::shared_ptr<int64_t>& calls,
                          tinytorch::nn::Sequential& model, tinytorch::Tensor& x, tinytorch::Tensor& target) {
  using namespace tinytorch;
  manual_seed(seed);
  for (int64_t i = 0; i < L; ++i) model.push_back(std::make_shared<CountedBlock>(H, calls));
  x = randn({B, H});       // x: (B, H)
  target = randn({B, H});  // target: (B, H)
}

/// Every parameter's .grad, flattened, in parameters() order.
inline std::vector<double> flat_grads(const tinytorch::nn::Module& model) {
  std::vector<double> out;
  for (const tinytorch::Tensor& p : model.parameters()) {
    std::vector<float> g = p.grad().tolist<float>();
    out.insert(out.end(), g.begin(), g.end());
  }
  return out;
}

/// One forward + backward of the L-block MLP (seeded: the same weights and data for every
/// `segments`). segments = 0: no checkpointing; 1 <= segments <= L: checkpoint_sequential.
inline CheckpointMemoryResult deep_mlp_step(int64_t L, int64_t H, int64_t B, int64_t segments, uint64_t seed = 0) {
  using namespace tinytorch;
  auto calls = std::make_shared<int64_t>(0);
  nn::Sequential model;
  Tensor x, target;
  make_deep_mlp(L, H, B, seed, calls, model, x, target);

  CheckpointMemoryResult r;
  r.segments = segments;
  r.baseline_bytes = memory_allocated();
  reset_peak_memory_stats();
  auto t0 = std::chrono::steady_clock::now();
  {
    Tensor y = segments == 0 ? model.forward(x) : utils::checkpoint_sequential(model, segments, x);
    Tensor loss = mse_loss(y, target);
    loss.backward();
    r.loss = loss.item<double>();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.peak_bytes = max_memory_allocated() - r.baseline_bytes;
  r.after_bytes = memory_allocated() - r.baseline_bytes;
  r.layer_forwards = *calls;
  r.grads = flat_grads(model);
  return r;
}

struct AccumulationResult {
  int64_t k = 1;              ///< micro-batches
  size_t peak_bytes = 0;      ///< max_memory_allocated() during the k forwards + backwards, minus before
  double loss = 0;            ///< sum of the k micro-batch losses, each divided by k (if divided)
  std::vector<double> grads;  ///< every parameter's gradient after the k backwards
};

/// Gradient accumulation on the same MLP and data as deep_mlp_step: the batch of B rows is cut
/// into k micro-batches of B/k rows (k must divide B); each gives loss_j = mse_loss(model(x_j),
/// t_j) / k (or undivided, divide_by_k = false: the bug), and loss_j.backward() adds its gradient
/// into .grad. No optimizer step: the gradients are the result.
inline AccumulationResult deep_mlp_accumulate(int64_t L, int64_t H, int64_t B, int64_t k, bool divide_by_k = true,
                                              uint64_t seed = 0) {
  using namespace tinytorch;
  TT_CHECK(k >= 1 && B % k == 0, "deep_mlp_accumulate: k = ", k, " must divide the batch ", B);
  auto calls = std::make_shared<int64_t>(0);
  nn::Sequential model;
  Tensor x, target;
  make_deep_mlp(L, H, B, seed, calls, model, x, target);
  AccumulationResult r;
  r.k = k;
  const size_t before = memory_allocated();
  reset_peak_memory_stats();
  const int64_t b = B / k;
  for (int64_t j = 0; j < k; ++j) {
    Tensor xj = x.narrow(0, j * b, b), tj = target.narrow(0, j * b, b);  // (b, H) views
    Tensor loss = mse_loss(model.forward(xj), tj);
    if (divide_by_k) loss = loss / static_cast<double>(k);  // the mean over B = (1/k) sum of k means over b
    loss.backward();                                         // .grad += d loss_j / d theta
    r.loss += loss.item<double>();
  }
  r.peak_bytes = max_memory_allocated() - before;
  r.grads = flat_grads(model);
  return r;
}

}  // namespace examples

// bench/bench_mlp.cpp — one training step of tinytorch beside a hand-written raw-Eigen step.
//
// Two models, each measured twice in the same run (Google Benchmark, 1 thread, same flags):
//   MLP 784-256-128-10, ReLU, cross-entropy, batch 64, SGD(lr=0.02, momentum=0.9):
//     zero_grad, forward, loss, backward, step.
//     Exact count: forward GEMMs 2*64*(784*256 + 256*128 + 128*10) = 30.05 MFLOP, backward
//     weight GEMMs the same, input-gradient GEMMs of layers 2 and 3 2*64*(256*128 + 128*10)
//     = 4.36 MFLOP (layer 1 needs none: the images do not require grad): 64.45 MFLOP per step.
//   Linear(2,1), MSE, batch 4, SGD(lr=0.01): the framework's fixed cost per step.
// The raw-Eigen step is the floor: preallocated buffers, noalias() products, fused loops.
// Run:  build/bin/bench_mlp --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
// Quote medians and the ratio tinytorch/raw (the machine is shared and noisy).
// Chapter: chapters/01-training-loop.md ("How fast is it?").
#include <benchmark/benchmark.h>

#include "benchmark_main.hpp"

#include <Eigen/Core>
#include <cmath>
#include <tinytorch/tinytorch.hpp>

namespace tt = tinytorch;

namespace {

constexpr int64_t kBatch = 64, kIn = 784, kH1 = 256, kH2 = 128, kOut = 10;
constexpr double kMlpFlops = 2.0 * kBatch * (kIn * kH1 + kH1 * kH2 + kH2 * kOut) * 2 +
                             2.0 * kBatch * (kH1 * kH2 + kH2 * kOut);

void set_flops(benchmark::State& state, double flops) {
  // flops per iteration, reported as a rate: printed "GFLOP=86.1/s"
  state.counters["GFLOP"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- tinytorch ------------------------------------------------------------------------------
void BM_MlpStep_tinytorch(benchmark::State& state) {
  tt::set_num_threads(1);  // as the raw-Eigen floor (bench_vs_libtorch.cpp compares 2 threads)
  tt::manual_seed(0);
  auto model = std::make_shared<tt::nn::Sequential>(
      std::make_shared<tt::nn::Linear>(kIn, kH1), std::make_shared<tt::nn::ReLU>(),
      std::make_shared<tt::nn::Linear>(kH1, kH2), std::make_shared<tt::nn::ReLU>(),
      std::make_shared<tt::nn::Linear>(kH2, kOut));
  tt::optim::SGD opt(model->parameters(), 0.02, 0.9);
  tt::nn::CrossEntropyLoss loss_fn;
  tt::Tensor x = tt::rand({kBatch, kIn});
  tt::Tensor y = tt::randint(0, kOut, {kBatch});
  for (auto _ : state) {
    opt.zero_grad();
    tt::Tensor loss = loss_fn(model->forward(x), y);
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.impl());
  }
  set_flops(state, kMlpFlops);
}

void BM_Linear21Step_tinytorch(benchmark::State& state) {
  tt::set_num_threads(1);
  tt::manual_seed(0);
  auto model = std::make_shared<tt::nn::Linear>(2, 1);
  tt::optim::SGD opt(model->parameters(), 0.01);
  tt::nn::MSELoss loss_fn;
  tt::Tensor x = tt::rand({4, 2});
  tt::Tensor y = tt::rand({4, 1});
  for (auto _ : state) {
    opt.zero_grad();
    tt::Tensor loss = loss_fn(model->forward(x), y);
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.impl());
  }
}

// ---- raw Eigen: the same math by hand ---------------------------------------------------------
using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vec = Eigen::Matrix<float, 1, Eigen::Dynamic>;

struct RawLayer {
  Mat W, dW, vW;  // weight (out, in), its gradient, momentum buffer
  Vec b, db, vb;
  RawLayer(int64_t in, int64_t out)
      : W(Mat::Random(out, in) / std::sqrt(float(in))), dW(out, in), vW(Mat::Zero(out, in)),
        b(Vec::Random(out) / std::sqrt(float(in))), db(out), vb(Vec::Zero(out)) {}
  void sgd(float lr, float momentum) {  // buf = momentum*buf + grad; p -= lr*buf
    vW = momentum * vW + dW;
    W.noalias() -= lr * vW;
    vb = momentum * vb + db;
    b.noalias() -= lr * vb;
  }
};

void BM_MlpStep_rawEigen(benchmark::State& state) {
  RawLayer l1(kIn, kH1), l2(kH1, kH2), l3(kH2, kOut);
  Mat x = (Mat::Random(kBatch, kIn).array() + 1.f) / 2.f;
  std::vector<int> y(kBatch);
  for (int64_t i = 0; i < kBatch; ++i) y[i] = static_cast<int>(i % kOut);
  Mat h1(kBatch, kH1), h2(kBatch, kH2), z(kBatch, kOut), dz(kBatch, kOut), dh2(kBatch, kH2), dh1(kBatch, kH1);
  for (auto _ : state) {
    // forward: h = relu(x W^T + b)
    h1.noalias() = x * l1.W.transpose();
    h1.rowwise() += l1.b;
    h1 = h1.cwiseMax(0.f);
    h2.noalias() = h1 * l2.W.transpose();
    h2.rowwise() += l2.b;
    h2 = h2.cwiseMax(0.f);
    z.noalias() = h2 * l3.W.transpose();
    z.rowwise() += l3.b;
    // cross entropy: loss = mean(logsumexp(z) - z[y]); dz = (softmax(z) - onehot(y)) / B
    double loss = 0;
    for (int64_t i = 0; i < kBatch; ++i) {
      float m = z.row(i).maxCoeff();
      auto e = (z.row(i).array() - m).exp();
      float s = e.sum();
      loss += std::log(s) + m - z(i, y[i]);
      dz.row(i) = e / (s * kBatch);
      dz(i, y[i]) -= 1.f / kBatch;
    }
    benchmark::DoNotOptimize(loss);
    // backward
    l3.dW.noalias() = dz.transpose() * h2;
    l3.db = dz.colwise().sum();
    dh2.noalias() = dz * l3.W;
    dh2 = (h2.array() > 0.f).select(dh2, 0.f);
    l2.dW.noalias() = dh2.transpose() * h1;
    l2.db = dh2.colwise().sum();
    dh1.noalias() = dh2 * l2.W;
    dh1 = (h1.array() > 0.f).select(dh1, 0.f);
    l1.dW.noalias() = dh1.transpose() * x;
    l1.db = dh1.colwise().sum();
    // SGD with momentum
    l1.sgd(0.02f, 0.9f);
    l2.sgd(0.02f, 0.9f);
    l3.sgd(0.02f, 0.9f);
  }
  set_flops(state, kMlpFlops);
}

void BM_Linear21Step_rawEigen(benchmark::State& state) {
  Mat W = Mat::Random(1, 2), dW(1, 2);
  Vec b = Vec::Random(1), db(1);
  Mat x = Mat::Random(4, 2), y = Mat::Random(4, 1), p(4, 1), dp(4, 1);
  for (auto _ : state) {
    p.noalias() = x * W.transpose();
    p.rowwise() += b;
    dp = p - y;
    float loss = dp.squaredNorm() / 4.f;
    benchmark::DoNotOptimize(loss);
    dp *= 2.f / 4.f;
    dW.noalias() = dp.transpose() * x;
    db = dp.colwise().sum();
    W.noalias() -= 0.01f * dW;
    b.noalias() -= 0.01f * db;
  }
}

}  // namespace

BENCHMARK(BM_MlpStep_tinytorch)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlpStep_rawEigen)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Linear21Step_tinytorch)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Linear21Step_rawEigen)->Unit(benchmark::kMicrosecond);

// BENCHMARK_MAIN, then the load line and warning of load_watch.hpp (bench/benchmark_main.hpp).
int main(int argc, char** argv) { return bench::benchmark_main(argc, argv, 1, "the step times (one thread)"); }

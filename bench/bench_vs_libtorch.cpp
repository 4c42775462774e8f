// bench/bench_vs_libtorch.cpp — one training step of tinytorch, of libtorch (PyTorch's C++ API)
// and of a hand-written raw-Eigen floor, interleaved in one run, on 1 and 2 threads.
//
// Built only when CMake finds Torch (Debian: libtorch-dev; libtorch's matrix products then run
// in OpenBLAS, libopenblas0-pthread): see bench/CMakeLists.txt.
//   MLP 784-256-128-10, ReLU, cross-entropy, SGD(lr=0.02, momentum=0.9), batch 64 and 1024:
//     zero_grad (set to none, PyTorch 2.x's default), forward, loss, backward, step.
//     64.45 MFLOP per step at batch 64 (bench/bench_mlp.cpp counts them), 16x that at 1024.
//   Linear(2,1), MSE, batch 4, SGD(lr=0.01): the framework's fixed cost per step (1 thread).
// Threads: tinytorch::set_num_threads(t); torch::set_num_threads(t) (ATen's OpenMP threads) and
// openblas_set_num_threads(t) (torch::set_num_threads leaves OpenBLAS's own pool at its default).
// After a libtorch run on 2 threads the bench sleeps 150 ms (untimed): OpenBLAS's idle workers
// spin for ~0.1 s (2^28 cycles) before they sleep, which would slow whatever runs next.
// The raw-Eigen floor: the same math on preallocated Eigen matrices, fused loops, no tensors and
// no graph; its products call backend::cpu::gemm, so on 1 thread they are plain Eigen products
// and on 2 threads they are split exactly as tinytorch's (core/parallel.hpp). tinytorch/raw is
// therefore the framework's overhead, and tinytorch/libtorch the comparison with PyTorch.
//
// Run (repetitions interleaved at random, so that a noisy moment of the shared machine hits all
// three alike; a summary of the medians and their ratios is printed at the end):
//   build/bin/bench_vs_libtorch                       # defaults: --benchmark_repetitions=10
//       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
//       --benchmark_min_time=0.2
// Chapter: chapters/01-training-loop.md ("How fast is it?").
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include "libtorch_common.hpp"  // bench::set_threads, bench::initialize
#include "load_watch.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <tinytorch/backend/cpu/gemm.hpp>  // backend::cpu::gemm for the raw-Eigen reference
#include <tinytorch/tinytorch.hpp>
#include <torch/torch.h>
#include <vector>

namespace tt = tinytorch;

namespace {

constexpr int64_t kIn = 784, kH1 = 256, kH2 = 128, kOut = 10;
double mlp_flops(int64_t batch) {  // forward + weight gradients, + input gradients of layers 2, 3
  return 2.0 * batch * (kIn * kH1 + kH1 * kH2 + kH2 * kOut) * 2 + 2.0 * batch * (kH1 * kH2 + kH2 * kOut);
}
void set_flops(benchmark::State& state, double flops) {
  state.counters["GFLOP"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

/// CPU time of the whole process (all threads) per iteration, as counter "cpu_us": a thread that
/// busy-waits shows up here even when the wall time looks fine.
struct ProcessCpu {
  static double now_us() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
  }
  double t0 = now_us();
  void report(benchmark::State& state) const {
    state.counters["cpu_us"] = (now_us() - t0) / static_cast<double>(std::max<int64_t>(1, state.iterations()));
  }
};

// ---- tinytorch ----------------------------------------------------------------------------------
void BM_Mlp_tinytorch(benchmark::State& state, int64_t batch, int threads) {
  bench::set_threads(threads);
  tt::manual_seed(0);
  auto model = std::make_shared<tt::nn::Sequential>(
      std::make_shared<tt::nn::Linear>(kIn, kH1), std::make_shared<tt::nn::ReLU>(),
      std::make_shared<tt::nn::Linear>(kH1, kH2), std::make_shared<tt::nn::ReLU>(),
      std::make_shared<tt::nn::Linear>(kH2, kOut));
  tt::optim::SGD opt(model->parameters(), 0.02, 0.9);
  tt::nn::CrossEntropyLoss loss_fn;
  tt::Tensor x = tt::rand({batch, kIn});
  tt::Tensor y = tt::randint(0, kOut, {batch});
  ProcessCpu cpu;
  for (auto _ : state) {
    opt.zero_grad();
    tt::Tensor loss = loss_fn(model->forward(x), y);
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.impl());
  }
  cpu.report(state);
  set_flops(state, mlp_flops(batch));
}

void BM_Linear21_tinytorch(benchmark::State& state) {
  bench::set_threads(1);
  tt::manual_seed(0);
  auto model = std::make_shared<tt::nn::Linear>(2, 1);
  tt::optim::SGD opt(model->parameters(), 0.01);
  tt::nn::MSELoss loss_fn;
  tt::Tensor x = tt::rand({4, 2});
  tt::Tensor y = tt::rand({4, 1});
  ProcessCpu cpu;
  for (auto _ : state) {
    opt.zero_grad();
    tt::Tensor loss = loss_fn(model->forward(x), y);
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.impl());
  }
  cpu.report(state);
}

// ---- libtorch ------------------------------------------------------------------------------------
/// Gradients set to none, as PyTorch 2.x's zero_grad() does (libtorch 1.13's C++ zero_grad() fills
/// them with zeros instead, an extra pass over every gradient).
void zero_grad_to_none(const std::vector<torch::Tensor>& params) {
  for (torch::Tensor p : params) p.mutable_grad() = torch::Tensor();  // p shares the parameter
}

void cool_down(int threads) {  // let OpenBLAS's spinning workers go to sleep (see the top)
  if (threads > 1) std::this_thread::sleep_for(std::chrono::milliseconds(150));
}

void BM_Mlp_libtorch(benchmark::State& state, int64_t batch, int threads) {
  bench::set_threads(threads);
  torch::manual_seed(0);
  torch::nn::Sequential model(torch::nn::Linear(kIn, kH1), torch::nn::ReLU(), torch::nn::Linear(kH1, kH2),
                              torch::nn::ReLU(), torch::nn::Linear(kH2, kOut));
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.02).momentum(0.9));
  const std::vector<torch::Tensor> params = model->parameters();
  torch::Tensor x = torch::rand({batch, kIn});
  torch::Tensor y = torch::randint(0, kOut, {batch}, torch::kLong);
  ProcessCpu cpu;
  for (auto _ : state) {
    zero_grad_to_none(params);
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.data_ptr());
  }
  cpu.report(state);
  set_flops(state, mlp_flops(batch));
  cool_down(threads);
}

void BM_Linear21_libtorch(benchmark::State& state) {
  bench::set_threads(1);
  torch::manual_seed(0);
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01));
  const std::vector<torch::Tensor> params = model->parameters();
  torch::Tensor x = torch::rand({4, 2});
  torch::Tensor y = torch::rand({4, 1});
  ProcessCpu cpu;
  for (auto _ : state) {
    zero_grad_to_none(params);
    torch::Tensor loss = torch::mse_loss(model->forward(x), y);
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.data_ptr());
  }
  cpu.report(state);
}

// ---- raw Eigen: the same math by hand (bench/bench_mlp.cpp's floor, with threaded products) -------
using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vec = Eigen::Matrix<float, 1, Eigen::Dynamic>;

/// C = op(A) op(B) through tinytorch's kernel (one Eigen product per thread's block of C).
void product(Mat& C, const Mat& A, bool ta, const Mat& B, bool tb) {
  const int64_t M = ta ? A.cols() : A.rows(), K = ta ? A.rows() : A.cols(), N = tb ? B.rows() : B.cols();
  tt::backend::cpu::gemm<float>(M, N, K, 1.f, A.data(), A.cols(), ta, B.data(), B.cols(), tb, 0.f, C.data(), N);
}

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

void BM_Mlp_rawEigen(benchmark::State& state, int64_t batch, int threads) {
  bench::set_threads(threads);
  RawLayer l1(kIn, kH1), l2(kH1, kH2), l3(kH2, kOut);
  Mat x = (Mat::Random(batch, kIn).array() + 1.f) / 2.f;
  std::vector<int> y(batch);
  for (int64_t i = 0; i < batch; ++i) y[i] = static_cast<int>(i % kOut);
  Mat h1(batch, kH1), h2(batch, kH2), z(batch, kOut), dz(batch, kOut), dh2(batch, kH2), dh1(batch, kH1);
  ProcessCpu cpu;
  for (auto _ : state) {
    // forward: h = relu(x W^T + b)
    product(h1, x, false, l1.W, true);
    h1 = (h1.rowwise() + l1.b).cwiseMax(0.f);
    product(h2, h1, false, l2.W, true);
    h2 = (h2.rowwise() + l2.b).cwiseMax(0.f);
    product(z, h2, false, l3.W, true);
    z.rowwise() += l3.b;
    // cross entropy: loss = mean(logsumexp(z) - z[y]); dz = (softmax(z) - onehot(y)) / B
    double loss = 0;
    for (int64_t i = 0; i < batch; ++i) {
      float m = z.row(i).maxCoeff();
      auto e = (z.row(i).array() - m).exp();
      float s = e.sum();
      loss += std::log(s) + m - z(i, y[i]);
      dz.row(i) = e / (s * batch);
      dz(i, y[i]) -= 1.f / batch;
    }
    benchmark::DoNotOptimize(loss);
    // backward
    product(l3.dW, dz, true, h2, false);
    l3.db = dz.colwise().sum();
    product(dh2, dz, false, l3.W, false);
    dh2 = (h2.array() > 0.f).select(dh2, 0.f);
    product(l2.dW, dh2, true, h1, false);
    l2.db = dh2.colwise().sum();
    product(dh1, dh2, false, l2.W, false);
    dh1 = (h1.array() > 0.f).select(dh1, 0.f);
    product(l1.dW, dh1, true, x, false);
    l1.db = dh1.colwise().sum();
    // SGD with momentum
    l1.sgd(0.02f, 0.9f);
    l2.sgd(0.02f, 0.9f);
    l3.sgd(0.02f, 0.9f);
  }
  cpu.report(state);
  set_flops(state, mlp_flops(batch));
}

void BM_Linear21_rawEigen(benchmark::State& state) {
  bench::set_threads(1);
  Mat W = Mat::Random(1, 2), dW(1, 2);
  Vec b = Vec::Random(1), db(1);
  Mat x = Mat::Random(4, 2), y = Mat::Random(4, 1), p(4, 1), dp(4, 1);
  ProcessCpu cpu;
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
  cpu.report(state);
}

// ---- the summary: medians and ratios --------------------------------------------------------------
/// Console output as usual, plus each benchmark's median kept for the summary table.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  struct Median {
    double wall_us = NAN, cpu_us = NAN;  // cpu_us: all threads of the process, per step
  };
  std::map<std::string, Median> medians;  // "MLP/batch:64/threads:1/tinytorch" -> medians
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Aggregate || r.aggregate_name != "median") continue;
      Median& m = medians[r.run_name.function_name];
      m.wall_us = r.GetAdjustedRealTime();  // every benchmark reports in µs
      auto it = r.counters.find("cpu_us");
      if (it != r.counters.end()) m.cpu_us = it->second.value;
    }
  }
  void print_summary() const {
    std::printf("\nSummary: medians of the wall time per step, their ratios (< 1: tinytorch is faster), and in\n"
                "brackets the CPU time of all the process's threads per step (busy-waiting shows there):\n");
    std::printf("%-27s %20s %20s %20s %9s %7s\n", "step", "tinytorch", "libtorch", "raw Eigen", "tt/torch", "tt/raw");
    for (const char* cfg : {"MLP/batch:64/threads:1", "MLP/batch:64/threads:2", "MLP/batch:1024/threads:1",
                            "MLP/batch:1024/threads:2", "Linear21/batch:4/threads:1"}) {
      const std::string c = cfg;
      auto get = [&](const char* impl) {
        auto it = medians.find(c + "/" + impl);
        return it == medians.end() ? Median{} : it->second;
      };
      const Median t = get("tinytorch"), l = get("libtorch"), r = get("rawEigen");
      if (std::isnan(t.wall_us) && std::isnan(l.wall_us) && std::isnan(r.wall_us)) continue;
      auto cell = [](const Median& m) {  // "1736 us [1733]", "7.71 us [7.68]"
        char b[64];
        const int digits = m.wall_us >= 100 ? 0 : 2;
        std::snprintf(b, sizeof b, "%.*f us [%.*f]", digits, m.wall_us, digits, m.cpu_us);
        return std::string(b);
      };
      std::printf("%-27s %20s %20s %20s %8.2fx %6.2fx\n", cfg, cell(t).c_str(), cell(l).c_str(), cell(r).c_str(),
                  t.wall_us / l.wall_us, t.wall_us / r.wall_us);
    }
    std::printf("load average: ");
    if (FILE* f = std::fopen("/proc/loadavg", "r")) {
      char buf[128] = {0};
      if (std::fgets(buf, sizeof buf, f)) std::printf("%s", buf);
      std::fclose(f);
    } else {
      std::printf("(unknown)\n");
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  // Defaults, each overridable on the command line (a later flag wins).
  if (!bench::initialize(argc, argv, {"--benchmark_repetitions=10", "--benchmark_enable_random_interleaving=true",
                                       "--benchmark_report_aggregates_only=true", "--benchmark_min_time=0.2"}))
    return 1;

  for (int64_t batch : {64, 1024})
    for (int threads : {1, 2}) {
      const std::string cfg = "MLP/batch:" + std::to_string(batch) + "/threads:" + std::to_string(threads) + "/";
      benchmark::RegisterBenchmark((cfg + "tinytorch").c_str(), BM_Mlp_tinytorch, batch, threads)
          ->Unit(benchmark::kMicrosecond)->UseRealTime();
      benchmark::RegisterBenchmark((cfg + "libtorch").c_str(), BM_Mlp_libtorch, batch, threads)
          ->Unit(benchmark::kMicrosecond)->UseRealTime();
      benchmark::RegisterBenchmark((cfg + "rawEigen").c_str(), BM_Mlp_rawEigen, batch, threads)
          ->Unit(benchmark::kMicrosecond)->UseRealTime();
    }
  benchmark::RegisterBenchmark("Linear21/batch:4/threads:1/tinytorch", BM_Linear21_tinytorch)
      ->Unit(benchmark::kMicrosecond)->UseRealTime();
  benchmark::RegisterBenchmark("Linear21/batch:4/threads:1/libtorch", BM_Linear21_libtorch)
      ->Unit(benchmark::kMicrosecond)->UseRealTime();
  benchmark::RegisterBenchmark("Linear21/batch:4/threads:1/rawEigen", BM_Linear21_rawEigen)
      ->Unit(benchmark::kMicrosecond)->UseRealTime();

  const bench::LoadWatch watch;
  const double cpu0 = bench::LoadWatch::process_cpu_seconds();
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_summary();
  benchmark::Shutdown();
  watch.report(stdout, bench::LoadWatch::process_cpu_seconds() - cpu0, 2, "the threads:2 rows");
  return 0;
}

// bench/bench_gpt_libtorch.cpp — one training step of the GPT of chapter 12 in tinytorch
// (examples/gpt.hpp) and in libtorch (PyTorch's C++ API: the same nanoGPT model written with
// torch::nn), interleaved in one run, on 1 and 2 threads.
//
// Built only when CMake finds Torch (Debian: libtorch-dev; its matrix products then run in
// OpenBLAS if libopenblas0-pthread is installed, else in the reference BLAS, which makes the
// comparison meaningless: the summary says which BLAS was loaded): see bench/CMakeLists.txt.
// The step (nanoGPT's train.py on its CPU settings for shakespeare_char): 4 layers, 4 heads,
// C = 128, T = 64, V = 65, batch 12, no biases, dropout 0; forward, cross-entropy, backward,
// clip_grad_norm_(1.0), AdamW with nanoGPT's two groups (weight decay 0.1 on matrices), gradients
// set to none. 3.97 GFLOP per step (6N + 12 L H Q T per token x 768 tokens, nanoGPT's
// estimate_mfu; train_gpt prints it). Random tokens: the speed does not depend on them.
// libtorch's model: nn::Embedding, nn::Linear(bias=false), torch::layer_norm with a weight only
// (libtorch 1.13's LayerNorm module has no bias=false), attention as nanoGPT's manual path
// (matmul, masked_fill, softmax, matmul: 1.13 has no scaled_dot_product_attention), torch::gelu,
// the tied head as matmul with wte's weight, torch::optim::AdamW with two param groups.
// Threads as bench_vs_libtorch: tinytorch::set_num_threads, torch::set_num_threads, and OpenBLAS's
// own pool; after a 2-thread libtorch run a 150 ms untimed pause lets OpenBLAS's workers sleep.
//
// Run (repetitions interleaved at random, a summary of medians and ratios at the end):
//   build/bin/bench_gpt_libtorch      # defaults: --benchmark_repetitions=10
//       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
//       --benchmark_min_time=0.5
// The row tinytorch_math runs tinytorch's step with attention on the composite path
// (sdpa_kernel(SDPBackend::MATH)) instead of the fused kernel, to show what the fusion buys.
// Chapter: chapters/12-model-parallelism.md (12.3, 12.5). Issue 23's target: tinytorch's tokens/s >= PyTorch 1.13's.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include "libtorch_common.hpp"  // bench::set_threads, bench::initialize
#include "load_watch.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <climits>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <tinytorch/tinytorch.hpp>
#include <torch/torch.h>
#include <vector>

#include "../examples/gpt.hpp"

namespace tt = tinytorch;

namespace {

constexpr int64_t kLayers = 4, kHeads = 4, kC = 128, kT = 64, kV = 65, kBatch = 12;
constexpr double kFlopsPerStep = (6.0 * 795904 + 12.0 * kLayers * kHeads * (kC / kHeads) * kT) * kBatch * kT;

void set_counters(benchmark::State& state) {
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(kBatch * kT), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP"] = benchmark::Counter(kFlopsPerStep / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- tinytorch ------------------------------------------------------------------------------------
/// `math`: scaled_dot_product_attention through the composite path (SDPBackend::MATH) instead of
/// the fused kernel it picks by default (the row "tinytorch_math").
void BM_Gpt_tinytorch(benchmark::State& state, int threads, bool math) {
  bench::set_threads(threads);
  std::optional<tt::nn::attention::sdpa_kernel> only_math;
  if (math) only_math.emplace(tt::nn::attention::SDPBackend::MATH);
  tt::manual_seed(0);
  examples::GPTConfig cfg;  // nanoGPT's CPU settings: the defaults
  examples::GPT model(cfg);
  auto opt = model.configure_optimizers(0.1, 1e-3, {0.9, 0.99});
  const tt::Tensor x = tt::randint(0, kV, {kBatch, kT}), y = tt::randint(0, kV, {kBatch, kT});
  const std::vector<tt::Tensor> params = model.parameters();
  for (auto _ : state) {
    tt::Tensor loss = model.loss(model(x), y);
    loss.backward();
    tt::nn::utils::clip_grad_norm_(params, 1.0);
    opt->step();
    opt->zero_grad();
    benchmark::DoNotOptimize(loss.impl());
  }
  set_counters(state);
}

// ---- libtorch: nanoGPT in torch::nn ------------------------------------------------------------------
struct TorchBlockImpl : torch::nn::Module {
  torch::Tensor ln_1, ln_2;  // LayerNorm weights (no bias, as nanoGPT's bias=False)
  torch::nn::Linear c_attn{nullptr}, attn_proj{nullptr}, c_fc{nullptr}, mlp_proj{nullptr};
  torch::Tensor mask;  // (T, T): true above the diagonal
  TorchBlockImpl() {
    ln_1 = register_parameter("ln_1", torch::ones({kC}));
    ln_2 = register_parameter("ln_2", torch::ones({kC}));
    c_attn = register_module("c_attn", torch::nn::Linear(torch::nn::LinearOptions(kC, 3 * kC).bias(false)));
    attn_proj = register_module("attn_proj", torch::nn::Linear(torch::nn::LinearOptions(kC, kC).bias(false)));
    c_fc = register_module("c_fc", torch::nn::Linear(torch::nn::LinearOptions(kC, 4 * kC).bias(false)));
    mlp_proj = register_module("mlp_proj", torch::nn::Linear(torch::nn::LinearOptions(4 * kC, kC).bias(false)));
    mask = torch::ones({kT, kT}, torch::kBool).triu(1);
  }
  torch::Tensor attn(const torch::Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1), hs = kC / kHeads;
    auto qkv = c_attn(x).split(kC, 2);
    auto heads = [&](const torch::Tensor& t) { return t.view({B, T, kHeads, hs}).transpose(1, 2); };
    const torch::Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
    torch::Tensor att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hs)));
    att = torch::softmax(att.masked_fill(mask, -INFINITY), -1);
    return attn_proj(torch::matmul(att, v).transpose(1, 2).contiguous().view({B, T, kC}));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = x + attn(torch::layer_norm(x, {kC}, ln_1, {}, 1e-5));
    return x + mlp_proj(torch::gelu(c_fc(torch::layer_norm(x, {kC}, ln_2, {}, 1e-5))));
  }
};
TORCH_MODULE(TorchBlock);

struct TorchGptImpl : torch::nn::Module {
  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  std::vector<TorchBlock> blocks;
  torch::Tensor ln_f;
  TorchGptImpl() {
    wte = register_module("wte", torch::nn::Embedding(kV, kC));
    wpe = register_module("wpe", torch::nn::Embedding(kT, kC));
    for (int64_t i = 0; i < kLayers; ++i) blocks.push_back(register_module("h" + std::to_string(i), TorchBlock()));
    ln_f = register_parameter("ln_f", torch::ones({kC}));
    for (auto& p : parameters())
      if (p.dim() >= 2) torch::nn::init::normal_(p, 0.0, 0.02);
  }
  torch::Tensor forward(const torch::Tensor& idx) {
    torch::Tensor x = wte(idx) + wpe(torch::arange(idx.size(1)));
    for (auto& b : blocks) x = b->forward(x);
    return torch::matmul(torch::layer_norm(x, {kC}, ln_f, {}, 1e-5), wte->weight.t());
  }
};
TORCH_MODULE(TorchGpt);

void BM_Gpt_libtorch(benchmark::State& state, int threads) {
  bench::set_threads(threads);
  torch::manual_seed(0);
  TorchGpt model;
  std::vector<torch::Tensor> decay, no_decay;
  for (auto& p : model->parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(
                                 torch::optim::AdamWOptions(1e-3).betas({0.9, 0.99}).weight_decay(0.1)));
  groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(
                                    torch::optim::AdamWOptions(1e-3).betas({0.9, 0.99}).weight_decay(0.0)));
  torch::optim::AdamW opt(std::move(groups));
  const std::vector<torch::Tensor> params = model->parameters();
  const torch::Tensor x = torch::randint(0, kV, {kBatch, kT}, torch::kLong);
  const torch::Tensor y = torch::randint(0, kV, {kBatch, kT}, torch::kLong);
  for (auto _ : state) {
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x).view({-1, kV}), y.view({-1}));
    loss.backward();
    torch::nn::utils::clip_grad_norm_(params, 1.0);
    opt.step();
    for (torch::Tensor p : params) p.mutable_grad() = torch::Tensor();  // set to none, as PyTorch 2.x
    benchmark::DoNotOptimize(loss.data_ptr());
  }
  set_counters(state);
  if (threads > 1) std::this_thread::sleep_for(std::chrono::milliseconds(150));  // OpenBLAS's spinning workers
}

// ---- the summary ------------------------------------------------------------------------------------
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> median_ms;  // "GPT/threads:1/tinytorch" -> ms per step
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs)
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median")
        median_ms[r.run_name.function_name] = r.GetAdjustedRealTime();
  }
  void print_summary() const {
    std::printf("\nSummary: median wall time per training step (batch 12 x 64 tokens), tokens/s, and the ratio\n"
                "tinytorch/libtorch of the step times (< 1: tinytorch is faster):\n");
    std::printf("%-14s %22s %22s %10s\n", "GPT step", "tinytorch", "libtorch", "tt/torch");
    for (int threads : {1, 2}) {
      const std::string c = "GPT/threads:" + std::to_string(threads) + "/";
      auto get = [&](const char* impl) {
        auto it = median_ms.find(c + impl);
        return it == median_ms.end() ? NAN : it->second;
      };
      const double t = get("tinytorch"), l = get("libtorch");
      auto cell = [](double ms) {
        char b[64];
        std::snprintf(b, sizeof b, "%.1f ms %6.0f tok/s", ms, 768.0 / (ms / 1000.0));
        return std::string(b);
      };
      std::printf("threads:%-6d %22s %22s %9.2fx\n", threads, cell(t).c_str(), cell(l).c_str(), t / l);
    }
    std::printf("\ntinytorch's attention: the fused kernel (default) against the composite path (MATH):\n");
    for (int threads : {1, 2}) {
      const std::string c = "GPT/threads:" + std::to_string(threads) + "/";
      const auto f = median_ms.find(c + "tinytorch"), m = median_ms.find(c + "tinytorch_math");
      if (f == median_ms.end() || m == median_ms.end()) continue;
      std::printf("threads:%-6d fused %.1f ms, MATH %.1f ms per step: fused/MATH %.2fx\n", threads, f->second,
                  m->second, f->second / m->second);
    }
    Dl_info info{};
    void* sym = dlsym(RTLD_DEFAULT, "sgemm_");
    char real[4096] = "(not found)";
    if (sym && dladdr(sym, &info) && info.dli_fname && !realpath(info.dli_fname, real))
      std::snprintf(real, sizeof real, "%s", info.dli_fname);
    std::printf("BLAS behind libtorch's sgemm_: %s (the reference BLAS, libblas/libblas.so.3, makes libtorch slow: "
                "apt-get install libopenblas0-pthread)\n", real);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (!bench::initialize(argc, argv, {"--benchmark_repetitions=10", "--benchmark_enable_random_interleaving=true",
                                       "--benchmark_report_aggregates_only=true", "--benchmark_min_time=0.5"}))
    return 1;
  for (int threads : {1, 2}) {
    const std::string cfg = "GPT/threads:" + std::to_string(threads) + "/";
    benchmark::RegisterBenchmark((cfg + "tinytorch").c_str(), BM_Gpt_tinytorch, threads, false)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark((cfg + "tinytorch_math").c_str(), BM_Gpt_tinytorch, threads, true)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark((cfg + "libtorch").c_str(), BM_Gpt_libtorch, threads)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  const bench::LoadWatch watch;
  const double cpu0 = bench::LoadWatch::process_cpu_seconds();
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_summary();
  benchmark::Shutdown();
  watch.report(stdout, bench::LoadWatch::process_cpu_seconds() - cpu0, 2, "the threads:2 rows");
  return 0;
}

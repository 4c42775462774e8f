// bench/bench_elementwise.cpp — elementwise ops on 1e7 float32 values, tinytorch beside raw Eigen.
//
// Each op twice, same flags (-march=native), one thread:
//   tinytorch   c = a + b;  c = a * 2;  c = relu(a);  a.add_(b)   (a new output each time, as an
//               eager framework must allocate one; the CPU caching allocator of core/allocator.hpp
//               hands back the block the previous iteration freed), and two strided adds that
//               take backend/cpu's strided loop (an Indexer walk): a (2500, 4000) + a row b
//               (4000,) broadcast down the rows, and a (2000, 5000) + the transpose of a (5000, 2000)
//   raw Eigen   the same loops on Eigen::ArrayXf written into a preallocated output (the floor:
//               no allocation at all).
// Bytes moved per iteration: 3 x 4e7 for a binary op, 2 x 4e7 for a unary one; reported as GB/s
// (the broadcast add reads b from cache: counted as 2 x 4e7).
// Run (interleaved repetitions, quote medians and the ratio raw/tinytorch):
//   build/bin/bench_elementwise --benchmark_repetitions=10 --benchmark_enable_random_interleaving=true
//   (add --benchmark_report_aggregates_only=true for the summary only)
// Issue 9 §4's target: tinytorch >= 0.95x raw Eigen's throughput. Chapter: chapters/01-training-loop.md.
#include <benchmark/benchmark.h>

#include "benchmark_main.hpp"

#include <Eigen/Core>
#include <tinytorch/tinytorch.hpp>

namespace tt = tinytorch;

namespace {

constexpr int64_t kN = 10'000'000;

void set_bytes(benchmark::State& state, int tensors) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * tensors * kN * static_cast<int64_t>(sizeof(float)));
}

struct Inputs {
  tt::Tensor a, b;
  Inputs() {
    tt::set_num_threads(1);
    tt::Generator g(0);
    a = tt::randn({kN}, {}, &g);
    b = tt::randn({kN}, {}, &g);
  }
};

Inputs& inputs() {
  static Inputs in;
  return in;
}

Eigen::Map<const Eigen::ArrayXf> eig(const tt::Tensor& t) { return {t.data_ptr<float>(), t.numel()}; }

/// Times `op()`, which returns the tensor it wrote; `tensors`: how many tensors of kN floats one
/// call reads and writes (for the GB/s counter).
template <class Op>
void time_tinytorch(benchmark::State& state, int tensors, Op op) {
  for (auto _ : state) {
    const tt::Tensor c = op();
    benchmark::DoNotOptimize(c.data_ptr<float>());
  }
  set_bytes(state, tensors);
}

/// Times `op(c)`, which writes the preallocated Eigen output c (initially a copy of a).
template <class Op>
void time_eigen(benchmark::State& state, int tensors, Op op) {
  Eigen::ArrayXf c = eig(inputs().a);
  for (auto _ : state) {
    op(c);
    benchmark::DoNotOptimize(c.data());
  }
  set_bytes(state, tensors);
}

void BM_Add_tinytorch(benchmark::State& state) {
  auto& in = inputs();
  time_tinytorch(state, 3, [&] { return in.a + in.b; });
}
void BM_Add_rawEigen(benchmark::State& state) {
  auto& in = inputs();
  time_eigen(state, 3, [&](Eigen::ArrayXf& c) { c = eig(in.a) + eig(in.b); });
}

void BM_MulScalar_tinytorch(benchmark::State& state) {
  auto& in = inputs();
  time_tinytorch(state, 2, [&] { return in.a * 2.0; });
}
void BM_MulScalar_rawEigen(benchmark::State& state) {
  auto& in = inputs();
  time_eigen(state, 2, [&](Eigen::ArrayXf& c) { c = eig(in.a) * 2.0f; });
}

void BM_Relu_tinytorch(benchmark::State& state) {
  auto& in = inputs();
  time_tinytorch(state, 2, [&] { return tt::relu(in.a); });
}
void BM_Relu_rawEigen(benchmark::State& state) {
  auto& in = inputs();
  time_eigen(state, 2, [&](Eigen::ArrayXf& c) { c = eig(in.a).max(0.0f); });
}

using RowMajor = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
Eigen::Map<const RowMajor> eig2(const tt::Tensor& t, int64_t rows, int64_t cols) {
  return {t.data_ptr<float>(), rows, cols};
}

void BM_AddBroadcastRow_tinytorch(benchmark::State& state) {
  auto& in = inputs();
  const tt::Tensor a = in.a.view({2500, 4000});
  const tt::Tensor row = in.b.narrow(0, 0, 4000);
  time_tinytorch(state, 2, [&] { return a + row; });
}
void BM_AddBroadcastRow_rawEigen(benchmark::State& state) {
  auto& in = inputs();
  const auto a = eig2(in.a, 2500, 4000);
  const Eigen::Map<const Eigen::Array<float, 1, Eigen::Dynamic>> row(in.b.data_ptr<float>(), 4000);
  RowMajor c(2500, 4000);
  for (auto _ : state) {
    c = a.rowwise() + row;
    benchmark::DoNotOptimize(c.data());
  }
  set_bytes(state, 2);
}

void BM_AddTransposed_tinytorch(benchmark::State& state) {
  auto& in = inputs();
  const tt::Tensor a = in.a.view({2000, 5000});
  const tt::Tensor bt = in.b.view({5000, 2000}).t();
  time_tinytorch(state, 3, [&] { return a + bt; });
}
void BM_AddTransposed_rawEigen(benchmark::State& state) {
  auto& in = inputs();
  const auto a = eig2(in.a, 2000, 5000);
  const auto b = eig2(in.b, 5000, 2000);
  RowMajor c(2000, 5000);
  for (auto _ : state) {
    c = a + b.transpose();
    benchmark::DoNotOptimize(c.data());
  }
  set_bytes(state, 3);
}

void BM_AddInplace_tinytorch(benchmark::State& state) {
  auto& in = inputs();
  tt::Tensor c = in.a.clone();
  time_tinytorch(state, 3, [&]() -> tt::Tensor& { return c.add_(in.b); });
}
void BM_AddInplace_rawEigen(benchmark::State& state) {
  auto& in = inputs();
  time_eigen(state, 3, [&](Eigen::ArrayXf& c) { c += eig(in.b); });
}

}  // namespace

BENCHMARK(BM_Add_tinytorch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Add_rawEigen)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MulScalar_tinytorch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MulScalar_rawEigen)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Relu_tinytorch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Relu_rawEigen)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AddInplace_tinytorch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AddInplace_rawEigen)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AddBroadcastRow_tinytorch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AddBroadcastRow_rawEigen)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AddTransposed_tinytorch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AddTransposed_rawEigen)->Unit(benchmark::kMillisecond);
// BENCHMARK_MAIN, then the load line and warning of load_watch.hpp (bench/benchmark_main.hpp).
int main(int argc, char** argv) { return bench::benchmark_main(argc, argv, 1, "the times (one thread)"); }

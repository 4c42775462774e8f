// bench/bench_cuda.cu — how fast our CUDA kernels are next to the GPU's own ceilings (Google Benchmark, nvcc).
//
// What it measures (issue 7, item 6; chapter 10 prints the table it writes):
//   elementwise  out = a + b, float, n = 2^24, 2^25, 2^26 (backend::cuda::binary_kernel, dense path), beside
//                a device-to-device cudaMemcpy moving the same bytes. "Bytes" counts reads plus writes:
//                the add reads 2n and writes n floats (12n bytes); the copy copies 1.5n floats (reads 6n,
//                writes 6n bytes), so both move 12n bytes and ratio_to_copy = t_copy / t_add is the
//                bandwidth ratio. Target: >= 0.8.
//   matmul       C = A B, square n x n float, row-major: our ladder from backend/cuda/gemm.cuh
//                (gemm_naive at n = 1024 only: ~1% of cuBLAS; gemm_tiled and gemm_register_blocked at
//                1024, 2048, 4096, 8192) beside cublasSgemm with CUBLAS_DEFAULT_MATH (no TF32: TF32 would
//                make "cuBLAS SGEMM" ~4x faster than FP32 math and the ratio meaningless). Row-major
//                C = A B is column-major C^T = B^T A^T, so cuBLAS gets (B, A) with m = N, n = M.
//                GFLOP/s = 2 n^3 / t; ratio_to_cublas = t_cublas / t_ours. Target: register-blocked
//                >= 0.5 at n = 4096. Each of our results is also compared with cuBLAS's C (max_rel_err).
//   16-bit       through the Tensor API on cuda:0 (chapter 11.2): out = a + b at n = 2^24 and C = A B at
//                n = 2048 in float32, in bfloat16 with the 16-bit kernels (load 16 bits, compute in float,
//                store 16 bits), and in bfloat16 through float32 copies (the CPU's way: convert both
//                operands, run the float32 op, convert the result). The add moves 6n bytes in bfloat16
//                against 12n in float32, so ratio_to_f32 = t_f32 / t_bf16 should approach 2; the copies
//                add 4 passes over memory. No target: the figures are what chapter 11 cites.
//   MLP step     one training step of bench/bench_mlp.cpp's MLP on cuda:0 through the Tensor API:
//                784-256-128-10, ReLU, float, batch 64, CrossEntropyLoss, SGD(lr=0.02, momentum=0.9):
//                zero_grad, forward, loss, backward, step (64.45 MFLOP; host launch costs dominate at
//                this size, so it measures the framework's per-op overhead on a GPU). Beside it,
//                bench/mlp_step_torch.py times the same step in PyTorch eager on the same GPU; its
//                median goes in with --torch-mlp-ms MS (scripts/gpu_check.sh does this) and the
//                table prints the ratio t_torch / t_ours. Target: >= 1 (no slower than PyTorch eager).
// Timing: cudaEvents around each iteration (benchmark's manual time), one warm-up call per run,
// 10 repetitions; the reported figure is the median over every timed iteration.
// Run:  build/bin/bench_cuda [--markdown FILE] [--torch-mlp-ms MS] [benchmark flags, e.g. --benchmark_filter=matmul]
//       With --markdown it also writes a Markdown table with the ratios and the targets
//       (scripts/gpu_check.sh writes bench/results/gpu-<date>.md with it).
// Without a CUDA device it prints "SKIPPED: no CUDA device (...)" and exits 77, as the CUDA tests do.
// Reference: CUDA.md §6 (siboehm's SGEMM worklog: kernel 6 ~ 0.50-0.62x cuBLAS on an H100), cuBLAS
// docs (cublasSgemm, cublasSetMathMode: CUBLAS_DEFAULT_MATH uses no Tensor Core / TF32 acceleration
// unless NVIDIA_TF32_OVERRIDE says otherwise), llm.c dev/cuda/common.h (benchmark_kernel).
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tinytorch/backend/cuda/elementwise.cuh"
#include "tinytorch/backend/cuda/gemm.cuh"
#include "tinytorch/tinytorch.hpp"

namespace bc = tinytorch::backend::cuda;

namespace {

#define BENCH_CUDA(call)                                                                          \
  do {                                                                                            \
    const cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "bench_cuda: %s failed: %s (%s:%d)\n", #call, cudaGetErrorString(e_), \
                   __FILE__, __LINE__);                                                           \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)
#define BENCH_CUBLAS(call)                                                                          \
  do {                                                                                              \
    const cublasStatus_t s_ = (call);                                                               \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                              \
      std::fprintf(stderr, "bench_cuda: %s failed: status %d (%s:%d)\n", #call, static_cast<int>(s_), \
                   __FILE__, __LINE__);                                                             \
      std::exit(1);                                                                                 \
    }                                                                                               \
  } while (0)

// ---- device buffers filled with reproducible values in [-1, 1) --------------------------------
template <class T>
__global__ void bench_init_kernel(T* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += gridDim.x * (int64_t)blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;  // a hash, not a good RNG: enough here
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    p[i] = static_cast<T>((h >> 8) * (1.0 / 8388608.0) - 1.0);
  }
}

struct DeviceBuffer {
  float* p = nullptr;
  int64_t n = 0;
  explicit DeviceBuffer(int64_t count, uint32_t seed) : n(count) {
    BENCH_CUDA(cudaMalloc(&p, static_cast<size_t>(n) * sizeof(float)));  // 256-byte aligned: float4 is fine
    bc::launch_kernel("bench_init_kernel", bench_init_kernel<float>, bc::grid_1d(n), dim3(256), 0, p, n, seed);
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// ---- timing ------------------------------------------------------------------------------------
struct Timer {
  cudaEvent_t start, stop;
  Timer() {
    BENCH_CUDA(cudaEventCreate(&start));
    BENCH_CUDA(cudaEventCreate(&stop));
  }
  ~Timer() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  /// Milliseconds fn() takes on the GPU (legacy default stream, as every launch of ours).
  double time_ms(const std::function<void()>& fn) {
    BENCH_CUDA(cudaEventRecord(start));
    fn();
    BENCH_CUDA(cudaEventRecord(stop));
    BENCH_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
    return ms;
  }
};

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// Every timed iteration of a benchmark, by name: the medians in the Markdown table come from these.
std::map<std::string, std::vector<double>>& samples() {
  static std::map<std::string, std::vector<double>> s;
  return s;
}
double median_ms(const std::string& name) { return median(samples()[name]); }

/// The benchmark loop shared by every case: warm up once, then time each iteration with events.
void run_timed(benchmark::State& state, const std::string& name, const std::function<void()>& fn) {
  Timer timer;
  fn();  // warm-up: first-launch costs, clocks up, caches and TLB filled
  BENCH_CUDA(cudaDeviceSynchronize());
  for (auto _ : state) {
    const double ms = timer.time_ms(fn);
    state.SetIterationTime(ms * 1e-3);
    samples()[name].push_back(ms);
  }
}

cublasHandle_t cublas() {
  static cublasHandle_t h = [] {
    cublasHandle_t handle;
    BENCH_CUBLAS(cublasCreate(&handle));
    BENCH_CUBLAS(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
    return handle;
  }();
  return h;
}

/// Row-major C (M x N) = A (M x K) B (K x N) with cuBLAS: column-major C^T = B^T A^T.
void cublas_sgemm(int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C) {
  const float one = 1.0f, zero = 0.0f;
  BENCH_CUBLAS(cublasSgemm(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
                           static_cast<int>(K), &one, B, static_cast<int>(N), A, static_cast<int>(K), &zero, C,
                           static_cast<int>(N)));
}

// ---- elementwise -------------------------------------------------------------------------------
std::string add_name(int64_t n) { return "add/" + std::to_string(n); }
std::string copy_name(int64_t n) { return "copy/" + std::to_string(n); }

void BM_copy(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int64_t count = n * 3 / 2;  // 1.5 n floats: reads + writes = 12 n bytes, as the add
  DeviceBuffer src(count, 1), dst(count, 2);
  run_timed(state, copy_name(n), [&] {
    BENCH_CUDA(cudaMemcpy(dst.p, src.p, static_cast<size_t>(count) * sizeof(float), cudaMemcpyDeviceToDevice));
  });
  state.SetBytesProcessed(state.iterations() * 12 * n);
}

void BM_add(benchmark::State& state) {
  const int64_t n = state.range(0);
  DeviceBuffer a(n, 3), b(n, 4), out(n, 5);
  const tinytorch::Shape shape{n};
  const tinytorch::Strides strides{1};
  run_timed(state, add_name(n),
            [&] { bc::binary_kernel(a.p, strides, b.p, strides, out.p, shape, true, tinytorch::backend::AddOp{}); });
  state.SetBytesProcessed(state.iterations() * 12 * n);
  if (!samples()[copy_name(n)].empty())
    state.counters["ratio_to_copy"] = median_ms(copy_name(n)) / median_ms(add_name(n));
}

// ---- 16-bit ops through the Tensor API -----------------------------------------------------------
enum class Half16 { f32, bf16, bf16_via_f32 };
const char* half16_label(Half16 h) {
  switch (h) {
    case Half16::f32: return "float32";
    case Half16::bf16: return "bf16";
    case Half16::bf16_via_f32: return "bf16_via_f32";
  }
  return "?";
}
std::string half16_name(const char* op, Half16 h, int64_t n) {
  return std::string(op) + "_" + half16_label(h) + "/" + std::to_string(n);
}
/// a + b (matmul false, n elements) or A B (matmul true, n x n) on cuda:0 in the given form.
void BM_half16(benchmark::State& state, bool matmul, Half16 h) {
  namespace tt = tinytorch;
  const int64_t n = state.range(0);
  const tt::Shape shape = matmul ? tt::Shape{n, n} : tt::Shape{n};
  tt::manual_seed(0);
  const tt::DType dt = h == Half16::f32 ? tt::kFloat32 : tt::kBFloat16;
  const tt::Tensor a = tt::randn(shape).to(dt).cuda(0), b = tt::randn(shape).to(dt).cuda(0);
  tt::Tensor out;
  auto op = [&](const tt::Tensor& x, const tt::Tensor& y) { return matmul ? x.matmul(y) : x + y; };
  run_timed(state, half16_name(matmul ? "matmul" : "add", h, n), [&] {
    if (h == Half16::bf16_via_f32) out = op(a.to(tt::kFloat32), b.to(tt::kFloat32)).to(tt::kBFloat16);
    else out = op(a, b);
  });
  if (!matmul) state.SetBytesProcessed(state.iterations() * 3 * n * (h == Half16::f32 ? 4 : 2));
}

// ---- matmul ------------------------------------------------------------------------------------
enum class Gemm { cublas, naive, tiled, register_blocked };
const char* gemm_label(Gemm g) {
  switch (g) {
    case Gemm::cublas: return "cublas";
    case Gemm::naive: return "naive";
    case Gemm::tiled: return "tiled";
    case Gemm::register_blocked: return "register_blocked";
  }
  return "?";
}
std::string gemm_name(Gemm g, int64_t n) { return std::string("matmul_") + gemm_label(g) + "/" + std::to_string(n); }

void run_gemm(Gemm g, int64_t n, const float* A, const float* B, float* C) {
  switch (g) {
    case Gemm::cublas: cublas_sgemm(n, n, n, A, B, C); break;
    case Gemm::naive: bc::gemm_naive<float>(n, n, n, 1.0f, A, n, false, B, n, false, 0.0f, C, n); break;
    case Gemm::tiled: bc::gemm_tiled<float>(n, n, n, 1.0f, A, n, false, B, n, false, 0.0f, C, n); break;
    case Gemm::register_blocked:
      bc::gemm_register_blocked<float>(n, n, n, 1.0f, A, n, false, B, n, false, 0.0f, C, n);
      break;
  }
}

// max |C - C_cublas| / max |C_cublas|, computed once per (kernel, n).
std::map<std::string, double>& max_rel_errors() {
  static std::map<std::string, double> e;
  return e;
}

void BM_matmul(benchmark::State& state, Gemm g) {
  const int64_t n = state.range(0);
  DeviceBuffer A(n * n, 6), B(n * n, 7), C(n * n, 8);
  const std::string name = gemm_name(g, n);
  run_timed(state, name, [&] { run_gemm(g, n, A.p, B.p, C.p); });
  const double flops = 2.0 * n * n * n;
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (g == Gemm::cublas) return;
  const std::string ref = gemm_name(Gemm::cublas, n);
  if (!samples()[ref].empty()) state.counters["ratio_to_cublas"] = median_ms(ref) / median_ms(name);
  if (!max_rel_errors().count(name)) {  // check the result against cuBLAS once
    DeviceBuffer R(n * n, 9);
    cublas_sgemm(n, n, n, A.p, B.p, R.p);
    std::vector<float> c(static_cast<size_t>(n * n)), r(c.size());
    BENCH_CUDA(cudaMemcpy(c.data(), C.p, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(r.data(), R.p, r.size() * sizeof(float), cudaMemcpyDeviceToHost));
    double diff = 0, scale = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      const double d = std::fabs(static_cast<double>(c[i]) - r[i]);
      diff = std::isnan(d) ? INFINITY : std::max(diff, d);
      scale = std::max(scale, std::fabs(static_cast<double>(r[i])));
    }
    max_rel_errors()[name] = diff / scale;
  }
  state.counters["max_rel_err"] = max_rel_errors()[name];
}

// ---- MLP training step on cuda:0 through the Tensor API (bench/bench_mlp.cpp's model) ------------
constexpr int64_t kMlpBatch = 64, kMlpIn = 784, kMlpH1 = 256, kMlpH2 = 128, kMlpOut = 10;
const char* const kMlpName = "mlp_step";

void BM_mlp_step(benchmark::State& state) {
  namespace tt = tinytorch;
  tt::manual_seed(0);
  auto model = std::make_shared<tt::nn::Sequential>(
      std::make_shared<tt::nn::Linear>(kMlpIn, kMlpH1), std::make_shared<tt::nn::ReLU>(),
      std::make_shared<tt::nn::Linear>(kMlpH1, kMlpH2), std::make_shared<tt::nn::ReLU>(),
      std::make_shared<tt::nn::Linear>(kMlpH2, kMlpOut));
  const tt::Device dev = tt::Device::cuda(0);
  model->to(dev);
  tt::optim::SGD opt(model->parameters(), 0.02, 0.9);
  tt::nn::CrossEntropyLoss loss_fn;
  const tt::Tensor x = tt::rand({kMlpBatch, kMlpIn}).to(dev);
  const tt::Tensor y = tt::randint(0, kMlpOut, {kMlpBatch}).to(dev);
  tt::Tensor loss;
  run_timed(state, kMlpName, [&] {
    opt.zero_grad();
    loss = loss_fn(model->forward(x), y);
    loss.backward();
    opt.step();
  });
  const double l = loss.item<double>();  // a copy to the host: also checks the step ran
  if (!std::isfinite(l)) state.SkipWithError("mlp_step: the loss is not finite");
  state.counters["loss"] = l;
}

// ---- the Markdown report -----------------------------------------------------------------------
const std::vector<int64_t> kAddSizes = {int64_t(1) << 24, int64_t(1) << 25, int64_t(1) << 26};
const std::vector<int64_t> kGemmSizes = {1024, 2048, 4096, 8192};
constexpr int64_t kHalf16AddSize = int64_t(1) << 24, kHalf16MatmulSize = 2048;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

bool write_markdown(const char* path, const std::string& device, const std::string& versions, double torch_mlp_ms) {
  FILE* f = std::fopen(path, "w");
  if (!f) {
    std::fprintf(stderr, "bench_cuda: --markdown: cannot write '%s': %s\n", path, std::strerror(errno));
    return false;
  }
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::fprintf(f, "# GPU benchmark, %s\n\n%s; %s. Written by `bench_cuda --markdown` (bench/bench_cuda.cu):\n",
               date, device.c_str(), versions.c_str());
  std::fprintf(f, "medians over every timed iteration (cudaEvents, one warm-up per run, 10 repetitions).\n\n");
  std::fprintf(f, "## Elementwise add vs device-to-device copy (float; GB/s counts reads + writes)\n\n");
  std::fprintf(f, "| n | add ms | add GB/s | copy ms | copy GB/s | add / copy | target >= 0.8 |\n|---|---|---|---|---|---|---|\n");
  bool add_pass = true, add_run = true;
  for (int64_t n : kAddSizes) {
    const double ta = median_ms(add_name(n)), tc = median_ms(copy_name(n));
    const double bytes = 12.0 * n, ratio = tc / ta;
    const bool pass = ratio >= 0.8;
    add_pass = add_pass && pass;
    add_run = add_run && !std::isnan(ratio);
    std::fprintf(f, "| 2^%d | %.3f | %.0f | %.3f | %.0f | %.2f | %s |\n", static_cast<int>(std::log2(n)), ta,
                 bytes / ta * 1e-6, tc, bytes / tc * 1e-6, ratio, std::isnan(ratio) ? "not run" : pass ? "PASS" : "FAIL");
  }
  std::fprintf(f, "\n## Matmul C = A B (float, n x n, row-major) vs cublasSgemm, CUBLAS_DEFAULT_MATH (no TF32)\n\n");
  std::fprintf(f, "| kernel | n | ms | GFLOP/s | / cuBLAS | max rel. err vs cuBLAS |\n|---|---|---|---|---|---|\n");
  for (int64_t n : kGemmSizes) {
    const double tref = median_ms(gemm_name(Gemm::cublas, n));
    for (Gemm g : {Gemm::cublas, Gemm::naive, Gemm::tiled, Gemm::register_blocked}) {
      const std::string name = gemm_name(g, n);
      if (samples()[name].empty()) continue;
      const double t = median_ms(name);
      std::fprintf(f, "| %s | %lld | %.3f | %.0f | %s | %s |\n", gemm_label(g), static_cast<long long>(n), t,
                   2.0 * n * n * n / t * 1e-6, g == Gemm::cublas ? "1" : fmt("%.3f", tref / t).c_str(),
                   g == Gemm::cublas ? "-" : fmt("%.1e", max_rel_errors()[name]).c_str());
    }
  }
  std::fprintf(f, "\n## 16-bit ops on cuda:0 through the Tensor API (chapter 11.2)\n\n");
  std::fprintf(f, "| op | n | float32 ms | bfloat16 ms | bfloat16 via float32 copies ms | float32 / bfloat16 | "
                  "copies / bfloat16 |\n|---|---|---|---|---|---|---|\n");
  for (const char* op : {"add", "matmul"}) {
    const int64_t n = std::strcmp(op, "add") == 0 ? kHalf16AddSize : kHalf16MatmulSize;
    const double t32 = median_ms(half16_name(op, Half16::f32, n)), t16 = median_ms(half16_name(op, Half16::bf16, n)),
                 tvia = median_ms(half16_name(op, Half16::bf16_via_f32, n));
    std::fprintf(f, "| %s | %lld | %.3f | %.3f | %.3f | %.2f | %.2f |\n", op, static_cast<long long>(n), t32, t16,
                 tvia, t32 / t16, tvia / t16);
  }
  const double r4096 = median_ms(gemm_name(Gemm::cublas, 4096)) / median_ms(gemm_name(Gemm::register_blocked, 4096));
  const bool gemm_pass = r4096 >= 0.5;
  std::fprintf(f, "\n## Targets (issue 7)\n\n| target | measured | result |\n|---|---|---|\n");
  std::fprintf(f, "| elementwise add >= 0.8x device-to-device copy (every n above) | see the first table | %s |\n",
               !add_run ? "not run" : add_pass ? "PASS" : "FAIL");
  std::fprintf(f, "| register-blocked matmul >= 0.5x cuBLAS SGEMM at n = 4096 | %.3f | %s |\n", r4096,
               std::isnan(r4096) ? "not run" : gemm_pass ? "PASS" : "FAIL");
  const double t_mlp = median_ms(kMlpName), r_mlp = torch_mlp_ms / t_mlp;
  std::fprintf(f, "| MLP step (784-256-128-10, batch 64, SGD) no slower than PyTorch eager: torch / ours >= 1 | "
                  "%.3f ms ours, %s PyTorch: %.2f | %s |\n",
               t_mlp, std::isnan(torch_mlp_ms) ? "not measured" : fmt("%.3f ms", torch_mlp_ms).c_str(), r_mlp,
               std::isnan(r_mlp) ? "not run" : r_mlp >= 1.0 ? "PASS" : "FAIL");
  std::fclose(f);
  std::printf("bench_cuda: wrote %s\n", path);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device (%s)\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "cudaGetDeviceCount returned 0");
    return 77;
  }
  // Our own flag, taken out before Google Benchmark sees the rest.
  const char* markdown = nullptr;
  double torch_mlp_ms = NAN;  // --torch-mlp-ms: bench/mlp_step_torch.py's median, for the MLP target
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--markdown") == 0) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_cuda: --markdown needs a file name\n");
        return 2;
      }
      markdown = argv[++i];
    } else if (std::strcmp(argv[i], "--torch-mlp-ms") == 0) {
      char* end = nullptr;
      if (i + 1 < argc) torch_mlp_ms = std::strtod(argv[i + 1], &end);
      if (i + 1 >= argc || end == argv[i + 1] || *end != '\0' || !(torch_mlp_ms > 0) || std::isinf(torch_mlp_ms)) {
        std::fprintf(stderr, "bench_cuda: --torch-mlp-ms: '%s' is not a positive number of milliseconds\n",
                     i + 1 < argc ? argv[i + 1] : "");
        return 2;
      }
      ++i;
    } else {
      args.push_back(argv[i]);
    }
  }
  int nargs = static_cast<int>(args.size());

  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0, cublas_version = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  BENCH_CUBLAS(cublasGetVersion(cublas(), &cublas_version));
  cublasMath_t mode;
  BENCH_CUBLAS(cublasGetMathMode(cublas(), &mode));
  const char* tf32_env = std::getenv("NVIDIA_TF32_OVERRIDE");
  const std::string device = std::string(prop.name) + ", " + std::to_string(prop.multiProcessorCount) + " SMs, sm_" +
                             std::to_string(prop.major) + std::to_string(prop.minor);
  const std::string versions = "driver " + std::to_string(driver) + ", runtime " + std::to_string(runtime) +
                               ", cuBLAS " + std::to_string(cublas_version) + ", cuBLAS math mode " +
                               (mode == CUBLAS_DEFAULT_MATH ? "CUBLAS_DEFAULT_MATH (TF32 off)" : "NOT DEFAULT") +
                               ", NVIDIA_TF32_OVERRIDE=" + (tf32_env ? tf32_env : "(unset)");
  std::printf("bench_cuda: %s\nbench_cuda: %s\n", device.c_str(), versions.c_str());

  // The reference of each pair is registered first, so that the ratio counters can read its medians.
  for (int64_t n : kAddSizes) {
    benchmark::RegisterBenchmark("copy_d2d", BM_copy)
        ->Arg(n)->UseManualTime()->Iterations(10)->Repetitions(10)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("add", BM_add)
        ->Arg(n)->UseManualTime()->Iterations(10)->Repetitions(10)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  }
  for (int64_t n : kGemmSizes) {
    for (Gemm g : {Gemm::cublas, Gemm::naive, Gemm::tiled, Gemm::register_blocked}) {
      if (g == Gemm::naive && n != 1024) continue;  // ~1% of cuBLAS: one size is enough
      benchmark::RegisterBenchmark((std::string("matmul_") + gemm_label(g)).c_str(), BM_matmul, g)
          ->Arg(n)->UseManualTime()->Iterations(n >= 4096 ? 1 : 3)->Repetitions(10)->ReportAggregatesOnly(true)
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (const bool matmul : {false, true}) {
    for (Half16 h : {Half16::f32, Half16::bf16, Half16::bf16_via_f32}) {
      benchmark::RegisterBenchmark((std::string(matmul ? "matmul_" : "add_") + half16_label(h)).c_str(), BM_half16,
                                   matmul, h)
          ->Arg(matmul ? kHalf16MatmulSize : kHalf16AddSize)->UseManualTime()->Iterations(10)->Repetitions(10)
          ->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::RegisterBenchmark(kMlpName, BM_mlp_step)
      ->UseManualTime()->Iterations(100)->Repetitions(10)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&nargs, args.data());
  if (benchmark::ReportUnrecognizedArguments(nargs, args.data())) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (markdown && !write_markdown(markdown, device, versions, torch_mlp_ms)) return 1;
  return 0;
}

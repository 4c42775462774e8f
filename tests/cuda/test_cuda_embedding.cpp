// tests/cuda/test_cuda_embedding.cpp — backend/cuda/embedding.cuh against backend/cpu/embedding.hpp,
// and the embedding op and its gradient on cuda:0 against the CPU.
//
// The kernels: lookups of n indices (repeated ones included) into (V, D) tables, V in {1, 5, 65},
// D in {1, 3, 33}, with and without a padding row; float32 and float64. The backward has one
// writer per dw element summing in index order, as the CPU twin: the results are equal bit for bit.
// The op: embedding(idx, weight) with autograd on cuda:0 equals the CPU's output and weight.grad
// (padding_idx included), and an index out of range throws before any kernel runs.
// Chapter: chapters/10-gpu-kernels.md, chapters/12-model-parallelism.md.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.hpp>
#include <tinytorch/backend/cuda/embedding.cuh>

#include "cuda_test_util.hpp"
#include "kernels_test_util.hpp"

// File-local names live in a namespace named after the file (one TU under nvcc: tests/cuda/tests.cmake).
namespace test_cuda_embedding {

namespace cpu = tinytorch::backend::cpu;
namespace gpu = tinytorch::backend::cuda;
using cuda_test::DeviceArray;
using kernels_test::make_values;

std::vector<int64_t> make_indices(int64_t n, int64_t V, uint64_t seed) {
  std::vector<int64_t> idx(static_cast<size_t>(n));
  uint64_t s = seed * 2862933555777941757ull + 3037000493ull;
  for (auto& i : idx) {
    s = s * 2862933555777941757ull + 3037000493ull;
    i = static_cast<int64_t>((s >> 33) % static_cast<uint64_t>(V));
  }
  return idx;
}

TEMPLATE_TEST_CASE("cuda embedding forward and backward equal the CPU twins bit for bit", "[cuda][cuda_embedding]",
                   float, double) {
  using T = TestType;
  for (int64_t V : {1, 5, 65})
    for (int64_t D : {1, 3, 33})
      for (int64_t n : {1, 7, 100})
        for (int64_t pad : {int64_t(-1), int64_t(0)}) {
          const std::string what = "V=" + std::to_string(V) + " D=" + std::to_string(D) + " n=" + std::to_string(n) +
                                   " padding_idx=" + std::to_string(pad);
          INFO(what);
          const auto idx = make_indices(n, V, static_cast<uint64_t>(V * 1000 + D * 10 + n));
          const auto w = make_values<T>(V * D, 30 + V + D, -2, 2);
          const auto dy = make_values<T>(n * D, 31 + V + D + n, -1, 1);
          std::vector<T> want(static_cast<size_t>(n * D)), want_dw(static_cast<size_t>(V * D));
          cpu::embedding_kernel(idx.data(), w.data(), want.data(), n, D);
          cpu::embedding_backward_kernel(idx.data(), dy.data(), want_dw.data(), n, V, D, pad);
          DeviceArray<int64_t> didx(idx);
          DeviceArray<T> dw_table(w), out(want.size()), ddy(dy), dw(want_dw.size());
          gpu::embedding_kernel(didx.data(), dw_table.data(), out.data(), n, D);
          gpu::embedding_backward_kernel(didx.data(), ddy.data(), dw.data(), n, V, D, pad);
          REQUIRE(out.download() == want);
          REQUIRE(dw.download() == want_dw);
        }
}

TEST_CASE("embedding with autograd on cuda:0 gives the CPU's output and weight gradient", "[cuda][cuda_embedding]") {
  using namespace tinytorch;
  const Tensor w_cpu = randn({6, 4}).requires_grad_();
  const Tensor w_gpu = w_cpu.detach().to(Device::cuda(0)).requires_grad_();
  const Tensor idx = tensor({1, 0, 5, 1, 1, 3}, kInt64).view({2, 3});
  const Tensor dy = randn({2, 3, 4});
  Tensor y_cpu = embedding(idx, w_cpu, 1), y_gpu = embedding(idx.to(Device::cuda(0)), w_gpu, 1);
  REQUIRE(y_gpu.device() == Device::cuda(0));
  (y_cpu * dy).sum().backward();
  (y_gpu * dy.to(Device::cuda(0))).sum().backward();
  CHECK(y_gpu.to(Device::cpu()).tolist<float>() == y_cpu.tolist<float>());
  CHECK(w_gpu.grad().to(Device::cpu()).tolist<float>() == w_cpu.grad().tolist<float>());
  CHECK(w_cpu.grad().select(0, 1).abs().sum().item<double>() == 0.0);  // the padding row
  REQUIRE_THROWS_WITH(embedding(tensor({0, 6}, kInt64).to(Device::cuda(0)), w_gpu),
                      Catch::Contains("embedding: index 6 is out of range for a weight of 6 rows"));
}

}  // namespace test_cuda_embedding

// ch04 ex5: cost of TensorDataset::get_batch(64 rows of 784 floats) and this machine's memcpy bandwidth.
#include <tinytorch/tinytorch.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
using namespace tinytorch;
using clk = std::chrono::steady_clock;
int main() {
  manual_seed(0);
  data::TensorDataset ds(rand({60000, 784}), zeros({60000}, kInt64));
  Generator g(0);
  std::vector<std::vector<int64_t>> batches;
  Tensor perm = randperm(60000, &g);
  const int64_t* p = perm.data_ptr<int64_t>();
  for (int b = 0; b < 937; ++b) batches.emplace_back(p + b * 64, p + (b + 1) * 64);
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = clk::now();
    for (auto& idx : batches) { data::Example e = ds.get_batch(idx); (void)e; }
    double us = std::chrono::duration<double, std::micro>(clk::now() - t0).count() / batches.size();
    std::printf("get_batch(64 x 784 float32 = 200704 B): %.1f us per batch\n", us);
  }
  std::vector<char> a(256 << 20, 1), b(256 << 20);
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = clk::now();
    std::memcpy(b.data(), a.data(), a.size());
    double s = std::chrono::duration<double>(clk::now() - t0).count();
    std::printf("memcpy 256 MiB: %.2f GB/s (copied bytes / s)\n", a.size() / s / 1e9);
  }
}

// tests/cuda/test_cuda_transformer.cpp — the transformer's CUDA kernels and the GPT on cuda:0.
//
// backend/cuda/layer_norm.cuh against backend/cpu/layer_norm.hpp: forward (y, mean, rstd) and
// backward (dx, dw, db), with and without weight and bias, M rows of K in {1, 7, 33, 128}; the
// fast (warp per row) and naive (thread per row) kernels both against the CPU; dw and db bit for
// bit (the same column order).
// backend/cuda/attention.cuh against backend/cpu/attention.hpp's oracle (attention_naive,
// attention_backward_naive): out, lse, dq, dk, dv, causal or not, L < S and L > S, E != Ev; the
// warp kernels and the thread-per-row kernels both.
// End to end: examples/gpt.hpp's GPT (a small config) trained 3 AdamW steps on cuda:0 gives the
// CPU run's losses and gradients (the layer norms, the fused attention, embedding and gelu all on
// the device); layer_norm and scaled_dot_product_attention refuse operands on different devices,
// and a -inf score does not make the online softmax NaN.
// Runs in the kernel simulator (test_cuda_transformer_sim) and under nvcc on a GPU.
// Chapter: chapters/12-model-parallelism.md (12.2), chapters/10-gpu-kernels.md.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <tinytorch/tinytorch.hpp>
#include <tinytorch/backend/cuda/attention.cuh>
#include <tinytorch/backend/cuda/layer_norm.cuh>

#include "../../examples/gpt.hpp"
#include "cuda_test_util.hpp"
#include "kernels_test_util.hpp"

// File-local names live in a namespace named after the file (one nvcc TU for every test file).
namespace test_cuda_transformer {

namespace cpu = tinytorch::backend::cpu;
namespace gpu = tinytorch::backend::cuda;
using cuda_test::DeviceArray;
using kernels_test::make_values;
using kernels_test::require_close;

template <class T>
void check_layer_norm(int64_t M, int64_t K, bool affine, const std::string& what) {
  const std::vector<T> x = make_values<T>(M * K, 11), dy = make_values<T>(M * K, 12);
  const std::vector<T> w = make_values<T>(K, 13), b = make_values<T>(K, 14);
  std::vector<T> y(M * K), dx(M * K), dw(K), db(K);
  std::vector<double> mean(M), rstd(M);
  const T* wp = affine ? w.data() : nullptr;
  const T* bp = affine ? b.data() : nullptr;
  cpu::layer_norm_kernel(x.data(), wp, bp, y.data(), mean.data(), rstd.data(), M, K, 1e-5);
  cpu::layer_norm_backward_kernel(dy.data(), x.data(), wp, mean.data(), rstd.data(), dx.data(), dw.data(), db.data(),
                                  M, K);
  DeviceArray<T> d_x(x), d_dy(dy), d_w(w), d_b(b);
  for (bool fast : {true, false}) {
    const std::string tag = what + (fast ? " (fast)" : " (naive)");
    DeviceArray<T> d_y(M * K), d_dx(M * K), d_dw(K), d_db(K);
    DeviceArray<double> d_mean(M), d_rstd(M);
    const T* dwp = affine ? d_w.data() : nullptr;
    const T* dbp = affine ? d_b.data() : nullptr;
    auto forward = fast ? gpu::layer_norm_kernel_fast<T> : gpu::layer_norm_kernel_naive<T>;
    auto backward = fast ? gpu::layer_norm_backward_kernel_fast<T> : gpu::layer_norm_backward_kernel_naive<T>;
    forward(d_x.data(), dwp, dbp, d_y.data(), d_mean.data(), d_rstd.data(), M, K, 1e-5);
    require_close(d_y.download(), y, tag + " y");
    require_close(d_mean.download(), mean, tag + " mean");
    require_close(d_rstd.download(), rstd, tag + " rstd");
    // the backward from the CPU's statistics, so that dw and db can be compared bit for bit
    DeviceArray<double> c_mean(mean), c_rstd(rstd);
    backward(d_dy.data(), d_x.data(), dwp, c_mean.data(), c_rstd.data(), d_dx.data(), d_dw.data(), d_db.data(), M, K);
    require_close(d_dx.download(), dx, tag + " dx");
    CHECK(d_dw.download() == dw);
    CHECK(d_db.download() == db);
  }
}

TEMPLATE_TEST_CASE("cuda layer_norm forward and backward match the CPU twins", "[cuda][cuda_layer_norm]", float,
                   double) {
  for (int64_t K : {1, 7, 33, 128})
    for (int64_t M : {1, 5, 40})
      for (bool affine : {true, false})
        check_layer_norm<TestType>(M, K, affine,
                                   "M " + std::to_string(M) + " K " + std::to_string(K) + (affine ? " affine" : ""));
}

template <class T>
void check_attention(int64_t N, int64_t L, int64_t S, int64_t E, int64_t Ev, bool causal, const std::string& what) {
  const std::vector<T> q = make_values<T>(N * L * E, 21, -1.0, 1.0), k = make_values<T>(N * S * E, 22, -1.0, 1.0),
                       v = make_values<T>(N * S * Ev, 23), dout = make_values<T>(N * L * Ev, 24);
  const double scale = 1.0 / std::sqrt(static_cast<double>(E));
  std::vector<T> out(N * L * Ev), dq(N * L * E), dk(N * S * E), dv(N * S * Ev);
  std::vector<double> lse(N * L);
  cpu::attention_naive(q.data(), k.data(), v.data(), out.data(), lse.data(), N, L, S, E, Ev, scale, causal);
  cpu::attention_backward_naive(dout.data(), q.data(), k.data(), v.data(), out.data(), lse.data(), dq.data(),
                                dk.data(), dv.data(), N, L, S, E, Ev, scale, causal);
  DeviceArray<T> d_q(q), d_k(k), d_v(v), d_dout(dout), d_out_cpu(out);
  DeviceArray<double> d_lse_cpu(lse);
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  for (bool fast : {true, false}) {
    const std::string tag = what + (fast ? " (fast)" : " (naive)");
    DeviceArray<T> d_out(N * L * Ev), d_dq(N * L * E), d_dk(N * S * E), d_dv(N * S * Ev);
    DeviceArray<double> d_lse(N * L);
    auto forward = fast ? gpu::attention_kernel_fast<T> : gpu::attention_naive<T>;
    auto backward = fast ? gpu::attention_backward_kernel_fast<T> : gpu::attention_backward_naive<T>;
    forward(d_q.data(), d_k.data(), d_v.data(), d_out.data(), d_lse.data(), N, L, S, E, Ev, scale, causal);
    require_close(d_out.download(), out, tag + " out", tol);
    require_close(d_lse.download(), lse, tag + " lse", 1e-12);
    backward(d_dout.data(), d_q.data(), d_k.data(), d_v.data(), d_out_cpu.data(), d_lse_cpu.data(), d_dq.data(),
             d_dk.data(), d_dv.data(), N, L, S, E, Ev, scale, causal);
    require_close(d_dq.download(), dq, tag + " dq", tol);
    require_close(d_dk.download(), dk, tag + " dk", tol);
    require_close(d_dv.download(), dv, tag + " dv", tol);
  }
}

TEMPLATE_TEST_CASE("cuda fused attention forward and backward match the CPU oracle", "[cuda][cuda_attention]", float,
                   double) {
  struct Case { int64_t N, L, S, E, Ev; };
  for (const Case c : {Case{2, 5, 7, 4, 6}, Case{3, 7, 5, 3, 2}, Case{1, 17, 17, 40, 33}, Case{2, 1, 3, 8, 8}})
    for (bool causal : {false, true})
      check_attention<TestType>(c.N, c.L, c.S, c.E, c.Ev, causal,
                                "N " + std::to_string(c.N) + " L " + std::to_string(c.L) + " S " + std::to_string(c.S) +
                                    " E " + std::to_string(c.E) + " Ev " + std::to_string(c.Ev) +
                                    (causal ? " causal" : ""));
  REQUIRE_THROWS_WITH(gpu::attention_kernel_fast<float>(nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1, 257, 8,
                                                        1.0, false),
                      "attention_kernel: the warp kernels take head dims up to 256, got E=257, Ev=8");
}

using namespace tinytorch;

TEST_CASE("cuda transformer: 3 GPT training steps on cuda:0 equal the CPU run", "[cuda][gpt]") {
  examples::GPTConfig c;
  c.block_size = 8;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.bias = true;  // LayerNorm with weight and bias
  manual_seed(0);
  examples::GPT cpu_model(c);
  manual_seed(0);
  examples::GPT dev_model(c);
  dev_model.to(Device::cuda(0));
  auto cpu_opt = cpu_model.configure_optimizers(0.1, 1e-2, {0.9, 0.99});
  auto dev_opt = dev_model.configure_optimizers(0.1, 1e-2, {0.9, 0.99});
  const Tensor x = randint(0, c.vocab_size, {3, 8}), y = randint(0, c.vocab_size, {3, 8});
  const Tensor xd = x.to(Device::cuda(0)), yd = y.to(Device::cuda(0));
  const auto cp = cpu_model.named_parameters(), dp = dev_model.named_parameters();
  REQUIRE(cp.size() == dp.size());
  for (int step = 0; step < 3; ++step) {
    INFO("step " << step);
    Tensor logits = dev_model(xd);
    CHECK(logits.device() == Device::cuda(0));
    Tensor cpu_loss = cpu_model.loss(cpu_model(x), y), dev_loss = dev_model.loss(logits, yd);
    cpu_loss.backward();
    dev_loss.backward();
    CHECK(std::abs(cpu_loss.item<double>() - dev_loss.item<double>()) < 1e-5);
    for (size_t i = 0; i < cp.size(); ++i) {
      INFO(cp[i].first);
      CHECK((cp[i].second.grad() - dp[i].second.grad().cpu()).abs().max().item<double>() < 1e-5);
    }
    cpu_opt->step();
    dev_opt->step();
    cpu_opt->zero_grad();
    dev_opt->zero_grad();
  }
  // scaled_dot_product_attention's operands on one device (a bad-input trial found q on the CPU
  // with k and v on cuda:0 reaching the CPU kernel with device pointers)
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(randn({2, 3, 4}), randn({2, 5, 4}).to(Device::cuda(0)),
                                                   randn({2, 5, 3}).to(Device::cuda(0))),
                      "scaled_dot_product_attention: Expected all tensors to be on the same device, but found at "
                      "least two devices, cpu and cuda:0!");
  // a -inf score at the first key: the online softmax skips it instead of making NaN of
  // (-inf) - (-inf) (found by the same trial); the CPU's fused kernel is the reference
  {
    Tensor q = ones({1, 3, 4}), k = randn({1, 3, 4}), v = randn({1, 3, 2});
    k.select(1, 0).fill_(-INFINITY);
    const Tensor want = scaled_dot_product_attention(q, k, v);
    const Tensor got = scaled_dot_product_attention(q.to(Device::cuda(0)), k.to(Device::cuda(0)), v.to(Device::cuda(0)));
    CHECK((got.cpu() - want).abs().max().item<double>() < 1e-6);
  }
  // layer_norm's operands on one device
  REQUIRE_THROWS_WITH(layer_norm(randn({2, 4}).to(Device::cuda(0)), {4}, ones({4})),
                      "layer_norm: Expected all tensors to be on the same device, but found at least two devices, "
                      "cuda:0 and cpu!");
}

}  // namespace test_cuda_transformer

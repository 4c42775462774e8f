// tests/cuda/test_cuda_optim.cpp — backend/cuda/optim.cuh against the optimizers' CPU loops.
//
// Three consecutive steps of cuda::sgd_kernel / cuda::adam_kernel on device buffers, of the same
// functors on the host (sgd_on_host / adam_on_host, the naive twins), and of cpu::sgd_kernel /
// cpu::adam_kernel (backend/cpu/optim.hpp: what SGD::step / Adam::step run for dense CPU
// parameters), from the same
// parameters, gradients and state: params and every state buffer must agree after each step.
// Options: SGD with momentum 0 / 0.9, dampening, Nesterov, weight decay; Adam and AdamW, with and
// without AMSGrad and weight decay; float32 and float64; n in {1, 7, 33, 129, 1000}.
// Chapter: chapters/10-gpu-kernels.md, chapters/03-optimizers.md.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <tinytorch/backend/cpu/optim.hpp>
#include <tinytorch/backend/cuda/optim.cuh>

#include "cuda_test_util.hpp"
#include "kernels_test_util.hpp"

// File-local names live in a namespace named after the file: nvcc compiles every
// tests/cuda/test_cuda_*.cpp in one TU (tests/cuda/tests.cmake, TINYTORCH_CUDA_TESTS_ONE_TU).
namespace test_cuda_optim {

namespace gpu = tinytorch::backend::cuda;
using cuda_test::DeviceArray;
using kernels_test::make_values;
using kernels_test::require_close;

const int64_t kSizes[] = {1, 7, 33, 129, 1000};

struct SgdCase {
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
};


TEMPLATE_TEST_CASE("cuda sgd_kernel matches cpu::sgd_kernel over three steps", "[cuda][cuda_optim]", float, double) {
  using T = TestType;
  const SgdCase cases[] = {{0.1, 0.0, 0.0, 0.0, false}, {0.1, 0.0, 0.0, 0.01, false}, {0.05, 0.9, 0.0, 0.0, false},
                           {0.05, 0.9, 0.1, 0.01, false}, {0.05, 0.9, 0.0, 0.01, true}};
  for (const SgdCase& c : cases)
    for (int64_t n : kSizes) {
      const std::string what = "sgd lr=" + std::to_string(c.lr) + " momentum=" + std::to_string(c.momentum) +
                               " dampening=" + std::to_string(c.dampening) + " wd=" + std::to_string(c.weight_decay) +
                               (c.nesterov ? " nesterov" : "") + " n=" + std::to_string(n);
      std::vector<T> p_cpu = make_values<T>(n, 1000 + n, -2, 2), p_host = p_cpu, b_cpu(p_cpu.size()),
                     b_host(p_cpu.size());
      DeviceArray<T> p_dev(p_cpu), b_dev(p_cpu.size()), g_dev(p_cpu.size());
      for (int step = 0; step < 3; ++step) {
        const auto g = make_values<T>(n, 2000 + 10 * n + step, -1, 1);
        g_dev.upload(g);
        const bool first = step == 0;
        T* bc = c.momentum != 0 ? b_cpu.data() : nullptr;
        T* bh = c.momentum != 0 ? b_host.data() : nullptr;
        T* bd = c.momentum != 0 ? b_dev.data() : nullptr;
        tinytorch::backend::cpu::sgd_kernel<T>(p_cpu.data(), g.data(), bc, n, c.lr, c.momentum, c.dampening, c.weight_decay, c.nesterov, first);
        gpu::sgd_on_host<T>(p_host.data(), g.data(), bh, n, c.lr, c.momentum, c.dampening, c.weight_decay, c.nesterov, first);
        gpu::sgd_kernel<T>(p_dev.data(), g_dev.data(), bd, n, c.lr, c.momentum, c.dampening, c.weight_decay, c.nesterov,
                           first);
        const std::string at = what + " step " + std::to_string(step + 1);
        require_close(p_host, p_cpu, at + " param (functor on host)", 0.0);  // the same operations: bitwise
        require_close(p_dev.download(), p_cpu, at + " param (device)");
        if (c.momentum != 0) {
          require_close(b_host, b_cpu, at + " momentum_buffer (functor on host)", 0.0);
          require_close(b_dev.download(), b_cpu, at + " momentum_buffer (device)");
        }
      }
    }
}

TEMPLATE_TEST_CASE("cuda adam_kernel matches cpu::adam_kernel over three steps (Adam, AdamW, AMSGrad)",
                   "[cuda][cuda_optim]", float, double) {
  using T = TestType;
  for (bool decoupled : {false, true})
    for (bool amsgrad : {false, true})
      for (double wd : {0.0, 0.1})
        for (int64_t n : kSizes) {
          const std::string what = std::string(decoupled ? "adamw" : "adam") + (amsgrad ? " amsgrad" : "") +
                                   " wd=" + std::to_string(wd) + " n=" + std::to_string(n);
          const double lr = 1e-2, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
          std::vector<T> p_cpu = make_values<T>(n, 3000 + n, -2, 2), p_host = p_cpu;
          std::vector<T> m_cpu(p_cpu.size()), v_cpu(p_cpu.size()), vmax_cpu(p_cpu.size());
          std::vector<T> m_host = m_cpu, v_host = v_cpu, vmax_host = vmax_cpu;
          DeviceArray<T> p_dev(p_cpu), m_dev(m_cpu), v_dev(v_cpu), vmax_dev(vmax_cpu), g_dev(p_cpu.size());
          for (int64_t step = 1; step <= 3; ++step) {
            const auto g = make_values<T>(n, 4000 + 10 * n + step, -1, 1);
            g_dev.upload(g);
            tinytorch::backend::cpu::adam_kernel<T>(p_cpu.data(), g.data(), m_cpu.data(), v_cpu.data(), amsgrad ? vmax_cpu.data() : nullptr,
                                  n, step, lr, beta1, beta2, eps, wd, amsgrad, decoupled);
            gpu::adam_on_host<T>(p_host.data(), g.data(), m_host.data(), v_host.data(),
                                 amsgrad ? vmax_host.data() : nullptr, n, step, lr, beta1, beta2, eps, wd, amsgrad,
                                 decoupled);
            gpu::adam_kernel<T>(p_dev.data(), g_dev.data(), m_dev.data(), v_dev.data(), amsgrad ? vmax_dev.data() : nullptr,
                                n, step, lr, beta1, beta2, eps, wd, amsgrad, decoupled);
            const std::string at = what + " step " + std::to_string(step);
            require_close(p_host, p_cpu, at + " param (functor on host)", 0.0);
            require_close(m_host, m_cpu, at + " exp_avg (functor on host)", 0.0);
            require_close(v_host, v_cpu, at + " exp_avg_sq (functor on host)", 0.0);
            require_close(p_dev.download(), p_cpu, at + " param (device)");
            require_close(m_dev.download(), m_cpu, at + " exp_avg (device)");
            require_close(v_dev.download(), v_cpu, at + " exp_avg_sq (device)");
            if (amsgrad) require_close(vmax_dev.download(), vmax_cpu, at + " max_exp_avg_sq (device)");
          }
        }
}

TEST_CASE("cuda optimizer kernels refuse missing state buffers", "[cuda][cuda_optim]") {
  DeviceArray<float> p(4), g(4), m(4), v(4);
  REQUIRE_THROWS_WITH(gpu::sgd_kernel<float>(p.data(), g.data(), nullptr, 4, 0.1, 0.9, 0, 0, false, true),
                      Catch::Contains("needs a momentum buffer"));
  REQUIRE_THROWS_WITH(gpu::adam_kernel<float>(p.data(), g.data(), m.data(), v.data(), nullptr, 4, 1, 1e-3, 0.9, 0.999,
                                              1e-8, 0, true, false),
                      Catch::Contains("amsgrad needs max_exp_avg_sq"));
}

}  // namespace test_cuda_optim

// tests/cuda/test_cuda_nn.cpp — training end to end on cuda:0: an MLP trained on the device gives
// the CPU run's numbers; Module::to(Device) moves parameters in place; optimizer state lives on the
// parameters' device; a warmed-up training step makes no new raw device allocations.
//
// What: Linear(4, 8) - ReLU - Linear(8, 3) trained 5 steps with MSELoss + SGD (momentum, Nesterov,
// weight decay) and CrossEntropyLoss + Adam / AdamW, once on the CPU and once on cuda:0 from the
// same initial weights and data; every step's loss and the final parameters agree to 1e-5 (the
// CUDA gemm and reductions sum in another order than the CPU's, so not bit for bit).
// Module::to keeps the parameter objects (PyTorch's Module._apply sets param.data), so handles
// taken before the move (an optimizer's) see the moved tensors. Optimizer state is made on the
// parameter's device (PyTorch: zeros_like(p)); load_state_dict moves loaded state to the
// parameter's device (PyTorch's Optimizer.load_state_dict casts state to param.device).
// Runs in the kernel simulator (test_cuda_nn_sim; CUDA data is unreadable from the host there, so
// a stray host read segfaults) and under nvcc on a GPU.
// Chapter: chapters/10-gpu-kernels.md. Reference: torch.nn.Module.to, torch.optim.Optimizer.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.hpp>
#include <tinytorch/core/cuda_runtime.hpp>

namespace test_cuda_nn {

using namespace tinytorch;

std::shared_ptr<nn::Sequential> make_mlp() {
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>(),
                                          std::make_shared<nn::Linear>(8, 3));
}

std::vector<double> host_values(const Tensor& t) { return t.to(Device::cpu()).contiguous().tolist<double>(); }

void check_close(const Tensor& cpu, const Tensor& dev, double tol, const std::string& what) {
  INFO(what);
  REQUIRE(dev.device() == Device::cuda(0));
  REQUIRE(cpu.sizes() == dev.sizes());
  const std::vector<double> a = host_values(cpu), b = host_values(dev);
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i << ": cpu " << a[i] << " cuda " << b[i]);
    REQUIRE(std::abs(a[i] - b[i]) <= tol);
  }
}

enum class Recipe { MseSgd, CrossEntropyAdam, CrossEntropyAdamW };

std::unique_ptr<optim::Optimizer> make_optimizer(Recipe r, const std::vector<Tensor>& params) {
  if (r == Recipe::MseSgd) return std::make_unique<optim::SGD>(params, optim::SGDOptions{0.05, 0.9, 0.0, 0.01, true});
  if (r == Recipe::CrossEntropyAdam) return std::make_unique<optim::Adam>(params, 0.01, std::make_pair(0.9, 0.999), 1e-8, 0.01);
  return std::make_unique<optim::AdamW>(params, 0.01);
}

/// Trains `model` (already on `device`) 5 steps; returns the losses.
std::vector<double> train(nn::Module& model, optim::Optimizer& opt, Recipe r, const Tensor& x, const Tensor& y_mse,
                          const Tensor& labels, Device device) {
  std::vector<double> losses;
  const Tensor xd = x.to(device), yd = y_mse.to(device), ld = labels.to(device);
  for (int step = 0; step < 5; ++step) {
    opt.zero_grad();
    Tensor out = model.forward(xd);  // (16, 3)
    Tensor loss = r == Recipe::MseSgd ? mse_loss(out, yd) : cross_entropy(out, ld);
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

// The test cases sit inside the namespace too: with nvcc every tests/cuda file is one TU, and
// a global `using namespace` would leak these helpers (and tinytorch) into the others.

TEST_CASE("cuda nn: Module::to(cuda) moves parameters in place, keeping their identity", "[cuda][nn]") {
  manual_seed(0);
  auto model = make_mlp();
  auto first = std::dynamic_pointer_cast<nn::Linear>(model->named_children()[0].second);
  REQUIRE(first);
  const std::vector<Tensor> before = model->parameters();
  const std::vector<double> w_before = host_values(before[0]);
  model->to(Device::cuda(0));
  const std::vector<Tensor> after = model->parameters();
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    CHECK(after[i].impl() == before[i].impl());  // the same parameter objects
    CHECK(before[i].device() == Device::cuda(0));
    CHECK(before[i].requires_grad());
    CHECK(before[i].is_leaf());
  }
  CHECK(first->weight.device() == Device::cuda(0));  // the module's own member handle too
  CHECK(host_values(before[0]) == w_before);          // the same values
  model->cpu();
  CHECK(model->parameters()[0].impl() == before[0].impl());
  CHECK(before[0].device() == Device::cpu());
  CHECK(host_values(before[0]) == w_before);
  model->cuda();
  CHECK(before[0].device() == Device::cuda(0));
}

TEST_CASE("cuda nn: 5 MLP steps on cuda:0 equal the CPU run", "[cuda][nn]") {
  const Recipe recipe = GENERATE(Recipe::MseSgd, Recipe::CrossEntropyAdam, Recipe::CrossEntropyAdamW);
  INFO("recipe " << static_cast<int>(recipe));
  manual_seed(1);
  Tensor x = randn({16, 4});
  Tensor y = randn({16, 3});
  Tensor labels = randint(0, 3, {16});
  auto cpu_model = make_mlp();
  auto dev_model = make_mlp();
  dev_model->load_state_dict(cpu_model->state_dict());  // the same initial weights
  dev_model->to(Device::cuda(0));                       // before the optimizer, as PyTorch asks
  auto cpu_opt = make_optimizer(recipe, cpu_model->parameters());
  auto dev_opt = make_optimizer(recipe, dev_model->parameters());
  const auto cpu_losses = train(*cpu_model, *cpu_opt, recipe, x, y, labels, Device::cpu());
  const auto dev_losses = train(*dev_model, *dev_opt, recipe, x, y, labels, Device::cuda(0));
  for (size_t i = 0; i < cpu_losses.size(); ++i) {
    INFO("step " << i);
    CHECK(std::abs(cpu_losses[i] - dev_losses[i]) <= 1e-5);
  }
  const auto cp = cpu_model->named_parameters(), dp = dev_model->named_parameters();
  for (size_t i = 0; i < cp.size(); ++i) check_close(cp[i].second, dp[i].second, 1e-5, cp[i].first);

  // The optimizer's state lives on the parameters' device.
  for (const auto& [key, t] : dev_opt->state_dict()) {
    if (key.find("momentum_buffer") == std::string::npos && key.find("exp_avg") == std::string::npos) continue;
    INFO(key);
    CHECK(t.device() == Device::cuda(0));
  }
  // ... and equals the CPU optimizer's.
  const auto cs = cpu_opt->state_dict(), ds = dev_opt->state_dict();
  REQUIRE(cs.size() == ds.size());
  for (size_t i = 0; i < cs.size(); ++i) {
    if (cs[i].first.find("state.") != 0 || cs[i].first.find(".step") != std::string::npos) continue;
    check_close(cs[i].second, ds[i].second, 1e-5, cs[i].first);
  }
}

TEST_CASE("cuda nn: load_state_dict moves CPU optimizer state to the parameters' device", "[cuda][nn]") {
  manual_seed(2);
  auto cpu_model = make_mlp();
  auto dev_model = make_mlp();
  dev_model->load_state_dict(cpu_model->state_dict());
  dev_model->to(Device::cuda(0));
  Tensor x = randn({16, 4}), y = randn({16, 3}), labels = randint(0, 3, {16});
  optim::Adam cpu_opt(cpu_model->parameters(), 0.01);
  train(*cpu_model, cpu_opt, Recipe::CrossEntropyAdam, x, y, labels, Device::cpu());
  optim::Adam dev_opt(dev_model->parameters(), 0.01);
  dev_opt.load_state_dict(cpu_opt.state_dict());
  for (const auto& [key, t] : dev_opt.state_dict()) {
    if (key.find("exp_avg") == std::string::npos) continue;
    INFO(key);
    CHECK(t.device() == Device::cuda(0));
  }
  for (const auto& [key, t] : cpu_opt.state_dict())
    if (key.find("exp_avg") != std::string::npos) {
      for (const auto& [k2, t2] : dev_opt.state_dict())
        if (k2 == key) check_close(t, t2, 0.0, key);
    }
}

TEST_CASE("cuda nn: a warmed-up training step makes no new raw device allocations", "[cuda][nn]") {
  manual_seed(3);
  auto model = make_mlp();
  model->to(Device::cuda(0));
  optim::SGD opt(model->parameters(), optim::SGDOptions{0.05, 0.9});
  const Tensor x = randn({16, 4}).to(Device::cuda(0)), labels = randint(0, 3, {16}).to(Device::cuda(0));
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = cross_entropy(model->forward(x), labels);
    loss.backward();
    opt.step();
    return loss.item<double>();
  };
  step();
  step();  // warm-up: the caching allocator now holds every block a step needs
  if (!detail::cuda_caching_allocator().caching()) {
    // TINYTORCH_NO_MEMORY_CACHING=1 (the ASan stage sets it): every free goes back to the device.
    SUCCEED("caching disabled by TINYTORCH_NO_MEMORY_CACHING: nothing to check");
    return;
  }
  const size_t mallocs = backend::cuda::raw_malloc_count();
  for (int i = 0; i < 3; ++i) step();
  CHECK(backend::cuda::raw_malloc_count() == mallocs);
}

TEST_CASE("cuda nn: matmul on CUDA and its errors", "[cuda][nn]") {
  manual_seed(4);
  Tensor a = randn({7, 33}, TensorOptions(kFloat64).requires_grad(true));
  Tensor b = randn({33, 5}, TensorOptions(kFloat64).requires_grad(true));
  Tensor ad = a.detach().to(Device::cuda(0)).requires_grad_(true);
  Tensor bd = b.detach().to(Device::cuda(0)).requires_grad_(true);
  Tensor c = matmul(a, b), cd = matmul(ad, bd);
  check_close(c, cd, 1e-12, "mm forward");
  c.sum().backward();
  cd.sum().backward();
  check_close(a.grad(), ad.grad(), 1e-12, "mm grad a");
  check_close(b.grad(), bd.grad(), 1e-12, "mm grad b");
  // a transposed view and batched matmul
  check_close(matmul(b.detach().t(), a.detach().t()), matmul(bd.detach().t(), ad.detach().t()), 1e-12, "mm of views");
  Tensor p = randn({3, 4, 6}), q = randn({3, 6, 2});
  check_close(matmul(p, q), matmul(p.to(Device::cuda(0)), q.to(Device::cuda(0))), 1e-5, "bmm");
  // linear with bias
  Tensor w = randn({3, 6}), bias = randn({3});
  check_close(linear(p, w, bias), linear(p.to(Device::cuda(0)), w.to(Device::cuda(0)), bias.to(Device::cuda(0))),
              1e-5, "linear");
  // errors: mixed devices, int64
  CHECK_THROWS_WITH(mm(a.detach(), bd.detach()),
                    Catch::Contains("Expected all tensors to be on the same device, but found at least two devices"));
  Tensor i = randint(0, 5, {2, 2}).to(Device::cuda(0));
  CHECK_THROWS_WITH(mm(i, i), Catch::Contains("\"addmm_cuda\" not implemented for 'Long'"));
}

TEST_CASE("cuda nn: clip_grad_norm_ on CUDA gradients equals the CPU's", "[cuda][nn]") {
  const double p = GENERATE(2.0, 1.0, 3.0, std::numeric_limits<double>::infinity());
  INFO("norm_type " << p);
  manual_seed(5);
  auto cpu_model = make_mlp();
  auto dev_model = make_mlp();
  dev_model->load_state_dict(cpu_model->state_dict());
  dev_model->to(Device::cuda(0));
  const Tensor x = randn({16, 4}), labels = randint(0, 3, {16});
  cross_entropy(cpu_model->forward(x), labels).backward();
  cross_entropy(dev_model->forward(x.to(Device::cuda(0))), labels.to(Device::cuda(0))).backward();
  const Tensor nc = nn::utils::clip_grad_norm_(cpu_model->parameters(), 0.1, p);
  const Tensor nd = nn::utils::clip_grad_norm_(dev_model->parameters(), 0.1, p);
  CHECK(nd.device() == Device::cuda(0));
  CHECK(nd.dtype() == kFloat32);
  check_close(nc, nd, 1e-6, "total norm");
  const auto cp = cpu_model->parameters(), dp = dev_model->parameters();
  for (size_t i = 0; i < cp.size(); ++i) check_close(cp[i].grad(), dp[i].grad(), 1e-6, "clipped grad");
}


TEST_CASE("cuda nn: save() of a CUDA model, optimizer state left on another device, Dropout on CUDA", "[cuda][nn]") {
  // found by the breaker: these read device memory on the host (SIGSEGV in the simulator)
  manual_seed(3);
  auto model = make_mlp();
  model->to(Device::cuda(0));
  const std::string path = "test_cuda_nn_save.safetensors";
  save(model->state_dict(), path);  // from host copies, as torch.save
  auto back = make_mlp();
  back->load_state_dict(load(path));
  const auto a = model->state_dict(), b = back->state_dict();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) check_close(b[i].second, a[i].second, 0.0, a[i].first);  // (cpu, cuda)
  std::remove(path.c_str());

  // momentum made on cuda:0, then the model moves to the CPU: PyTorch's device error, not a crash
  optim::SGD opt(model->parameters(), optim::SGDOptions{0.1, 0.9});
  model->forward(randn({2, 4}).cuda()).sum().backward();
  opt.step();
  model->to(Device::cpu());
  opt.zero_grad();
  model->forward(randn({2, 4})).sum().backward();
  CHECK_THROWS_WITH(opt.step(), Catch::Contains("Optimizer.step: Expected all tensors to be on the same device") &&
                                    Catch::Contains("cuda:0"));

  // Dropout in training mode: the mask is drawn on the host and moved to x's device
  nn::Dropout drop(0.5);
  Tensor x = ones({1000}).cuda();
  Tensor y = drop.forward(x);
  CHECK(y.device() == Device::cuda(0));
  const double kept = y.ne(0.0).sum().item<double>();  // about half, each kept value 2
  CHECK(kept > 400);
  CHECK(kept < 600);
  CHECK(y.sum().item<double>() == Approx(2 * kept));
}

}  // namespace test_cuda_nn

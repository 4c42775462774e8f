// tests/test_optim.cpp — tinytorch::optim against torch.optim: SGD, Adam, AdamW, LR schedulers.
//
// Trajectories: a Linear(3, 2) with injected weights is trained for a few real steps
// (zero_grad, mse_loss, backward, step) and its weight and bias are compared after every step
// with what PyTorch produced (tests/reference/optim_ref.hpp, written by gen_optim.py), to 1e-6
// relative. Schedules: get_last_lr() after every scheduler step against PyTorch's. Also:
// zero_grad's two modes, parameters without a gradient, fast kernels against their *_naive
// twins, and every error message. Checkpoints: state_dict keys against PyTorch's, a run stopped,
// saved, loaded and resumed against one that never stopped (bit for bit), load_state_dict's
// errors, Generator state; and the optimizer-memory table (examples/optimizer_memory.hpp).
// Chapter: chapters/01-training-loop.md (SGD, zero_grad), chapters/03-optimizers.md (SGD, momentum,
// Adam, schedules, state memory, state_dict and resuming).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include <tinytorch/backend/cpu/optim.hpp>  // sgd_kernel, adam_kernel (the fast loops)
#include <tinytorch/tinytorch.hpp>

#include "../examples/optimizer_memory.hpp"
#include "reference/optim_ref.hpp"

using namespace tinytorch;
namespace ref = optim_reference;
namespace sched = tinytorch::optim::lr_scheduler;
using optim::Adam;
using optim::AdamOptions;
using optim::AdamW;
using optim::AdamWOptions;
using optim::Optimizer;
using optim::SGD;
using optim::SGDOptions;

namespace {

// float32 results against PyTorch's float32 results: a few ulps of rounding (different
// summation orders in the GEMMs, FMA or not) are all that may differ.
constexpr double kRel = 1e-6;
constexpr double kAbs = 1e-7;

std::shared_ptr<nn::Linear> make_model() {
  auto model = std::make_shared<nn::Linear>(3, 2);
  NoGradGuard no_grad;
  model->weight.copy_(tensor(ref::init_weight(), {2, 3}));
  model->bias.copy_(tensor(ref::init_bias()));
  return model;
}

std::vector<double> flat(const nn::Linear& m) {
  std::vector<double> out = m.weight.tolist<double>();
  for (double b : m.bias.tolist<double>()) out.push_back(b);
  return out;
}

struct Run {
  std::vector<double> losses;
  std::vector<std::vector<double>> params;
};

using MakeOpt = std::function<std::unique_ptr<Optimizer>(nn::Linear&)>;
using BeforeStep = std::function<void(int, Optimizer&)>;
using MakeSched = std::function<std::unique_ptr<sched::LRScheduler>(Optimizer&)>;

/// The loop gen_optim.py runs: zero_grad(set_to_none), loss, backward, step (, scheduler step).
Run train(const MakeOpt& make_opt, size_t steps, const BeforeStep& before_step = nullptr,
          const MakeSched& make_sched = nullptr) {
  auto model = make_model();
  auto opt = make_opt(*model);
  std::unique_ptr<sched::LRScheduler> scheduler = make_sched ? make_sched(*opt) : nullptr;
  const Tensor x = tensor(ref::inputs(), {4, 3});   // x: (4, 3)
  const Tensor y = tensor(ref::targets(), {4, 2});  // y: (4, 2)
  Run run;
  for (size_t i = 0; i < steps; ++i) {
    if (before_step) before_step(static_cast<int>(i), *opt);
    opt->zero_grad(true);
    Tensor loss = mse_loss((*model)(x), y);
    loss.backward();
    opt->step();
    if (scheduler) scheduler->step();
    run.losses.push_back(loss.item());
    run.params.push_back(flat(*model));
  }
  return run;
}

void require_close(double got, double want, double rel = kRel, double abs = kAbs) {
  REQUIRE(got == Approx(want).epsilon(rel).margin(abs));
}

void check_trajectory(const Run& got, const ref::Trajectory& want) {
  REQUIRE(got.params.size() == want.params.size());
  for (size_t s = 0; s < want.params.size(); ++s) {
    INFO("after step " << s + 1);
    require_close(got.losses[s], want.losses[s]);
    REQUIRE(got.params[s].size() == want.params[s].size());
    for (size_t i = 0; i < want.params[s].size(); ++i) {
      INFO("parameter value " << i << " (weight 0-5, bias 6-7)");
      require_close(got.params[s][i], want.params[s][i]);
    }
  }
}

MakeOpt sgd(SGDOptions o) {
  return [o](nn::Linear& m) { return std::make_unique<SGD>(m.parameters(), o); };
}

/// get_last_lr() after construction and after each of `steps` scheduler steps, on an SGD with
/// one group per lr (as gen_optim.py's schedule()).
std::vector<std::vector<double>> schedule(const std::vector<double>& lrs, const MakeSched& make_sched, size_t steps,
                                          const BeforeStep& before_step = nullptr) {
  std::vector<Tensor> params;
  for (size_t i = 0; i < lrs.size(); ++i) params.push_back(zeros({1}, TensorOptions().requires_grad(true)));
  SGD opt({params[0]}, lrs[0]);
  for (size_t i = 1; i < lrs.size(); ++i) opt.add_param_group({params[i]}, SGDOptions{lrs[i]});
  auto s = make_sched(opt);
  std::vector<std::vector<double>> out{s->get_last_lr()};
  for (size_t i = 0; i < steps; ++i) {
    if (before_step) before_step(static_cast<int>(i), opt);
    opt.step();
    s->step();
    out.push_back(s->get_last_lr());
  }
  return out;
}

void check_schedule(const std::vector<std::vector<double>>& got, const std::vector<std::vector<double>>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    INFO("get_last_lr() after " << k << " scheduler steps");
    REQUIRE(got[k].size() == want[k].size());
    // Both sides compute in double with the same formulas: far tighter than 1e-6.
    for (size_t g = 0; g < want[k].size(); ++g) require_close(got[k][g], want[k][g], 1e-12, 1e-15);
  }
}

}  // namespace

// =============================================================================================
// SGD
// =============================================================================================

TEST_CASE("SGD trajectories match torch.optim.SGD", "[ch01][ch03][optim]") {
  SECTION("plain") { check_trajectory(train(sgd({0.1}), 5), ref::sgd_plain()); }
  SECTION("momentum") { check_trajectory(train(sgd({0.1, 0.9}), 5), ref::sgd_momentum()); }
  SECTION("dampening") { check_trajectory(train(sgd({0.1, 0.9, 0.5}), 5), ref::sgd_dampening()); }
  SECTION("nesterov") {
    check_trajectory(train(sgd({0.1, 0.9, 0.0, 0.0, true}), 5), ref::sgd_nesterov());
  }
  SECTION("weight decay") { check_trajectory(train(sgd({0.1, 0.0, 0.0, 0.01}), 5), ref::sgd_weight_decay()); }
  SECTION("momentum, dampening and weight decay") {
    check_trajectory(train(sgd({0.05, 0.8, 0.1, 0.1}), 5), ref::sgd_momentum_weight_decay());
  }
  SECTION("the convenience constructor is the same optimizer") {
    auto make = [](nn::Linear& m) { return std::make_unique<SGD>(m.parameters(), 0.05, 0.8, 0.1, 0.1); };
    check_trajectory(train(make, 5), ref::sgd_momentum_weight_decay());
  }
  SECTION("lr changed through param_groups() midway") {
    auto set_lr = [](int i, Optimizer& opt) {
      if (i == 2) opt.param_groups()[0].lr = 0.01;
    };
    check_trajectory(train(sgd({0.1, 0.9}), 5, set_lr), ref::sgd_lr_change());
  }
  SECTION("two param groups with their own lr and momentum") {
    auto make = [](nn::Linear& m) {
      auto opt = std::make_unique<SGD>(std::vector<Tensor>{m.weight}, SGDOptions{0.1, 0.9});
      opt->add_param_group({m.bias}, SGDOptions{0.01, 0.5});
      REQUIRE(opt->param_groups().size() == 2);
      REQUIRE(opt->param_groups()[1].momentum == 0.5);
      return opt;
    };
    check_trajectory(train(make, 5), ref::sgd_param_groups());
  }
}

TEST_CASE("SGD driven by a warmup + cosine SequentialLR matches PyTorch", "[ch03][optim][lr_scheduler]") {
  auto make_sched = [](Optimizer& opt) -> std::unique_ptr<sched::LRScheduler> {
    auto warmup = std::make_shared<sched::LinearLR>(opt, 0.5, 1.0, 2);
    auto cosine = std::make_shared<sched::CosineAnnealingLR>(opt, 4, 0.01);
    return std::make_unique<sched::SequentialLR>(opt, std::vector<std::shared_ptr<sched::LRScheduler>>{warmup, cosine},
                                                 std::vector<int64_t>{2});
  };
  check_trajectory(train(sgd({0.1, 0.9}), 7, nullptr, make_sched), ref::sgd_warmup_cosine());
}

TEST_CASE("SGD defaults follow PyTorch 2.x", "[ch01][optim]") {
  Tensor p = zeros({2}, TensorOptions().requires_grad(true));
  SGD opt({p});
  REQUIRE(opt.defaults().lr == 1e-3);
  const auto& g = opt.param_groups()[0];
  REQUIRE(g.lr == 1e-3);
  REQUIRE(g.momentum == 0.0);
  REQUIRE(g.dampening == 0.0);
  REQUIRE(g.weight_decay == 0.0);
  REQUIRE_FALSE(g.nesterov);
  REQUIRE_FALSE(g.initial_lr.has_value());
}

// =============================================================================================
// Adam, AdamW
// =============================================================================================

TEST_CASE("Adam and AdamW trajectories match torch.optim", "[ch03][optim]") {
  SECTION("Adam") {
    auto make = [](nn::Linear& m) { return std::make_unique<Adam>(m.parameters(), 0.01); };
    check_trajectory(train(make, 5), ref::adam());
  }
  SECTION("Adam with betas, eps and L2 weight decay") {
    auto make = [](nn::Linear& m) {
      return std::make_unique<Adam>(m.parameters(), AdamOptions{0.01, {0.8, 0.99}, 1e-6, 0.1});
    };
    check_trajectory(train(make, 5), ref::adam_weight_decay());
  }
  SECTION("Adam with amsgrad") {
    auto make = [](nn::Linear& m) {
      AdamOptions o;
      o.lr = 0.05;
      o.amsgrad = true;
      return std::make_unique<Adam>(m.parameters(), o);
    };
    check_trajectory(train(make, 8), ref::adam_amsgrad());
  }
  SECTION("AdamW with its default weight decay (1e-2)") {
    auto make = [](nn::Linear& m) { return std::make_unique<AdamW>(m.parameters(), 0.01); };
    check_trajectory(train(make, 5), ref::adamw());
  }
  SECTION("AdamW with weight decay 0.5") {
    auto make = [](nn::Linear& m) {
      AdamWOptions o;
      o.lr = 0.02;
      o.weight_decay = 0.5;
      return std::make_unique<AdamW>(m.parameters(), o);
    };
    check_trajectory(train(make, 5), ref::adamw_weight_decay());
  }
}

TEST_CASE("Adam keeps per-parameter state and defaults as PyTorch", "[ch03][optim]") {
  Tensor p = ones({3}, TensorOptions().requires_grad(true));
  Adam opt({p});
  REQUIRE(opt.defaults().lr == 1e-3);
  REQUIRE(opt.param_groups()[0].betas == std::pair<double, double>{0.9, 0.999});
  REQUIRE(opt.param_groups()[0].eps == 1e-8);
  REQUIRE(opt.param_groups()[0].weight_decay == 0.0);
  REQUIRE_FALSE(opt.param_groups()[0].amsgrad);
  AdamW w({p});
  REQUIRE(w.param_groups()[0].weight_decay == 1e-2);

  REQUIRE(opt.state(p) == nullptr);
  p.set_grad(full({3}, 0.5));
  opt.step();
  opt.step();
  const optim::ParamState* st = opt.state(p);
  REQUIRE(st != nullptr);
  REQUIRE(st->step == 2);
  REQUIRE(st->exp_avg.sizes() == Shape{3});
  REQUIRE(st->exp_avg_sq.sizes() == Shape{3});
  REQUIRE_FALSE(st->max_exp_avg_sq.defined());
  // Constant gradient: m_hat = g and v_hat = g^2 exactly, so each step moves p by lr * g/(|g| + eps).
  require_close(p.tolist<double>()[0], 1.0 - 2 * 1e-3 * 0.5 / (0.5 + 1e-8), 1e-6, 0);
}

// =============================================================================================
// zero_grad, parameters without gradients
// =============================================================================================

TEST_CASE("zero_grad sets gradients to none by default, or zeroes them in place", "[ch01][optim]") {
  auto model = make_model();
  SGD opt(model->parameters(), 0.1);
  const Tensor x = tensor(ref::inputs(), {4, 3});
  const Tensor y = tensor(ref::targets(), {4, 2});
  auto backward = [&] { mse_loss((*model)(x), y).backward(); };

  backward();
  REQUIRE(model->weight.grad().defined());
  const std::vector<double> g1 = model->weight.grad().tolist<double>();

  SECTION("set_to_none = true (the default)") {
    opt.zero_grad();
    REQUIRE_FALSE(model->weight.grad().defined());
    REQUIRE_FALSE(model->bias.grad().defined());
    backward();  // writes a fresh gradient
    REQUIRE(model->weight.grad().tolist<double>() == g1);
  }
  SECTION("set_to_none = false keeps the same buffers, filled with zeros") {
    TensorImpl* buffer = model->weight.grad().impl();
    opt.zero_grad(false);
    REQUIRE(model->weight.grad().impl() == buffer);
    for (double v : model->weight.grad().tolist<double>()) REQUIRE(v == 0.0);
    for (double v : model->bias.grad().tolist<double>()) REQUIRE(v == 0.0);
    backward();  // accumulates into the zeros
    REQUIRE(model->weight.grad().impl() == buffer);
    const std::vector<double> g2 = model->weight.grad().tolist<double>();
    for (size_t i = 0; i < g1.size(); ++i) require_close(g2[i], g1[i]);
  }
  SECTION("without zero_grad, gradients accumulate") {
    backward();
    const std::vector<double> g2 = model->weight.grad().tolist<double>();
    for (size_t i = 0; i < g1.size(); ++i) require_close(g2[i], 2 * g1[i]);
  }
}

TEST_CASE("step() skips parameters whose grad is undefined", "[ch01][optim]") {
  auto model = make_model();
  Tensor unused = full({2, 2}, 3.0, TensorOptions().requires_grad(true));  // never in the loss
  Tensor frozen = full({2}, -1.0);                                          // requires_grad = false
  std::vector<Tensor> params = model->parameters();
  params.push_back(unused);
  params.push_back(frozen);
  const Tensor x = tensor(ref::inputs(), {4, 3});
  const Tensor y = tensor(ref::targets(), {4, 2});

  auto run = [&](Optimizer& opt) {
    for (int i = 0; i < 3; ++i) {
      opt.zero_grad();
      mse_loss((*model)(x), y).backward();
      opt.step();
    }
    REQUIRE_FALSE(unused.grad().defined());
    for (double v : unused.tolist<double>()) REQUIRE(v == 3.0);
    for (double v : frozen.tolist<double>()) REQUIRE(v == -1.0);
    REQUIRE(opt.state(unused) == nullptr);
    REQUIRE(opt.state(frozen) == nullptr);
    REQUIRE(opt.state(model->weight) != nullptr);
  };
  SECTION("SGD with momentum and weight decay (would move every parameter with a grad)") {
    SGD opt(params, SGDOptions{0.1, 0.9, 0.0, 0.1});
    run(opt);
    REQUIRE(opt.state(model->weight)->momentum_buffer.defined());
  }
  SECTION("AdamW (decays every parameter with a grad)") {
    AdamW opt(params, 0.01);
    run(opt);
    REQUIRE(opt.state(model->bias)->step == 3);
  }
}

TEST_CASE("step() runs without recording autograd and leaves parameters as leaves", "[ch01][optim]") {
  auto model = make_model();
  SGD opt(model->parameters(), 0.1, 0.9);
  mse_loss((*model)(tensor(ref::inputs(), {4, 3})), tensor(ref::targets(), {4, 2})).backward();
  opt.step();
  REQUIRE(GradMode::is_enabled());
  REQUIRE(model->weight.is_leaf());
  REQUIRE(model->weight.requires_grad());
  REQUIRE_FALSE(opt.state(model->weight)->momentum_buffer.requires_grad());
}

// =============================================================================================
// Fast kernels against their naive twins, and the non-contiguous fallback
// =============================================================================================

namespace {
template <typename T>
void check_sgd_twins(DType dtype, double tol) {
  struct Config {
    double lr, momentum, dampening, weight_decay;
    bool nesterov;
  };
  const std::vector<Config> configs = {{0.1, 0, 0, 0, false},   {0.1, 0, 0, 0.05, false}, {0.05, 0.9, 0, 0, false},
                                       {0.05, 0.9, 0.3, 0.01, false}, {0.05, 0.9, 0, 0.01, true}};
  Generator gen(7);
  for (const Config& c : configs) {
    INFO("lr " << c.lr << " momentum " << c.momentum << " dampening " << c.dampening << " weight_decay "
               << c.weight_decay << " nesterov " << c.nesterov);
    Tensor p_fast = randn({37}, dtype, &gen);
    Tensor p_naive = p_fast.clone();
    Tensor buf_fast = empty({37}, dtype), buf_naive;
    for (int step = 0; step < 4; ++step) {
      Tensor g = randn({37}, dtype, &gen);
      backend::cpu::sgd_kernel<T>(p_fast.data_ptr<T>(), g.data_ptr<T>(), buf_fast.data_ptr<T>(), 37, c.lr, c.momentum, c.dampening,
                    c.weight_decay, c.nesterov, step == 0);
      optim::sgd_naive(p_naive, g, buf_naive, c.lr, c.momentum, c.dampening, c.weight_decay, c.nesterov);
    }
    const auto a = p_fast.tolist<double>(), b = p_naive.tolist<double>();
    for (size_t i = 0; i < a.size(); ++i) require_close(a[i], b[i], tol, tol);
  }
}

template <typename T>
void check_adam_twins(DType dtype, double tol) {
  struct Config {
    double lr, beta1, beta2, eps, weight_decay;
    bool amsgrad, decoupled;
  };
  const std::vector<Config> configs = {{1e-2, 0.9, 0.999, 1e-8, 0, false, false},
                                       {1e-2, 0.8, 0.99, 1e-6, 0.1, false, false},
                                       {1e-2, 0.9, 0.999, 1e-8, 0.1, true, false},
                                       {1e-2, 0.9, 0.999, 1e-8, 0.5, false, true},
                                       {1e-2, 0.3, 0.9, 1e-8, 0.0, true, true}};  // beta1 < 0.5: lerp's other branch
  Generator gen(11);
  for (const Config& c : configs) {
    INFO("beta1 " << c.beta1 << " weight_decay " << c.weight_decay << " amsgrad " << c.amsgrad << " decoupled "
                  << c.decoupled);
    Tensor p_fast = randn({29}, dtype, &gen);
    Tensor p_naive = p_fast.clone();
    Tensor m = zeros({29}, dtype), v = zeros({29}, dtype), vmax = zeros({29}, dtype);
    optim::ParamState st;
    for (int64_t step = 1; step <= 4; ++step) {
      Tensor g = randn({29}, dtype, &gen);
      backend::cpu::adam_kernel<T>(p_fast.data_ptr<T>(), g.data_ptr<T>(), m.data_ptr<T>(), v.data_ptr<T>(),
                            c.amsgrad ? vmax.data_ptr<T>() : nullptr, 29, step, c.lr, c.beta1, c.beta2, c.eps,
                            c.weight_decay, c.amsgrad, c.decoupled);
      optim::adam_naive(p_naive, g, st, c.lr, c.beta1, c.beta2, c.eps, c.weight_decay, c.amsgrad, c.decoupled);
    }
    REQUIRE(st.step == 4);
    const auto a = p_fast.tolist<double>(), b = p_naive.tolist<double>();
    for (size_t i = 0; i < a.size(); ++i) require_close(a[i], b[i], tol, tol);
    const auto ma = m.tolist<double>(), mb = st.exp_avg.tolist<double>();
    for (size_t i = 0; i < ma.size(); ++i) require_close(ma[i], mb[i], tol, tol);
  }
}
}  // namespace

TEST_CASE("sgd_kernel matches sgd_naive", "[ch01][ch03][optim]") {
  SECTION("float32") { check_sgd_twins<float>(kFloat32, 1e-6); }
  SECTION("float64") { check_sgd_twins<double>(kFloat64, 1e-14); }
}

TEST_CASE("adam_kernel matches adam_naive", "[ch03][optim]") {
  SECTION("float32") { check_adam_twins<float>(kFloat32, 1e-6); }
  SECTION("float64") { check_adam_twins<double>(kFloat64, 1e-13); }
}

TEST_CASE("optimizers fall back to the tensor-op path for non-contiguous parameters and grads", "[ch01][optim]") {
  // The same values as a (3, 2) contiguous tensor and as the transpose of a (2, 3) one.
  const std::vector<double> init = {0.5, -1.0, 2.0, 0.25, -0.75, 1.5};
  const std::vector<double> grad = {0.1, 0.2, -0.3, 0.4, -0.5, 0.6};
  auto run = [&](auto make_opt) {
    Tensor dense = tensor(init, {3, 2}).requires_grad_();
    Tensor strided = tensor(init, {3, 2}).t().contiguous().t().detach().requires_grad_();  // (3, 2), strides (1, 3)
    REQUIRE_FALSE(strided.is_contiguous());
    auto opt_dense = make_opt(dense);
    auto opt_strided = make_opt(strided);
    for (int i = 0; i < 3; ++i) {
      dense.set_grad(tensor(grad, {3, 2}));
      strided.set_grad(tensor(grad, {3, 2}).t().contiguous().t());  // non-contiguous grad too
      opt_dense->step();
      opt_strided->step();
    }
    const auto a = strided.tolist<double>(), b = dense.tolist<double>();
    for (size_t i = 0; i < a.size(); ++i) require_close(a[i], b[i]);
    REQUIRE(a != init);
  };
  SECTION("SGD") {
    run([](Tensor p) { return std::make_unique<SGD>(std::vector<Tensor>{p}, SGDOptions{0.1, 0.9, 0.0, 0.01, true}); });
  }
  SECTION("Adam") {
    run([](Tensor p) { return std::make_unique<Adam>(std::vector<Tensor>{p}, AdamOptions{0.1, {0.9, 0.99}, 1e-8, 0.1, true}); });
  }
}

TEST_CASE("float64 parameters are updated in float64", "[ch01][optim]") {
  Tensor p = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  SGD opt({p}, 0.1);
  p.set_grad(tensor({1.0 / 3, 1.0 / 7}, kFloat64));
  opt.step();
  REQUIRE(p.tolist<double>()[0] == 1.0 + (-0.1) * (1.0 / 3));
  REQUIRE(p.tolist<double>()[1] == 2.0 + (-0.1) * (1.0 / 7));
}

// =============================================================================================
// Learning-rate schedulers
// =============================================================================================

TEST_CASE("LR schedules match torch.optim.lr_scheduler", "[ch03][optim][lr_scheduler]") {
  using Ptr = std::unique_ptr<sched::LRScheduler>;
  SECTION("CosineAnnealingLR past 3 * T_max, with eta_min") {
    auto make = [](Optimizer& o) -> Ptr { return std::make_unique<sched::CosineAnnealingLR>(o, 10, 0.001); };
    check_schedule(schedule({0.1}, make, 32), ref::cosine());
  }
  SECTION("CosineAnnealingLR over 2 * T_max, eta_min = 0") {
    auto make = [](Optimizer& o) -> Ptr { return std::make_unique<sched::CosineAnnealingLR>(o, 7); };
    check_schedule(schedule({0.5}, make, 14), ref::cosine_eta_min_0());
  }
  SECTION("CosineAnnealingLR with two param groups") {
    auto make = [](Optimizer& o) -> Ptr { return std::make_unique<sched::CosineAnnealingLR>(o, 5, 0.005); };
    check_schedule(schedule({0.1, 0.02}, make, 12), ref::cosine_two_groups());
  }
  SECTION("CosineAnnealingLR after the lr was changed by hand (the recursive form)") {
    auto make = [](Optimizer& o) -> Ptr { return std::make_unique<sched::CosineAnnealingLR>(o, 8, 0.001); };
    auto halve = [](int i, Optimizer& o) {
      if (i == 3)
        for (auto& g : o.param_groups()) g.lr *= 0.5;
    };
    check_schedule(schedule({0.1}, make, 16, halve), ref::cosine_lr_changed());
  }
  SECTION("LinearLR warmup") {
    auto make = [](Optimizer& o) -> Ptr { return std::make_unique<sched::LinearLR>(o, 0.25, 1.0, 4); };
    check_schedule(schedule({0.1}, make, 8), ref::linear_warmup());
  }
  SECTION("LinearLR defaults (1/3, 1, 5)") {
    auto make = [](Optimizer& o) -> Ptr { return std::make_unique<sched::LinearLR>(o); };
    check_schedule(schedule({0.05}, make, 8), ref::linear_defaults());
  }
  SECTION("LinearLR decay") {
    auto make = [](Optimizer& o) -> Ptr { return std::make_unique<sched::LinearLR>(o, 1.0, 0.1, 5); };
    check_schedule(schedule({0.2}, make, 8), ref::linear_decay());
  }
  SECTION("StepLR") {
    auto make = [](Optimizer& o) -> Ptr { return std::make_unique<sched::StepLR>(o, 3, 0.5); };
    check_schedule(schedule({0.1}, make, 10), ref::step_lr());
  }
  SECTION("SequentialLR: LinearLR warmup then CosineAnnealingLR") {
    auto make = [](Optimizer& o) -> Ptr {
      auto warmup = std::make_shared<sched::LinearLR>(o, 0.1, 1.0, 3);
      auto cosine = std::make_shared<sched::CosineAnnealingLR>(o, 6, 0.001);
      return std::make_unique<sched::SequentialLR>(o, std::vector<std::shared_ptr<sched::LRScheduler>>{warmup, cosine},
                                                   std::vector<int64_t>{3});
    };
    check_schedule(schedule({0.1}, make, 14), ref::sequential_warmup_cosine());
  }
  SECTION("SequentialLR of three schedulers, two param groups") {
    auto make = [](Optimizer& o) -> Ptr {
      std::vector<std::shared_ptr<sched::LRScheduler>> s = {std::make_shared<sched::LinearLR>(o, 0.5, 1.0, 2),
                                                            std::make_shared<sched::StepLR>(o, 2, 0.5),
                                                            std::make_shared<sched::CosineAnnealingLR>(o, 4)};
      return std::make_unique<sched::SequentialLR>(o, s, std::vector<int64_t>{2, 6});
    };
    check_schedule(schedule({0.1, 0.04}, make, 14), ref::sequential_three());
  }
}

TEST_CASE("CosineAnnealingLR's recursive steps equal the closed form while nothing else changes lr",
          "[ch03][optim][lr_scheduler]") {
  Tensor p = zeros({1}, TensorOptions().requires_grad(true));
  SGD opt({p}, 0.3);
  sched::CosineAnnealingLR s(opt, 9, 0.01);
  opt.step();  // p has no gradient: nothing moves, but the schedule now follows an optimizer step
               // and prints no "lr_scheduler.step() before optimizer.step()" warning
  for (int k = 1; k <= 40; ++k) {
    s.step();
    const double closed = 0.01 + (0.3 - 0.01) * (1 + std::cos(sched::kPi * k / 9)) / 2;
    INFO("epoch " << k);
    require_close(opt.param_groups()[0].lr, closed, 1e-12, 1e-15);
  }
}

TEST_CASE("LRScheduler bookkeeping: last_epoch, base_lrs, initial_lr", "[ch03][optim][lr_scheduler]") {
  Tensor p = zeros({1}, TensorOptions().requires_grad(true));
  SGD opt({p}, 0.1);
  sched::LinearLR warmup(opt, 0.5, 1.0, 2);
  REQUIRE(warmup.last_epoch == 0);
  REQUIRE(warmup.base_lrs == std::vector<double>{0.1});
  REQUIRE(opt.param_groups()[0].initial_lr == 0.1);
  REQUIRE(opt.param_groups()[0].lr == 0.05);
  REQUIRE(warmup.get_last_lr() == std::vector<double>{0.05});
  REQUIRE(&warmup.optimizer() == &opt);
  warmup.step();
  warmup.step();
  REQUIRE(warmup.last_epoch == 2);
  require_close(opt.param_groups()[0].lr, 0.1, 1e-15, 0);
  // A second scheduler keeps the first one's initial_lr as its base (setdefault in PyTorch).
  sched::StepLR decay(opt, 1, 0.5);
  REQUIRE(decay.base_lrs == std::vector<double>{0.1});
  // Resuming (last_epoch != -1) takes base_lrs from the groups' initial_lr; as in PyTorch 2.x the
  // constructor's step keeps the current lr (it is expected to come with the optimizer's state).
  opt.param_groups()[0].lr = 0.02;
  sched::CosineAnnealingLR resumed(opt, 10, 0.0, /*last_epoch=*/4);
  REQUIRE(resumed.last_epoch == 5);
  REQUIRE(resumed.base_lrs == std::vector<double>{0.1});
  REQUIRE(opt.param_groups()[0].lr == 0.02);
  resumed.step();  // then the recursive form continues from there
  require_close(opt.param_groups()[0].lr,
                (1 + std::cos(sched::kPi * 6 / 10)) / (1 + std::cos(sched::kPi * 5 / 10)) * 0.02, 1e-12, 0);
}

// =============================================================================================
// Errors
// =============================================================================================

TEST_CASE("optimizers reject invalid arguments with PyTorch's messages", "[ch01][optim]") {
  Tensor p = zeros({2}, TensorOptions().requires_grad(true));
  Tensor q = zeros({2}, TensorOptions().requires_grad(true));
  const std::vector<Tensor> ps{p};

  SECTION("SGD") {
    REQUIRE_THROWS_WITH(SGD(ps, -0.1), "Invalid learning rate: -0.1");
    REQUIRE_THROWS_WITH(SGD(ps, 0.1, -1.0), "Invalid momentum value: -1.0");
    REQUIRE_THROWS_WITH(SGD(ps, 0.1, 0.9, 0.0, -0.01), "Invalid weight_decay value: -0.01");
    REQUIRE_THROWS_WITH(SGD(ps, SGDOptions{0.1, 0.0, 0.0, 0.0, true}),
                        "Nesterov momentum requires a momentum and zero dampening");
    REQUIRE_THROWS_WITH(SGD(ps, SGDOptions{0.1, 0.9, 0.1, 0.0, true}),
                        "Nesterov momentum requires a momentum and zero dampening");
    REQUIRE_THROWS_WITH(SGD(std::vector<Tensor>{}, 0.1), "optimizer got an empty parameter list");
    REQUIRE_NOTHROW(SGD(ps, 0.0));  // lr = 0 is allowed
    SGD opt(ps, 0.1);
    REQUIRE_THROWS_WITH(opt.add_param_group({q}, SGDOptions{-1e-5}), "Invalid learning rate: -1e-05");
  }
  SECTION("Adam and AdamW") {
    REQUIRE_THROWS_WITH(Adam(ps, -0.001), "Invalid learning rate: -0.001");
    REQUIRE_THROWS_WITH(Adam(ps, 1e-3, {0.9, 0.999}, -1e-8), "Invalid epsilon value: -1e-08");
    REQUIRE_THROWS_WITH(Adam(ps, 1e-3, {1.0, 0.999}), "Invalid beta parameter at index 0: 1.0");
    REQUIRE_THROWS_WITH(Adam(ps, 1e-3, {-0.1, 0.999}), "Invalid beta parameter at index 0: -0.1");
    REQUIRE_THROWS_WITH(Adam(ps, 1e-3, {0.9, -0.5}), "Invalid beta parameter at index 1: -0.5");
    REQUIRE_THROWS_WITH(Adam(ps, 1e-3, {0.9, 1.0}), "Invalid beta parameter at index 1: 1.0");
    REQUIRE_THROWS_WITH(Adam(ps, 1e-3, {0.9, 0.999}, 1e-8, -0.1), "Invalid weight_decay value: -0.1");
    REQUIRE_THROWS_WITH(AdamW(ps, -2.0), "Invalid learning rate: -2.0");
    REQUIRE_THROWS_WITH(AdamW(ps, AdamWOptions{1e-3, {0.9, 0.999}, 1e-8, -1e-2}), "Invalid weight_decay value: -0.01");
    REQUIRE_THROWS_WITH(AdamW(std::vector<Tensor>{}), "optimizer got an empty parameter list");
    REQUIRE_THROWS_WITH(Adam(ps, std::nan("")), "Invalid learning rate: nan");
  }
  SECTION("parameter checks") {
    Tensor non_leaf = p * 2.0;
    REQUIRE_THROWS_WITH(SGD(std::vector<Tensor>{non_leaf}, 0.1), "can't optimize a non-leaf Tensor");
    REQUIRE_THROWS_WITH(Adam(std::vector<Tensor>{p, p}),
                        "optimizer contains a parameter group with duplicate parameters");
    SGD opt(ps, 0.1);
    REQUIRE_THROWS_WITH(opt.add_param_group({q, p}), "some parameters appear in more than one parameter group");
    REQUIRE(opt.param_groups().size() == 1);
    REQUIRE_THROWS_WITH(SGD(std::vector<Tensor>{p, Tensor()}, 0.1),
                        "optimizer got an undefined tensor at index 1 of a parameter group");
  }
}

TEST_CASE("schedulers reject invalid arguments", "[ch03][optim][lr_scheduler]") {
  Tensor p = zeros({1}, TensorOptions().requires_grad(true));
  SGD opt({p}, 0.1);
  SGD other({zeros({1}, TensorOptions().requires_grad(true))}, 0.1);
  const char* start_msg = "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.";
  const char* end_msg = "Ending multiplicative factor expected to be between 0 and 1.";
  REQUIRE_THROWS_WITH(sched::LinearLR(opt, 0.0), start_msg);
  REQUIRE_THROWS_WITH(sched::LinearLR(opt, 1.5), start_msg);
  REQUIRE_THROWS_WITH(sched::LinearLR(opt, 0.5, -0.1), end_msg);
  REQUIRE_THROWS_WITH(sched::LinearLR(opt, 0.5, 1.1), end_msg);
  REQUIRE_THROWS_WITH(sched::CosineAnnealingLR(opt, 0), "CosineAnnealingLR: T_max must be positive, got 0");
  REQUIRE_THROWS_WITH(sched::StepLR(opt, 0), "StepLR: step_size must be positive, got 0");

  Tensor fresh = zeros({1}, TensorOptions().requires_grad(true));
  SGD not_scheduled({fresh}, 0.1);
  REQUIRE_THROWS_WITH(sched::CosineAnnealingLR(not_scheduled, 10, 0.0, 3),
                      "param 'initial_lr' is not specified in param_groups[0] when resuming an optimizer");

  using List = std::vector<std::shared_ptr<sched::LRScheduler>>;
  auto a = std::make_shared<sched::LinearLR>(opt);
  auto b = std::make_shared<sched::CosineAnnealingLR>(opt, 10);
  auto c = std::make_shared<sched::CosineAnnealingLR>(other, 10);
  REQUIRE_THROWS_WITH(sched::SequentialLR(opt, List{}, {}),
                      "SequentialLR expects at least one scheduler, but got no scheduler.");
  REQUIRE_THROWS_WITH(sched::SequentialLR(opt, List{a, c}, {5}),
                      "SequentialLR expects all schedulers to belong to the same optimizer, but got scheduler "
                      "CosineAnnealingLR at index 1 that belongs to a different optimizer.");
  REQUIRE_THROWS_WITH(sched::SequentialLR(opt, List{a, b}, {}),
                      "Sequential Schedulers expects number of schedulers provided to be one more than the number "
                      "of milestone points, but got number of schedulers 2 and the number of milestones to be "
                      "equal to 0");
  REQUIRE_THROWS_WITH(sched::SequentialLR(opt, List{a, nullptr}, {5}), "SequentialLR: scheduler at index 1 is null");
}

TEST_CASE("error messages print numbers as Python's repr(float)", "[ch01][optim]") {
  using optim::detail::py_float;
  REQUIRE(py_float(-0.1) == "-0.1");
  REQUIRE(py_float(-1.0) == "-1.0");
  REQUIRE(py_float(0.0) == "0.0");
  REQUIRE(py_float(1e-5) == "1e-05");
  REQUIRE(py_float(-1e-8) == "-1e-08");
  REQUIRE(py_float(0.0001) == "0.0001");
  REQUIRE(py_float(123.25) == "123.25");
  REQUIRE(py_float(1.0 / 3) == "0.3333333333333333");
  REQUIRE(py_float(1e16) == "1e+16");
  REQUIRE(py_float(1234567890123456.0) == "1234567890123456.0");
  REQUIRE(py_float(2.5e-300) == "2.5e-300");
  REQUIRE(py_float(std::nan("")) == "nan");
  REQUIRE(py_float(-INFINITY) == "-inf");
}

// =============================================================================================
// state_dict / load_state_dict, resuming (chapters/03-optimizers.md, "Checkpoints and resuming")
// =============================================================================================

namespace {

using StateDict = std::vector<std::pair<std::string, Tensor>>;

/// (key, shape) of every entry, sorted: what gen_optim.py records of PyTorch's state dicts.
ref::KeyShapes key_shapes(const StateDict& sd) {
  ref::KeyShapes out;
  for (const auto& [key, t] : sd) {
    std::vector<long long> shape;
    for (int64_t d : t.sizes()) shape.push_back(d);
    out.emplace_back(key, shape);
  }
  std::sort(out.begin(), out.end());
  return out;
}
ref::KeyShapes sorted(ref::KeyShapes k) {
  std::sort(k.begin(), k.end());
  return k;
}
const Tensor& entry(const StateDict& sd, const std::string& key) {
  for (const auto& e : sd)
    if (e.first == key) return e.second;
  FAIL("no key " << key);
  throw;
}
void append_prefixed(StateDict& out, const std::string& prefix, const StateDict& sd) {
  for (const auto& [key, t] : sd) out.emplace_back(prefix + key, t);
}
StateDict with_prefix(const StateDict& sd, const std::string& prefix) {
  StateDict out;
  for (const auto& [key, t] : sd)
    if (key.compare(0, prefix.size(), prefix) == 0) out.emplace_back(key.substr(prefix.size()), t);
  return out;
}

/// Three parameters in two groups, (2, 3) and (2) in group 0, (4) in group 1, after one step
/// with every gradient 1 (gen_optim.py's optimizer_keys).
struct TwoGroups {
  Tensor w0 = zeros({2, 3}, TensorOptions().requires_grad(true));
  Tensor b0 = zeros({2}, TensorOptions().requires_grad(true));
  Tensor w1 = zeros({4}, TensorOptions().requires_grad(true));
  void step(Optimizer& opt) {
    (w0.sum() + b0.sum() + w1.sum()).backward();
    opt.step();
  }
};

}  // namespace

TEST_CASE("Optimizer::state_dict has PyTorch's keys and shapes, flattened", "[ch03][optim][state_dict]") {
  SECTION("SGD with momentum, two groups") {
    TwoGroups m;
    SGD opt({m.w0, m.b0}, 0.1, 0.9);
    opt.add_param_group({m.w1}, SGDOptions{0.01, 0.9});
    m.step(opt);
    const StateDict sd = opt.state_dict();
    REQUIRE(key_shapes(sd) == sorted(ref::sgd_momentum_state_dict_keys()));
    CHECK(entry(sd, "state.0.momentum_buffer").tolist<double>() == std::vector<double>(6, 1.0));  // b = g
    CHECK(entry(sd, "param_groups.0.lr").item<double>() == 0.1);
    CHECK(entry(sd, "param_groups.1.lr").item<double>() == 0.01);
    CHECK(entry(sd, "param_groups.0.momentum").item<double>() == 0.9);
    CHECK(entry(sd, "param_groups.0.nesterov").item<double>() == 0.0);
    CHECK(entry(sd, "param_groups.0.lr").dtype() == kFloat64);
    CHECK(entry(sd, "param_groups.0.params").tolist<int64_t>() == std::vector<int64_t>{0, 1});
    CHECK(entry(sd, "param_groups.1.params").tolist<int64_t>() == std::vector<int64_t>{2});
    // The state tensors are the live ones (as PyTorch's), not copies.
    CHECK(entry(sd, "state.2.momentum_buffer").impl() == opt.state(m.w1)->momentum_buffer.impl());
  }
  SECTION("Adam with amsgrad, two groups") {
    TwoGroups m;
    Adam opt({m.w0, m.b0}, AdamOptions{0.1, {0.9, 0.999}, 1e-8, 0.0, true});
    opt.add_param_group({m.w1}, AdamOptions{0.01, {0.9, 0.999}, 1e-8, 0.0, true});
    m.step(opt);
    const StateDict sd = opt.state_dict();
    REQUIRE(key_shapes(sd) == sorted(ref::adam_amsgrad_state_dict_keys()));
    CHECK(entry(sd, "state.1.step").dtype() == kFloat32);  // PyTorch's step is a float32 tensor
    CHECK(entry(sd, "state.1.step").item<double>() == 1.0);
    CHECK(entry(sd, "param_groups.0.betas").tolist<double>() == std::vector<double>{0.9, 0.999});
    CHECK(entry(sd, "param_groups.0.amsgrad").item<double>() == 1.0);
    CHECK(entry(sd, "param_groups.1.eps").item<double>() == 1e-8);
  }
  SECTION("plain SGD has no state entries; a scheduler adds initial_lr") {
    TwoGroups m;
    SGD opt({m.w0, m.b0}, 0.1);
    m.step(opt);
    CHECK(opt.state_dict().size() == 6);  // 5 hyper-parameters + params
    sched::StepLR s(opt, 1);
    CHECK(entry(opt.state_dict(), "param_groups.0.initial_lr").item<double>() == 0.1);
  }
  SECTION("SequentialLR") {
    Tensor p = zeros({1}, TensorOptions().requires_grad(true));
    SGD opt({p}, 0.1);
    auto warm = std::make_shared<sched::LinearLR>(opt, 0.1, 1.0, 3);
    auto cos = std::make_shared<sched::CosineAnnealingLR>(opt, 7);
    sched::SequentialLR s(opt, {warm, cos}, {3});
    REQUIRE(key_shapes(s.state_dict()) == sorted(ref::sequential_lr_state_dict_keys()));
    CHECK(entry(s.state_dict(), "_schedulers.1.T_max").item<int64_t>() == 7);
  }
}

TEST_CASE("a resumed optimizer and scheduler continue bit for bit", "[ch03][optim][state_dict]") {
  using MakeOptV = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;
  const std::vector<std::pair<std::string, MakeOptV>> optimizers = {
      {"SGD momentum nesterov weight_decay",
       [](std::vector<Tensor> p) { return std::make_unique<SGD>(std::move(p), SGDOptions{0.1, 0.9, 0.0, 0.01, true}); }},
      {"Adam amsgrad weight_decay",
       [](std::vector<Tensor> p) {
         return std::make_unique<Adam>(std::move(p), AdamOptions{0.05, {0.8, 0.99}, 1e-6, 0.01, true});
       }},
      {"AdamW", [](std::vector<Tensor> p) { return std::make_unique<AdamW>(std::move(p), 0.05); }},
  };
  // warmup (LinearLR over 2 steps), then cosine over 4: the milestone falls inside the run.
  const auto make_sched = [](Optimizer& opt) {
    auto warm = std::make_shared<sched::LinearLR>(opt, 0.25, 1.0, 2);
    auto cos = std::make_shared<sched::CosineAnnealingLR>(opt, 4);
    return std::make_unique<sched::SequentialLR>(opt, std::vector<std::shared_ptr<sched::LRScheduler>>{warm, cos},
                                                 std::vector<int64_t>{2});
  };
  const Tensor x = tensor(ref::inputs(), {4, 3});   // x: (4, 3)
  const Tensor y = tensor(ref::targets(), {4, 2});  // y: (4, 2)
  const size_t steps = 6;
  const std::string path = "/tmp/tt_test_optim_resume_" + std::to_string(::getpid()) + ".tt";
  // Steps [from, to) of the run; after each: the parameters and the lr, appended to `out`.
  auto run_steps = [&](auto& model, auto& opt, auto& s, size_t from, size_t to, std::vector<std::vector<double>>& out) {
    for (size_t i = from; i < to; ++i) {
      opt.zero_grad();
      mse_loss(model(x), y).backward();
      opt.step();
      s.step();
      out.push_back(flat(model));
      out.back().push_back(opt.param_groups()[0].lr);
    }
  };
  for (const auto& [name, make_opt] : optimizers) {
    // One run of 6 steps; after each: the parameters and the lr.
    std::vector<std::vector<double>> straight;
    {
      auto model = make_model();
      auto opt = make_opt(model->parameters());
      auto s = make_sched(*opt);
      run_steps(*model, *opt, *s, 0, steps, straight);
    }
    for (size_t stop : {1, 2, 3, 5}) {
      INFO(name << ", stopped after step " << stop);
      std::vector<std::vector<double>> resumed;
      {
        auto model = make_model();
        auto opt = make_opt(model->parameters());
        auto s = make_sched(*opt);
        run_steps(*model, *opt, *s, 0, stop, resumed);
        StateDict ck;
        append_prefixed(ck, "model.", model->state_dict());
        append_prefixed(ck, "optimizer.", opt->state_dict());
        append_prefixed(ck, "scheduler.", s->state_dict());
        save(ck, path);
      }
      {
        const StateDict ck = load(path);
        std::remove(path.c_str());
        auto model = std::make_shared<nn::Linear>(3, 2);  // other initial weights: the checkpoint's win
        model->load_state_dict(with_prefix(ck, "model."));
        auto opt = make_opt(model->parameters());
        auto s = make_sched(*opt);
        opt->load_state_dict(with_prefix(ck, "optimizer."));
        s->load_state_dict(with_prefix(ck, "scheduler."));
        run_steps(*model, *opt, *s, stop, steps, resumed);
      }
      REQUIRE(resumed == straight);  // exactly: the same bits
    }
  }
}

TEST_CASE("load_state_dict rejects a state dict that does not fit, with PyTorch's messages", "[ch03][optim][state_dict]") {
  TwoGroups m;
  SGD two({m.w0, m.b0}, 0.1, 0.9);
  two.add_param_group({m.w1}, SGDOptions{0.01, 0.9});
  m.step(two);
  const StateDict sd = two.state_dict();
  Tensor a = zeros({2, 3}, TensorOptions().requires_grad(true)), b = zeros({2}, TensorOptions().requires_grad(true));
  Tensor c = zeros({3, 2}, TensorOptions().requires_grad(true)), d = zeros({4}, TensorOptions().requires_grad(true));
  SECTION("group count, group size") {
    SGD one({a, b}, 0.5, 0.9);
    REQUIRE_THROWS_WITH(one.load_state_dict(sd), "loaded state dict has a different number of parameter groups");
    SGD sizes({a}, 0.5, 0.9);
    sizes.add_param_group({b, d}, SGDOptions{0.01, 0.9});
    REQUIRE_THROWS_WITH(sizes.load_state_dict(sd),
                        "loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
  }
  SECTION("shapes; nothing changes when a load fails") {
    SGD wrong({c, b}, 0.5, 0.9);
    wrong.add_param_group({d}, SGDOptions{0.01, 0.9});
    REQUIRE_THROWS_WITH(wrong.load_state_dict(sd),
                        "Optimizer.load_state_dict: size mismatch for state.0.momentum_buffer: copying a state with "
                        "shape [2, 3], the shape of parameter 0 is [3, 2]");
    CHECK(wrong.param_groups()[0].lr == 0.5);
    CHECK(wrong.state().empty());
  }
  SECTION("another optimizer's state dict, unknown keys, bad values") {
    Adam adam({a, b});
    adam.add_param_group({d});
    REQUIRE_THROWS_WITH(adam.load_state_dict(sd), "Optimizer.load_state_dict: missing key \"param_groups.0.betas\"");
    SGD sgd({a, b}, 0.5, 0.9);
    sgd.add_param_group({d}, SGDOptions{0.01, 0.9});
    StateDict extra = sd;
    extra.emplace_back("state.0.exp_avg", zeros({2, 3}));
    REQUIRE_THROWS_WITH(sgd.load_state_dict(extra),
                        Catch::StartsWith("Optimizer.load_state_dict: unexpected key \"state.0.exp_avg\""));
    StateDict bad = sd;
    for (auto& e : bad)
      if (e.first == "param_groups.0.nesterov") e.second = scalar_tensor(0.5, kFloat64);
    REQUIRE_THROWS_WITH(sgd.load_state_dict(bad),
                        "Optimizer.load_state_dict: param_groups.0.nesterov must be 0 or 1 (a bool), got 0.5");
    sgd.load_state_dict(sd);  // the right one loads: lr, momentum and the buffers are the saved ones
    CHECK(sgd.param_groups()[0].lr == 0.1);
    CHECK(sgd.param_groups()[1].lr == 0.01);
    REQUIRE(sgd.state(d) != nullptr);
    CHECK(sgd.state(d)->momentum_buffer.tolist<double>() == std::vector<double>(4, 1.0));
    CHECK(sgd.state(d)->momentum_buffer.impl() != two.state(m.w1)->momentum_buffer.impl());  // a copy
  }
  SECTION("schedulers") {
    sched::CosineAnnealingLR s(two, 10);
    StateDict ssd = s.state_dict();
    SGD single({a}, 0.1);
    sched::CosineAnnealingLR other(single, 5);
    REQUIRE_THROWS_WITH(other.load_state_dict(ssd),
                        "LRScheduler.load_state_dict: base_lrs must hold 1 value(s) (one per param group), got shape [2]");
    sched::StepLR step(two, 3);
    REQUIRE_THROWS_WITH(step.load_state_dict(ssd), "LRScheduler.load_state_dict: missing key \"step_size\"");
    CHECK(step.last_epoch == 0);  // unchanged
    sched::CosineAnnealingLR same(two, 3);
    same.load_state_dict(ssd);  // the settings are the saved ones, as PyTorch's __dict__.update
    CHECK(same.T_max == 10);
    ssd.emplace_back("verbose", scalar_tensor(0.0, kFloat64));
    REQUIRE_THROWS_WITH(same.load_state_dict(ssd), "LRScheduler.load_state_dict: unexpected key \"verbose\"");
  }
  // Found by breaking (issue 11): these loaded silently before.
  SECTION("Adam state missing an entry (PyTorch's step raises KeyError)") {
    Adam adam({a, b});
    a.set_grad(ones({2, 3}));
    b.set_grad(ones({2}));
    adam.step();
    StateDict partial;
    for (const auto& e : adam.state_dict())
      if (e.first != "state.0.exp_avg") partial.push_back(e);
    Adam fresh({a, b});
    REQUIRE_THROWS_WITH(fresh.load_state_dict(partial), Catch::StartsWith("Optimizer.load_state_dict: missing key "
                                                                          "\"state.0.exp_avg\""));
    StateDict amsgrad = adam.state_dict();
    for (auto& e : amsgrad)
      if (e.first == "param_groups.0.amsgrad") e.second = scalar_tensor(1.0, kFloat64);
    REQUIRE_THROWS_WITH(fresh.load_state_dict(amsgrad), Catch::StartsWith("Optimizer.load_state_dict: missing key "
                                                                          "\"state.0.max_exp_avg_sq\""));
    CHECK(fresh.state().empty());
  }
  SECTION("an id spelled twice (state.0 and state.00)") {
    SGD sgd({a, b}, 0.5, 0.9);
    sgd.add_param_group({d}, SGDOptions{0.01, 0.9});
    StateDict twice = sd;
    twice.emplace_back("state.00.momentum_buffer", zeros({2, 3}));
    REQUIRE_THROWS_WITH(sgd.load_state_dict(twice),
                        Catch::StartsWith("Optimizer.load_state_dict: unexpected key \"state.00.momentum_buffer\""));
  }
  SECTION("LinearLR factors the constructor refuses") {
    sched::LinearLR warm(two, 0.5, 1.0, 4);
    StateDict lsd = warm.state_dict();
    for (auto& e : lsd)
      if (e.first == "start_factor") e.second = scalar_tensor(0.0, kFloat64);
    sched::LinearLR other(two, 0.5, 1.0, 4);
    REQUIRE_THROWS_WITH(other.load_state_dict(lsd), Catch::Contains("Starting multiplicative factor expected to be "
                                                                    "greater than 0 and less or equal to 1., got 0.0"));
    CHECK(other.start_factor == 0.5);
  }
}

TEST_CASE("Generator::get_state / set_state repeat the stream", "[ch03][optim][state_dict]") {
  Generator g(42);
  g.uniform();
  g.normal();  // leaves a spare Box-Muller value, which is part of the state
  const std::vector<uint64_t> state = g.get_state();
  const double n1 = g.normal(), u1 = g.uniform();
  const uint64_t r1 = g.next_u64();
  Generator h(7);
  h.set_state(state);
  CHECK(h.normal() == n1);
  CHECK(h.uniform() == u1);
  CHECK(h.next_u64() == r1);
  CHECK(h.initial_seed() == 42);
  REQUIRE_THROWS_WITH(h.set_state({1, 2, 3}),
                      "Generator.set_state: expected " + std::to_string(state.size()) +
                          " words (Generator::get_state()), got 3");
}

TEST_CASE("optimizer state memory is 0x, 1x, 2x (3x with amsgrad) the parameters", "[ch03][optim]") {
  // What build/bin/optimizer_memory prints (examples/optimizer_memory.hpp).
  const auto rows = examples::measure_optimizer_memory();
  REQUIRE(rows.size() == 5);
  const int64_t params = 235146 * 4;  // MLP 784-256-128-10, float32
  const std::vector<std::pair<std::string, int64_t>> want = {
      {"SGD", 0}, {"SGD momentum=0.9", params}, {"Adam", 2 * params}, {"AdamW", 2 * params},
      {"Adam amsgrad=True", 3 * params}};
  for (size_t i = 0; i < want.size(); ++i) {
    INFO(rows[i].name);
    CHECK(rows[i].name == want[i].first);
    CHECK(rows[i].param_bytes == 940584);
    CHECK(rows[i].state_bytes == want[i].second);
  }
  CHECK(rows[2].ratio() == 2.0);
}

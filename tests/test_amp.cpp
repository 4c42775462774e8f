// tests/test_amp.cpp — amp::GradScaler (amp/grad_scaler.hpp): the loss-scaling trace of PyTorch's
// own GradScaler (tests/reference/gen_grad_scaler.py -> grad_scaler_ref.hpp: scale, growth tracker,
// skip decision and weights after every step), its errors, the disabled pass-through and
// state_dict. Chapter: chapters/11-mixed-precision.md.
#include <catch2/catch.hpp>

#include <cmath>
#include <tinytorch/amp/grad_scaler.hpp>
#include <tinytorch/tinytorch.hpp>

#include "reference/grad_scaler_ref.hpp"

namespace tt = tinytorch;

TEST_CASE("GradScaler: the scale, skip decisions and weights of PyTorch's trace", "[ch11][amp]") {
  tt::Tensor w = tt::tensor({1.0, -2.0, 0.5}).requires_grad_();
  tt::optim::SGD opt({w}, 0.125);
  tt::amp::GradScaler scaler({65536.0, 2.0, 0.5, /*growth_interval=*/3});
  CHECK(scaler.get_scale() == 65536.0);
  int step = 0;
  for (const auto& s : grad_scaler_ref::steps) {
    INFO("step " << step++);
    opt.zero_grad();
    const tt::Tensor loss = (w * tt::tensor({s.x[0], s.x[1], s.x[2]})).sum();
    const tt::Tensor scaled = scaler.scale(loss);
    CHECK(scaled.sizes() == tt::Shape{1});
    scaled.backward();
    CHECK(scaler.step(opt) == s.stepped);
    scaler.update();
    CHECK(scaler.get_scale() == s.scale);
    CHECK(scaler.growth_tracker() == s.tracker);
    CHECK(w.tolist<float>() == std::vector<float>{s.w[0], s.w[1], s.w[2]});
  }
}

TEST_CASE("GradScaler: unscale_ divides the gradients once; the errors are PyTorch's", "[ch11][amp]") {
  tt::Tensor w = tt::tensor({1.0, 2.0}).requires_grad_();
  tt::optim::SGD opt({w}, 0.125);
  tt::amp::GradScaler scaler;
  CHECK_THROWS_WITH(scaler.step(opt), "Attempted step but _scale is None.  This may indicate your script did not "
                                      "use scaler.scale(loss or outputs) earlier in the iteration.");
  CHECK_THROWS_WITH(scaler.update(), "Attempted update but _scale is None.  This may indicate your script did not "
                                     "use scaler.scale(loss or outputs) earlier in the iteration.");
  scaler.scale((w * 3.0).sum()).backward();
  CHECK(w.grad().tolist<double>() == std::vector<double>{196608.0, 196608.0});  // 3 * 2^16
  scaler.unscale_(opt);
  CHECK(w.grad().tolist<double>() == std::vector<double>{3.0, 3.0});
  CHECK_THROWS_WITH(scaler.unscale_(opt),
                    "unscale_() has already been called on this optimizer since the last update().");
  CHECK(scaler.step(opt));  // uses the unscaled gradients, does not unscale again
  CHECK(w.tolist<double>() == std::vector<double>{1.0 - 0.125 * 3.0, 2.0 - 0.125 * 3.0});
  CHECK_THROWS_WITH(scaler.step(opt), "step() has already been called since the last update().");
  CHECK_THROWS_WITH(scaler.unscale_(opt), "unscale_() is being called after step().");
  scaler.update();

  // an optimizer none of whose parameters has a gradient
  tt::Tensor v = tt::zeros({2}).requires_grad_();
  tt::optim::SGD idle({v}, 0.1);
  CHECK_THROWS_WITH(scaler.step(idle), "No inf checks were recorded for this optimizer.");
  CHECK_THROWS_WITH(tt::amp::GradScaler().update(), "Attempted update but _scale is None.  This may indicate your "
                                                   "script did not use scaler.scale(loss or outputs) earlier in the "
                                                   "iteration.");
  {
    tt::amp::GradScaler s2;
    s2.scale(tt::ones({1}));
    CHECK_THROWS_WITH(s2.update(), "No inf checks were recorded prior to update.");
  }
  // float16 gradients: keep float32 master weights
  tt::Tensor h = tt::ones({2}, tt::kFloat16).requires_grad_();
  tt::optim::SGD hopt({h}, 0.1);
  tt::amp::GradScaler s3;
  s3.scale(h.sum()).backward();
  CHECK_THROWS_WITH(s3.step(hopt), "Attempting to unscale FP16 gradients.");
  // a float32 and a float16 parameter: the error comes before any gradient is unscaled
  tt::Tensor a32 = tt::ones({2}).requires_grad_(), a16 = tt::ones({2}, tt::kFloat16).requires_grad_();
  tt::optim::SGD mixed({a32, a16}, 0.1);
  tt::amp::GradScaler s4;
  s4.scale(a32.sum() * 3.0 + a16.sum().to(tt::kFloat32)).backward();
  CHECK_THROWS_WITH(s4.step(mixed), "Attempting to unscale FP16 gradients.");
  CHECK(a32.grad().tolist<double>() == std::vector<double>{196608.0, 196608.0});
  CHECK_THROWS_WITH(tt::amp::GradScaler({65536.0, 1.0}), "The growth factor must be > 1.0. (GradScaler got 1)");
  CHECK_THROWS_WITH(tt::amp::GradScaler({65536.0, 2.0, 1.5}), "The backoff factor must be < 1.0. (GradScaler got 1.5)");
}

TEST_CASE("GradScaler: bfloat16 gradients unscale in float32 and round once", "[ch11][amp]") {
  tt::Tensor w = tt::ones({3}, tt::kBFloat16).requires_grad_();
  tt::optim::SGD opt({w}, 1.0);
  tt::amp::GradScaler scaler({1024.0});
  // loss = sum(w * c): the scaled gradient is c * 1024 in bfloat16, unscaled back to c (bf16-rounded)
  scaler.scale((w * tt::tensor({0.3, 1e-3, 7.0}, tt::kBFloat16)).sum()).backward();
  CHECK(w.grad().dtype() == tt::kBFloat16);
  scaler.unscale_(opt);
  CHECK(w.grad().tolist<float>() == tt::tensor({0.3, 1e-3, 7.0}, tt::kBFloat16).tolist<float>());
}

TEST_CASE("GradScaler: disabled is a pass-through; state_dict as PyTorch's", "[ch11][amp]") {
  tt::Tensor w = tt::tensor({1.0}).requires_grad_();
  tt::optim::SGD opt({w}, 0.5);
  tt::amp::GradScaler off({65536.0, 2.0, 0.5, 2000, /*enabled=*/false});
  const tt::Tensor loss = (w * 2.0).sum();
  CHECK(off.scale(loss).impl() == loss.impl());
  loss.backward();
  CHECK(off.step(opt));
  off.update();
  CHECK(w.item<double>() == 0.0);
  CHECK(off.get_scale() == 1.0);
  CHECK(off.state_dict().empty());
  CHECK(!off.is_enabled());

  tt::amp::GradScaler a({8.0, 2.0, 0.5, 1});
  tt::Tensor v = tt::tensor({1.0}).requires_grad_();
  tt::optim::SGD vopt({v}, 0.5);
  a.scale(v.sum()).backward();
  a.step(vopt);
  a.update();  // one clean step with growth_interval 1: 8 -> 16
  const auto sd = a.state_dict();
  CHECK(sd == std::map<std::string, double>{{"scale", 16.0}, {"growth_factor", 2.0}, {"backoff_factor", 0.5},
                                            {"growth_interval", 1.0}, {"_growth_tracker", 0.0}});
  tt::amp::GradScaler b;
  b.load_state_dict(sd);
  CHECK(b.get_scale() == 16.0);
  CHECK(b.get_growth_interval() == 1);
  CHECK_THROWS_WITH(b.load_state_dict({}), "The source state dict is empty, possibly because it was saved from a "
                                           "disabled instance of GradScaler.");
  auto bad = sd;
  bad["_growth_tracker"] = 1e30;
  CHECK_THROWS_WITH(b.load_state_dict(bad),
                    "GradScaler.load_state_dict: '_growth_tracker' must be a non-negative integer, got 1e+30");
  bad = sd;
  bad["growth_interval"] = NAN;
  CHECK_THROWS_WITH(b.load_state_dict(bad),
                    "GradScaler.load_state_dict: 'growth_interval' must be a non-negative integer, got nan");
}

TEST_CASE("autocast: matmul/linear in bfloat16, softmax/losses/sums in float32, grads to float32 leaves",
          "[ch11][amp][autocast]") {
  tt::manual_seed(0);
  const tt::Tensor x = tt::randn({4, 3});
  const tt::Tensor target = tt::tensor({0.0, 2.0, 1.0, 1.0}, tt::kInt64);
  tt::Tensor w = tt::randn({5, 3}).requires_grad_(), b = tt::randn({5}).requires_grad_();
  tt::Tensor loss;
  {
    tt::autocast ac("cpu");
    CHECK(tt::amp::is_autocast_enabled("cpu"));
    CHECK(!tt::amp::is_autocast_enabled("cuda"));
    CHECK(tt::amp::get_autocast_dtype("cpu") == tt::kBFloat16);
    const tt::Tensor y = tt::linear(x, w, b);
    CHECK(y.dtype() == tt::kBFloat16);
    CHECK(y.relu().dtype() == tt::kBFloat16);  // not on a list: runs in its input's dtype
    CHECK(y.softmax(1).dtype() == tt::kFloat32);
    CHECK(y.sum().dtype() == tt::kFloat32);
    CHECK(y.mean().dtype() == tt::kFloat32);
    CHECK(tt::matmul(x, w.t()).dtype() == tt::kBFloat16);
    CHECK(tt::matmul(x.to(tt::kFloat64), w.t().to(tt::kFloat64)).dtype() == tt::kFloat64);  // never cast
    CHECK((y + b).dtype() == tt::kFloat32);  // type promotion as usual
    loss = tt::cross_entropy(y, target);
    CHECK(loss.dtype() == tt::kFloat32);
  }
  CHECK(!tt::amp::is_autocast_enabled("cpu"));
  CHECK(tt::linear(x, w, b).dtype() == tt::kFloat32);
  loss.backward();
  REQUIRE(w.grad().defined());
  CHECK(w.grad().dtype() == tt::kFloat32);
  CHECK(b.grad().dtype() == tt::kFloat32);
  // the same graph written out by hand: the casts autocast made, and nothing else
  tt::Tensor w2 = w.detach().requires_grad_(), b2 = b.detach().requires_grad_();
  const tt::Tensor y2 = tt::linear(x.to(tt::kBFloat16), w2.to(tt::kBFloat16), b2.to(tt::kBFloat16));
  const tt::Tensor loss2 = tt::cross_entropy(y2.to(tt::kFloat32), target);
  loss2.backward();
  CHECK(loss.item<float>() == loss2.item<float>());
  CHECK(w.grad().tolist<float>() == w2.grad().tolist<float>());
  CHECK(b.grad().tolist<float>() == b2.grad().tolist<float>());
}

TEST_CASE("autocast: nesting, enabled=false, the weight cast cache, the device type", "[ch11][amp][autocast]") {
  const tt::Tensor x = tt::ones({2, 3});
  tt::Tensor w = tt::ones({3, 3}).requires_grad_();
  auto& st = tt::amp::detail::state();
  {
    tt::autocast outer("cpu", tt::kFloat16);
    CHECK(tt::matmul(x, w).dtype() == tt::kFloat16);
    CHECK(tt::matmul(x, w).dtype() == tt::kFloat16);
    CHECK(st.cache.size() == 1);  // w's float16 copy, made once
    {
      tt::autocast inner("cpu", std::nullopt, /*enabled=*/false);
      CHECK(tt::matmul(x, w).dtype() == tt::kFloat32);
    }
    CHECK(tt::matmul(x, w).dtype() == tt::kFloat16);
    CHECK(st.cache.size() == 1);  // an inner guard's end keeps the outer cache
    {
      tt::autocast inner("cpu", tt::kBFloat16);
      CHECK(tt::matmul(x, w).dtype() == tt::kBFloat16);
    }
    CHECK(tt::amp::get_autocast_dtype("cpu") == tt::kFloat16);
  }
  CHECK(st.cache.empty());
  {
    tt::autocast ac("cpu", tt::kBFloat16, true, /*cache_enabled=*/false);
    CHECK(tt::matmul(x, w).dtype() == tt::kBFloat16);
    CHECK(st.cache.empty());
  }
  {
    tt::autocast ac("cuda");  // CPU tensors are not on its device type
    CHECK(tt::matmul(x, w).dtype() == tt::kFloat32);
  }
  CHECK_THROWS_WITH(tt::autocast("tpu"),
                    "autocast: User specified autocast device_type must be 'cuda' or 'cpu', but got 'tpu'");
  CHECK_THROWS_WITH(tt::autocast("cpu", tt::kInt64),
                    "autocast: In CPU autocast, but the target dtype is not supported (got torch.int64). CPU Autocast "
                    "only supports dtype of torch.bfloat16, torch.float16 currently. (PyTorch warns and disables "
                    "autocast here; tinytorch raises: see amp/autocast_mode.hpp)");
  CHECK_THROWS(tt::autocast("cuda", tt::kFloat32));
  CHECK(!tt::amp::is_autocast_enabled("cpu"));
  CHECK(st.nesting == 0);
}

TEST_CASE("autocast: DataParallel's replica threads run under the caller's autocast", "[ch11][amp][autocast]") {
  tt::manual_seed(0);
  auto model = std::make_shared<tt::nn::Linear>(3, 2);
  tt::nn::DataParallel dp(model, {tt::Device::cpu(), tt::Device::cpu()});
  const tt::Tensor x = tt::randn({4, 3});
  CHECK(dp.forward(x).dtype() == tt::kFloat32);
  tt::Tensor y;
  {
    tt::autocast ac("cpu");
    y = dp.forward(x);  // each replica's linear ran in its own thread, in bfloat16
  }
  CHECK(y.dtype() == tt::kBFloat16);
  const tt::Tensor want = tt::linear(x.to(tt::kBFloat16), model->weight.to(tt::kBFloat16), model->bias.to(tt::kBFloat16));
  CHECK(y.to(tt::kFloat32).tolist<float>() == want.to(tt::kFloat32).tolist<float>());
}

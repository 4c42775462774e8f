// labs/03-optimizers/test_optim.cpp — the checks of lab 03, one Catch2 tag per task.
//
// References: reference.hpp, written by gen_reference.py with PyTorch's torch.optim.SGD and
// torch.optim.Adam (float64 parameter trajectories over 5 steps with fixed gradients, and Adam's
// losses on chapter 01's two-sample Linear(2, 1) in float32). A failure names the case, the step,
// the element, your value and PyTorch's.
#include <catch2/catch.hpp>

#include "lab.hpp"
#include "reference.hpp"

#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace tt = tinytorch;

namespace {

// "" when |got - want| <= atol + rtol |want| everywhere, else the first element that is not.
std::string mismatch(const std::vector<double>& got, const std::vector<double>& want, double rtol, double atol) {
  std::ostringstream os;
  if (got.size() != want.size()) {
    os << got.size() << " values, expected " << want.size();
    return os.str();
  }
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]))) {
      os.precision(17);
      os << "[" << i << "] = " << got[i] << ", PyTorch gives " << want[i];
      return os.str();
    }
  return "";
}

void expect_close(const std::string& what, const std::vector<double>& got, const std::vector<double>& want,
                  double rtol = 1e-12, double atol = 1e-14) {
  const std::string m = mismatch(got, want, rtol, atol);
  if (m.empty())
    SUCCEED(what);
  else
    FAIL_CHECK(what << ": " << m);
}

tt::Tensor f64(const std::vector<double>& v) { return tt::tensor(v, tt::kFloat64); }

// The update must change the parameter's own memory: the model (and the optimizer) hold other
// handles on it, which a new tensor assigned to `param` would not reach.
void expect_in_place(const std::string& what, const tt::Tensor& param, const tt::Tensor& model_view) {
  if (param.impl() == model_view.impl() && param.tolist<double>() == model_view.tolist<double>())
    SUCCEED(what);
  else
    FAIL_CHECK(what << ": the update made a new tensor (param = param - ...) instead of changing the parameter in "
                       "place (param.add_(...), mul_, addcdiv_): the model's handle on it still holds "
                    << model_view.tolist<double>()[0] << " in element 0");
}

std::string label(const lab03_ref::Case& c, size_t step) {
  return "case '" + c.name + "', after step " + std::to_string(step + 1) + ", param";
}

}  // namespace

TEST_CASE("sgd_update matches torch.optim.SGD", "[task:sgd]") {
  for (const lab03_ref::Case& c : lab03_ref::sgd) {
    tt::Tensor p = f64(lab03_ref::p0);
    const tt::Tensor model_view = p;  // the model's handle on the same parameter
    for (size_t t = 0; t < lab03_ref::grads.size(); ++t) {
      tt::NoGradGuard no_grad;
      lab03::sgd_update(p, f64(lab03_ref::grads[t]), c.lr, c.weight_decay);
      expect_close(label(c, t), p.tolist<double>(), c.params[t]);
      expect_in_place(label(c, t), p, model_view);
    }
  }
}

TEST_CASE("sgd_momentum_update matches torch.optim.SGD with momentum, dampening and nesterov", "[task:momentum]") {
  for (const lab03_ref::Case& c : lab03_ref::momentum) {
    tt::Tensor p = f64(lab03_ref::p0);
    const tt::Tensor model_view = p;
    tt::Tensor buffer;  // undefined until the first step
    for (size_t t = 0; t < lab03_ref::grads.size(); ++t) {
      tt::NoGradGuard no_grad;
      lab03::sgd_momentum_update(p, f64(lab03_ref::grads[t]), buffer, c.lr, c.momentum, c.dampening, c.weight_decay,
                                 c.nesterov);
      INFO("case '" << c.name << "', step " << t + 1);
      REQUIRE(buffer.defined());  // the first step creates the momentum buffer
      CHECK(buffer.sizes() == p.sizes());
      expect_close(label(c, t), p.tolist<double>(), c.params[t]);
      expect_in_place(label(c, t), p, model_view);
    }
  }
}

TEST_CASE("adam_update matches torch.optim.Adam", "[task:adam]") {
  for (const lab03_ref::Case& c : lab03_ref::adam) {
    tt::Tensor p = f64(lab03_ref::p0);
    const tt::Tensor model_view = p;
    tt::Tensor m, v;
    int64_t step = 0;
    for (size_t t = 0; t < lab03_ref::grads.size(); ++t) {
      tt::NoGradGuard no_grad;
      lab03::adam_update(p, f64(lab03_ref::grads[t]), m, v, step, c.lr, c.beta1, c.beta2, c.eps, c.weight_decay);
      INFO("case '" << c.name << "', step " << t + 1);
      CHECK(step == static_cast<int64_t>(t) + 1);
      REQUIRE(m.defined());
      REQUIRE(v.defined());
      expect_close(label(c, t), p.tolist<double>(), c.params[t]);
      expect_in_place(label(c, t), p, model_view);
    }
  }
}

TEST_CASE("LabAdam trains chapter 01's Linear(2, 1) as torch.optim.Adam does", "[task:optimizer]") {
  tt::manual_seed(0);
  auto model = std::make_shared<tt::nn::Linear>(2, 1);
  std::vector<tt::Tensor> params = model->parameters();
  {
    tt::NoGradGuard no_grad;
    params.at(0).copy_(tt::tensor({0.25, -0.5}, {1, 2}));
    params.at(1).copy_(tt::tensor({0.1}));
  }
  const tt::Tensor X = tt::tensor({1.0, 0.5, 0.5, 1.0}, {2, 2});
  const tt::Tensor y = tt::tensor({2.0, 1.5}, {2, 1});
  lab03::LabAdam opt(params, /*lr=*/0.1);
  tt::nn::MSELoss loss_fn;
  std::vector<double> losses;
  for (size_t epoch = 0; epoch < lab03_ref::adam_losses.size(); ++epoch) {
    opt.zero_grad();
    tt::Tensor loss = loss_fn(model->forward(X), y);
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  // float32 model: PyTorch's numbers to 1e-5 relative.
  expect_close("losses of epochs 0-9", losses, lab03_ref::adam_losses, 1e-5, 1e-7);
  const tt::optim::ParamState* state = opt.state(params.at(0));
  REQUIRE(state != nullptr);
  CHECK(state->step == 10);
  CHECK(opt.state_nbytes() == 2 * 3 * 4);  // m and v for 3 float32 parameters
}

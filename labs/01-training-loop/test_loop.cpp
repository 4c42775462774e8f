// labs/01-training-loop/test_loop.cpp — the checks of lab 01, one Catch2 tag per task.
//
// References: reference.hpp, written by gen_reference.py with PyTorch (chapter 01's two-sample
// loop; a 3-class classifier Linear(2, 8) -> ReLU -> Dropout -> Linear(8, 3) with PyTorch's
// initial weights, trained 3 epochs on 23 samples in batches of 5, and its accuracies). A failure
// names the step or epoch, your value and PyTorch's.
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

// The classifier of gen_reference.py.
struct Classifier : tt::nn::Module {
  explicit Classifier(double dropout) {
    fc1 = register_module("fc1", std::make_shared<tt::nn::Linear>(2, 8));
    relu = register_module("relu", std::make_shared<tt::nn::ReLU>());
    drop = register_module("drop", std::make_shared<tt::nn::Dropout>(dropout));
    fc2 = register_module("fc2", std::make_shared<tt::nn::Linear>(8, 3));
  }
  tt::Tensor forward(const tt::Tensor& x) override { return fc2->forward(drop->forward(relu->forward(fc1->forward(x)))); }
  void load(const std::vector<std::vector<double>>& w) {
    tt::NoGradGuard no_grad;
    fc1->weight.copy_(tt::tensor(w.at(0), {8, 2}));
    fc1->bias.copy_(tt::tensor(w.at(1)));
    fc2->weight.copy_(tt::tensor(w.at(2), {3, 8}));
    fc2->bias.copy_(tt::tensor(w.at(3)));
  }
  std::shared_ptr<tt::nn::Linear> fc1, fc2;
  std::shared_ptr<tt::nn::ReLU> relu;
  std::shared_ptr<tt::nn::Dropout> drop;
};

tt::data::TensorDataset& dataset() {
  static tt::data::TensorDataset ds(tt::tensor(lab01_ref::X, {23, 2}), tt::tensor(lab01_ref::Y, tt::kInt64));
  return ds;
}

tt::data::DataLoader loader() {
  tt::data::DataLoaderOptions o;
  o.batch_size = 5;  // 5 + 5 + 5 + 5 + 3
  return tt::data::DataLoader(dataset(), o);
}

void expect_close(const std::string& what, double got, double want, double rtol) {
  if (std::abs(got - want) <= rtol * std::abs(want) + 1e-9) {
    SUCCEED(what);
  } else {
    std::ostringstream os;
    os.precision(10);
    os << what << " = " << got << ", PyTorch gives " << want;
    FAIL_CHECK(os.str());
  }
}

}  // namespace

TEST_CASE("train_step: chapter 01's five steps give PyTorch's losses", "[task:step]") {
  tt::manual_seed(0);
  tt::nn::Linear model(2, 1);
  {
    tt::NoGradGuard no_grad;
    model.weight.copy_(tt::tensor({0.25, -0.5}, {1, 2}));
    model.bias.copy_(tt::tensor({0.1}));
  }
  const tt::Tensor X = tt::tensor({1.0, 0.5, 0.5, 1.0}, {2, 2});
  const tt::Tensor y = tt::tensor({2.0, 1.5}, {2, 1});
  tt::optim::SGD opt(model.parameters(), /*lr=*/0.01);
  tt::nn::MSELoss loss_fn;
  for (size_t s = 0; s < lab01_ref::step_losses.size(); ++s) {
    const double loss = lab01::train_step(model, opt, loss_fn, X, y);
    expect_close("loss of step " + std::to_string(s + 1) +
                     (s > 1 ? " (steps 1 and 2 right, then wrong: are the gradients zeroed before each backward?)" : ""),
                 loss, lab01_ref::step_losses[s], 1e-6);
  }
  REQUIRE(model.weight.grad().defined());  // the last step's backward ran
}

TEST_CASE("train_epoch: three epochs of a classifier give PyTorch's losses and weights", "[task:epoch]") {
  Classifier model(0.0);
  model.load(lab01_ref::initial_weights);
  tt::optim::SGD opt(model.parameters(), /*lr=*/0.5);
  tt::nn::CrossEntropyLoss loss_fn;
  tt::data::DataLoader batches = loader();
  for (size_t e = 0; e < lab01_ref::epoch_losses.size(); ++e) {
    model.eval();  // train_epoch must switch it back
    const double loss = lab01::train_epoch(model, opt, loss_fn, batches);
    {
      INFO("train_epoch must put the model in training mode: model.train()");
      CHECK(model.is_training());
    }
    expect_close("mean loss of epoch " + std::to_string(e + 1) +
                     " (the batches have 5, 5, 5, 5 and 3 samples: is each weighted by its size?)",
                 loss, lab01_ref::epoch_losses[e], 1e-5);
  }
  const std::vector<tt::Tensor> params = model.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const std::vector<double> got = params[i].tolist<double>(), want = lab01_ref::trained_weights.at(i);
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < got.size(); ++k)
      expect_close("parameter " + std::to_string(i) + " element " + std::to_string(k) + " after 3 epochs", got[k],
                   want[k], 1e-4);
  }
}

TEST_CASE("accuracy: eval mode, no graph, argmax against the labels", "[task:evaluate]") {
  Classifier model(0.5);  // dropout: only eval mode gives PyTorch's (deterministic) answer
  model.load(lab01_ref::initial_weights);
  tt::data::DataLoader batches = loader();
  model.train();
  expect_close("accuracy with the initial weights (in training mode dropout would change it)",
               lab01::accuracy(model, batches), lab01_ref::accuracy_initial, 1e-12);
  {
    INFO("accuracy must leave the model in eval mode: model.eval()");
    CHECK_FALSE(model.is_training());
  }
  {
    INFO("autograd must be on again after accuracy(): a NoGradGuard inside it, not tinytorch::GradMode::set_enabled(false)");
    CHECK(tt::GradMode::is_enabled());
  }
  model.load(lab01_ref::trained_weights);
  model.train();
  expect_close("accuracy with the trained weights", lab01::accuracy(model, batches), lab01_ref::accuracy_trained,
               1e-12);
  for (const tt::Tensor& p : model.parameters()) CHECK_FALSE(p.grad().defined());  // nothing was differentiated
}

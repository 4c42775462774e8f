// tests/test_nn.cpp — nn::Module and the layers: registration and dotted names, parameters(),
// train/eval, zero_grad, Linear (shapes, default init bounds, forward/backward against PyTorch
// with injected weights), Sequential, activations, Flatten, Dropout, MSELoss / CrossEntropyLoss /
// NLLLoss (values against PyTorch and error messages), state_dict / load_state_dict, repr.
// Headers under test: nn/{module,linear,activation,container,loss,init}.hpp.
// Reference numbers: tests/reference/ops_ref.hpp (tests/reference/gen_ops.py).
// Chapter: chapters/01-training-loop.md. Tags: [ch01][nn].
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include <tinytorch/nn/activation.hpp>
#include <tinytorch/nn/container.hpp>
#include <tinytorch/nn/init.hpp>
#include <tinytorch/nn/linear.hpp>
#include <tinytorch/nn/loss.hpp>
#include <tinytorch/nn/module.hpp>

#include "ops_cases.hpp"

using namespace tinytorch;
using Catch::Contains;

namespace {

std::vector<double> vals(const Tensor& t) { return t.tolist<double>(); }

std::vector<std::string> names(const std::vector<std::pair<std::string, Tensor>>& v) {
  std::vector<std::string> out;
  for (auto& e : v) out.push_back(e.first);
  return out;
}

/// A module with its own parameter and buffer and two children (one nested further).
struct Block : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  Tensor scale;
  Block() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 3));
    scale = register_parameter("scale", ones({3}));
    register_buffer("steps", zeros({1}, kInt64));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(3, 2, false));
  }
  Tensor forward(const Tensor& x) override { return fc2->forward(fc1->forward(x).relu() * scale); }
  std::string name() const override { return "Block"; }
};

struct Net : nn::Module {
  std::shared_ptr<Block> block;
  std::shared_ptr<nn::Sequential> head;
  Net() {
    block = register_module("block", std::make_shared<Block>());
    head = register_module("head", std::make_shared<nn::Sequential>(std::make_shared<nn::Tanh>(),
                                                                      std::make_shared<nn::Linear>(2, 1)));
  }
  Tensor forward(const Tensor& x) override { return head->forward(block->forward(x)); }
  std::string name() const override { return "Net"; }
};

}  // namespace

// ---- Module ----------------------------------------------------------------------------------

TEST_CASE("named_parameters gives dotted names in registration order", "[ch01][nn]") {
  Net net;
  CHECK(names(net.named_parameters()) == std::vector<std::string>{"block.scale", "block.fc1.weight", "block.fc1.bias",
                                                                   "block.fc2.weight", "head.1.weight", "head.1.bias"});
  CHECK(names(net.block->named_parameters()) ==
        std::vector<std::string>{"scale", "fc1.weight", "fc1.bias", "fc2.weight"});
  CHECK(names(net.block->named_parameters(false)) == std::vector<std::string>{"scale"});
  CHECK(names(net.named_buffers()) == std::vector<std::string>{"block.steps"});
  CHECK(net.buffers().size() == 1);
  auto params = net.parameters();
  REQUIRE(params.size() == 6);
  CHECK(params[0].is_same(net.block->scale));  // the module's own tensors, not copies
  CHECK(params[1].is_same(net.block->fc1->weight));
  CHECK(params[5].is_same(std::static_pointer_cast<nn::Linear>((*net.head)[1])->bias));
  for (auto& p : params) {
    CHECK(p.requires_grad());
    CHECK(p.is_leaf());
  }
  CHECK_FALSE(net.block->named_buffers()[0].second.requires_grad());
  CHECK(net.named_children().size() == 2);
  CHECK(net.named_children()[1].first == "head");
}

TEST_CASE("registration errors: bad names, duplicates, null modules", "[ch01][nn]") {
  Block b;
  REQUIRE_THROWS_WITH(b.register_parameter("a.b", ones({1})), Contains("register_parameter: name 'a.b' must be non-empty and contain no '.'"));
  REQUIRE_THROWS_WITH(b.register_buffer("", ones({1})), Contains("register_buffer: name '' must be non-empty"));
  REQUIRE_THROWS_WITH(b.register_parameter("scale", ones({1})), Contains("register_parameter: attribute 'scale' already exists"));
  REQUIRE_THROWS_WITH(b.register_buffer("fc1", ones({1})), Contains("register_buffer: attribute 'fc1' already exists"));
  REQUIRE_THROWS_WITH(b.register_module("steps", std::make_shared<nn::ReLU>()), Contains("attribute 'steps' already exists"));
  REQUIRE_THROWS_WITH(b.register_module("x", std::shared_ptr<nn::ReLU>()), Contains("register_module: module 'x' is null"));
  Tensor frozen = b.register_parameter("frozen", ones({2}), false);
  CHECK_FALSE(frozen.requires_grad());
  CHECK(b.named_parameters(false).size() == 2);
  REQUIRE_THROWS_WITH(b.register_parameter("ints", ones({2}, kInt64)), Contains("only Tensors of floating point dtype can require gradients"));
}

TEST_CASE("train() and eval() propagate to every submodule", "[ch01][nn]") {
  Net net;
  CHECK(net.is_training());
  net.eval();
  CHECK_FALSE(net.is_training());
  CHECK_FALSE(net.block->is_training());
  CHECK_FALSE(net.block->fc2->is_training());
  CHECK_FALSE((*net.head)[0]->is_training());
  net.train();
  CHECK(net.block->fc1->is_training());
  CHECK((*net.head)[1]->is_training());
  net.block->train(false);  // a subtree only
  CHECK(net.is_training());
  CHECK_FALSE(net.block->fc1->is_training());
}

TEST_CASE("zero_grad sets gradients to undefined, or to zeros with set_to_none=false", "[ch01][nn]") {
  Net net;
  net.forward(ones({2, 4})).sum().backward();
  for (auto& p : net.parameters()) CHECK(p.grad().defined());
  net.zero_grad(false);
  for (auto& p : net.parameters()) {
    REQUIRE(p.grad().defined());
    CHECK(p.grad().sizes() == p.sizes());
    CHECK(p.grad().equal(zeros(p.sizes())));
  }
  net.forward(ones({2, 4})).sum().backward();
  net.zero_grad();  // PyTorch 2.x default: set_to_none=True
  for (auto& p : net.parameters()) CHECK_FALSE(p.grad().defined());
  net.zero_grad(false);  // no gradient yet: stays undefined
  for (auto& p : net.parameters()) CHECK_FALSE(p.grad().defined());
}

TEST_CASE("a Module is called like a function and forward flows through children", "[ch01][nn]") {
  Net net;
  Tensor x = tensor({0.1, -0.2, 0.3, 0.4, 1, 2, -3, 4}, {2, 4});
  Tensor y = net(x);
  CHECK(y.sizes() == Shape{2, 1});
  auto* lin = static_cast<nn::Linear*>((*net.head)[1].get());
  Tensor manual = linear(linear(linear(x, net.block->fc1->weight, net.block->fc1->bias).relu() * net.block->scale,
                                net.block->fc2->weight)
                             .tanh(),
                         lin->weight, lin->bias);
  CHECK(y.allclose(manual));
}

// ---- Linear ----------------------------------------------------------------------------------

TEST_CASE("Linear has PyTorch's shapes and default init bounds", "[ch01][nn]") {
  nn::Linear fc(100, 30);
  CHECK(fc.weight.sizes() == Shape{30, 100});
  CHECK(fc.bias.sizes() == Shape{30});
  CHECK(fc.weight.dtype() == kFloat32);
  CHECK(names(fc.named_parameters()) == std::vector<std::string>{"weight", "bias"});
  const double bound = 1.0 / std::sqrt(100.0);
  auto w = vals(fc.weight), b = vals(fc.bias);
  double wmax = 0, wsum = 0;
  for (double v : w) {
    CHECK(std::abs(v) <= bound);
    wmax = std::max(wmax, std::abs(v));
    wsum += v;
  }
  for (double v : b) CHECK(std::abs(v) <= bound);
  CHECK(wmax > 0.95 * bound);                       // spread over the whole interval
  CHECK(wsum / w.size() == Approx(0).margin(0.01));  // centred
  nn::Linear nb(3, 2, false);
  CHECK_FALSE(nb.bias.defined());
  CHECK(names(nb.named_parameters()) == std::vector<std::string>{"weight"});
  CHECK(nb.forward(ones({5, 3})).sizes() == Shape{5, 2});
  CHECK(fc.forward(ones({2, 7, 100})).sizes() == Shape{2, 7, 30});  // (*, in)
  CHECK(fc.forward(ones({100})).sizes() == Shape{30});
  // reproducible with a generator
  Generator g1(11), g2(11);
  nn::Linear a(5, 4, true, &g1), c(5, 4, true, &g2);
  CHECK(a.weight.equal(c.weight));
  CHECK(a.bias.equal(c.bias));
  REQUIRE_THROWS_WITH(nn::Linear(0, 3), Contains("Linear: in_features and out_features must be positive, got 0 and 3"));
  REQUIRE_THROWS_WITH(fc.forward(ones({2, 5})), Contains("Linear: input of shape [2, 5] does not end in in_features=100"));
}

TEST_CASE("Linear forward and backward match PyTorch with injected weights", "[ch01][nn]") {
  for (const char* name : {"linear", "linear_3d", "linear_nobias"}) {
    const std::string n = name;
    INFO(n);
    const bool bias = n != "linear_nobias";
    nn::Linear fc(3, 2, bias);
    std::vector<std::pair<std::string, Tensor>> sd;
    sd.reserve(2);
    sd.emplace_back("weight", ops_test::load(n + ".in1"));
    if (bias) sd.emplace_back("bias", ops_test::load(n + ".in2"));
    fc.load_state_dict(sd);
    CHECK(fc.weight.requires_grad());  // loading keeps the parameter a trainable leaf
    Tensor x = ops_test::load(n + ".in0", true);
    Tensor y = fc(x);
    CHECK(ops_test::compare(y, n + ".out").empty());
    if (x.dim() == 2) CHECK(y.grad_fn()->name() == "AddmmBackward0");
    y.backward(ops_test::load(n + ".gout"));
    std::string e0 = ops_test::compare(x.grad(), n + ".grad0");
    std::string e1 = ops_test::compare(fc.weight.grad(), n + ".grad1");
    CHECK(e0.empty());
    CHECK(e1.empty());
    if (bias) CHECK(ops_test::compare(fc.bias.grad(), n + ".grad2").empty());
  }
}

TEST_CASE("init: kaiming_uniform_ bound and fan_in", "[ch01][nn]") {
  Generator g(1);
  Tensor w = empty({64, 25});
  nn::init::kaiming_uniform_(w, 0.0, &g);  // gain sqrt(2): bound sqrt(6 / 25)
  const double bound = std::sqrt(6.0 / 25);
  for (double v : vals(w)) CHECK(std::abs(v) <= bound);
  CHECK(nn::init::fan_in(empty({8, 3, 2, 2})) == 12);
  REQUIRE_THROWS_WITH(nn::init::fan_in(empty({5})), Contains("Fan in can not be computed for tensor with fewer than 2 dimensions"));
  Tensor p = ones({3}, TensorOptions().requires_grad(true));
  nn::init::constant_(p, 0.5);  // works on a parameter (no grad mode inside)
  CHECK(vals(p) == std::vector<double>(3, 0.5));
  nn::init::zeros_(p);
  CHECK(vals(p) == std::vector<double>(3, 0.0));
  CHECK(p.requires_grad());
}

// ---- Sequential and activations ----------------------------------------------------------------

TEST_CASE("Sequential applies its modules in order and names them by position", "[ch01][nn]") {
  auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::ReLU>(),
                                              std::make_shared<nn::Linear>(3, 2));
  CHECK(seq->size() == 3);
  CHECK(names(seq->named_parameters()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  CHECK((*seq)[1]->name() == "ReLU");
  Tensor x = tensor({1, -2, 3, -4, 0.5, 0.5, -0.5, 2}, {2, 4});
  Tensor manual = (*seq)[2]->forward((*seq)[1]->forward((*seq)[0]->forward(x)));
  CHECK(seq->forward(x).equal(manual));
  seq->push_back(std::make_shared<nn::Sigmoid>());
  CHECK(seq->size() == 4);
  CHECK(seq->named_children()[3].first == "3");
  CHECK(seq->forward(x).equal(manual.sigmoid()));
  REQUIRE_THROWS_WITH((*seq)[4], Contains("Sequential: index 4 is out of range (size 4)"));
  nn::Sequential empty_seq;
  CHECK(empty_seq.forward(x).is_same(x));
}

TEST_CASE("ReLU, Sigmoid, Tanh modules match PyTorch; Flatten reshapes", "[ch01][nn]") {
  nn::ReLU relu;
  nn::Sigmoid sigmoid;
  nn::Tanh tanh_m;
  CHECK(ops_test::compare(relu(ops_test::load("relu.in0")), "relu.out").empty());
  CHECK(ops_test::compare(sigmoid(ops_test::load("sigmoid.in0")), "sigmoid.out").empty());
  CHECK(ops_test::compare(sigmoid(ops_test::load("sigmoid_large.in0")), "sigmoid_large.out").empty());
  CHECK(ops_test::compare(tanh_m(ops_test::load("tanh.in0")), "tanh.out").empty());
  Tensor x = ops_test::load("relu.in0", true);
  relu(x).backward(ops_test::load("relu.gout"));
  CHECK(ops_test::compare(x.grad(), "relu.grad0").empty());
  Tensor img = zeros({2, 3, 4, 5});
  CHECK(nn::Flatten()(img).sizes() == Shape{2, 60});
  CHECK(nn::Flatten(0)(img).sizes() == Shape{120});
  CHECK(nn::Flatten(1, 2)(img).sizes() == Shape{2, 12, 5});
  CHECK(nn::Flatten(-2)(img).sizes() == Shape{2, 3, 20});
  Tensor t = img.transpose(1, 3);  // non-contiguous: flatten copies
  CHECK(nn::Flatten()(t).sizes() == Shape{2, 60});
}

TEST_CASE("Dropout zeroes and rescales in training, is the identity in eval", "[ch01][nn]") {
  Generator g(77);
  nn::Dropout drop(0.25, &g);
  Tensor x = ones({20000}, TensorOptions().requires_grad(true));
  Tensor y = drop(x);
  auto v = vals(y);
  int zeros_n = 0;
  for (double e : v) {
    bool ok = e == 0.0 || std::abs(e - 1 / 0.75) < 1e-6;
    if (!ok) FAIL("dropout produced " << e);
    zeros_n += e == 0.0;
  }
  CHECK(zeros_n / 20000.0 == Approx(0.25).margin(0.02));
  y.sum().backward();
  CHECK(vals(x.grad()) == v);  // gradient = the same mask
  drop.eval();
  CHECK(drop(x).is_same(x));
  nn::Dropout none(0.0), all(1.0);
  CHECK(none(x).is_same(x));
  CHECK(all(ones({5})).equal(zeros({5})));
  REQUIRE_THROWS_WITH(nn::Dropout(1.5), Contains("dropout probability has to be between 0 and 1, but got 1.5"));
}

// ---- losses ----------------------------------------------------------------------------------

TEST_CASE("MSELoss matches PyTorch for mean, sum and none", "[ch01][nn]") {
  for (const char* r : {"mean", "sum", "none"}) {
    const std::string n = std::string("mse_") + r;
    INFO(n);
    nn::MSELoss loss(r);
    Tensor x = ops_test::load(n + ".in0", true), t = ops_test::load(n + ".in1", true);
    Tensor l = loss(x, t);
    CHECK(ops_test::compare(l, n + ".out").empty());
    l.backward(ops_test::load(n + ".gout"));
    CHECK(ops_test::compare(x.grad(), n + ".grad0").empty());
    CHECK(ops_test::compare(t.grad(), n + ".grad1").empty());
  }
  CHECK(nn::MSELoss().reduction == Reduction::Mean);
  CHECK(nn::MSELoss(Reduction::Sum).reduction == Reduction::Sum);
  REQUIRE_THROWS_WITH(nn::MSELoss("avg"), Contains("loss: avg is not a valid value for reduction"));
}

TEST_CASE("MSELoss with (N, 1) against (N) throws, naming both shapes", "[ch01][nn]") {
  // PyTorch warns and broadcasts to (N, N); tinytorch raises on purpose (nn/loss.hpp).
  nn::MSELoss loss;
  REQUIRE_THROWS_WITH(loss(ones({4, 1}), ones({4})),
                      Contains("mse_loss: input shape [4, 1] does not match target shape [4]") && Contains("view({-1, 1})"));
  REQUIRE_THROWS_WITH(loss(ones({4}), ones({4, 1})), Contains("input shape [4] does not match target shape [4, 1]"));
  REQUIRE_THROWS_WITH(loss(ones({2}, kInt64), ones({2}, kInt64)), Contains("mse_loss: expected floating point input and target"));
  REQUIRE_THROWS_WITH(loss.forward(ones({2})), Contains("MSELoss: forward needs (input, target)"));
  CHECK(loss(ones({4, 1}), ones({4}).view({-1, 1})).item() == 0);
}

TEST_CASE("CrossEntropyLoss and NLLLoss match PyTorch, including large logits", "[ch01][nn]") {
  for (const char* n0 : {"cross_entropy_mean", "cross_entropy_sum", "cross_entropy_none", "cross_entropy_large",
                         "nll_loss_mean", "nll_loss_sum", "nll_loss_none"}) {
    const std::string n = n0;
    INFO(n);
    const std::string r = n.substr(n.rfind('_') + 1);
    std::shared_ptr<nn::Loss> loss;
    if (n.rfind("cross", 0) == 0) loss = std::make_shared<nn::CrossEntropyLoss>(r == "large" ? "mean" : r);
    else loss = std::make_shared<nn::NLLLoss>(r);
    Tensor x = ops_test::load(n + ".in0", true), t = ops_test::load(n + ".in1");
    CHECK(t.dtype() == kInt64);
    Tensor l = (*loss)(x, t);
    CHECK(ops_test::compare(l, n + ".out").empty());
    CHECK(std::isfinite(l.sum().item()));
    l.backward(ops_test::load(n + ".gout"));
    CHECK(ops_test::compare(x.grad(), n + ".grad0").empty());
  }
}

TEST_CASE("CrossEntropyLoss rejects out-of-range targets and bad shapes", "[ch01][nn]") {
  nn::CrossEntropyLoss loss;
  Tensor logits = zeros({2, 3});
  REQUIRE_THROWS_WITH(loss(logits, tensor({0, 3}, kInt64)), Contains("Target 3 is out of bounds (3 classes; sample 1)"));
  REQUIRE_THROWS_WITH(loss(logits, tensor({-1, 0}, kInt64)), Contains("Target -1 is out of bounds"));
  REQUIRE_THROWS_WITH(loss(logits, tensor({0, 1})), Contains("expected target of dtype torch.int64 (class indices), got torch.float32"));
  REQUIRE_THROWS_WITH(loss(logits, tensor({0, 1, 2}, kInt64)), Contains("expected target of shape (2), got [3] for input of shape [2, 3]"));
  // unbatched (C) takes a 0-d target, (N, C, d) a target (N, d): PyTorch's messages otherwise
  REQUIRE_THROWS_WITH(loss(zeros({3}), tensor({0}, kInt64)), Contains("cross_entropy: size mismatch (got input: [3], target: [1])"));
  REQUIRE_THROWS_WITH(nn::NLLLoss()(zeros({2, 2, 2}), tensor({0, 1}, kInt64)), Contains("nll_loss: Expected target size [2, 2], got [2]"));
  CHECK(loss(logits, tensor({0, 2}, kInt64)).item() == Approx(std::log(3.0)));
}

// ---- state_dict ------------------------------------------------------------------------------

TEST_CASE("state_dict lists parameters then buffers; load_state_dict copies values in", "[ch01][nn]") {
  Block a, b;
  auto sd = a.state_dict();
  CHECK(names(sd) == std::vector<std::string>{"scale", "fc1.weight", "fc1.bias", "fc2.weight", "steps"});
  CHECK(sd[1].second.is_same(a.fc1->weight));  // the tensors themselves
  {
    NoGradGuard ng;
    a.scale.fill_(3);
    a.named_buffers()[0].second.fill_(7);
  }
  b.load_state_dict(a.state_dict());
  CHECK(b.fc1->weight.equal(a.fc1->weight));
  CHECK(b.fc2->weight.equal(a.fc2->weight));
  CHECK(vals(b.scale) == std::vector<double>{3, 3, 3});
  CHECK(vals(b.named_buffers()[0].second) == std::vector<double>{7});
  CHECK(b.fc1->weight.impl()->storage != a.fc1->weight.impl()->storage);  // copied, not shared
  CHECK(b.fc1->weight.requires_grad());
  CHECK(GradMode::is_enabled());
  Tensor x = tensor({1, 2, 3, 4}, {1, 4});
  CHECK(b(x).allclose(a(x)));

  auto missing = a.state_dict();
  missing[2].first = "fc1.b";
  REQUIRE_THROWS_WITH(b.load_state_dict(missing), Contains("Missing key(s) in state_dict: \"fc1.bias\""));
  auto short_sd = a.state_dict();
  short_sd.pop_back();
  REQUIRE_THROWS_WITH(b.load_state_dict(short_sd), Contains("load_state_dict: expected 5 entries, got 4"));
  auto bad = a.state_dict();
  bad[1].second = zeros({3, 3});
  REQUIRE_THROWS_WITH(b.load_state_dict(bad), Contains("size mismatch for fc1.weight: copying a param with shape [3, 3], "
                                                       "the shape in current model is [3, 4]"));
}

// ---- repr --------------------------------------------------------------------------------------

TEST_CASE("Module repr matches PyTorch's text", "[ch01][nn]") {
  auto seq = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Linear>(2, 3),
      std::make_shared<nn::Sequential>(std::make_shared<nn::ReLU>(), std::make_shared<nn::Flatten>()),
      std::make_shared<nn::Dropout>(0.1));
  // print(nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Flatten()), nn.Dropout(0.1)))
  CHECK(seq->repr() ==
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (1): Sequential(\n"
        "    (0): ReLU()\n"
        "    (1): Flatten(start_dim=1, end_dim=-1)\n"
        "  )\n"
        "  (2): Dropout(p=0.1, inplace=False)\n"
        ")");
  Block b;
  std::ostringstream os;
  os << b;
  CHECK(os.str() ==
        "Block(\n"
        "  (fc1): Linear(in_features=4, out_features=3, bias=True)\n"
        "  (fc2): Linear(in_features=3, out_features=2, bias=False)\n"
        ")");
  CHECK(nn::Sequential().repr() == "Sequential()");
  CHECK(nn::Tanh().repr() == "Tanh()");
  CHECK(nn::Sigmoid().repr() == "Sigmoid()");
  CHECK(nn::MSELoss().repr() == "MSELoss()");
  CHECK(nn::CrossEntropyLoss().repr() == "CrossEntropyLoss()");
  CHECK(nn::NLLLoss().repr() == "NLLLoss()");
  CHECK(nn::Linear(784, 10).repr() == "Linear(in_features=784, out_features=10, bias=True)");
}

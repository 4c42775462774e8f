// labs/02-autograd/test_autograd.cpp — the checks of lab 02, one Catch2 tag per task.
//
// References: reference.hpp, written by gen_reference.py with PyTorch (sigmoid and linear forward
// and gradients; the engine's expression with a diamond and a reused leaf); gradcheck (finite
// differences, tinytorch/autograd/gradcheck.hpp); for the order, its definition (every edge goes
// forward in the order, every reachable node once) on graphs with diamonds and a 200,000-node chain.
#include <catch2/catch.hpp>

#include "lab.hpp"
#include "reference.hpp"

#include <cmath>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tt = tinytorch;
using tt::autograd::Node;

namespace {

tt::Tensor f64(const std::vector<double>& v, tt::Shape shape, bool requires_grad = true) {
  return tt::tensor(v, shape, tt::TensorOptions(tt::kFloat64).requires_grad(requires_grad));
}

void expect_close(const std::string& what, const tt::Tensor& got, const std::vector<double>& want,
                  double rtol = 1e-12) {
  if (!got.defined()) {
    FAIL_CHECK(what << ": undefined (no gradient reached it)");
    return;
  }
  const std::vector<double> g = got.tolist<double>();
  std::ostringstream os;
  os.precision(17);
  if (g.size() != want.size()) {
    os << what << ": " << g.size() << " values, expected " << want.size();
    FAIL_CHECK(os.str());
    return;
  }
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::abs(g[i] - want[i]) <= rtol * std::abs(want[i]) + 1e-14)) {
      os << what << "[" << i << "] = " << g[i] << ", PyTorch gives " << want[i];
      FAIL_CHECK(os.str());
      return;
    }
  SUCCEED(what);
}

bool gradcheck_ok(const std::function<tt::Tensor(const std::vector<tt::Tensor>&)>& f, std::vector<tt::Tensor> inputs) {
  try {
    return tt::gradcheck(f, std::move(inputs));
  } catch (const tt::NotImplemented&) {
    throw;  // reported as "not implemented"
  } catch (const tt::Error& e) {
    FAIL_CHECK("gradcheck (your backward against finite differences of your forward): " << e.what());
    return false;
  }
}

// Checks the order's definition; returns "" or what is wrong.
std::string order_problem(Node* root, const std::vector<Node*>& order) {
  std::unordered_map<Node*, size_t> pos;
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] == nullptr) return "position " + std::to_string(i) + " holds nullptr";
    if (!pos.emplace(order[i], i).second)
      return "node " + order[i]->name() + " appears twice (positions " + std::to_string(pos[order[i]]) + " and " +
             std::to_string(i) + ")";
  }
  if (order.empty() || order[0] != root) return "the order must start with the root";
  // every reachable node is there, and every edge goes forward
  std::vector<Node*> todo{root};
  std::unordered_set<Node*> seen{root};
  while (!todo.empty()) {
    Node* n = todo.back();
    todo.pop_back();
    if (!pos.count(n)) return "node " + n->name() + " is reachable from the root but missing";
    for (const auto& e : n->next_edges) {
      Node* c = e.fn.get();
      if (!c) continue;
      if (!pos.count(c)) return "node " + c->name() + " (an input of " + n->name() + ") is missing";
      if (pos[c] <= pos[n])
        return n->name() + " (position " + std::to_string(pos[n]) + ") must come before its input's node " +
               c->name() + " (position " + std::to_string(pos[c]) + ")";
      if (seen.insert(c).second) todo.push_back(c);
    }
  }
  if (seen.size() != order.size()) return "the order holds nodes that are not reachable from the root";
  return "";
}

}  // namespace

TEST_CASE("Sigmoid: PyTorch's values and gradient, and gradcheck", "[task:sigmoid]") {
  tt::Tensor x = f64(lab02_ref::sig_x, {5});
  tt::Tensor y = lab02::Sigmoid::apply(x);
  expect_close("sigmoid(x)", y, lab02_ref::sig_y);
  REQUIRE(y.grad_fn() != nullptr);
  (y * f64(lab02_ref::sig_w, {5}, false)).sum().backward();
  expect_close("d sum(sigmoid(x) * w)/dx", x.grad(), lab02_ref::sig_grad);
  CHECK(gradcheck_ok([](const std::vector<tt::Tensor>& v) { return lab02::Sigmoid::apply(v[0]); },
                     {f64({0.3, -1.7, 2.2, 0.0, -0.4, 1.1}, {2, 3})}));
}

TEST_CASE("LinearFn: PyTorch's values and three gradients, gradcheck, needs_input_grad", "[task:linear]") {
  tt::Tensor x = f64(lab02_ref::lin_x, {3, 4}), W = f64(lab02_ref::lin_W, {2, 4}), b = f64(lab02_ref::lin_b, {2});
  tt::Tensor y = lab02::LinearFn::apply(x, W, b);
  REQUIRE(y.sizes() == tt::Shape{3, 2});
  expect_close("x W^T + b", y, lab02_ref::lin_y);
  (y * f64(lab02_ref::lin_v, {3, 2}, false)).sum().backward();
  expect_close("dL/dx", x.grad(), lab02_ref::lin_gx);
  expect_close("dL/dW", W.grad(), lab02_ref::lin_gW);
  expect_close("dL/db", b.grad(), lab02_ref::lin_gb);
  CHECK(gradcheck_ok([](const std::vector<tt::Tensor>& v) { return lab02::LinearFn::apply(v[0], v[1], v[2]); },
                     {f64({0.5, -0.1, 0.3, 0.9, 1.2, -0.7}, {2, 3}), f64({0.2, 0.1, -0.3, 0.4, 0.0, 0.6, -0.5, 0.8, 0.7, 0.2, -0.2, 0.1}, {4, 3}),
                      f64({0.1, -0.2, 0.3, 0.05}, {4})}));
  // a frozen weight and bias: only x gets a gradient
  tt::Tensor x2 = f64(lab02_ref::lin_x, {3, 4});
  tt::Tensor W2 = f64(lab02_ref::lin_W, {2, 4}, false), b2 = f64(lab02_ref::lin_b, {2}, false);
  (lab02::LinearFn::apply(x2, W2, b2) * f64(lab02_ref::lin_v, {3, 2}, false)).sum().backward();
  expect_close("dL/dx with W and b frozen", x2.grad(), lab02_ref::lin_gx);
}

TEST_CASE("topological_order: each node once, before the nodes it feeds, no recursion", "[task:topo_order]") {
  tt::Tensor a = f64(lab02_ref::g_a, {3}), b = f64(lab02_ref::g_b, {3}), c = f64(lab02_ref::g_c, {3});
  tt::Tensor h = (a * b).tanh();
  tt::Tensor loss = ((h * c) * (h + a)).sum() + a.exp().sum();  // a diamond through h, a used three times
  Node* root = loss.grad_fn().get();
  {
    INFO("the graph of sum((tanh(a*b)*c) * (tanh(a*b)+a)) + sum(exp(a))");
    const std::vector<Node*> order = lab02::topological_order(root);
    CHECK(order_problem(root, order) == "");
  }
  // a long chain: y = x + 1 + 1 + ... (200,000 nodes)
  tt::Tensor x = f64({1.0}, {1});
  tt::Tensor y = x;
  for (int i = 0; i < 200000; ++i) y = y + 1.0;
  INFO("a chain of 200,000 additions (a recursive walk overflows the stack here: use an explicit stack)");
  const std::vector<Node*> chain = lab02::topological_order(y.grad_fn().get());
  CHECK(chain.size() == 200001);  // 200,000 AddBackward0 + x's AccumulateGrad
  CHECK(order_problem(y.grad_fn().get(), chain) == "");
}

TEST_CASE("run_backward: PyTorch's gradients through a diamond and a reused leaf", "[task:engine]") {
  tt::Tensor a = f64(lab02_ref::g_a, {3}), b = f64(lab02_ref::g_b, {3}), c = f64(lab02_ref::g_c, {3});
  tt::Tensor h = (a * b).tanh();
  tt::Tensor loss = ((h * c) * (h + a)).sum() + a.exp().sum();
  expect_close("the loss", loss, {lab02_ref::g_loss});
  {
    INFO("run_backward walks your topological_order: it is wrong on this graph (fix the topo_order task first)");
    REQUIRE(order_problem(loss.grad_fn().get(), lab02::topological_order(loss.grad_fn().get())) == "");
  }
  lab02::run_backward(loss);
  expect_close("dL/da (a reaches the loss by three paths: their sum)", a.grad(), lab02_ref::g_grad_a);
  expect_close("dL/db", b.grad(), lab02_ref::g_grad_b);
  expect_close("dL/dc", c.grad(), lab02_ref::g_grad_c);
  INFO("run_backward must leave grad mode as it found it (a NoGradGuard, not GradMode::set_enabled(false))");
  CHECK(tt::GradMode::is_enabled());
}

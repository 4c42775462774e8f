// ch02 exercises 1, 2, 3, 5.
#include <tinytorch/tinytorch.hpp>
#include <cmath>
#include <cstdio>
#include <sstream>
using namespace tinytorch;
namespace tt = tinytorch;

// ex3: sinh as a Pointwise (same pattern as tanh in autograd/functions/elementwise.hpp)
struct SinhOp { template <class T> T operator()(T x) const { return std::sinh(x); } };
struct SinhBackwardOp { template <class T> T operator()(T g, T x, T) const { return g * std::cosh(x); } };
struct SinhBackwardBroken { template <class T> T operator()(T g, T, T) const { return g; } };  // cosh dropped
Tensor sinh_(const Tensor& x) { return autograd::pointwise(x, SinhOp{}, SinhBackwardOp{}, "sinh", "SinhBackward0", true, autograd::Saves::Input); }
Tensor sinh_broken(const Tensor& x) { return autograd::pointwise(x, SinhOp{}, SinhBackwardBroken{}, "sinh", "SinhBackward0", true, autograd::Saves::Input); }

// ex2: backward without ordering: one apply() per path
long long calls = 0;
void naive_backward(autograd::Node* node, const Tensor& g) {
  ++calls;
  std::vector<Tensor> grads = node->apply(g);
  for (size_t i = 0; i < node->next_edges.size(); ++i)
    if (node->next_edges[i].fn && i < grads.size() && grads[i].defined()) naive_backward(node->next_edges[i].fn.get(), grads[i]);
}

std::shared_ptr<nn::Sequential> mlp() {
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Linear>(784, 256)); m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::Linear>(256, 128)); m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::Linear>(128, 10));
  return m;
}

int main() {
  manual_seed(0);
  // ex1
  {
    auto m = mlp();
    Tensor X = randn({64, 784}), y = randint(0, 10, {64});
    nn::CrossEntropyLoss ce;
    Tensor loss = ce(m->forward(X), y);
    std::string dot = autograd::to_dot(loss, m->named_parameters(), "loss");
    FILE* f = std::fopen("/tmp/mlp.dot", "w"); std::fputs(dot.c_str(), f); std::fclose(f);
    auto order = autograd::topological_order(loss.grad_fn().get());
    std::printf("ex1: MLP graph: %zu nodes in topological order:", order.size());
    for (auto* n : order) std::printf(" %s", n->name().c_str());
    std::printf("\n");
  }
  // ex2
  for (int n : {10, 20}) {
    Tensor x = tensor({1.0}); x.requires_grad_();
    Tensor y = x;
    for (int k = 0; k < n; ++k) y = y * 1.0 + y * 1.0;
    Tensor root = y.sum();
    size_t ordered = autograd::topological_order(root.grad_fn().get()).size();
    calls = 0;
    naive_backward(root.grad_fn().get(), ones({}));
    double naive_grad = x.grad().item<double>();
    x.set_grad(Tensor());
    root.backward();
    std::printf("ex2: n=%d naive apply() calls=%lld (x.grad=%.0f), run_backward nodes=%zu (x.grad=%.0f)\n", n, calls,
                naive_grad, ordered, x.grad().item<double>());
  }
  // ex3
  {
    Tensor x = randn({5}, TensorOptions().dtype(kFloat64)); x.requires_grad_();
    bool ok = autograd::gradcheck([](const std::vector<Tensor>& in) { return sinh_(in[0]); }, {x});
    std::printf("ex3: gradcheck(sinh) = %s\n", ok ? "true" : "false");
    try {
      autograd::gradcheck([](const std::vector<Tensor>& in) { return sinh_broken(in[0]); }, {x});
      std::printf("ex3: broken sinh passed?!\n");
    } catch (const std::exception& e) { std::printf("ex3: broken sinh: %s\n", e.what()); }
    std::printf("ex3: x = %s\n", x.str().c_str());
  }
  // ex5
  for (int B : {64, 256}) {
    auto m = mlp();
    Tensor X = randn({B, 784});
    size_t before = memory_allocated();
    Tensor logits = m->forward(X);
    size_t after = memory_allocated();
    std::printf("ex5: B=%d memory_allocated grew by %zu bytes during forward (logits %lld bytes of it); "
                "B*(256+128)*4 = %d, B*(784+256+128)*4 = %d\n", B, after - before,
                (long long)(logits.numel() * 4), B * (256 + 128) * 4, B * (784 + 256 + 128) * 4);
  }
}

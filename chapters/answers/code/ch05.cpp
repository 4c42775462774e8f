// ch05 exercises 1-3.
#include <tinytorch/tinytorch.hpp>
#include <cstdio>
#include "../../../examples/simple_mlp.hpp"
using namespace tinytorch;
namespace tt = tinytorch;

// ex3: a module with two Linear layers and its clone()
class TwoLayer : public nn::Module {
 public:
  TwoLayer() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 8));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(8, 3));
  }
  Tensor forward(const Tensor& x) override { return fc2->forward(fc1->forward(x).relu()); }
  std::string name() const override { return "TwoLayer"; }
  std::shared_ptr<Module> clone() const override {
    auto m = clone_as<TwoLayer>();
    m->fc1 = m->get_submodule<nn::Linear>("fc1");
    m->fc2 = m->get_submodule<nn::Linear>("fc2");
    return m;
  }
  std::shared_ptr<nn::Linear> fc1, fc2;
};

// ex2: the two-sample loop with MSELoss("sum"), on a plain Linear or on DataParallel over 2 replicas
std::vector<double> two_samples(bool dp) {
  manual_seed(0);
  auto lin = std::make_shared<nn::Linear>(2, 1);
  std::shared_ptr<nn::Module> model = lin;
  if (dp) model = std::make_shared<nn::DataParallel>(lin, std::vector<Device>(2, Device::cpu()));
  auto params = model->parameters();
  { NoGradGuard g; params[0].copy_(tensor({0.25, -0.5}, {1, 2})); params[1].copy_(tensor({0.1})); }
  Tensor X = tensor({1.0, 0.5, 0.5, 1.0}, {2, 2}), y = tensor({2.0, 1.5}, {2, 1});
  optim::SGD opt(params, 0.01);
  nn::MSELoss loss_fn("sum");
  std::vector<double> out;
  for (int e = 0; e < 5; ++e) {
    opt.zero_grad();
    Tensor loss = loss_fn(model->forward(X), y);
    loss.backward();
    opt.step();
    out.push_back(loss.item<double>());
  }
  return out;
}

int main() {
  // ex1
  auto chunks = parallel::scatter(zeros({17, 1}), std::vector<Device>(5, Device::cpu()));
  std::printf("ex1: B=17 on 5 devices: %zu chunks:", chunks.size());
  for (auto& c : chunks) std::printf(" %lld", (long long)c.size(0));
  std::printf("\n");
  // ex2
  auto a = two_samples(false), b = two_samples(true);
  for (int e = 0; e < 5; ++e) std::printf("ex2: epoch %d: single loss=%.6f  DataParallel(2) loss=%.6f\n", e, a[e], b[e]);
  // ex3
  manual_seed(1);
  auto plain = std::make_shared<TwoLayer>();
  auto wrapped_inner = std::static_pointer_cast<TwoLayer>(plain->clone());  // same values, own storage
  nn::DataParallel dp(wrapped_inner, std::vector<Device>(3, Device::cpu()));
  Tensor X = randn({10, 4}), y = randint(0, 3, {10});
  nn::CrossEntropyLoss ce;
  ce(plain->forward(X), y).backward();
  ce(dp.forward(X), y).backward();
  auto p1 = plain->named_parameters(), p2 = wrapped_inner->named_parameters();
  double maxdiff = 0;
  for (size_t i = 0; i < p1.size(); ++i) {
    double d = (p1[i].second.grad() - p2[i].second.grad()).abs().max().item<double>();
    std::printf("ex3: %s.grad max |plain - DataParallel(3 replicas)| = %.3g\n", p1[i].first.c_str(), d);
    maxdiff = std::max(maxdiff, d);
  }
  std::printf("ex3: chunks for 10 rows on 3 replicas: 4,4,2; max diff %.3g\n", maxdiff);
}

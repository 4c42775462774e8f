// ch09 exercises 2, 4, 5.
#include <tinytorch/tinytorch.hpp>
#include <cmath>
#include <cstdio>
#include "../../../examples/checkpoint_memory.hpp"
using namespace tinytorch;

std::vector<double> flat(const nn::Module& m, bool grads) {
  std::vector<double> out;
  for (const Tensor& p : m.parameters()) { auto v = grads ? p.grad().tolist<double>() : p.tolist<double>(); out.insert(out.end(), v.begin(), v.end()); }
  return out;
}
double maxdiff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0; for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i])); return d;
}
double maxabs(const std::vector<double>& a) { double d = 0; for (double v : a) d = std::max(d, std::fabs(v)); return d; }

std::shared_ptr<nn::Sequential> mlp(uint64_t seed, bool bn) {  // the test's 6 -> 16 -> ReLU -> 3 (+ BatchNorm1d(16))
  manual_seed(seed);
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Linear>(6, 16));
  if (bn) m->push_back(std::make_shared<nn::BatchNorm1d>(16));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::Linear>(16, 3));
  return m;
}

int main() {
  const int64_t k = 4, b = 8;
  // ex2: BatchNorm1d(16) after the first Linear, training mode
  for (bool bn : {false, true}) {
    Generator g(3);
    Tensor x = randn({k * b, 6}, {}, &g), y = randn({k * b, 3}, {}, &g);
    auto full = mlp(1, bn), micro = mlp(1, bn);
    Tensor lf = mse_loss(full->forward(x), y);
    lf.backward();
    double lm = 0;
    for (int64_t j = 0; j < k; ++j) {
      Tensor l = mse_loss(micro->forward(x.narrow(0, j * b, b)), y.narrow(0, j * b, b)) / double(k);
      l.backward(); lm += l.item<double>();
    }
    auto gf = flat(*full, true), gm = flat(*micro, true);
    std::printf("ex2: %-22s loss batch=%.6f sum of micro/k=%.6f | max|grad_acc - grad_batch|=%.3g (max|grad| %.3g)\n",
                bn ? "with BatchNorm1d(16):" : "without BatchNorm:", lf.item<double>(), lm, maxdiff(gm, gf), maxabs(gf));
  }
  // ex4: the test "accumulated SGD steps end at the weights of full-batch steps", with Adam
  for (int use_adam = 0; use_adam < 2; ++use_adam) {
    Generator g(5);
    auto full = mlp(2, false), micro = mlp(2, false), bug = mlp(2, false);
    auto make = [&](nn::Module& m) -> std::unique_ptr<optim::Optimizer> {
      if (use_adam) return std::make_unique<optim::Adam>(m.parameters(), 0.01);
      return std::make_unique<optim::SGD>(m.parameters(), 0.1, 0.9);
    };
    auto of = make(*full), om = make(*micro), ob = make(*bug);
    for (int step = 0; step < 5; ++step) {
      Tensor x = randn({k * b, 6}, {}, &g), y = randn({k * b, 3}, {}, &g);
      of->zero_grad(); mse_loss(full->forward(x), y).backward(); of->step();
      om->zero_grad(); ob->zero_grad();
      for (int64_t j = 0; j < k; ++j) {
        Tensor xj = x.narrow(0, j * b, b), yj = y.narrow(0, j * b, b);
        (mse_loss(micro->forward(xj), yj) / double(k)).backward();
        mse_loss(bug->forward(xj), yj).backward();  // the bug: no / k
      }
      om->step(); ob->step();
    }
    auto pf = flat(*full, false), pm = flat(*micro, false), pb = flat(*bug, false), p0 = flat(*mlp(2, false), false);
    std::printf("ex4: %s: max|correct - full| = %.3g, max|buggy - full| = %.3g, max|buggy - correct| = %.3g (weights moved max %.3g from init)\n",
                use_adam ? "Adam(lr 0.01)        " : "SGD(0.1, momentum 0.9)", maxdiff(pm, pf), maxdiff(pb, pf), maxdiff(pb, pm), maxdiff(pf, p0));
  }
  // ex5: what is alive at the peak of checkpoint_sequential(model, 8, x) on the 48-block MLP
  {
    auto calls = std::make_shared<int64_t>(0);
    nn::Sequential model;
    Tensor x, target;
    examples::make_deep_mlp(48, 64, 1024, 0, calls, model, x, target);
    const double A = 1024.0 * 64 * 4;
    const size_t base = memory_allocated();
    reset_peak_memory_stats();
    size_t last_peak = 0;
    auto params = model.named_parameters();
    for (auto& [name, p] : params) {
      std::string n = name;
      p.register_hook([&, n](const Tensor& grad) {
        const size_t now = memory_allocated() - base, peak = max_memory_allocated() - base;
        if (n.find("weight") != std::string::npos || peak != last_peak)
          std::printf("ex5: hook on %-13s grad: allocated %9zu (%6.3f A)  peak so far %9zu (%6.3f A)%s\n", n.c_str(), now,
                      now / A, peak, peak / A, peak != last_peak ? "  <- peak grew" : "");
        last_peak = peak;
        return Tensor();
      });
    }
    {
      Tensor y = utils::checkpoint_sequential(model, 8, x);
      std::printf("ex5: after forward: allocated %zu (%.3f A), block forwards %lld\n", memory_allocated() - base, (memory_allocated() - base) / A, (long long)*calls);
      Tensor loss = mse_loss(y, target);
      loss.backward();
    }
    std::printf("ex5: final peak %zu bytes (%.4f A); gradients after %zu\n", max_memory_allocated() - base, (max_memory_allocated() - base) / A, memory_allocated() - base);
  }
}

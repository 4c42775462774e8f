// ch06 6.12 step 4, second break: a model whose gradients become ready in a rank-dependent order.
#include <tinytorch/distributed.hpp>
#include <tinytorch/tinytorch.hpp>
#include <cmath>
#include <cstdio>
namespace tt = tinytorch;
namespace dist = tinytorch::distributed;
using tt::Tensor;
struct TwoBranch : tt::nn::Module {
  std::shared_ptr<tt::nn::Linear> a, b1, b2;
  TwoBranch() {
    a = register_module("a", std::make_shared<tt::nn::Linear>(6, 3));
    b1 = register_module("b1", std::make_shared<tt::nn::Linear>(6, 4));
    b2 = register_module("b2", std::make_shared<tt::nn::Linear>(4, 3));
  }
  Tensor forward(const Tensor& x) override {  // the same function on every rank, summed in another order
    if (dist::get_rank() % 2 == 0) return a->forward(x) + b2->forward(b1->forward(x));
    return b2->forward(b1->forward(x)) + a->forward(x);
  }
};
int main() {
  dist::ProcessGroupGuard pg(dist::Backend::MPI);
  const int N = dist::get_world_size(), r = dist::get_rank();
  const int64_t B = 4;
  tt::manual_seed(42 + r);
  auto replica = std::make_shared<TwoBranch>();
  tt::manual_seed(42);
  auto reference = std::make_shared<TwoBranch>();
  dist::DDPOptions o;
  o.bucket_cap_mb = o.first_bucket_mb = 1e-6;  // one bucket per parameter
  auto ddp = std::make_shared<dist::DistributedDataParallel>(replica, o);
  tt::optim::SGD opt(ddp->parameters(), 0.1, 0.9), ref_opt(reference->parameters(), 0.1, 0.9);
  tt::nn::MSELoss loss_fn;
  for (int s = 0; s < 6; ++s) {
    tt::Generator g(1000 + s);
    Tensor x = tt::randn({N * B, 6}, {}, &g), y = tt::randn({N * B, 3}, {}, &g);
    opt.zero_grad();
    loss_fn(ddp->forward(x.narrow(0, r * B, B)), y.narrow(0, r * B, B)).backward();
    opt.step();
    ref_opt.zero_grad();
    loss_fn(reference->forward(x), y).backward();
    ref_opt.step();
  }
  double d = 0;
  auto p = replica->parameters(), q = reference->parameters();
  for (size_t i = 0; i < p.size(); ++i) d = std::max(d, (p[i] - q[i]).abs().max().item<double>());
  dist::all_reduce(&d, 1, dist::ReduceOp::MAX);
  if (r == 0) std::printf("N=%d two-branch model, one bucket per parameter: max|replica-reference|=%.3g (%s 1e-5)\n", N, d, d < 1e-5 ? "<" : "NOT <");
}

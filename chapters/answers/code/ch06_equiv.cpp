// ch06 6.12: DDP on N ranks x B samples equals one process on N*B samples.
#include <tinytorch/distributed.hpp>
#include <tinytorch/tinytorch.hpp>
#include <cmath>
#include <cstdio>
namespace tt = tinytorch;
namespace dist = tinytorch::distributed;
using tt::Tensor;

std::shared_ptr<tt::nn::Sequential> make_mlp() {  // 6-16-8-3
  auto m = std::make_shared<tt::nn::Sequential>();
  m->push_back(std::make_shared<tt::nn::Linear>(6, 16)); m->push_back(std::make_shared<tt::nn::ReLU>());
  m->push_back(std::make_shared<tt::nn::Linear>(16, 8)); m->push_back(std::make_shared<tt::nn::ReLU>());
  m->push_back(std::make_shared<tt::nn::Linear>(8, 3));
  return m;
}
std::vector<double> flat(const tt::nn::Module& m) {
  std::vector<double> out;
  for (const Tensor& p : m.parameters()) { auto v = p.tolist<double>(); out.insert(out.end(), v.begin(), v.end()); }
  return out;
}
bool identical_on_all_ranks(std::vector<double> v) {
  std::vector<double> ref = v;
  dist::broadcast(ref.data(), static_cast<int64_t>(ref.size()), 0);
  int64_t bad = ref == v ? 0 : 1;
  dist::all_reduce(&bad, 1, dist::ReduceOp::MAX);
  return bad == 0;
}
// returns the max |replica - reference| over all ranks
void check(const char* what, dist::DDPOptions opts, int64_t B, int steps = 6) {
  const int N = dist::get_world_size(), r = dist::get_rank();
  tt::manual_seed(42 + r);
  auto replica = make_mlp();           // differs per rank: DDP's constructor broadcasts rank 0's
  tt::manual_seed(42);
  auto reference = make_mlp();         // rank 0's initial weights
  auto ddp = std::make_shared<dist::DistributedDataParallel>(replica, opts);
  tt::optim::SGD opt(ddp->parameters(), 0.1, 0.9), ref_opt(reference->parameters(), 0.1, 0.9);
  tt::nn::MSELoss loss_fn;
  for (int s = 0; s < steps; ++s) {
    tt::Generator g(1000 + s);                       // the global batch of step s, the same on every rank
    Tensor x = tt::randn({N * B, 6}, {}, &g), y = tt::randn({N * B, 3}, {}, &g);
    opt.zero_grad();
    loss_fn(ddp->forward(x.narrow(0, r * B, B)), y.narrow(0, r * B, B)).backward();
    opt.step();
    ref_opt.zero_grad();
    loss_fn(reference->forward(x), y).backward();
    ref_opt.step();
  }
  auto a = flat(*replica), b = flat(*reference);
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  dist::all_reduce(&d, 1, dist::ReduceOp::MAX);
  const bool same = identical_on_all_ranks(a);
  if (r == 0)
    std::printf("N=%d %-34s B=%lld buckets=%zu: max|replica-reference|=%.3g (%s 1e-5), replicas bit-identical: %s\n", N,
                what, (long long)B, ddp->bucket_indices().size(), d, d < 1e-5 ? "<" : "NOT <", same ? "yes" : "NO");
}
int main() {
  dist::ProcessGroupGuard pg(dist::Backend::MPI);
  check("default buckets", {}, 5);
  dist::DDPOptions one;
  one.bucket_cap_mb = one.first_bucket_mb = 1e-6;
  check("one bucket per parameter", one, 4);
  check("default buckets", {}, 1);
  check("one bucket per parameter", one, 1);
}

// labs/09-gradient-accumulation/test_accumulate.cpp — the checks of lab 09, one Catch2 tag per task.
//
// Run on 2 and 3 ranks by scripts/lab.sh check 09. The reference is the identity itself: a second
// model with the same initial weights takes one ordinary step on the whole batch (for DDP: on the
// global batch of every rank's rows); parameters must agree to 1e-5 (float32, sums in another
// order). DDP's Chrome trace (DDPOptions::trace) counts the synced backwards: one per step.
#include <catch2/catch.hpp>

#include "lab.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace tt = tinytorch;
namespace dist = tinytorch::distributed;

namespace {

std::shared_ptr<tt::nn::Sequential> make_mlp(uint64_t seed) {
  tt::manual_seed(seed);
  return std::make_shared<tt::nn::Sequential>(std::make_shared<tt::nn::Linear>(6, 10), std::make_shared<tt::nn::ReLU>(),
                                              std::make_shared<tt::nn::Linear>(10, 3));
}

std::vector<double> flat(const tt::nn::Module& m) {
  std::vector<double> out;
  for (const tt::Tensor& p : m.parameters())
    for (double v : p.tolist<double>()) out.push_back(v);
  return out;
}

// "" when the two parameter lists agree to 1e-5, else the first difference.
std::string differ(const std::vector<double>& got, const std::vector<double>& want) {
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    if (std::abs(got[i] - want[i]) > 1e-5) {
      std::ostringstream os;
      os.precision(9);
      os << "parameter element " << i << " = " << got[i] << ", one step on the whole batch gives " << want[i];
      return os.str();
    }
  return got.size() == want.size() ? "" : "different parameter counts";
}

void expect_same(const std::string& what, const std::vector<double>& got, const std::vector<double>& want) {
  const std::string d = differ(got, want);
  if (d.empty())
    SUCCEED(what);
  else
    FAIL_CHECK(what << ": " << d);
}

// The global batch: rows of x (n, 6) and y (n, 3), the same on every rank.
std::pair<tt::Tensor, tt::Tensor> batch(int64_t n, uint64_t seed) {
  tt::Generator g(seed);
  return {tt::randn({n, 6}, tt::kFloat32, &g), tt::randn({n, 3}, tt::kFloat32, &g)};
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("accumulate_step over k micro-batches equals one step on the whole batch", "[task:accumulate]") {
  for (int64_t k : {1, 2, 4, 10}) {  // 10 rows: 4 micro-batches are 3, 3, 3 and 1 rows
    auto model = make_mlp(7), reference = make_mlp(7);
    tt::optim::SGD opt(model->parameters(), 0.1), ref_opt(reference->parameters(), 0.1);
    tt::nn::MSELoss loss_fn;
    for (int step = 0; step < 2; ++step) {
      auto [x, y] = batch(10, 100 + step);
      const double loss = lab09::accumulate_step(*model, opt, loss_fn, x, y, k);
      ref_opt.zero_grad();
      tt::Tensor ref_loss = loss_fn(reference->forward(x), y);
      ref_loss.backward();
      ref_opt.step();
      std::ostringstream what;
      what << "k = " << k << ", after step " << step + 1;
      expect_same(what.str() + (step == 1 ? " (step 1 right, step 2 wrong: are the gradients zeroed once per step?)" : ""),
                  flat(*model), flat(*reference));
      INFO(what.str() << ": the returned loss must be the batch's mean loss");
      CHECK(std::abs(loss - ref_loss.item<double>()) < 1e-5);
    }
  }
}

TEST_CASE("ddp_accumulate_step equals one step on the global batch, with one all-reduce per step", "[task:no_sync]") {
  if (!dist::is_initialized()) dist::init_process_group(dist::Backend::MPI);
  const int N = dist::get_world_size(), r = dist::get_rank();
  for (int64_t rows : {6, 5}) {  // per rank; with k = 3: micro-batches of 2, 2, 2 and of 2, 2, 1 rows
    const int64_t k = 3;
    dist::DDPOptions o;
    o.bucket_cap_mb = o.first_bucket_mb = 1e-4;  // several buckets
    o.trace = std::make_shared<dist::Trace>(r);
    dist::DistributedDataParallel ddp(make_mlp(7), o);
    auto reference = make_mlp(7);
    tt::optim::SGD opt(ddp.parameters(), 0.1), ref_opt(reference->parameters(), 0.1);
    tt::nn::MSELoss loss_fn;
    for (int step = 0; step < 2; ++step) {
      auto [x, y] = batch(N * rows, 200 + step);  // rank q takes rows [q * rows, (q + 1) * rows)
      const int before = count(o.trace->json(), "finalize:");
      lab09::ddp_accumulate_step(ddp, opt, loss_fn, x.narrow(0, r * rows, rows), y.narrow(0, r * rows, rows), k);
      const int synced = count(o.trace->json(), "finalize:") - before;
      ref_opt.zero_grad();
      loss_fn(reference->forward(x), y).backward();
      ref_opt.step();
      std::ostringstream what;
      what << "rank " << r << " of " << N << ", " << rows << " rows per rank, k = 3, step " << step + 1;
      expect_same(what.str(), flat(*ddp.module()), flat(*reference));
      INFO(what.str() << ": synced backwards (gradient all-reduces) in this step; k - 1 of them belong inside ddp.no_sync()");
      CHECK(synced == 1);
    }
  }
}

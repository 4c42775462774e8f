// labs/05-data-parallel/test_data_parallel.cpp — the checks of lab 05, one Catch2 tag per task.
//
// References: reference.hpp, written by gen_reference.py with torch.chunk's sizes; the library's
// parallel::scatter and gather (chapter 05, tested against PyTorch's semantics in
// tests/test_parallel.cpp); and the definition of DataParallel: its output and gradients equal
// the module's on the whole batch (to 1e-5, float32 sums in another order).
#include <catch2/catch.hpp>

#include "lab.hpp"
#include "reference.hpp"

#include <cmath>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace tt = tinytorch;

namespace {

std::vector<tt::Device> cpus(size_t n) { return std::vector<tt::Device>(n, tt::Device::cpu()); }

std::string str(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "{";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  return os.str() + "}";
}

double max_diff(const tt::Tensor& a, const tt::Tensor& b) {
  const std::vector<double> x = a.tolist<double>(), y = b.tolist<double>();
  if (x.size() != y.size()) return 1e300;
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// A Linear that records which module instance ran each forward (the original or a replica).
struct Probe : tt::nn::Module {
  Probe() { fc = register_module("fc", std::make_shared<tt::nn::Linear>(5, 2)); }
  tt::Tensor forward(const tt::Tensor& x) override {
    std::lock_guard<std::mutex> lock(mutex());
    ran().push_back(this);
    return fc->forward(x);
  }
  std::shared_ptr<tt::nn::Module> clone() const override {
    auto m = clone_as<Probe>();
    m->fc = m->get_submodule<tt::nn::Linear>("fc");
    return m;
  }
  static std::vector<const tt::nn::Module*>& ran() {
    static std::vector<const tt::nn::Module*> r;
    return r;
  }
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  std::shared_ptr<tt::nn::Linear> fc;
};

std::shared_ptr<tt::nn::Sequential> make_mlp(uint64_t seed) {
  tt::manual_seed(seed);
  return std::make_shared<tt::nn::Sequential>(std::make_shared<tt::nn::Linear>(5, 8), std::make_shared<tt::nn::ReLU>(),
                                              std::make_shared<tt::nn::Linear>(8, 2));
}

}  // namespace

TEST_CASE("chunk_sizes follows torch.chunk", "[task:chunk_sizes]") {
  for (const lab05_ref::Chunks& c : lab05_ref::chunks) {
    INFO("chunk_sizes(" << c.batch << ", " << c.n << "), PyTorch's torch.arange(" << c.batch << ").chunk(" << c.n << ")");
    CHECK(str(lab05::chunk_sizes(c.batch, c.n)) == str(c.sizes));
  }
}

TEST_CASE("scatter cuts the batch as parallel::scatter and keeps the chunks in the graph", "[task:scatter]") {
  for (int64_t B : {1, 7, 9, 10})
    for (size_t n : {1, 2, 4}) {
      tt::Tensor x = tt::arange(B * 3).to(tt::kFloat32).reshape({B, 3}).requires_grad_();
      const std::vector<tt::Tensor> got = lab05::scatter(x, cpus(n));
      const std::vector<tt::Tensor> want = tt::parallel::scatter(x.detach(), cpus(n));
      INFO("scatter of " << B << " rows over " << n << " devices");
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        CHECK(got[i].sizes() == want[i].sizes());
        CHECK(got[i].tolist<double>() == want[i].tolist<double>());
      }
      for (size_t i = 0; i < got.size(); ++i) {
        INFO("chunk " << i << " must stay in the autograd graph (a view of x, or a copy made with .to(), not detach())");
        REQUIRE(got[i].requires_grad());
      }
      // d/dx of sum_i sum(chunk_i * (i + 1)): row r of x gets the number of its chunk
      tt::Tensor loss = tt::zeros({});
      for (size_t i = 0; i < got.size(); ++i) loss = loss + (got[i] * static_cast<double>(i + 1)).sum();
      loss.backward();
      INFO("the gradient of chunk i must reach the rows of chunk i of x");
      REQUIRE(x.grad().defined());
      std::vector<double> expected;
      for (size_t i = 0; i < want.size(); ++i)
        for (int64_t k = 0; k < want[i].numel(); ++k) expected.push_back(static_cast<double>(i + 1));
      CHECK(x.grad().tolist<double>() == expected);
    }
  CHECK_THROWS_WITH(lab05::scatter(tt::ones({4, 2}), {}), Catch::Contains("scatter"));
}

TEST_CASE("gather joins the outputs on one device as parallel::gather", "[task:gather]") {
  std::vector<tt::Tensor> outs{tt::arange(6).to(tt::kFloat32).reshape({3, 2}).requires_grad_(),
                               tt::arange(4).to(tt::kFloat32).reshape({2, 2}).requires_grad_(),
                               tt::ones({1, 2}).requires_grad_()};
  const tt::Tensor got = lab05::gather(outs, tt::Device::cpu());
  const tt::Tensor want = tt::parallel::gather({outs[0].detach(), outs[1].detach(), outs[2].detach()}, tt::Device::cpu());
  REQUIRE(got.sizes() == want.sizes());
  CHECK(got.tolist<double>() == want.tolist<double>());
  (got * 2.0).sum().backward();
  {
    INFO("gather must stay differentiable: each output's gradient is its slice of the result's");
    for (const tt::Tensor& o : outs) {
      REQUIRE(o.grad().defined());
      CHECK(o.grad().tolist<double>() == std::vector<double>(static_cast<size_t>(o.numel()), 2.0));
    }
  }
  CHECK_THROWS_WITH(lab05::gather({}, tt::Device::cpu()), Catch::Contains("gather"));
}

TEST_CASE("data_parallel equals the module on the whole batch, output and gradients", "[task:forward]") {
  for (size_t n : {1, 2, 3}) {
    auto model = make_mlp(11), reference = make_mlp(11);
    tt::Generator g(5);
    tt::Tensor x = tt::randn({7, 5}, tt::kFloat32, &g);
    tt::Tensor y = lab05::data_parallel(*model, x, cpus(n));
    tt::Tensor y_ref = reference->forward(x);
    INFO(n << " devices, a batch of 7");
    REQUIRE(y.sizes() == y_ref.sizes());
    CHECK(max_diff(y, y_ref) < 1e-5);
    (y * y).sum().backward();
    (y_ref * y_ref).sum().backward();
    const auto p = model->parameters(), q = reference->parameters();
    for (size_t i = 0; i < p.size(); ++i) {
      INFO("parameter " << i << "'s .grad (the replicas' gradients must reach the original module)");
      REQUIRE(p[i].grad().defined());
      CHECK(max_diff(p[i].grad(), q[i].grad()) < 1e-5);
    }
  }
  // Each chunk runs on a replica of its own (parallel::replicate + parallel_apply), not on the
  // original module one chunk after another.
  Probe probe;
  Probe::ran().clear();
  lab05::data_parallel(probe, tt::ones({6, 5}), cpus(3));
  const std::set<const tt::nn::Module*> instances(Probe::ran().begin(), Probe::ran().end());
  INFO("3 devices, 6 rows: the module instances that ran forward (expected 3 replicas, not the original)");
  CHECK(Probe::ran().size() == 3);
  CHECK(instances.size() == 3);
  CHECK(instances.count(&probe) == 0);
}

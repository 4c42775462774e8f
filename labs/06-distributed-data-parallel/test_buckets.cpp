// labs/06-distributed-data-parallel/test_buckets.cpp — the checks of lab 06, one Catch2 tag per task.
//
// Run on 2 and 3 ranks by scripts/lab.sh check 06. References: the chapter's example and the
// library's compute_bucket_assignment_by_size (PyTorch's, include/tinytorch/distributed/
// reducer.hpp) for the buckets; MPI_Allreduce of each rank's own gradients, divided by the world
// size, for the averages (to 1e-6: the sums may run in another order).
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

void ensure_group() {
  if (!dist::is_initialized()) dist::init_process_group(dist::Backend::MPI);
}

std::string str(const std::vector<std::vector<size_t>>& v) {
  std::ostringstream os;
  os << "{";
  for (size_t b = 0; b < v.size(); ++b) {
    os << (b ? " " : "") << "{";
    for (size_t i = 0; i < v[b].size(); ++i) os << (i ? "," : "") << v[b][i];
    os << "}";
  }
  return os.str() + "}";
}

// The average over ranks of each rank's values: MPI_Allreduce, then / N.
std::vector<double> mpi_average(const std::vector<double>& mine) {
  std::vector<double> out(mine.size());
  MPI_Allreduce(mine.data(), out.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (double& v : out) v /= dist::get_world_size();
  return out;
}

void expect_close(const std::string& what, const std::vector<double>& got, const std::vector<double>& want) {
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    if (std::abs(got[i] - want[i]) > 1e-6) {
      std::ostringstream os;
      os.precision(9);
      os << what << ": [" << i << "] = " << got[i] << ", the average over the ranks (MPI_Allreduce / N) is " << want[i];
      FAIL_CHECK(os.str());
      return;
    }
  if (got.size() != want.size())
    FAIL_CHECK(what << ": " << got.size() << " values, expected " << want.size());
  else
    SUCCEED(what);
}

std::shared_ptr<tt::nn::Sequential> make_mlp() {
  tt::manual_seed(3);  // the same weights on every rank
  return std::make_shared<tt::nn::Sequential>(std::make_shared<tt::nn::Linear>(5, 8), std::make_shared<tt::nn::ReLU>(),
                                              std::make_shared<tt::nn::Linear>(8, 6), std::make_shared<tt::nn::ReLU>(),
                                              std::make_shared<tt::nn::Linear>(6, 3));
}

std::vector<int64_t> byte_sizes(const std::vector<tt::Tensor>& ps) {
  std::vector<int64_t> out;
  for (const tt::Tensor& p : ps) out.push_back(p.numel() * 4);
  return out;
}

}  // namespace

TEST_CASE("assign_buckets: PyTorch's assignment by size, reversed", "[task:assign]") {
  const int64_t MiB = 1 << 20;
  INFO("the chapter's example: 0.5, 0.75, 10, 20, 3 MiB with limits {1, 25} MiB");
  CHECK(str(lab06::assign_buckets({MiB / 2, 3 * MiB / 4, 10 * MiB, 20 * MiB, 3 * MiB}, {MiB, 25 * MiB})) ==
        "{{4} {2,3} {0,1}}");
  const std::vector<std::vector<int64_t>> numels{{1}, {5, 5, 5}, {40, 8, 24, 3, 100, 7, 7}, {3, 3, 3, 3, 3, 3, 3}};
  const std::vector<std::vector<int64_t>> limits{{16}, {40, 100}, {1}, {60, 1000}, {28, 32, 36}};
  for (const auto& n : numels)
    for (const auto& l : limits) {
      std::vector<tt::Tensor> ts;
      for (int64_t k : n) ts.push_back(tt::zeros({k}));
      auto want = dist::compute_bucket_assignment_by_size(ts, l);
      std::reverse(want.begin(), want.end());
      INFO("float32 parameters of " << str({std::vector<size_t>(n.begin(), n.end())}) << " elements, limits "
                                    << str({std::vector<size_t>(l.begin(), l.end())}) << " bytes");
      CHECK(str(lab06::assign_buckets(byte_sizes(ts), l)) == str(want));
    }
}

TEST_CASE("reduce_bucket averages one bucket's gradients across ranks", "[task:reduce]") {
  ensure_group();
  const int r = dist::get_rank();
  std::vector<tt::Tensor> ps{tt::zeros({2, 3}).requires_grad_(), tt::zeros({4}).requires_grad_(),
                             tt::zeros({3}).requires_grad_()};
  for (size_t i = 0; i < ps.size(); ++i) {
    tt::Tensor g = (tt::arange(ps[i].numel()).to(tt::kFloat32) * (r + 1.0) + static_cast<double>(i)).reshape(ps[i].sizes());
    ps[i].set_grad(g);
  }
  std::vector<std::vector<double>> before;
  for (const tt::Tensor& p : ps) before.push_back(p.grad().tolist<double>());
  lab06::BucketedAllReduce reducer(ps, {{2}, {0, 1}});
  reducer.reduce_bucket(1);
  expect_close("parameter 0's .grad after reducing bucket {0,1}", ps[0].grad().tolist<double>(), mpi_average(before[0]));
  expect_close("parameter 1's .grad after reducing bucket {0,1}", ps[1].grad().tolist<double>(), mpi_average(before[1]));
  CHECK(ps[0].grad().sizes() == tt::Shape{2, 3});
  INFO("a parameter of another bucket must keep its own gradient");
  CHECK(ps[2].grad().tolist<double>() == before[2]);
  CHECK(reducer.launch_order() == std::vector<size_t>{1});
}

TEST_CASE("the hooks reduce every bucket in order during backward: DDP's average gradients", "[task:hooks]") {
  ensure_group();
  {
    // Scripted arrivals: bucket 2 = {0,1} completes first but must wait for buckets 0 and 1.
    std::vector<tt::Tensor> ps;
    for (int i = 0; i < 5; ++i) {
      ps.push_back(tt::zeros({2}).requires_grad_());
      ps.back().set_grad(tt::ones({2}));
    }
    lab06::BucketedAllReduce reducer(ps, {{4}, {2, 3}, {0, 1}});
    reducer.on_grad_ready(0);
    reducer.on_grad_ready(1);
    INFO("parameters 0 and 1 arrived: bucket 2 is complete, but buckets 0 and 1 come first on every rank");
    CHECK(reducer.launch_order().empty());
    reducer.on_grad_ready(4);
    INFO("then parameter 4: bucket 0 is complete and next");
    CHECK(reducer.launch_order() == std::vector<size_t>{0});
    reducer.on_grad_ready(2);
    reducer.on_grad_ready(3);
    INFO("then 2 and 3: bucket 1, and after it the waiting bucket 2");
    CHECK(reducer.launch_order() == std::vector<size_t>{0, 1, 2});
  }
  const int r = dist::get_rank();
  auto model = make_mlp(), twin = make_mlp();
  const std::vector<tt::Tensor> params = model->parameters();
  auto buckets = dist::compute_bucket_assignment_by_size(params, {100, 200});  // the library's, so that
  std::reverse(buckets.begin(), buckets.end());                               // this task stands alone
  lab06::BucketedAllReduce reducer(params, buckets);
  tt::nn::MSELoss loss_fn;
  for (int step = 0; step < 2; ++step) {
    tt::Generator g(100 + 10 * step + r);  // each rank its own data
    tt::Tensor x = tt::randn({4, 5}, tt::kFloat32, &g), y = tt::randn({4, 3}, tt::kFloat32, &g);
    for (tt::Tensor p : params) p.set_grad(tt::Tensor());
    for (tt::Tensor p : twin->parameters()) p.set_grad(tt::Tensor());
    loss_fn(model->forward(x), y).backward();  // the hooks average during backward
    loss_fn(twin->forward(x), y).backward();   // local gradients, no hooks
    const std::vector<tt::Tensor> local = twin->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      std::ostringstream what;
      what << "rank " << r << ", backward " << step + 1 << ", parameter " << i << "'s .grad";
      REQUIRE(params[i].grad().defined());
      expect_close(what.str(), params[i].grad().tolist<double>(), mpi_average(local[i].grad().tolist<double>()));
    }
    std::vector<size_t> in_order;
    for (int s = 0; s <= step; ++s)
      for (size_t b = 0; b < buckets.size(); ++b) in_order.push_back(b);
    INFO(buckets.size() << " buckets " << str(buckets) << ": reduced once each per backward, in bucket order");
    CHECK(reducer.launch_order() == in_order);
  }
}

// tests/mpi/test_ddp.cpp — DistributedDataParallel against one process, and its error paths.
//
// Run by ctest on 2, 3 and 4 ranks (scripts/mpirun.sh -np N build/bin/test_ddp); it also passes
// as a single process (world size 1: `build/bin/test_ddp`), where DDP does no communication.
// What is checked (N = world size):
//   * bucket assignment = PyTorch's compute_bucket_assignment_by_size (the reference notes'
//     worked example), reversed by DDP, rebuilt in gradient-arrival order after one backward;
//   * equivalence: N ranks with B samples each end, after several SGD(momentum) steps, with the
//     weights (1e-5) of one process that trains on the N*B samples (computed here on every
//     rank), with one bucket and with one bucket per parameter; replicas start from different
//     random weights, so this also checks the broadcast from rank 0; all replicas equal bitwise;
//   * DataParallelNaive (a hook per parameter) trains as DDP: bit for bit on 2 ranks;
//   * no_sync over k micro-steps + one synced step = one step on k times the data;
//   * every rank agrees on the world size, its rank and the bucket layout;
//   * a model that differs across ranks (a shape, a parameter count) throws the same message on
//     every rank, and the collectives still line up afterwards;
//   * find_unused_parameters: unused everywhere -> .grad stays undefined; unused on some ranks ->
//     the average of the ranks that used it (zeros elsewhere);
//   * without it, an unused parameter -> PyTorch's "Expected to have finished reduction" error
//     at the next forward (and from finalize()), naming the parameters; DDP works again after;
//   * the all-reduce of the first bucket starts before backward has finished (overlap), and a
//     trace records one event per bucket;
//   * examples/ddp_loop.hpp (example_ddp) equals PyTorch's losses at N = 2 (else skipped);
//   * checkpoints: rank 0 saves, barrier, every rank loads the same state dict.
// Chapter: chapters/06-distributed-data-parallel.md (the equivalence test is the exercise).
// Catch2 tags: [ch06][distributed][ddp]; the no_sync test also [ch09] (chapters/09-gradient-accumulation.md).
#include <catch2/catch.hpp>

#include <tinytorch/distributed.hpp>
#include <tinytorch/tinytorch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "../../examples/ddp_loop.hpp"
#include "../reference/examples_ref.hpp"
#include "mpi_test_helpers.hpp"

namespace dist = tinytorch::distributed;
namespace nn = tinytorch::nn;
using tinytorch::Tensor;

namespace {

using mpi_test::ensure_group;  // tests/mpi/mpi_test_helpers.hpp
using mpi_test::make_mlp;

/// All parameters of a module, flattened, as doubles (registration order).
std::vector<double> flat_params(const nn::Module& m) {
  std::vector<double> out;
  for (const Tensor& p : m.parameters()) {
    auto v = p.tolist<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

/// True on every rank iff every rank's `v` equals rank 0's exactly.
bool identical_on_all_ranks(std::vector<double> v) {
  std::vector<double> ref = v;
  dist::broadcast(ref.data(), static_cast<int64_t>(ref.size()), 0);
  int64_t bad = ref == v ? 0 : 1;
  dist::all_reduce(&bad, 1, dist::ReduceOp::MAX);
  return bad == 0;
}

/// Step s's global batch (same on every rank): x (n, in), y (n, out).
std::pair<Tensor, Tensor> global_batch(int s, int64_t n, int64_t in, int64_t out) {
  tinytorch::Generator g(1000 + static_cast<uint64_t>(s));
  Tensor x = tinytorch::randn({n, in}, {}, &g);
  Tensor y = tinytorch::randn({n, out}, {}, &g);
  return {x, y};
}

/// Trains a DDP replica (per-rank batch B) and a single-process reference (batch N*B) for
/// `steps` SGD steps; returns the max abs weight difference on this rank.
double ddp_vs_single(const dist::DDPOptions& options, int steps, int64_t B, size_t* num_buckets = nullptr) {
  const int N = dist::get_world_size(), r = dist::get_rank();
  const std::vector<int64_t> sizes{6, 16, 8, 3};
  tinytorch::manual_seed(42 + static_cast<uint64_t>(r));  // different on every rank: DDP broadcasts rank 0's
  auto replica = make_mlp(sizes);
  tinytorch::manual_seed(42);  // rank 0's initial weights
  auto reference = make_mlp(sizes);

  auto ddp = std::make_shared<dist::DistributedDataParallel>(replica, options);
  if (num_buckets) *num_buckets = ddp->bucket_indices().size();
  CHECK(max_abs_diff(flat_params(*replica), flat_params(*reference)) == 0.0);

  tinytorch::optim::SGD opt(ddp->parameters(), 0.1, 0.9);
  tinytorch::optim::SGD ref_opt(reference->parameters(), 0.1, 0.9);
  nn::MSELoss loss_fn;
  for (int s = 0; s < steps; ++s) {
    auto [x, y] = global_batch(s, N * B, 6, 3);
    opt.zero_grad();
    loss_fn(ddp->forward(x.narrow(0, r * B, B)), y.narrow(0, r * B, B)).backward();  // this rank's shard
    opt.step();
    ref_opt.zero_grad();
    loss_fn(reference->forward(x), y).backward();  // all N*B samples
    ref_opt.step();
  }
  CHECK(identical_on_all_ranks(flat_params(*replica)));
  return max_abs_diff(flat_params(*replica), flat_params(*reference));
}

/// A module with three Linear layers; `use_b` / `use_c` decide whether fc_b / fc_c take part.
class Branchy : public nn::Module {
 public:
  Branchy() {
    fc_a = register_module("fc_a", std::make_shared<nn::Linear>(4, 3));
    fc_b = register_module("fc_b", std::make_shared<nn::Linear>(4, 3));
    fc_c = register_module("fc_c", std::make_shared<nn::Linear>(4, 3));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = fc_a->forward(x);
    if (use_b) y = y + fc_b->forward(x);
    if (use_c) y = y + fc_c->forward(x);
    return y;
  }
  std::shared_ptr<nn::Linear> fc_a, fc_b, fc_c;
  bool use_b = true, use_c = true;
};

}  // namespace

TEST_CASE("bucket assignment follows PyTorch's compute_bucket_assignment_by_size", "[ch06][distributed][ddp]") {
  ensure_group();
  // The reference notes' worked example: 0.5, 0.75, 10, 20, 3 MiB with limits {1 MiB, 25 MiB}.
  const int64_t MiB = 1 << 20;
  std::vector<Tensor> t{tinytorch::zeros({MiB / 8}), tinytorch::zeros({3 * MiB / 16}), tinytorch::zeros({10 * MiB / 4}),
                        tinytorch::zeros({20 * MiB / 4}), tinytorch::zeros({3 * MiB / 4})};
  auto buckets = dist::compute_bucket_assignment_by_size(t, {MiB, 25 * MiB});
  REQUIRE(buckets == std::vector<std::vector<size_t>>{{0, 1}, {2, 3}, {4}});
  // One open bucket per dtype: a float64 tensor does not join the float32 bucket.
  std::vector<Tensor> mixed{tinytorch::zeros({10}), tinytorch::zeros({10}, tinytorch::kFloat64), tinytorch::zeros({10})};
  CHECK(dist::compute_bucket_assignment_by_size(mixed, {MiB}) == std::vector<std::vector<size_t>>{{0, 2}, {1}});
  CHECK_THROWS_WITH(dist::compute_bucket_assignment_by_size(t, {}), Catch::Contains("at least one size limit"));

  // DDP reverses: bucket 0 holds the last layer. 784-256-128-10 (0.9 MiB) fits one bucket;
  // with 0.1 MiB limits the first weight (0.77 MiB) closes a bucket on its own, "0.bias" + the
  // second weight (0.13 MiB) close the next, and the small rest is left over.
  tinytorch::manual_seed(0);
  auto mlp = make_mlp({784, 256, 128, 10});
  dist::DistributedDataParallel one(mlp);
  CHECK(one.bucket_indices() == std::vector<std::vector<size_t>>{{0, 1, 2, 3, 4, 5}});
  CHECK(one.bucket_bytes() == std::vector<int64_t>{4 * (784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10)});
  dist::DDPOptions small;
  small.bucket_cap_mb = small.first_bucket_mb = 0.1;
  dist::DistributedDataParallel many(make_mlp({784, 256, 128, 10}), small);
  CHECK(many.bucket_indices() == std::vector<std::vector<size_t>>{{3, 4, 5}, {1, 2}, {0}});
  CHECK(many.parameter_names() == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"});
  CHECK(many.named_parameters()[0].first == "module.0.weight");  // PyTorch's state_dict prefix

  // After one backward the buckets are rebuilt in the order the gradients arrived (each layer's
  // bias, then its weight, last layer first): "0.bias" no longer waits in the bucket of "2.weight".
  tinytorch::Generator g(5);
  Tensor x = tinytorch::randn({8, 784}, {}, &g);
  Tensor y = tinytorch::zeros({8}, tinytorch::kInt64);
  nn::CrossEntropyLoss loss_fn;
  loss_fn(many.forward(x), y).backward();
  CHECK(many.bucket_indices() == std::vector<std::vector<size_t>>{{3, 4, 5}, {1, 2}, {0}});  // not yet
  many.zero_grad();
  loss_fn(many.forward(x), y).backward();  // this forward rebuilt them
  CHECK(many.bucket_indices() == std::vector<std::vector<size_t>>{{5, 4, 3, 2}, {1, 0}});
}

TEST_CASE("DDP on N ranks x B samples equals one process on N*B samples", "[ch06][distributed][ddp]") {
  ensure_group();
  SECTION("default buckets (one bucket)") {
    size_t nb = 0;
    const double d = ddp_vs_single({}, 6, 5, &nb);
    CHECK(nb == 1);
    CHECK(d < 1e-5);
  }
  SECTION("one bucket per parameter (tiny bucket_cap_mb)") {
    dist::DDPOptions o;
    o.bucket_cap_mb = o.first_bucket_mb = 1e-6;
    size_t nb = 0;
    const double d = ddp_vs_single(o, 6, 4, &nb);
    CHECK(nb == 6);
    CHECK(d < 1e-5);
  }
  SECTION("batch of one sample per rank") { CHECK(ddp_vs_single({}, 4, 1) < 1e-5); }
  SECTION("every all-reduce algorithm, one bucket per parameter (the comm thread reduces five)") {
    for (dist::Algorithm a : {dist::Algorithm::Ring, dist::Algorithm::MPI, dist::Algorithm::Tree,
                              dist::Algorithm::ParameterServer}) {
      INFO("algorithm " << dist::algorithm_name(a));
      dist::DDPOptions o;
      o.algorithm = a;
      o.bucket_cap_mb = o.first_bucket_mb = 1e-6;
      CHECK(ddp_vs_single(o, 6, 3) < 1e-5);
    }
  }
  SECTION("the default algorithm is MPI_Allreduce, as in PyTorch's MPI process group") {
    CHECK(dist::DDPOptions{}.algorithm == dist::Algorithm::MPI);
  }
}

TEST_CASE("DataParallelNaive trains as DistributedDataParallel (bit for bit on 2 ranks)", "[ch06][distributed][ddp]") {
  ensure_group();
  const int N = dist::get_world_size(), r = dist::get_rank();
  const std::vector<int64_t> sizes{6, 16, 8, 3};
  tinytorch::manual_seed(7 + static_cast<uint64_t>(r));  // different on every rank: both broadcast rank 0's
  auto naive_model = make_mlp(sizes);
  tinytorch::manual_seed(7 + static_cast<uint64_t>(r));
  auto ddp_model = make_mlp(sizes);
  auto naive = std::make_shared<dist::DataParallelNaive>(naive_model);
  auto ddp = std::make_shared<dist::DistributedDataParallel>(ddp_model);
  CHECK(max_abs_diff(flat_params(*naive_model), flat_params(*ddp_model)) == 0.0);

  tinytorch::optim::SGD naive_opt(naive->parameters(), 0.1, 0.9);
  tinytorch::optim::SGD ddp_opt(ddp->parameters(), 0.1, 0.9);
  nn::MSELoss loss_fn;
  const int64_t B = 4;
  for (int s = 0; s < 5; ++s) {
    auto [x, y] = global_batch(s, N * B, 6, 3);
    const Tensor xs = x.narrow(0, r * B, B), ys = y.narrow(0, r * B, B);
    naive_opt.zero_grad();
    loss_fn(naive->forward(xs), ys).backward();
    naive_opt.step();
    ddp_opt.zero_grad();
    loss_fn(ddp->forward(xs), ys).backward();
    ddp_opt.step();
  }
  CHECK(identical_on_all_ranks(flat_params(*naive_model)));
  const double d = max_abs_diff(flat_params(*naive_model), flat_params(*ddp_model));
  if (N == 2) {
    CHECK(d == 0.0);  // (g0 + g1) / 2 rounds once whichever side divides: dividing by 2 is exact
  } else {
    CHECK(d < 1e-6);
  }
  CHECK_THROWS_WITH(dist::DataParallelNaive(nullptr), Catch::Contains("DataParallelNaive: module is null"));
}

TEST_CASE("no_sync over k micro-steps equals one step on k times the data", "[ch06][ch09][distributed][ddp]") {
  ensure_group();
  const int N = dist::get_world_size(), r = dist::get_rank();
  const int k = 3;
  const int64_t B = 4;
  dist::DDPOptions o;
  o.bucket_cap_mb = o.first_bucket_mb = 1e-6;  // several buckets
  for (int variant = 0; variant < 2; ++variant) {
    tinytorch::manual_seed(7);
    auto replica = make_mlp({6, 10, 3});
    tinytorch::manual_seed(7);
    auto reference = make_mlp({6, 10, 3});
    dist::DDPOptions opts = o;
    opts.find_unused_parameters = variant == 1;
    dist::DistributedDataParallel ddp(replica, opts);
    tinytorch::optim::SGD opt(ddp.parameters(), 0.05);
    tinytorch::optim::SGD ref_opt(reference->parameters(), 0.05);
    nn::MSELoss loss_fn;
    // The global data of the step: k micro-batches of N*B rows; rank r takes rows r*B.. of each.
    auto [x, y] = global_batch(3, k * N * B, 6, 3);
    opt.zero_grad();
    for (int j = 0; j < k; ++j) {
      Tensor xj = x.narrow(0, (j * N + r) * B, B), yj = y.narrow(0, (j * N + r) * B, B);
      if (j < k - 1) {
        auto guard = ddp.no_sync();
        (loss_fn(ddp.forward(xj), yj) / static_cast<double>(k)).backward();  // accumulates locally
      } else {
        (loss_fn(ddp.forward(xj), yj) / static_cast<double>(k)).backward();  // syncs the sum
      }
      if (j == 0 && N > 1) {
        // Inside no_sync the gradients are local: they differ between ranks.
        CHECK_FALSE(identical_on_all_ranks(replica->parameters()[0].grad().tolist<double>()));
      }
    }
    opt.step();
    ref_opt.zero_grad();
    loss_fn(reference->forward(x), y).backward();
    ref_opt.step();
    INFO("find_unused_parameters=" << opts.find_unused_parameters);
    CHECK(max_abs_diff(flat_params(*replica), flat_params(*reference)) < 1e-5);
    CHECK(identical_on_all_ranks(flat_params(*replica)));
  }
}

TEST_CASE("every rank agrees on the world size, its rank and the buckets", "[ch06][distributed][ddp]") {
  ensure_group();
  const int N = dist::get_world_size(), r = dist::get_rank();
  dist::DDPOptions o;
  o.bucket_cap_mb = o.first_bucket_mb = 1e-6;
  dist::DistributedDataParallel ddp(make_mlp({5, 4, 2}), o);
  CHECK(ddp.world_size() == N);
  CHECK(ddp.rank() == r);
  std::vector<int64_t> ranks(static_cast<size_t>(N));
  int64_t mine = r;
  dist::all_gather(ranks.data(), &mine, 1);
  for (int q = 0; q < N; ++q) CHECK(ranks[static_cast<size_t>(q)] == q);
  auto layout = [&] {
    std::vector<double> l;
    for (const auto& b : ddp.bucket_indices()) {
      l.push_back(-1);
      for (size_t i : b) l.push_back(static_cast<double>(i));
    }
    return l;
  };
  CHECK(identical_on_all_ranks(layout()));
  // The rebuilt buckets (rank 0's arrival order, broadcast) agree too.
  nn::MSELoss loss_fn;
  for (int it = 0; it < 2; ++it) {
    ddp.zero_grad();
    loss_fn(ddp.forward(tinytorch::ones({3, 5})), tinytorch::zeros({3, 2})).backward();
  }
  CHECK(identical_on_all_ranks(layout()));
}

TEST_CASE("a model that differs across ranks fails with the same message on every rank", "[ch06][distributed][ddp]") {
  ensure_group();
  const int N = dist::get_world_size(), r = dist::get_rank();
  if (N == 1) {
    SUCCEED("needs at least two ranks");
    return;
  }
  SECTION("a shape differs on the last rank") {
    auto m = make_mlp({3, 4, r == N - 1 ? 5 : 2});  // "2.weight" is (2, 4) on rank 0, (5, 4) on the last
    const std::string expected =
        "DistributedDataParallel: DDP expects same model across all ranks, but parameter 2 (\"2.weight\") has "
        "sizes [2, 4] torch.float32 on rank 0 and sizes [5, 4] torch.float32 on rank " + std::to_string(N - 1) +
        ". Every rank must build the same model and register its parameters in the same order.";
    CHECK_THROWS_WITH(dist::DistributedDataParallel(m), expected);
  }
  SECTION("the last rank has an extra layer") {
    auto m = r == N - 1 ? make_mlp({3, 4, 2, 2}) : make_mlp({3, 4, 2});
    std::string counts;
    for (int q = 0; q < N; ++q) counts += (q ? ", " : "") + std::string(q == N - 1 ? "6" : "4");
    const std::string expected =
        "DistributedDataParallel: DDP expects same model across all ranks, but rank 0 has 4 parameters while "
        "rank " + std::to_string(N - 1) + " has inconsistent 6 parameters (parameter counts by rank: [" + counts +
        "]). Every rank must build the same model and register its parameters in the same order.";
    CHECK_THROWS_WITH(dist::DistributedDataParallel(m), expected);
  }
  SECTION("ranks 1.. differ from rank 0 in a bias; the lowest of them is named") {
    auto m = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 4, /*bias=*/r == 0));
    // rank 0: weight, bias; others: weight only -> a count mismatch names rank 1
    CHECK_THROWS_WITH(dist::DistributedDataParallel(m),
                      Catch::StartsWith("DistributedDataParallel: DDP expects same model across all ranks, but rank 0 "
                                        "has 2 parameters while rank 1 has inconsistent 1 parameters"));
  }
  SECTION("a parameter frozen on the last rank only") {
    auto m = make_mlp({3, 4, 2});
    if (r == N - 1) m->parameters()[1].requires_grad_(false);  // "0.bias"
    CHECK_THROWS_WITH(dist::DistributedDataParallel(m),
                      "DistributedDataParallel: DDP expects same model across all ranks, but parameter 1 (\"0.bias\") "
                      "has sizes [4] torch.float32 requires_grad=True on rank 0 and sizes [4] torch.float32 "
                      "requires_grad=False on rank " + std::to_string(N - 1) +
                          ". Every rank must build the same model and register its parameters in the same order.");
  }
  SECTION("DDPOptions differ on the last rank") {
    dist::DDPOptions o;
    if (r == N - 1) o.algorithm = dist::Algorithm::Tree;
    CHECK_THROWS_WITH(dist::DistributedDataParallel(make_mlp({3, 4, 2}), o),
                      "DistributedDataParallel: DDPOptions must be the same on every rank, but algorithm is mpi (0) on "
                      "rank 0 and tree (3) on rank " + std::to_string(N - 1) + ".");
    dist::DDPOptions p;
    if (r == N - 1) p.bucket_cap_mb = 1;
    CHECK_THROWS_WITH(dist::DistributedDataParallel(make_mlp({3, 4, 2}), p),
                      "DistributedDataParallel: DDPOptions must be the same on every rank, but bucket_cap_mb is "
                      "25 on rank 0 and 1 on rank " + std::to_string(N - 1) + ".");
    // A value that is invalid on one rank only: the same mismatch error everywhere, no hang.
    dist::DDPOptions q;
    if (r == N - 1) q.algorithm = static_cast<dist::Algorithm>(42);
    CHECK_THROWS_WITH(dist::DistributedDataParallel(make_mlp({3, 4, 2}), q),
                      "DistributedDataParallel: DDPOptions must be the same on every rank, but algorithm is mpi (0) on "
                      "rank 0 and ? (42) on rank " + std::to_string(N - 1) + ".");
    dist::DDPOptions z;
    if (r == N - 1) z.first_bucket_mb = 0;
    CHECK_THROWS_WITH(dist::DistributedDataParallel(make_mlp({3, 4, 2}), z),
                      "DistributedDataParallel: DDPOptions must be the same on every rank, but first_bucket_mb is "
                      "1 on rank 0 and 0 on rank " + std::to_string(N - 1) + ".");
    CHECK_THROWS_WITH(dist::DistributedDataParallel(r == N - 1 ? nullptr : make_mlp({3, 4, 2})),
                      "DistributedDataParallel: DDPOptions must be the same on every rank, but module (passed or "
                      "null) is passed on rank 0 and null on rank " + std::to_string(N - 1) + ".");
  }
  // Nothing is left in flight: a collective afterwards lines up.
  int64_t one = 1;
  dist::all_reduce(&one, 1);
  CHECK(one == N);
}

TEST_CASE("find_unused_parameters: unused everywhere stays undefined, unused somewhere is averaged",
          "[ch06][distributed][ddp]") {
  ensure_group();
  const int N = dist::get_world_size(), r = dist::get_rank();
  tinytorch::manual_seed(3);
  auto model = std::make_shared<Branchy>();
  model->use_b = false;        // fc_b: unused on every rank
  model->use_c = r == 0;       // fc_c: used on rank 0 only
  dist::DDPOptions o;
  o.find_unused_parameters = true;
  o.bucket_cap_mb = o.first_bucket_mb = 1e-6;
  dist::DistributedDataParallel ddp(model, o);
  tinytorch::Generator g(50 + static_cast<uint64_t>(r));
  Tensor x = tinytorch::randn({5, 4}, {}, &g), y = tinytorch::randn({5, 3}, {}, &g);
  nn::MSELoss loss_fn;

  // The local gradients, from a plain (unwrapped) forward on the same weights.
  for (int iter = 0; iter < 2; ++iter) {  // the second iteration checks that nothing is left pending
    model->zero_grad();
    loss_fn(model->forward(x), y).backward();  // bypasses DDP: local gradients only
    std::vector<std::vector<double>> local;
    for (const Tensor& p : model->parameters())
      local.push_back(p.grad().defined() ? p.grad().tolist<double>() : std::vector<double>());
    model->zero_grad();
    loss_fn(ddp.forward(x), y).backward();
    const auto params = model->parameters();  // fc_a.w, fc_a.b, fc_b.w, fc_b.b, fc_c.w, fc_c.b
    for (size_t i = 0; i < params.size(); ++i) {
      INFO("iteration " << iter << ", parameter " << i);
      if (i == 2 || i == 3) {
        CHECK_FALSE(params[i].grad().defined());
        continue;
      }
      REQUIRE(params[i].grad().defined());
      std::vector<double> expect = local[i];
      if (expect.empty()) expect.assign(static_cast<size_t>(params[i].numel()), 0.0);  // fc_c off rank 0
      dist::all_reduce(expect.data(), static_cast<int64_t>(expect.size()), dist::ReduceOp::SUM);
      for (double& v : expect) v /= N;
      CHECK(max_abs_diff(params[i].grad().tolist<double>(), expect) < 1e-6);
    }
  }
}

TEST_CASE("an unused parameter without find_unused_parameters fails at the next forward", "[ch06][distributed][ddp]") {
  ensure_group();
  const int r = dist::get_rank();
  nn::MSELoss loss_fn;
  Tensor x = tinytorch::ones({2, 4}), y = tinytorch::zeros({2, 3});
  const std::string head =
      "DistributedDataParallel: Expected to have finished reduction in the prior iteration before starting a new "
      "one. This error indicates that your module has parameters that were not used in producing loss.";
  SECTION("the last layer is unused: no bucket is launched") {
    auto model = std::make_shared<Branchy>();
    model->use_c = false;
    dist::DistributedDataParallel ddp(model);
    loss_fn(ddp.forward(x), y).backward();  // returns: nothing to wait for
    CHECK_THROWS_WITH(ddp.forward(x),
                      Catch::Contains(head) &&
                          Catch::Contains("Parameter indices which did not receive grad for rank " +
                                          std::to_string(r) + ": 4 5") &&
                          Catch::Contains("Parameters which did not receive grad for rank " + std::to_string(r) +
                                          ": fc_c.weight, fc_c.bias"));
    // The error reset the reducer: with every parameter used, training goes on.
    model->use_c = true;
    model->zero_grad();
    loss_fn(ddp.forward(x), y).backward();
    ddp.finalize();  // nothing pending: no error
    CHECK(model->fc_c->weight.grad().defined());
  }
  SECTION("the first layer is unused: later buckets were launched and complete") {
    auto model = std::make_shared<Branchy>();
    model->use_b = false;
    dist::DDPOptions o;
    o.bucket_cap_mb = o.first_bucket_mb = 1e-6;  // one bucket per parameter: fc_c's two buckets
                                                 // launch, the rest wait behind fc_b's
    dist::DistributedDataParallel ddp(model, o);
    loss_fn(ddp.forward(x), y).backward();
    CHECK_THROWS_WITH(ddp.finalize(), Catch::Contains(head) && Catch::Contains("fc_b.weight, fc_b.bias"));
    int64_t one = 1;  // nothing left in flight on the group's communicator
    dist::all_reduce(&one, 1);
    CHECK(one == dist::get_world_size());
  }
}

TEST_CASE("a second backward through one forward, and a forward without backward, fail on the rank at fault",
          "[ch06][distributed][ddp]") {
  ensure_group();
  const int r = dist::get_rank();
  nn::MSELoss loss_fn;
  Tensor x = tinytorch::ones({2, 4}), y = tinytorch::zeros({2, 3});
  auto model = std::make_shared<Branchy>();
  dist::DistributedDataParallel ddp(model);
  SECTION("backward(retain_graph=true) then backward again: PyTorch's 'ready only once', .grad kept") {
    Tensor loss = loss_fn(ddp.forward(x), y);
    loss.backward(Tensor(), /*retain_graph=*/true);
    const auto averaged = model->fc_a->weight.grad().tolist<double>();
    CHECK_THROWS_WITH(loss.backward(),
                      Catch::StartsWith("DistributedDataParallel: Expected to mark a variable ready only once. A "
                                        "second backward reached the output of a forward whose gradients were "
                                        "already reduced") &&
                          Catch::Contains("on rank " + std::to_string(r) + ":"));
    CHECK(model->fc_a->weight.grad().tolist<double>() == averaged);  // refused before any gradient moved
    // Two losses of one forward, each with its own backward: the same error.
    Tensor out = ddp.forward(x);
    loss_fn(out, y).backward(Tensor(), true);
    CHECK_THROWS_WITH((out * 2.0).sum().backward(), Catch::Contains("Expected to mark a variable ready only once"));
    // Inside no_sync both backwards are legal (local accumulation); the next synced step reduces.
    {
      auto guard = ddp.no_sync();
      Tensor l = loss_fn(ddp.forward(x), y);
      l.backward(Tensor(), true);
      l.backward();
    }
    loss_fn(ddp.forward(x), y).backward();
    ddp.finalize();
  }
  SECTION("a grad-mode forward with no backward: the next forward throws at once; NoGradGuard is the way") {
    { Tensor dropped = ddp.forward(x); }  // no backward, and the output is gone
    CHECK_THROWS_WITH(ddp.forward(x),
                      Catch::StartsWith("DistributedDataParallel: Expected to have finished reduction in the prior "
                                        "iteration before starting a new one. Rank " +
                                        std::to_string(r) + " ran no backward after its previous forward"));
    // The error reset the reducer; a forward under NoGradGuard arms nothing.
    {
      tinytorch::NoGradGuard no_grad;
      (void)ddp.forward(x);
    }
    model->zero_grad();
    loss_fn(ddp.forward(x), y).backward();
    CHECK(model->fc_c->weight.grad().defined());
    {
      tinytorch::NoGradGuard no_grad;
      (void)ddp.forward(x);
    }
    loss_fn(ddp.forward(x), y).backward();  // no error: the previous training forward had its backward
  }
  SECTION("two forwards, then one backward through both (a siamese network): legal, as in PyTorch") {
    model->zero_grad();
    Tensor o1 = ddp.forward(x), o2 = ddp.forward(x * 2.0);
    loss_fn(o1 + o2, y).backward();
    // The gradient of fc_a.weight is the same on every rank (same inputs): its local value.
    const auto local = model->fc_a->weight.grad().tolist<double>();
    std::vector<double> sum = local;
    dist::all_reduce(sum.data(), static_cast<int64_t>(sum.size()), dist::ReduceOp::SUM);
    for (size_t i = 0; i < sum.size(); ++i) CHECK(sum[i] == Approx(local[i] * dist::get_world_size()));
    loss_fn(ddp.forward(x), y).backward();  // the next iteration starts cleanly
  }
}

TEST_CASE("a backward that reaches DDP's output but no parameter is not a skipped backward",
          "[ch06][distributed][ddp]") {
  ensure_group();
  // The output does not depend on the parameters (find_unused_parameters marks them all unused).
  struct Doubler : nn::Module {
    Doubler() { fc = register_module("fc", std::make_shared<nn::Linear>(2, 2)); }
    Tensor forward(const Tensor& x) override { return x * 2.0; }
    std::shared_ptr<nn::Linear> fc;
  };
  dist::DDPOptions o;
  o.find_unused_parameters = true;
  dist::DistributedDataParallel ddp(std::make_shared<Doubler>(), o);
  Tensor xi = tinytorch::ones({1, 2}, tinytorch::TensorOptions().requires_grad(true));
  ddp.forward(xi).sum().backward();
  CHECK(xi.grad().tolist<double>() == std::vector<double>{2, 2});
  CHECK_NOTHROW(ddp.forward(xi));
}

TEST_CASE("bucket all-reduces overlap with backward and are traced", "[ch06][distributed][ddp]") {
  ensure_group();
  const int N = dist::get_world_size();
  auto trace = std::make_shared<dist::Trace>(dist::get_rank());
  dist::DDPOptions o;
  o.bucket_cap_mb = o.first_bucket_mb = 0.5;  // 512-512 layers are 1 MiB: one bucket each
  o.trace = trace;
  tinytorch::manual_seed(1);
  dist::DistributedDataParallel ddp(make_mlp({256, 512, 512, 512, 512, 10}), o);
  CHECK(ddp.bucket_indices().size() >= 4);
  nn::CrossEntropyLoss loss_fn;
  Tensor x = tinytorch::randn({128, 256});
  Tensor y = tinytorch::zeros({128}, tinytorch::kInt64);
  int started_early = 0;
  size_t events = 0;
  const int iters = 3;
  for (int it = 0; it < iters; ++it) {
    ddp.zero_grad();
    loss_fn(ddp.forward(x), y).backward();
    const size_t nb = ddp.bucket_indices().size();  // rebuilt by the second forward
    events += nb + 1;                               // one per bucket + the finalize
    const auto& s = ddp.last_iteration_stats();
    if (N == 1) {
      CHECK_FALSE(s.valid);
      continue;
    }
    REQUIRE(s.valid);
    REQUIRE(s.buckets.size() == nb);
    for (size_t b = 0; b < nb; ++b) {
      CHECK(s.buckets[b].start_us >= s.buckets[b].ready_us);  // never before its gradients
      CHECK(s.buckets[b].end_us <= s.finalize_end_us);
      if (b > 0) CHECK(s.buckets[b].start_us >= s.buckets[b - 1].end_us);  // strictly in order
    }
    if (s.buckets[0].start_us < s.last_grad_us) ++started_early;
  }
  if (N > 1) {
    // Bucket 0 (the last layer) is reduced while backward still computes the layers before it.
    // On an oversubscribed machine (more threads than cores) the comm thread may be scheduled
    // late, so one iteration out of three is enough.
    CHECK(started_early >= 1);
    const std::string json = trace->json();
    CHECK(json.find("\"all_reduce bucket 0\"") != std::string::npos);
    CHECK(json.find("\"all_reduce bucket " + std::to_string(ddp.bucket_indices().size() - 1) + "\"") !=
          std::string::npos);
    CHECK(trace->size() == events);
  }
}

TEST_CASE("example_ddp's loop matches PyTorch (2 ranks, no shuffle)", "[ch06][distributed][ddp][examples]") {
  ensure_group();
  examples::DdpExampleOptions o;
  o.shuffle = false;
  examples::DdpExampleResult res = examples::train_ddp(o);
  std::vector<double> w = res.weight;
  w.push_back(res.bias);
  CHECK(identical_on_all_ranks(w));
  // Shuffled runs are reproducible (every rank takes part: DDP's constructor is collective).
  examples::DdpExampleOptions s;
  CHECK(examples::train_ddp(s).losses == examples::train_ddp(s).losses);
  const int N = dist::get_world_size();
  if (N != 2 && N != 1) {
    SUCCEED("PyTorch reference exists for world sizes 1 and 2 only");
    return;
  }
  if (dist::get_rank() != 0) return;
  const auto& ref = N == 2 ? examples_reference::example_ddp_losses_w2 : examples_reference::example_ddp_losses_w1;
  REQUIRE(res.losses.size() == ref.size());
  for (size_t k = 0; k < ref.size(); ++k) {
    INFO("epoch " << k);
    CHECK(res.losses[k] == Approx(ref[k]).epsilon(0).margin(1e-6));
  }
}

TEST_CASE("checkpoint: rank 0 saves, barrier, every rank loads", "[ch06][distributed][ddp]") {
  ensure_group();
  const int r = dist::get_rank();
  tinytorch::manual_seed(11 + static_cast<uint64_t>(r));
  auto model = make_mlp({4, 5, 2});
  dist::DistributedDataParallel ddp(model);  // now equal to rank 0's weights everywhere
  int64_t pid = static_cast<int64_t>(::getpid());
  dist::broadcast(&pid, 1, 0);  // rank 0's pid names the file
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string path = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/tt_test_ddp_ckpt_" + std::to_string(pid) + ".tt";
  if (r == 0) tinytorch::save(ddp.module()->state_dict(), path);
  dist::barrier();
  tinytorch::manual_seed(99);
  auto fresh = make_mlp({4, 5, 2});
  fresh->load_state_dict(tinytorch::load(path));
  CHECK(max_abs_diff(flat_params(*fresh), flat_params(*model)) == 0.0);
  dist::barrier();  // everyone has read it
  if (r == 0) std::remove(path.c_str());
  dist::barrier();
  CHECK_THROWS_WITH(tinytorch::load(path), Catch::Contains("cannot open"));
}

TEST_CASE("bad DDPOptions throw on every rank before any message", "[ch06][distributed][ddp]") {
  ensure_group();
  dist::DDPOptions o;
  o.bucket_cap_mb = 0;
  CHECK_THROWS_WITH(dist::DistributedDataParallel(make_mlp({3, 2}), o),
                    "DistributedDataParallel: bucket_cap_mb and first_bucket_mb must be positive, got 0 and 1");
  dist::DDPOptions a;
  a.algorithm = static_cast<dist::Algorithm>(42);
  CHECK_THROWS_WITH(dist::DistributedDataParallel(make_mlp({3, 2}), a),
                    "DistributedDataParallel: DDPOptions::algorithm has no such value (42)");
  dist::DDPOptions nan;
  nan.bucket_cap_mb = std::nan("");
  CHECK_THROWS_WITH(dist::DistributedDataParallel(make_mlp({3, 2}), nan),
                    Catch::StartsWith("DistributedDataParallel: bucket_cap_mb and first_bucket_mb must be positive"));
  // An infinite cap means "no limit": one bucket (after the 1 MiB first bucket).
  dist::DDPOptions inf;
  inf.bucket_cap_mb = inf.first_bucket_mb = std::numeric_limits<double>::infinity();
  CHECK(dist::DistributedDataParallel(make_mlp({3, 4, 2}), inf).bucket_indices().size() == 1);
  int64_t one = 1;  // nothing in flight
  dist::all_reduce(&one, 1);
  CHECK(one == dist::get_world_size());
}

// ---- mixed precision (chapter 11): 16-bit buckets, communication hooks, GradScaler -------------

namespace {

/// Gradients of `local` (rank 0's weights, the same as the DDP replica's after the broadcast) on
/// this rank's shard of step 0's batch, and the same for the replica through `ddp`. Inputs are
/// cast to the model's dtype.
void backward_both(dist::DistributedDataParallel& ddp, nn::Module& local, tinytorch::DType dtype, int64_t B) {
  const int N = dist::get_world_size(), r = dist::get_rank();
  auto [x, y] = global_batch(0, N * B, 6, 3);
  Tensor xs = x.narrow(0, r * B, B).to(dtype), ys = y.narrow(0, r * B, B).to(dtype);
  nn::MSELoss loss_fn;
  loss_fn(ddp.forward(xs), ys).backward();
  loss_fn(local.forward(xs), ys).backward();
}

/// |got - exact sum| within the roundings of N - 1 hops of a 16-bit sum: each hop rounds to
/// nearest, an error of at most eps/2 of the partial sum's magnitude (<= sum of |terms|), plus
/// half the smallest subnormal per hop (eps and that subnormal: float16 2^-10 and 2^-24, bfloat16
/// 2^-7 and 2^-133). `terms`: this rank's 16-bit terms; got: the reduced ones.
void check_16bit_sum(const Tensor& got, const Tensor& terms) {
  const bool fp16 = terms.dtype() == tinytorch::kFloat16;
  const double eps = fp16 ? 0x1p-10 : 0x1p-7, tiny = fp16 ? 0x1p-25 : 0x1p-134;
  const int N = dist::get_world_size();
  Tensor exact = terms.to(tinytorch::kFloat64).contiguous();
  Tensor mag = terms.to(tinytorch::kFloat64).abs().contiguous();
  dist::all_reduce(exact);
  dist::all_reduce(mag);
  const auto g = got.to(tinytorch::kFloat64).contiguous().tolist<double>();
  const auto e = exact.tolist<double>(), m = mag.tolist<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", exact sum " << e[i]);
    CHECK(std::abs(g[i] - e[i]) <= (N - 1) * (eps / 2 * m[i] + tiny));
  }
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.numel() == b.numel() &&
         std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(), a.numel() * tinytorch::element_size(a.dtype())) == 0;
}

}  // namespace

TEST_CASE("DDP with float16 and bfloat16 parameters averages their gradients in their dtype",
          "[ch11][distributed][ddp][amp]") {
  ensure_group();
  const int N = dist::get_world_size(), r = dist::get_rank();
  for (tinytorch::DType dtype : {tinytorch::kFloat16, tinytorch::kBFloat16}) {
    INFO(tinytorch::dtype_name(dtype));
    tinytorch::manual_seed(42 + static_cast<uint64_t>(r));
    auto replica = make_mlp({6, 16, 8, 3});
    replica->to(dtype);
    tinytorch::manual_seed(42);
    auto local = make_mlp({6, 16, 8, 3});
    local->to(dtype);
    dist::DDPOptions o;
    o.bucket_cap_mb = o.first_bucket_mb = 1e-6;  // a bucket per parameter: the comm thread reduces 16-bit ones
    auto ddp = std::make_shared<dist::DistributedDataParallel>(replica, o);
    CHECK(ddp->bucket_bytes().back() == 16 * 6 * 2);  // 16-bit buckets: 2 bytes per element
    backward_both(*ddp, *local, dtype, 4);
    const auto got = replica->parameters(), mine = local->parameters();
    for (size_t i = 0; i < got.size(); ++i) {
      REQUIRE(got[i].grad().dtype() == dtype);
      // DDP's bucket slice on this rank: g_r / N rounded once; then a 16-bit SUM over the ranks.
      const Tensor term = mine[i].grad().div(static_cast<int64_t>(N));
      Tensor want = term.clone();
      dist::all_reduce(want);  // the same MPI_Op DDP uses
      CHECK(bitwise_equal(got[i].grad(), want));
      check_16bit_sum(got[i].grad(), term);
    }
    CHECK(identical_on_all_ranks(flat_params(*replica)));
  }
}

TEST_CASE("fp16_compress_hook and bf16_compress_hook all-reduce float32 gradients in 16 bits",
          "[ch11][distributed][ddp][amp]") {
  ensure_group();
  const int N = dist::get_world_size(), r = dist::get_rank();
  using Hook = Tensor (*)(std::shared_ptr<dist::ProcessGroup>, dist::GradBucket&);
  const std::vector<std::pair<Hook, tinytorch::DType>> hooks = {
      {&dist::default_hooks::fp16_compress_hook, tinytorch::kFloat16},
      {&dist::default_hooks::bf16_compress_hook, tinytorch::kBFloat16}};
  for (auto [hook, low] : hooks) {
    INFO(tinytorch::dtype_name(low));
    tinytorch::manual_seed(42 + static_cast<uint64_t>(r));
    auto replica = make_mlp({6, 16, 8, 3});
    tinytorch::manual_seed(42);
    auto local = make_mlp({6, 16, 8, 3});
    dist::DDPOptions o;
    o.force_bucket_path_single_rank = true;       // (run as one process too: the hook still runs)
    o.bucket_cap_mb = o.first_bucket_mb = 1e-6;  // a bucket per parameter: `want` below has its layout
    auto ddp = std::make_shared<dist::DistributedDataParallel>(replica, o);
    ddp->register_comm_hook(nullptr, hook);
    backward_both(*ddp, *local, tinytorch::kFloat32, 4);
    const auto got = replica->parameters(), mine = local->parameters();
    for (size_t i = 0; i < got.size(); ++i) {
      REQUIRE(got[i].grad().dtype() == tinytorch::kFloat32);
      // PyTorch's hook: bucket.to(low).div_(N), all-reduce SUM in `low`, copied back as float32.
      // (With N > 2 the order of the hops is MPI's, which may depend on the buffer's length and
      // an element's position in it: hence one bucket per parameter, the layout of `want`.)
      const Tensor term = mine[i].grad().to(low).div(static_cast<int64_t>(N));
      Tensor want = term.clone();
      dist::all_reduce(want);
      CHECK(bitwise_equal(got[i].grad(), want.to(tinytorch::kFloat32)));
      check_16bit_sum(got[i].grad(), term);
    }
  }
  SECTION("allreduce_hook gives DDP's own average, bit for bit") {
    std::vector<std::vector<double>> grads;
    for (bool with_hook : {false, true}) {
      tinytorch::manual_seed(42);
      auto replica = make_mlp({6, 16, 8, 3});
      auto ddp = std::make_shared<dist::DistributedDataParallel>(replica);
      if (with_hook) ddp->register_comm_hook(nullptr, dist::default_hooks::allreduce_hook);
      tinytorch::manual_seed(42);
      auto local = make_mlp({6, 16, 8, 3});
      backward_both(*ddp, *local, tinytorch::kFloat32, 3);
      std::vector<double> g;
      for (const Tensor& p : replica->parameters()) {
        auto v = p.grad().tolist<double>();
        g.insert(g.end(), v.begin(), v.end());
      }
      grads.push_back(g);
    }
    CHECK(grads[0] == grads[1]);
  }
}

TEST_CASE("a custom communication hook sees undivided buckets in reduction order", "[ch11][distributed][ddp][amp]") {
  ensure_group();
  const int r = dist::get_rank();
  tinytorch::manual_seed(7);
  auto replica = make_mlp({6, 16, 8, 3});
  tinytorch::manual_seed(7);
  auto local = make_mlp({6, 16, 8, 3});
  dist::DDPOptions o;
  o.bucket_cap_mb = o.first_bucket_mb = 1e-6;  // six buckets, one per parameter
  o.force_bucket_path_single_rank = true;       // (run as one process too: the hook still runs)
  auto ddp = std::make_shared<dist::DistributedDataParallel>(replica, o);
  struct Seen {
    std::vector<size_t> index;
    std::vector<bool> last;
    bool views_ok = true;
  };
  auto seen = std::make_shared<Seen>();
  // A hook that communicates nothing (PyTorch's "noop" example): .grad becomes the local gradient.
  ddp->register_comm_hook(seen, [](std::shared_ptr<Seen> s, dist::GradBucket& b) {
    s->index.push_back(b.index());
    s->last.push_back(b.is_last());
    const auto grads = b.gradients();
    s->views_ok = s->views_ok && grads.size() == b.parameters().size() &&
                  grads[0].sizes() == b.parameters()[0].sizes() && grads[0].raw_data() == b.buffer().raw_data();
    return b.buffer();
  });
  backward_both(*ddp, *local, tinytorch::kFloat32, 2 + r);  // different batch sizes: grads differ by rank
  CHECK(seen->index == std::vector<size_t>{0, 1, 2, 3, 4, 5});
  CHECK(seen->last == std::vector<bool>{false, false, false, false, false, true});
  CHECK(seen->views_ok);
  const auto got = replica->parameters(), mine = local->parameters();
  for (size_t i = 0; i < got.size(); ++i) CHECK(bitwise_equal(got[i].grad(), mine[i].grad()));  // not divided by N
}

TEST_CASE("register_comm_hook errors: twice, with another algorithm, a wrong result, different hooks",
          "[ch11][distributed][ddp][amp]") {
  ensure_group();
  const int N = dist::get_world_size(), r = dist::get_rank();
  {
    auto ddp = std::make_shared<dist::DistributedDataParallel>(make_mlp({3, 2}));
    ddp->register_comm_hook(nullptr, dist::default_hooks::fp16_compress_hook);
    CHECK_THROWS_WITH(ddp->register_comm_hook(nullptr, dist::default_hooks::fp16_compress_hook),
                      "register_comm_hook or register_builtin_comm_hook can only be called once.");
  }
  {
    dist::DDPOptions o;
    o.algorithm = dist::Algorithm::Ring;
    auto ddp = std::make_shared<dist::DistributedDataParallel>(make_mlp({3, 2}), o);
    CHECK_THROWS_WITH(ddp->register_comm_hook(nullptr, dist::default_hooks::allreduce_hook),
                      Catch::StartsWith("DistributedDataParallel::register_comm_hook: DDPOptions::algorithm is ring; "));
  }
  if (N > 1) {
    auto ddp = std::make_shared<dist::DistributedDataParallel>(make_mlp({3, 2}));
    auto hook = r == 0 ? &dist::default_hooks::fp16_compress_hook : &dist::default_hooks::bf16_compress_hook;
    CHECK_THROWS_WITH(ddp->register_comm_hook(nullptr, hook),
                      "DistributedDataParallel::register_comm_hook: every rank must register the same hook, but "
                      "rank 0 registers fp16_compress_hook and rank 1 bf16_compress_hook");
  }
  if (N > 1) {  // the hook runs on every rank and every rank gets the error from backward
    auto ddp = std::make_shared<dist::DistributedDataParallel>(make_mlp({3, 2}));
    ddp->register_comm_hook(0, [](int, dist::GradBucket& b) { return b.buffer().narrow(0, 0, 1); });
    Tensor x = tinytorch::ones({1, 3});
    CHECK_THROWS_WITH(ddp->forward(x).sum().backward(),
                      Catch::Contains("DistributedDataParallel: the communication hook must return a tensor of the "
                                      "bucket's 8 elements on cpu (bucket 0), got 1 elements on cpu"));
  }
  int64_t one = 1;  // nothing in flight
  dist::all_reduce(&one, 1);
  CHECK(one == N);
}

TEST_CASE("GradScaler with DDP: an inf on one rank makes every rank skip the same step", "[ch11][distributed][ddp][amp]") {
  ensure_group();
  const int N = dist::get_world_size(), r = dist::get_rank();
  for (bool compress : {false, true}) {
    INFO((compress ? "fp16_compress_hook" : "no hook"));
    tinytorch::manual_seed(42 + static_cast<uint64_t>(r));
    auto replica = make_mlp({6, 16, 8, 3});
    auto ddp = std::make_shared<dist::DistributedDataParallel>(replica);
    if (compress) ddp->register_comm_hook(nullptr, dist::default_hooks::fp16_compress_hook);
    tinytorch::optim::SGD opt(ddp->parameters(), 0.1);
    tinytorch::amp::GradScalerOptions so;
    so.init_scale = 1024;
    tinytorch::amp::GradScaler scaler(so);
    nn::MSELoss loss_fn;
    std::vector<bool> stepped;
    std::vector<double> scales;
    for (int s = 0; s < 3; ++s) {
      auto [x, y] = global_batch(s, N * 4, 6, 3);
      Tensor xs = x.narrow(0, r * 4, 4).clone();
      if (s == 1 && r == N - 1) xs.fill_(std::numeric_limits<double>::infinity());  // only the last rank
      const auto before = flat_params(*replica);
      opt.zero_grad();
      scaler.scale(loss_fn(ddp->forward(xs), y.narrow(0, r * 4, 4))).backward();
      stepped.push_back(scaler.step(opt));
      scaler.update();
      scales.push_back(scaler.get_scale());
      if (s == 1) CHECK(flat_params(*replica) == before);  // skipped: the weights did not move
      CHECK(identical_on_all_ranks(flat_params(*replica)));
    }
    CHECK(stepped == std::vector<bool>{true, false, true});
    CHECK(scales == std::vector<double>{1024, 512, 512});
  }
}

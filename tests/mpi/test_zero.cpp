// tests/mpi/test_zero.cpp — ZeroRedundancyOptimizer (ZeRO stage 1) and FullyShardedDataParallel (stage 2)
// against DDP with the plain optimizer, and their error paths.
//
// Run by ctest on 2, 3 and 4 ranks (scripts/mpirun.sh -np N build/bin/test_zero); it also passes
// as a single process (world size 1: every parameter is rank 0's).
// What is checked (N = world size):
//   * the partition equals PyTorch's _partition_parameters (tests/reference/gen_zero.py ->
//     zero_ref.hpp) for several size lists, two param groups, and more ranks than parameters;
//   * 20 steps of DDP + ZeroRedundancyOptimizer<Adam> give the losses and final parameters of
//     DDP + Adam bit for bit, on every rank (also SGD with momentum, AdamW with an LR scheduler, and
//     parameters_as_bucket_view); the optimizer state per rank is 8 bytes x the numel it owns, 8P
//     over all ranks;
//   * consolidate_state_dict(to) + state_dict() on rank `to` = the plain Adam's state_dict, bit for
//     bit; loading it into a fresh ZeroRedundancyOptimizer (and a plain Adam's into one) continues
//     the run exactly; state_dict() elsewhere throws PyTorch's message;
//   * bytes on the wire (comm_counters): DDP's step 2(N-1) x 4P over all ranks, ZeRO-1's 3(N-1) x 4P;
//   * bad input: empty list, mixed dtypes, parameters that differ across ranks (the same message on
//     every rank), overlap_with_ddp.
// Chapter: chapters/13-sharding.md (13.2, 13.6, 13.7).
// FullyShardedDataParallel ([fsdp]): SHARD_GRAD_OP (ZeRO-2) and NO_SHARD against DDP + Adam (bit for
// bit on 2 ranks, within 1e-6 on more), gradients and Adam state of the shard only, the bytes on the
// wire, and its errors (a parameter without a gradient, options, models or units that differ, ...);
// FULL_SHARD (ZeRO-3) with one unit and with a unit per Linear (transformer_auto_wrap_policy):
// the same numbers, nothing of the full parameters held between steps, 3(N-1) x 4NS on the wire;
// the full state dict (DDP's names and values; loaded into another strategy and on one rank).
// Catch2 tags: [ch13][distributed][zero], [fsdp]
#include <catch2/catch.hpp>

#include <tinytorch/distributed.hpp>
#include <tinytorch/optim/lr_scheduler.hpp>
#include <tinytorch/tinytorch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "../reference/zero_ref.hpp"
#include "mpi_test_helpers.hpp"

namespace dist = tinytorch::distributed;
namespace nn = tinytorch::nn;
namespace optim = tinytorch::optim;
using tinytorch::Tensor;

namespace {

using mpi_test::ensure_group;  // tests/mpi/mpi_test_helpers.hpp
using mpi_test::make_mlp;

/// The bits of every parameter, in registration order (float32: compared exactly).
std::vector<uint32_t> param_bits(const nn::Module& m) {
  std::vector<uint32_t> out;
  for (const Tensor& p : m.parameters()) {
    Tensor c = p.contiguous();
    const float* d = c.data_ptr<float>();
    for (int64_t i = 0; i < c.numel(); ++i) {
      uint32_t b = 0;
      std::memcpy(&b, d + i, 4);
      out.push_back(b);
    }
  }
  return out;
}

/// True on every rank iff every rank's `v` equals rank 0's exactly.
bool identical_on_all_ranks(std::vector<uint32_t> v) {
  std::vector<int64_t> w(v.begin(), v.end()), ref = w;
  if (!ref.empty()) dist::broadcast(ref.data(), static_cast<int64_t>(ref.size()), 0);
  int64_t bad = ref == w ? 0 : 1;
  dist::all_reduce(&bad, 1, dist::ReduceOp::MAX);
  return bad == 0;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  Tensor ca = a.contiguous().cpu(), cb = b.contiguous().cpu();
  return std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(ca.numel()) * tinytorch::element_size(ca.dtype())) == 0;
}

/// Step s's batch for this rank (B samples of a global batch of N*B, the same on every rank).
std::pair<Tensor, Tensor> batch(int s, int64_t B) {
  const int N = dist::get_world_size(), r = dist::get_rank();
  tinytorch::Generator g(500 + static_cast<uint64_t>(s));
  Tensor x = tinytorch::randn({N * B, 6}, {}, &g);
  Tensor y = tinytorch::randn({N * B, 3}, {}, &g);
  return {x.narrow(0, r * B, B), y.narrow(0, r * B, B)};
}

/// `steps` steps of `opt` on `ddp` (a DistributedDataParallel or a FullyShardedDataParallel), from
/// step `first`; returns the losses.
template <class Wrapper>
std::vector<float> train(Wrapper& ddp, optim::Optimizer& opt, int first, int steps,
                         optim::lr_scheduler::LRScheduler* sched = nullptr) {
  std::vector<float> losses;
  nn::MSELoss loss_fn;
  for (int s = first; s < first + steps; ++s) {
    auto [x, y] = batch(s, 4);
    opt.zero_grad();
    Tensor loss = loss_fn(ddp.forward(x), y);
    loss.backward();
    opt.step();
    if (sched) sched->step();
    losses.push_back(loss.item<float>());
  }
  return losses;
}

const std::vector<int64_t> kSizes{6, 16, 8, 3};

}  // namespace

TEST_CASE("the partition is PyTorch's sorted greedy one", "[ch13][distributed][zero]") {
  for (const auto& c : zero_ref::partition_cases()) {
    INFO(c.name << ", world size " << c.world_size);
    std::vector<optim::ParamGroup> groups;
    for (const auto& numels : c.group_numels) {
      optim::ParamGroup g;
      for (int64_t n : numels) g.params.push_back(tinytorch::zeros({n}));
      groups.push_back(g);
    }
    const dist::ParameterPartition part = dist::partition_parameters(groups, c.world_size);
    REQUIRE(part.size() == c.owners.size());
    for (size_t r = 0; r < part.size(); ++r) {
      REQUIRE(part[r].size() == groups.size());
      for (size_t g = 0; g < groups.size(); ++g) {
        std::vector<int64_t> got;
        for (const Tensor& p : part[r][g])
          for (size_t i = 0; i < groups[g].params.size(); ++i)
            if (groups[g].params[i].impl() == p.impl()) got.push_back(static_cast<int64_t>(i));
        CHECK(got == c.owners[r][g]);
      }
    }
  }
}

TEST_CASE("ZeRO-1 + DDP equals DDP + the plain optimizer bit for bit", "[ch13][distributed][zero]") {
  ensure_group();
  const int N = dist::get_world_size(), r = dist::get_rank();
  tinytorch::manual_seed(7);
  auto m_plain = make_mlp(kSizes);
  tinytorch::manual_seed(7);
  auto m_zero = make_mlp(kSizes);
  dist::DistributedDataParallel ddp_plain(m_plain), ddp_zero(m_zero);

  SECTION("Adam, 20 steps; state 8 bytes per owned element") {
    optim::Adam plain(ddp_plain.parameters(), optim::AdamOptions{1e-2});
    dist::ZeroRedundancyOptimizer<optim::Adam> zero(ddp_zero.parameters(), optim::AdamOptions{1e-2});
    CHECK(zero.world_size() == N);
    CHECK(zero.rank() == r);
    const auto a = train(ddp_plain, plain, 0, 20), b = train(ddp_zero, zero, 0, 20);
    CHECK(a == b);
    CHECK(param_bits(*m_plain) == param_bits(*m_zero));
    CHECK(identical_on_all_ranks(param_bits(*m_zero)));
    int64_t owned = 0, total = 0;
    for (const auto& ps : zero.partition()[static_cast<size_t>(r)])
      for (const Tensor& p : ps) owned += p.numel();
    for (const Tensor& p : m_zero->parameters()) total += p.numel();
    CHECK(zero.state_nbytes() == 8 * owned);
    CHECK(zero.state().size() == zero.partition()[static_cast<size_t>(r)][0].size());
    int64_t sum = zero.state_nbytes();
    dist::all_reduce(&sum, 1, dist::ReduceOp::SUM);
    CHECK(sum == 8 * total);
    CHECK(plain.state_nbytes() == 8 * total);
  }
  SECTION("SGD with momentum and parameters_as_bucket_view") {
    optim::SGD plain(ddp_plain.parameters(), 0.05, 0.9);
    dist::ZeroOptions zo;
    zo.parameters_as_bucket_view = true;
    dist::ZeroRedundancyOptimizer<optim::SGD> zero(ddp_zero.parameters(), optim::SGDOptions{0.05, 0.9}, zo);
    REQUIRE(zero.buckets().size() == static_cast<size_t>(N));
    // Each parameter now views its owner's bucket.
    for (const Tensor& p : m_zero->parameters())
      CHECK(p.impl()->storage == zero.buckets()[static_cast<size_t>(zero.owner_rank(p))].impl()->storage);
    CHECK(param_bits(*m_plain) == param_bits(*m_zero));
    const auto a = train(ddp_plain, plain, 0, 20), b = train(ddp_zero, zero, 0, 20);
    CHECK(a == b);
    CHECK(param_bits(*m_plain) == param_bits(*m_zero));
    CHECK(identical_on_all_ranks(param_bits(*m_zero)));
  }
  SECTION("a graph built before step() cannot be differentiated after it, on every rank") {
    dist::ZeroRedundancyOptimizer<optim::Adam> zero(ddp_zero.parameters(), optim::AdamOptions{1e-2});
    // A graph that saves only parameters this rank does not own: their new values arrive by broadcast.
    Tensor stale = tinytorch::zeros({});
    for (const Tensor& p : m_zero->parameters())
      if (zero.owner_rank(p) != r) stale = stale + (p * p).sum();
    train(ddp_zero, zero, 0, 1);
    if (N > 1)
      CHECK_THROWS_WITH(stale.backward(), Catch::Contains("modified by an inplace operation"));
  }
  SECTION("AdamW with a StepLR scheduler on the ZeRO optimizer itself") {
    optim::AdamW plain(ddp_plain.parameters(), optim::AdamWOptions{1e-2});
    dist::ZeroRedundancyOptimizer<optim::AdamW> zero(ddp_zero.parameters(), optim::AdamWOptions{1e-2});
    optim::lr_scheduler::StepLR s_plain(plain, 5, 0.5), s_zero(zero, 5, 0.5);
    const auto a = train(ddp_plain, plain, 0, 12, &s_plain), b = train(ddp_zero, zero, 0, 12, &s_zero);
    CHECK(a == b);
    CHECK(zero.param_groups()[0].lr == plain.param_groups()[0].lr);
    CHECK(param_bits(*m_plain) == param_bits(*m_zero));
  }
}

TEST_CASE("add_param_group and a non-contiguous parameter: still DDP + the plain optimizer", "[ch13][distributed][zero]") {
  ensure_group();
  for (bool view : {false, true}) {
    INFO("parameters_as_bucket_view " << view);
    // Two leaves per run, one of them a transposed (non-contiguous) view made a leaf.
    auto leaves = [] {
      tinytorch::manual_seed(5);
      Tensor w = tinytorch::randn({4, 6}).t().detach().requires_grad_();  // (6, 4), strides (1, 6)
      Tensor b = tinytorch::randn({4}).requires_grad_();
      Tensor extra = tinytorch::randn({4, 3}).requires_grad_();
      return std::vector<Tensor>{w, b, extra};
    };
    std::vector<Tensor> p = leaves(), z = leaves();
    REQUIRE(!z[0].is_contiguous());
    optim::Adam plain({p[0], p[1]}, optim::AdamOptions{1e-2});
    dist::ZeroOptions zo;
    zo.parameters_as_bucket_view = view;
    dist::ZeroRedundancyOptimizer<optim::Adam> zero({z[0], z[1]}, optim::AdamOptions{1e-2}, zo);
    auto run = [](std::vector<Tensor>& t, optim::Optimizer& opt, int s) {
      auto [x, y] = batch(s, 4);  // x (4, 6): this rank's rows; the same on every rank for both runs
      opt.zero_grad();
      Tensor out = tinytorch::matmul(tinytorch::matmul(x, t[0]) + t[1], t[2]);
      Tensor loss = (out * out).mean();
      loss.backward();
      for (const Tensor& q : t)  // DDP's averaging, by hand
        if (q.grad().defined()) dist::all_reduce(q.grad(), dist::ReduceOp::AVG);
      opt.step();
    };
    for (int s = 0; s < 3; ++s) {
      run(p, plain, s);
      run(z, zero, s);
    }
    plain.add_param_group({p[2]}, optim::AdamOptions{5e-3});
    zero.add_param_group({z[2]}, optim::AdamOptions{5e-3});
    CHECK(zero.partition()[0].size() == 2);  // two groups now
    for (int s = 3; s < 6; ++s) {
      run(p, plain, s);
      run(z, zero, s);
    }
    // Bit for bit, except the transposed leaf under parameters_as_bucket_view: the bucket gives it
    // contiguous memory, so Adam takes its fast kernel there and the tensor-op path (adam_naive) in
    // the plain run, which round differently (optim/adam.hpp; checked against each other in test_optim).
    for (size_t i = 0; i < 3; ++i) {
      if (view && i == 0) {
        const auto a = p[i].contiguous().tolist<double>(), b = z[i].contiguous().tolist<double>();
        double worst = 0;
        for (size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::abs(a[k] - b[k]) / (1e-3 + std::abs(a[k])));
        CHECK(worst < 1e-5);
      }
      else CHECK(same_bits(p[i], z[i]));
    }
    std::vector<uint32_t> bits;
    for (const Tensor& q : z) {
      Tensor c = q.contiguous();
      for (int64_t k = 0; k < c.numel(); ++k) {
        uint32_t b = 0;
        std::memcpy(&b, c.data_ptr<float>() + k, 4);
        bits.push_back(b);
      }
    }
    CHECK(identical_on_all_ranks(bits));
  }
}

TEST_CASE("bytes on the wire per step: DDP 2(N-1) x 4P, ZeRO-1 3(N-1) x 4P over all ranks", "[ch13][distributed][zero]") {
  ensure_group();
  const int N = dist::get_world_size();
  tinytorch::manual_seed(3);
  auto m_plain = make_mlp(kSizes);
  auto m_zero = make_mlp(kSizes);
  dist::DistributedDataParallel ddp_plain(m_plain), ddp_zero(m_zero);
  optim::Adam plain(ddp_plain.parameters(), optim::AdamOptions{1e-2});
  dist::ZeroRedundancyOptimizer<optim::Adam> zero(ddp_zero.parameters(), optim::AdamOptions{1e-2});
  int64_t P = 0;
  for (const Tensor& p : m_plain->parameters()) P += p.numel();
  const int64_t n = N;
  dist::reset_comm_counters();
  train(ddp_plain, plain, 0, 1);
  dist::CommCounters c = dist::comm_counters();
  // One bucket all-reduced (the model is far below the first bucket's 1 MiB); nothing else.
  CHECK(c.calls[dist::CommCounters::kAllReduce] == (N > 1 ? 1 : 0));
  CHECK(c.bytes[dist::CommCounters::kAllReduce] == (N > 1 ? 4 * P : 0));
  CHECK(c.wire_bytes == 2 * (n - 1) * 4 * P);
  CHECK(c.calls[dist::CommCounters::kBroadcast] == 0);
  dist::reset_comm_counters();
  train(ddp_zero, zero, 0, 1);
  c = dist::comm_counters();
  // The same all-reduce, then one broadcast per parameter from its owner: (N-1) x 4P more.
  CHECK(c.calls[dist::CommCounters::kBroadcast] == (N > 1 ? 6 : 0));
  CHECK(c.bytes[dist::CommCounters::kBroadcast] == (N > 1 ? 4 * P : 0));
  CHECK(c.wire_bytes == 3 * (n - 1) * 4 * P);
  CHECK(c.p2p_bytes_sent == 0);
}

TEST_CASE("consolidate_state_dict gathers the plain optimizer's state dict on one rank", "[ch13][distributed][zero]") {
  ensure_group();
  const int N = dist::get_world_size(), r = dist::get_rank();
  tinytorch::manual_seed(11);
  auto m_plain = make_mlp(kSizes);
  tinytorch::manual_seed(11);
  auto m_zero = make_mlp(kSizes);
  dist::DistributedDataParallel ddp_plain(m_plain), ddp_zero(m_zero);
  optim::Adam plain(ddp_plain.parameters(), optim::AdamOptions{1e-2});
  dist::ZeroRedundancyOptimizer<optim::Adam> zero(ddp_zero.parameters(), optim::AdamOptions{1e-2});
  train(ddp_plain, plain, 0, 5);
  train(ddp_zero, zero, 0, 5);

  const int to = N - 1;
  CHECK_THROWS_WITH(zero.state_dict(), "Optimizer state has not been consolidated on this rank. Please call "
                                       "`consolidate_state_dict(to=" + std::to_string(r) +
                                           ")` on all ranks beforehand if you meant to save the global state.");
  zero.consolidate_state_dict(to);
  std::vector<std::pair<std::string, Tensor>> full;
  if (r == to) {
    full = zero.state_dict();
    const auto want = plain.state_dict();
    REQUIRE(full.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      INFO(want[i].first);
      CHECK(full[i].first == want[i].first);
      CHECK(same_bits(full[i].second, want[i].second));
    }
  } else {
    CHECK_THROWS_WITH(zero.state_dict(), Catch::StartsWith("Optimizer state has not been consolidated on this rank."));
  }

  // The consolidated dict travels to every rank (a save/load would do the same) and resumes a fresh
  // ZeroRedundancyOptimizer exactly where the plain run goes on.
  int64_t count = static_cast<int64_t>(full.size());
  dist::broadcast(&count, 1, to);
  REQUIRE(count == static_cast<int64_t>(plain.state_dict().size()));
  const auto layout = plain.state_dict();  // keys, shapes and dtypes are the same on every rank
  if (r != to) {
    full.clear();
    for (const auto& kv : layout) full.emplace_back(kv.first, tinytorch::empty_like(kv.second));
  }
  for (auto& kv : full) dist::broadcast(kv.second, to);

  tinytorch::manual_seed(99);  // other weights; the values come from m_zero below
  auto m_resumed = make_mlp(kSizes);
  dist::DistributedDataParallel ddp_resumed(m_resumed);
  {
    tinytorch::NoGradGuard ng;
    for (size_t i = 0; i < m_resumed->parameters().size(); ++i)
      m_resumed->parameters()[i].copy_(m_zero->parameters()[i]);
  }
  dist::ZeroRedundancyOptimizer<optim::Adam> resumed(ddp_resumed.parameters(), optim::AdamOptions{1e-3});
  resumed.load_state_dict(full);
  CHECK(resumed.param_groups()[0].lr == 1e-2);  // the loaded groups' settings
  int64_t owned = 0;
  for (const auto& ps : resumed.partition()[static_cast<size_t>(r)])
    for (const Tensor& p : ps) owned += p.numel();
  CHECK(resumed.state_nbytes() == 8 * owned);  // only this rank's shard kept
  // A plain optimizer's state dict loads the same way.
  dist::ZeroRedundancyOptimizer<optim::Adam> from_plain(ddp_zero.parameters(), optim::AdamOptions{1e-3});
  from_plain.load_state_dict(plain.state_dict());
  CHECK(from_plain.state_nbytes() == 8 * owned);

  const auto a = train(ddp_plain, plain, 5, 5), b = train(ddp_resumed, resumed, 5, 5);
  CHECK(a == b);
  CHECK(param_bits(*m_plain) == param_bits(*m_resumed));
}

TEST_CASE("ZeroRedundancyOptimizer: bad input throws on every rank", "[ch13][distributed][zero]") {
  ensure_group();
  const int N = dist::get_world_size(), r = dist::get_rank();
  SECTION("an empty parameter list") {
    CHECK_THROWS_WITH(dist::ZeroRedundancyOptimizer<optim::Adam>({}, optim::AdamOptions{}),
                      "ZeroRedundancyOptimizer got an empty parameter list");
  }
  SECTION("parameters of two dtypes") {
    Tensor a = tinytorch::zeros({2}).requires_grad_(), b = tinytorch::zeros({2}, tinytorch::kFloat64).requires_grad_();
    CHECK_THROWS_WITH(dist::ZeroRedundancyOptimizer<optim::Adam>({a, b}, optim::AdamOptions{}),
                      "ZeroRedundancyOptimizer only supports using the same dense type for all parameters but got "
                      "both torch.FloatTensor and torch.DoubleTensor");
  }
  SECTION("overlap_with_ddp=true") {
    dist::ZeroOptions zo;
    zo.overlap_with_ddp = true;
    CHECK_THROWS_WITH(dist::ZeroRedundancyOptimizer<optim::Adam>(make_mlp({2, 2})->parameters(), optim::AdamOptions{}, zo),
                      Catch::StartsWith("ZeroRedundancyOptimizer: overlap_with_ddp=true is not implemented"));
  }
  SECTION("add_param_group of another dtype (checked before anything changes)") {
    for (bool view : {false, true}) {
      dist::ZeroOptions zo;
      zo.parameters_as_bucket_view = view;
      auto m = make_mlp({3, 4, 2});
      dist::ZeroRedundancyOptimizer<optim::Adam> z(m->parameters(), optim::AdamOptions{}, zo);
      Tensor d = tinytorch::zeros({1000}, tinytorch::kFloat64).requires_grad_();
      CHECK_THROWS_WITH(z.add_param_group({d}), "ZeroRedundancyOptimizer only supports using the same dense type for "
                                                "all parameters but got both torch.FloatTensor and torch.DoubleTensor");
      CHECK(z.param_groups().size() == 1);
      CHECK_THROWS_WITH(z.add_param_group({m->parameters()[0]}),
                        "some parameters appear in more than one parameter group");
    }
  }
  SECTION("the optimizer's own checks") {
    CHECK_THROWS_WITH(dist::ZeroRedundancyOptimizer<optim::Adam>(make_mlp({2, 2})->parameters(), optim::AdamOptions{-1.0}),
                      "Invalid learning rate: -1.0");
  }
  if (N == 1) return;
  SECTION("a shape that differs on the last rank: the same message everywhere") {
    auto m = make_mlp({3, 4, r == N - 1 ? 5 : 2});
    CHECK_THROWS_WITH(dist::ZeroRedundancyOptimizer<optim::Adam>(m->parameters(), optim::AdamOptions{}),
                      "ZeroRedundancyOptimizer: expects the same parameters on every rank, but parameter 2 "
                      "(\"params[2]\") has sizes [2, 4] torch.float32 on rank 0 and sizes [5, 4] torch.float32 on "
                      "rank " + std::to_string(N - 1) +
                          ". Every rank must build the same model and register its parameters in the same order.");
  }
  SECTION("a parameter count that differs") {
    auto m = r == 0 ? make_mlp({3, 4, 2, 2}) : make_mlp({3, 4, 2});
    CHECK_THROWS_WITH(dist::ZeroRedundancyOptimizer<optim::Adam>(m->parameters(), optim::AdamOptions{}),
                      Catch::StartsWith("ZeroRedundancyOptimizer: expects the same parameters on every rank, but rank 0 "
                                        "has 6 parameters while rank 1 has inconsistent 4 parameters"));
  }
  SECTION("an undefined tensor on the last rank only") {
    auto m = make_mlp({3, 4, 2});
    std::vector<Tensor> ps = m->parameters();
    if (r == N - 1) ps[1] = Tensor();
    CHECK_THROWS_WITH(dist::ZeroRedundancyOptimizer<optim::Adam>(ps, optim::AdamOptions{}),
                      "ZeroRedundancyOptimizer: parameter 1 is an undefined Tensor (on rank " + std::to_string(N - 1) +
                          ")");
  }
  SECTION("a non-leaf, or a parameter twice, on the last rank only") {
    auto m = make_mlp({3, 4, 2});
    std::vector<Tensor> ps = m->parameters();
    if (r == N - 1) ps[1] = ps[1] * 2.0;
    CHECK_THROWS_WITH(dist::ZeroRedundancyOptimizer<optim::Adam>(ps, optim::AdamOptions{}),
                      "can't optimize a non-leaf Tensor (on rank " + std::to_string(N - 1) + ")");
    auto m4 = make_mlp({3, 4, 4});
    ps = m4->parameters();
    if (r == N - 1) ps[3] = ps[1];  // both [4]-shaped: the shapes still agree
    CHECK_THROWS_WITH(dist::ZeroRedundancyOptimizer<optim::Adam>(ps, optim::AdamOptions{}),
                      "optimizer contains a parameter group with duplicate parameters (on rank " +
                          std::to_string(N - 1) + ")");
  }
  SECTION("consolidate_state_dict(to) out of range on the last rank only") {
    auto m = make_mlp({3, 4, 2});
    dist::ZeroRedundancyOptimizer<optim::Adam> z(m->parameters(), optim::AdamOptions{});
    CHECK_THROWS_WITH(z.consolidate_state_dict(r == N - 1 ? 7 : 0),
                      "ZeroRedundancyOptimizer.consolidate_state_dict: to=7 is not a rank of the process group (size " +
                          std::to_string(N) + ") (on rank " + std::to_string(N - 1) + ")");
  }
  // The collectives still line up afterwards.
  int64_t one = 1;
  dist::all_reduce(&one, 1, dist::ReduceOp::SUM);
  CHECK(one == N);
}

// ---- FullyShardedDataParallel: SHARD_GRAD_OP (ZeRO-2) and NO_SHARD --------------------------

namespace {
/// The largest |a_i - b_i| / max(1, |a_i|) (bit patterns read back as floats).
double max_rel_diff(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  double worst = a.size() == b.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    float x = 0, y = 0;
    std::memcpy(&x, &a[i], 4);
    std::memcpy(&y, &b[i], 4);
    worst = std::max(worst, std::abs(static_cast<double>(x) - y) / std::max(1.0, std::abs(static_cast<double>(x))));
  }
  return worst;
}
/// Two copies of the kSizes MLP from one seed: one in DDP, one in FSDP with `strategy` (and, with
/// `per_linear`, a unit per Linear: transformer_auto_wrap_policy<nn::Linear>).
struct DdpAndFsdp {
  std::shared_ptr<nn::Sequential> m_ddp, m_fsdp;
  std::unique_ptr<dist::DistributedDataParallel> ddp;
  std::unique_ptr<dist::FullyShardedDataParallel> fsdp;
  explicit DdpAndFsdp(dist::ShardingStrategy strategy, bool per_linear = false, dist::FSDPOptions fo = {}) {
    tinytorch::manual_seed(7);
    m_ddp = make_mlp(kSizes);
    tinytorch::manual_seed(7);
    m_fsdp = make_mlp(kSizes);
    ddp = std::make_unique<dist::DistributedDataParallel>(m_ddp);
    fo.sharding_strategy = strategy;
    if (per_linear) fo.auto_wrap_policy = dist::transformer_auto_wrap_policy<nn::Linear>();
    fsdp = std::make_unique<dist::FullyShardedDataParallel>(m_fsdp, fo);
  }
};
/// The names of a trace's events of category `cat`, in the order they were recorded.
std::vector<std::string> trace_names(const dist::Trace& t, const std::string& cat) {
  std::vector<std::string> out;
  const std::string js = t.json(), tail = "\", \"cat\": \"" + cat + "\"";
  for (size_t at = js.find(tail); at != std::string::npos; at = js.find(tail, at + 1)) {
    const size_t open = js.rfind("\"name\": \"", at);
    out.push_back(js.substr(open + 9, at - open - 9));
  }
  return out;
}
/// What a module's parameters' storage holds now (FULL_SHARD frees it between steps).
size_t param_storage_bytes(const nn::Module& m) {
  size_t n = 0;
  std::unordered_set<const tinytorch::Storage*> seen;
  for (const Tensor& p : m.parameters())
    if (seen.insert(p.impl()->storage.get()).second) n += p.impl()->storage->nbytes();
  return n;
}
/// A Linear reached through a member pointer, not through the module's children.
struct ThroughMember : nn::Module {
  std::shared_ptr<nn::Linear> fc = register_module("fc", std::make_shared<nn::Linear>(3, 2));
  Tensor forward(const Tensor& x) override { return fc->forward(x); }
};
/// x * w, with w given (so that two of them can share one).
struct Scale : nn::Module {
  Tensor w;
  explicit Scale(Tensor t) { w = register_parameter("w", std::move(t)); }
  Tensor forward(const Tensor& x) override { return x * w; }
};
struct TwoScales : nn::Module {
  Tensor shared = tinytorch::ones({3});
  std::shared_ptr<Scale> a = register_module("a", std::make_shared<Scale>(shared));
  std::shared_ptr<Scale> b = register_module("b", std::make_shared<Scale>(shared));
  Tensor forward(const Tensor& x) override { return b->forward(a->forward(x)); }
};
/// Two Linear(3, 3) called in an order that depends on the rank (0: a then b; others: b then a)
/// once `swap` is set.
struct RankOrder : nn::Module {
  bool swap = true;
  std::shared_ptr<nn::Linear> a = register_module("a", std::make_shared<nn::Linear>(3, 3));
  std::shared_ptr<nn::Linear> b = register_module("b", std::make_shared<nn::Linear>(3, 3));
  Tensor forward(const Tensor& x) override {
    const bool ab = !swap || dist::get_rank() == 0;
    nn::Module& first = ab ? static_cast<nn::Module&>(*get_submodule("a")) : *get_submodule("b");
    nn::Module& second = ab ? static_cast<nn::Module&>(*get_submodule("b")) : *get_submodule("a");
    return second.forward(first.forward(x));
  }
};
/// A module with a parameter its forward never uses.
struct WithUnused : nn::Module {
  std::shared_ptr<nn::Linear> used = register_module("used", std::make_shared<nn::Linear>(6, 3));
  std::shared_ptr<nn::Linear> unused = register_module("unused", std::make_shared<nn::Linear>(2, 2));
  Tensor forward(const Tensor& x) override { return used->forward(x); }
};
}  // namespace

TEST_CASE("FSDP FULL_SHARD (ZeRO-3), SHARD_GRAD_OP (ZeRO-2) and NO_SHARD train as DDP + Adam", "[ch13][distributed][zero][fsdp]") {
  ensure_group();
  const int N = dist::get_world_size();
  using SS = dist::ShardingStrategy;
  const std::vector<std::pair<SS, bool>> configs{
      {SS::FULL_SHARD, true}, {SS::FULL_SHARD, false}, {SS::SHARD_GRAD_OP, true}, {SS::SHARD_GRAD_OP, false},
      {SS::NO_SHARD, false}};
  for (const auto& [strategy, per_linear] : configs) {
    INFO(dist::sharding_strategy_name(strategy) << (per_linear ? " with a unit per Linear" : " with one unit") << " on "
                                                << N << " rank(s)");
    DdpAndFsdp both(strategy, per_linear);
    auto &m_ddp = both.m_ddp, &m_fsdp = both.m_fsdp;
    dist::DistributedDataParallel& ddp = *both.ddp;
    dist::FullyShardedDataParallel& fsdp = *both.fsdp;
    int64_t P = 0, S = 0;  // S: the elements of this rank's shards, ceil(T_u / N) per unit
    const size_t units = per_linear ? kSizes.size() - 1 : 1;
    const std::vector<Tensor> flat = fsdp.parameters();
    REQUIRE(flat.size() == units);
    for (size_t i = 0; i + 1 < kSizes.size(); ++i) {
      const int64_t T = kSizes[i] * kSizes[i + 1] + kSizes[i + 1];
      P += T;
      if (per_linear) S += (T + N - 1) / N;
    }
    if (!per_linear) S = (P + N - 1) / N;
    const bool sharded = strategy != SS::NO_SHARD, full = strategy == SS::FULL_SHARD;
    CHECK(fsdp.numel() == P);
    CHECK(fsdp.shard_numel() == S);
    int64_t flat_numel = 0;
    for (const Tensor& f : flat) flat_numel += f.numel();
    CHECK(flat_numel == (sharded ? S : P));
    if (per_linear) {
      CHECK(fsdp.unit_paths() == std::vector<std::string>{"", "0", "2", "4"});
      CHECK(fsdp.named_parameters()[0].first == "0.flat_param");
      CHECK(fsdp.module()->named_parameters()[0].first == "0._fsdp_wrapped_module.weight");
    } else {
      CHECK(fsdp.flat_buffer().numel() == N * S);
      for (const Tensor& p : m_fsdp->parameters())  // every parameter views the flat buffer
        CHECK(p.impl()->storage == fsdp.flat_buffer().impl()->storage);
    }
    // FULL_SHARD: between steps nothing of the gathered parameters is held (16P/N at rest).
    CHECK(param_storage_bytes(*m_fsdp) == (full ? 0 : 4 * static_cast<size_t>(N * S)));

    optim::Adam plain(ddp.parameters(), optim::AdamOptions{1e-2});
    optim::Adam adam(fsdp.parameters(), optim::AdamOptions{1e-2});
    const auto a = train(ddp, plain, 0, 20), b = train(fsdp, adam, 0, 20);
    if (full) CHECK(param_storage_bytes(*m_fsdp) == 0);
    fsdp.summon_full_params();
    if (N <= 2) {  // a sum of two terms is the same in any order: bit for bit
      CHECK(a == b);
      CHECK(param_bits(*m_ddp) == param_bits(*m_fsdp));
    } else {  // MPI's reduce-scatter may add the N terms in another order than its all-reduce
      CHECK(max_rel_diff(param_bits(*m_ddp), param_bits(*m_fsdp)) < 1e-6);
    }
    CHECK(identical_on_all_ranks(param_bits(*m_fsdp)));
    // Between steps a rank holds its shard's gradient and Adam's state for its shard only.
    for (const Tensor& p : m_fsdp->parameters()) CHECK(!p.grad().defined());
    int64_t grad_numel = 0;
    for (const Tensor& f : flat) grad_numel += f.grad().numel();
    CHECK(grad_numel == (sharded ? S : P));
    CHECK(adam.state_nbytes() == 8 * (sharded ? S : P));
    // Bytes on the wire per step over all ranks: a reduce-scatter and an all-gather of the N x S
    // flat buffers, 2(N-1) x 4NS: DDP's 2(N-1) x 4P plus the padding (NO_SHARD: an all-reduce).
    // FULL_SHARD with units that are not the root: a second all-gather before each unit's
    // backward, 3(N-1) x 4NS (the root keeps its parameters from forward to backward).
    // (A step first: summon_full_params above gathered, and an unchanged flat buffer is not sent again.)
    train(fsdp, adam, 20, 1);
    dist::reset_comm_counters();
    train(fsdp, adam, 21, 1);
    const dist::CommCounters c = dist::comm_counters();
    const int64_t gathers = full && per_linear ? 2 : 1;
    CHECK(c.wire_bytes == (1 + gathers) * (N - 1) * 4 * N * S);
    CHECK(c.calls[dist::CommCounters::kReduceScatter] == (sharded && N > 1 ? static_cast<int64_t>(units) : 0));
    CHECK(c.calls[dist::CommCounters::kAllGather] == (sharded && N > 1 ? gathers * static_cast<int64_t>(units) : 0));
  }
}

TEST_CASE("FSDP prefetch: forward_prefetch and backward_prefetch change when the all_gathers run, not the numbers", "[ch13][distributed][zero][fsdp]") {
  // The collectives run on FSDP's communication thread in the order they are issued; a prefetch
  // issues a unit's all_gather before the unit needs it. The trace lists them as the thread ran
  // them (the root has no parameters here: units "0", "2", "4", one per Linear).
  ensure_group();
  const int N = dist::get_world_size();
  using BP = dist::BackwardPrefetch;
  struct Config {
    const char* name;
    std::optional<BP> backward;
    bool forward;
    // step 2's all_gathers (forward 0, 2, 4, backward 4, 2, 0): prefetched? (Backward's first, unit 4's,
    // never is: the model's output is unit 4's, whose own hook runs before the root's.)
    std::vector<std::string> prefetched;
  };
  const std::vector<Config> configs{
      {"BACKWARD_PRE + forward_prefetch", BP::BACKWARD_PRE, true, {"true", "true", "true", "false", "true", "true"}},
      {"BACKWARD_POST", BP::BACKWARD_POST, false, {"false", "false", "false", "false", "true", "true"}},
      {"no prefetch", std::nullopt, false, {"false", "false", "false", "false", "false", "false"}},
  };
  for (const Config& cfg : configs) {
    INFO(cfg.name << " on " << N << " rank(s)");
    dist::FSDPOptions fo;
    fo.backward_prefetch = cfg.backward;
    fo.forward_prefetch = cfg.forward;
    DdpAndFsdp both(dist::ShardingStrategy::FULL_SHARD, true, fo);
    optim::Adam plain(both.ddp->parameters(), optim::AdamOptions{1e-2});
    optim::Adam adam(both.fsdp->parameters(), optim::AdamOptions{1e-2});
    const auto a = train(*both.ddp, plain, 0, 20), b = train(*both.fsdp, adam, 0, 20);
    CHECK(param_storage_bytes(*both.m_fsdp) == 0);
    both.fsdp->summon_full_params();
    if (N <= 2) {
      CHECK(a == b);
      CHECK(param_bits(*both.m_ddp) == param_bits(*both.m_fsdp));
    } else {
      CHECK(max_rel_diff(param_bits(*both.m_ddp), param_bits(*both.m_fsdp)) < 1e-6);
    }
    // A forward that throws while prefetches are in flight, an optimizer step, then training on:
    // the prefetched values are stale after the step and must be gathered again.
    {
      DdpAndFsdp fresh(dist::ShardingStrategy::FULL_SHARD, true, fo);
      optim::Adam p1(fresh.ddp->parameters(), optim::AdamOptions{1e-2});
      optim::Adam p2(fresh.fsdp->parameters(), optim::AdamOptions{1e-2});
      train(*fresh.ddp, p1, 0, 2);
      train(*fresh.fsdp, p2, 0, 2);
      const Tensor bad = tinytorch::randn({2, kSizes[0] + 1});
      CHECK_THROWS(fresh.ddp->forward(bad));
      CHECK_THROWS(fresh.fsdp->forward(bad));
      p1.step();  // the last gradients once more, on both
      p2.step();
      const auto c = train(*fresh.ddp, p1, 2, 3), d = train(*fresh.fsdp, p2, 2, 3);
      fresh.fsdp->summon_full_params();
      if (N <= 2) CHECK(c == d);
      CHECK(max_rel_diff(param_bits(*fresh.m_ddp), param_bits(*fresh.m_fsdp)) < (N <= 2 ? 1e-30 : 1e-6));
    }
    if (N == 1) continue;  // (one rank: no communication thread, nothing to prefetch)
    // The same collectives, in another order: 13.8's bytes, 3(N-1) x 4NS per step.
    train(*both.fsdp, adam, 20, 1);
    dist::reset_comm_counters();
    train(*both.fsdp, adam, 21, 1);
    int64_t S = 0;
    for (size_t i = 0; i + 1 < kSizes.size(); ++i) S += (kSizes[i] * kSizes[i + 1] + kSizes[i + 1] + N - 1) / N;
    CHECK(dist::comm_counters().wire_bytes == 3 * (N - 1) * 4 * N * S);
    auto trace = std::make_shared<dist::Trace>(dist::get_rank());
    dist::FSDPOptions traced = fo;
    traced.trace = trace;
    DdpAndFsdp again(dist::ShardingStrategy::FULL_SHARD, true, traced);
    optim::Adam adam2(again.fsdp->parameters(), optim::AdamOptions{1e-2});
    train(*again.fsdp, adam2, 0, 2);
    // Each thread runs its collectives in the order they were issued: per step, the all_gathers of
    // forward (units 0, 2, 4) and backward (4, 2, 0), and the reduce-scatters (4, 2, 0).
    const std::vector<std::string> comm = trace_names(*trace, "comm");
    std::vector<std::string> gathers, reductions;
    for (const std::string& c : comm) (c.rfind("all_gather", 0) == 0 ? gathers : reductions).push_back(c);
    const std::vector<std::string> g1{"all_gather 0", "all_gather 2", "all_gather 4",
                                      "all_gather 4", "all_gather 2", "all_gather 0"};
    const std::vector<std::string> r1{"reduce_scatter 4", "reduce_scatter 2", "reduce_scatter 0"};
    std::vector<std::string> g2 = g1, r2 = r1;
    g2.insert(g2.end(), g1.begin(), g1.end());
    r2.insert(r2.end(), r1.begin(), r1.end());
    CHECK(gathers == g2);
    CHECK(reductions == r2);
    std::vector<std::string> prefetched;  // the second step's flags, in the all_gathers' order
    const std::string js = trace->json();
    for (size_t at = js.find("\"prefetch\": "); at != std::string::npos; at = js.find("\"prefetch\": ", at + 1))
      prefetched.push_back(js.substr(at + 12, js[at + 12] == 't' ? 4 : 5));
    REQUIRE(prefetched.size() == 12);
    CHECK(std::vector<std::string>(prefetched.begin() + 6, prefetched.end()) == cfg.prefetched);
    const std::vector<std::string> compute = trace_names(*trace, "compute");
    CHECK(std::count(compute.begin(), compute.end(), "forward 2") == 2);
    CHECK(std::count(compute.begin(), compute.end(), "backward 2") == 2);
  }
}

TEST_CASE("FSDP: evaluation between forward and backward, and clip_grad_norm_ over the shards", "[ch13][distributed][zero][fsdp]") {
  ensure_group();
  const bool full = GENERATE(false, true);
  INFO((full ? "FULL_SHARD, a unit per Linear" : "SHARD_GRAD_OP"));
  DdpAndFsdp both(full ? dist::ShardingStrategy::FULL_SHARD : dist::ShardingStrategy::SHARD_GRAD_OP, full);
  auto &m_ddp = both.m_ddp, &m_fsdp = both.m_fsdp;
  dist::DistributedDataParallel& ddp = *both.ddp;
  dist::FullyShardedDataParallel& fsdp = *both.fsdp;
  optim::SGD plain(ddp.parameters(), 0.1), sgd(fsdp.parameters(), 0.1);
  nn::MSELoss loss_fn;
  for (int s = 0; s < 3; ++s) {
    auto [x, y] = batch(s, 4);
    plain.zero_grad();
    sgd.zero_grad();
    Tensor a = loss_fn(ddp.forward(x), y), b = loss_fn(fsdp.forward(x), y);
    {
      tinytorch::NoGradGuard no_grad;  // evaluation in between: no gather, nothing armed
      ddp.forward(x);
      fsdp.forward(x);
    }
    a.backward();
    b.backward();
    const double n_ddp = tinytorch::nn::utils::clip_grad_norm_(ddp.parameters(), 0.05).item<double>();
    const double n_fsdp = fsdp.clip_grad_norm_(0.05).item<double>();
    CHECK(std::abs(n_ddp - n_fsdp) <= 1e-6 * n_ddp);
    plain.step();
    sgd.step();
  }
  fsdp.summon_full_params();
  CHECK(max_rel_diff(param_bits(*m_ddp), param_bits(*m_fsdp)) < 1e-6);
}

TEST_CASE("FSDP: the full state dict is DDP's and loads on another number of ranks", "[ch13][distributed][zero][fsdp]") {
  ensure_group();
  const int r = dist::get_rank();
  DdpAndFsdp both(dist::ShardingStrategy::FULL_SHARD, /*per_linear=*/true);
  optim::Adam plain(both.ddp->parameters(), optim::AdamOptions{1e-2});
  optim::Adam adam(both.fsdp->parameters(), optim::AdamOptions{1e-2});
  train(*both.ddp, plain, 0, 5);
  train(*both.fsdp, adam, 0, 5);
  const auto sd = both.fsdp->full_state_dict();  // rank0_only: the others get nothing
  const auto ref = both.m_ddp->state_dict();
  if (r == 0) {
    REQUIRE(sd.size() == ref.size());
    for (size_t i = 0; i < sd.size(); ++i) {
      CHECK(sd[i].first == ref[i].first);  // "0.weight": the unwrapped model's names
      CHECK(same_bits(sd[i].second, ref[i].second));
    }
  } else {
    CHECK(sd.empty());
  }
  // Into a fresh model under another strategy, one unit: DDP's outputs, bit for bit.
  const auto all = both.fsdp->full_state_dict(/*rank0_only=*/false);
  tinytorch::manual_seed(99);
  dist::FSDPOptions fo;
  fo.sharding_strategy = dist::ShardingStrategy::SHARD_GRAD_OP;
  dist::FullyShardedDataParallel other(make_mlp(kSizes), fo);
  other.load_full_state_dict(all);
  const Tensor x = batch(50, 4).first;
  Tensor want;
  {
    tinytorch::NoGradGuard no_grad;
    want = both.ddp->forward(x);
    CHECK(same_bits(other.forward(x), want));
  }
  // On one rank (a group of rank 0 alone), FULL_SHARD with a unit per Linear again.
  const auto solo = dist::new_group({0});
  if (r == 0) {
    dist::FSDPOptions f1;
    f1.process_group = solo;
    f1.auto_wrap_policy = dist::transformer_auto_wrap_policy<nn::Linear>();
    dist::FullyShardedDataParallel single(make_mlp(kSizes), f1);
    single.load_full_state_dict(sd);
    tinytorch::NoGradGuard no_grad;
    CHECK(same_bits(single.forward(x), want));
  }
  // A wrong key or shape: PyTorch's load_state_dict wording, on every rank, nothing loaded.
  auto bad = all;
  bad.back().first = "9.bias";
  CHECK_THROWS_WITH(other.load_full_state_dict(bad),
                    "FullyShardedDataParallel.load_full_state_dict: Missing key(s) in state_dict: \"4.bias\"");
  bad = all;
  bad.push_back({"extra", tinytorch::zeros({1})});
  CHECK_THROWS_WITH(other.load_full_state_dict(bad),
                    "FullyShardedDataParallel.load_full_state_dict: Unexpected key(s) in state_dict: \"extra\"");
  bad = all;
  if (r == dist::get_world_size() - 1) bad[0].second = tinytorch::zeros({2, 2});  // one rank's file differs
  CHECK_THROWS_WITH(other.load_full_state_dict(bad),
                    Catch::StartsWith("FullyShardedDataParallel.load_full_state_dict: size mismatch for 0.weight: "
                                      "copying a param with shape [2, 2], the shape in current model is [16, 6]"));
  tinytorch::NoGradGuard no_grad;
  CHECK(same_bits(other.forward(x), want));
}

TEST_CASE("FSDP no_sync: gradient accumulation over micro-batches as DDP's no_sync", "[ch13][distributed][zero][fsdp]") {
  ensure_group();
  const int N = dist::get_world_size();
  const bool full = GENERATE(true, false);
  INFO((full ? "FULL_SHARD, a unit per Linear" : "SHARD_GRAD_OP"));
  DdpAndFsdp both(full ? dist::ShardingStrategy::FULL_SHARD : dist::ShardingStrategy::SHARD_GRAD_OP, full);
  optim::SGD plain(both.ddp->parameters(), 0.1, 0.9), sgd(both.fsdp->parameters(), 0.1, 0.9);
  nn::MSELoss loss_fn;
  for (int s = 0; s < 3; ++s) {
    plain.zero_grad();
    sgd.zero_grad();
    auto [x1, y1] = batch(10 * s, 4);
    auto [x2, y2] = batch(10 * s + 1, 4);
    {
      auto g1 = both.ddp->no_sync();
      auto g2 = both.fsdp->no_sync();
      loss_fn(both.ddp->forward(x1), y1).backward();
      dist::reset_comm_counters();
      loss_fn(both.fsdp->forward(x1), y1).backward();
      CHECK(dist::comm_counters().calls[dist::CommCounters::kReduceScatter] == 0);  // nothing reduced yet
      for (const Tensor& f : both.fsdp->parameters()) CHECK(!f.grad().defined());
    }
    loss_fn(both.ddp->forward(x2), y2).backward();
    loss_fn(both.fsdp->forward(x2), y2).backward();  // reduces g1 + g2
    plain.step();
    sgd.step();
  }
  both.fsdp->summon_full_params();
  if (N <= 2) CHECK(param_bits(*both.m_ddp) == param_bits(*both.m_fsdp));
  else CHECK(max_rel_diff(param_bits(*both.m_ddp), param_bits(*both.m_fsdp)) < 1e-6);
}

TEST_CASE("ShardedGradScaler: an inf in one rank's shard skips the step on every rank", "[ch13][distributed][zero][fsdp]") {
  ensure_group();
  const int N = dist::get_world_size(), r = dist::get_rank();
  DdpAndFsdp both(dist::ShardingStrategy::FULL_SHARD, /*per_linear=*/true);
  optim::SGD plain(both.ddp->parameters(), 0.1), sgd(both.fsdp->parameters(), 0.1);
  tinytorch::amp::GradScaler ref;  // DDP: every rank holds the whole averaged gradient
  dist::ShardedGradScaler scaler;  // FSDP: each rank its shard
  nn::MSELoss loss_fn;
  for (int s = 0; s < 4; ++s) {
    auto [x, y] = batch(s, 4);
    plain.zero_grad();
    sgd.zero_grad();
    ref.scale(loss_fn(both.ddp->forward(x), y)).backward();
    scaler.scale(loss_fn(both.fsdp->forward(x), y)).backward();
    if (s == 2) {  // an overflow in element 0 of "0.weight": in rank 0's shard only, in DDP's every copy
      tinytorch::NoGradGuard no_grad;
      both.m_ddp->parameters()[0].grad().narrow(0, 0, 1).narrow(1, 0, 1).fill_(INFINITY);
      if (r == 0) sgd.param_groups()[0].params[0].grad().narrow(0, 0, 1).fill_(INFINITY);
    }
    const bool a = ref.step(plain), b = scaler.step(sgd);
    CHECK(a == (s != 2));
    CHECK(b == (s != 2));  // every rank skips step 2, not rank 0 alone
    ref.update();
    scaler.update();
    CHECK(scaler.get_scale() == ref.get_scale());
  }
  CHECK(ref.get_scale() == 32768.0);
  both.fsdp->summon_full_params();
  if (N <= 2) CHECK(param_bits(*both.m_ddp) == param_bits(*both.m_fsdp));
  else CHECK(max_rel_diff(param_bits(*both.m_ddp), param_bits(*both.m_fsdp)) < 1e-6);
  CHECK(identical_on_all_ranks(param_bits(*both.m_fsdp)));
  // float16 gradients are unscaled too (PyTorch's allow_fp16), where GradScaler refuses them.
  Tensor h = tinytorch::ones({2}, tinytorch::TensorOptions(tinytorch::kFloat16)).requires_grad_(true);
  h.set_grad(tinytorch::full({2}, 4.0, tinytorch::TensorOptions(tinytorch::kFloat16)));
  optim::SGD half_opt({h}, 0.1);
  dist::ShardedGradScaler s16(tinytorch::amp::GradScalerOptions{4.0});
  s16.scale(tinytorch::ones({1}));
  s16.unscale_(half_opt);
  CHECK(h.grad().tolist<float>() == std::vector<float>{1, 1});
  tinytorch::amp::GradScaler g16(tinytorch::amp::GradScalerOptions{4.0});
  g16.scale(tinytorch::ones({1}));
  CHECK_THROWS_WITH(g16.unscale_(half_opt), "Attempting to unscale FP16 gradients.");
}

TEST_CASE("FSDP: bad input throws on every rank", "[ch13][distributed][zero][fsdp]") {
  ensure_group();
  const int N = dist::get_world_size(), r = dist::get_rank();
  SECTION("FULL_SHARD: a freed parameter read outside forward and backward, a unit called outside the model's forward") {
    dist::FSDPOptions fo;  // FULL_SHARD, PyTorch's default
    fo.auto_wrap_policy = dist::transformer_auto_wrap_policy<nn::Linear>();
    auto m = make_mlp({3, 4, 2});
    dist::FullyShardedDataParallel fsdp(m, fo);
    CHECK_THROWS_WITH(m->parameters()[0].sum(), Catch::Contains("views a storage of 0 bytes: its memory was freed"));
    Tensor x = tinytorch::ones({2, 3});
    CHECK_THROWS_WITH(m->get_submodule("0")->forward(x),
                      "FullyShardedDataParallel: the unit \"0\" was called outside the forward of the "
                      "FullyShardedDataParallel that wraps it; in grad mode call that (its gradients are reduced only "
                      "then), or evaluate under NoGradGuard");
    {
      tinytorch::NoGradGuard no_grad;  // evaluation of one unit: gathered, run, freed
      CHECK(m->get_submodule("0")->forward(x).sizes() == tinytorch::Shape{2, 4});
    }
    fsdp.summon_full_params();
    const double w = m->parameters()[0].sum().item<double>();
    fsdp.forward(x).sum().backward();
    CHECK(param_storage_bytes(*m) == 0);
    fsdp.summon_full_params();
    CHECK(m->parameters()[0].sum().item<double>() == w);  // no optimizer step: the same values
  }
  SECTION("FULL_SHARD: writes after summon_full_params are kept; a throwing forward arms nothing; a second backward") {
    dist::FSDPOptions fo;
    const bool per_linear = GENERATE(false, true);
    if (per_linear) fo.auto_wrap_policy = dist::transformer_auto_wrap_policy<nn::Linear>();
    auto m = make_mlp({3, 4, 2});
    dist::FullyShardedDataParallel fsdp(m, fo);
    optim::SGD sgd(fsdp.parameters(), 0.0);  // lr 0: the values stay what was written
    fsdp.summon_full_params();
    {
      tinytorch::NoGradGuard no_grad;
      for (Tensor p : m->parameters()) p.fill_(0.5);  // on every rank, as load_state_dict would
    }
    Tensor x = tinytorch::ones({2, 3});
    CHECK_THROWS_WITH(fsdp.forward(tinytorch::ones({2, 5})), Catch::Contains("in_features=3"));  // arms nothing
    sgd.zero_grad();
    Tensor loss = fsdp.forward(x).sum();
    loss.backward(Tensor(), /*retain_graph=*/true);
    sgd.step();
    CHECK_THROWS_WITH(loss.backward(), Catch::StartsWith("FullyShardedDataParallel: a second backward through one "
                                                         "forward"));
    const size_t held = tinytorch::memory_allocated();
    {
      tinytorch::NoGradGuard no_grad;  // evaluation after a step: gathered, then freed again
      fsdp.forward(x);
    }
    CHECK(tinytorch::memory_allocated() == held);
    CHECK(param_storage_bytes(*m) == 0);
    fsdp.summon_full_params();
    for (const Tensor& p : m->parameters())
      for (float v : p.contiguous().tolist<float>()) CHECK(v == 0.5f);
  }
  SECTION("FULL_SHARD: a flat parameter changed between forward and backward") {
    dist::FSDPOptions fo;
    fo.auto_wrap_policy = dist::transformer_auto_wrap_policy<nn::Linear>();
    dist::FullyShardedDataParallel fsdp(make_mlp({3, 4, 2}), fo);
    Tensor loss = fsdp.forward(tinytorch::ones({2, 3})).sum();
    {
      tinytorch::NoGradGuard no_grad;
      fsdp.parameters()[1].add_(1.0);  // as an optimizer step before backward would
    }
    CHECK_THROWS_WITH(loss.backward(), Catch::Contains("FullyShardedDataParallel: the flat parameter of \"2\" changed "
                                                       "between forward and backward"));
  }
  SECTION("a unit that the forward reaches through a member pointer, and a parameter shared by two units") {
    dist::FSDPOptions fo;
    fo.sharding_strategy = dist::ShardingStrategy::SHARD_GRAD_OP;
    fo.auto_wrap_policy = dist::transformer_auto_wrap_policy<nn::Linear>();
    auto member = std::make_shared<ThroughMember>();
    dist::FullyShardedDataParallel fsdp(member, fo);
    CHECK_THROWS_WITH(fsdp.forward(tinytorch::ones({2, 3})),
                      Catch::StartsWith("FullyShardedDataParallel: the unit \"fc\" (auto_wrap_policy) did not run in "
                                        "this forward"));
    fo.auto_wrap_policy = dist::transformer_auto_wrap_policy<Scale>();
    CHECK_THROWS_WITH(dist::FullyShardedDataParallel(std::make_shared<TwoScales>(), fo),
                      "FullyShardedDataParallel: parameters \"a.w\" and \"b.w\" are one tensor in two units (\"a\" "
                      "and \"b\"): a shared parameter must belong to one unit; let auto_wrap_policy wrap a module that "
                      "holds both uses");
  }
  SECTION("a parameter without a gradient: the next forward says so") {
    dist::FSDPOptions fo;
    fo.sharding_strategy = dist::ShardingStrategy::SHARD_GRAD_OP;
    dist::FullyShardedDataParallel fsdp(std::make_shared<WithUnused>(), fo);
    Tensor x = tinytorch::ones({2, 6});
    fsdp.forward(x).sum().backward();
    CHECK_THROWS_WITH(fsdp.forward(x), Catch::Contains("Expected to have finished reduction in the prior iteration") &&
                                           Catch::Contains("unused.weight, unused.bias"));
  }
  SECTION("two forwards in grad mode without a backward between them") {
    dist::FSDPOptions fo;
    fo.sharding_strategy = dist::ShardingStrategy::NO_SHARD;
    dist::FullyShardedDataParallel fsdp(make_mlp({6, 3}), fo);
    Tensor x = tinytorch::ones({2, 6});
    fsdp.forward(x);
    CHECK_THROWS_WITH(fsdp.forward(x), Catch::Contains("the previous forward (in grad mode) had no backward"));
    {
      tinytorch::NoGradGuard no_grad;  // evaluation forwards do not count
      fsdp.forward(x);
      fsdp.forward(x);
    }
    fsdp.forward(x).sum().backward();
    CHECK(fsdp.parameters()[0].grad().defined());
  }
  SECTION("a model wrapped twice, and an FSDP inside the wrapped model") {
    dist::FSDPOptions fo;
    fo.sharding_strategy = dist::ShardingStrategy::SHARD_GRAD_OP;
    auto m = make_mlp({3, 4, 2});
    dist::FullyShardedDataParallel first(m, fo);
    CHECK_THROWS_WITH(dist::FullyShardedDataParallel(m, fo),
                      "FullyShardedDataParallel: parameter \"0.weight\" already belongs to another "
                      "FullyShardedDataParallel (a model is wrapped once: its parameters view that wrapper's flat buffer)");
    auto outer = std::make_shared<nn::Sequential>();
    outer->push_back(std::make_shared<dist::FullyShardedDataParallel>(make_mlp({3, 2}), fo));
    CHECK_THROWS_WITH(dist::FullyShardedDataParallel(outer, fo), Catch::Contains("let FSDPOptions::auto_wrap_policy "
                                                                                 "make the inner units"));
  }
  SECTION("the FSDP converted after wrapping; a state dict with a key twice or an undefined value") {
    dist::FSDPOptions fo;
    fo.auto_wrap_policy = dist::transformer_auto_wrap_policy<nn::Linear>();
    dist::FullyShardedDataParallel fsdp(make_mlp({3, 4, 2}), fo);
    auto sd = fsdp.full_state_dict(false);
    auto twice = sd;
    twice.push_back(sd[0]);
    CHECK_THROWS_WITH(fsdp.load_full_state_dict(twice),
                      "FullyShardedDataParallel.load_full_state_dict: the key \"0.weight\" appears twice");
    auto undefined = sd;
    undefined[1].second = Tensor();
    CHECK_THROWS_WITH(fsdp.load_full_state_dict(undefined),
                      "FullyShardedDataParallel.load_full_state_dict: the value of \"0.bias\" is an undefined tensor");
    fsdp.to(tinytorch::kFloat64);
    CHECK_THROWS_WITH(fsdp.forward(tinytorch::ones({2, 3})),
                      "FullyShardedDataParallel: the flat parameter of \"0\" was converted or moved after wrapping "
                      "(e.g. fsdp.to(...)); convert or move the model before wrapping it");
  }
  SECTION("moved, converted or unfrozen after wrapping") {
    dist::FSDPOptions fo;
    fo.sharding_strategy = dist::ShardingStrategy::SHARD_GRAD_OP;
    auto m = make_mlp({3, 4, 2});
    m->parameters()[1].requires_grad_(false);
    dist::FullyShardedDataParallel fsdp(m, fo);
    Tensor x = tinytorch::ones({2, 3});
    m->parameters()[1].requires_grad_(true);
    CHECK_THROWS_WITH(fsdp.forward(x), Catch::Contains("the module has 4 parameters that require grad, but 3"));
    m->parameters()[1].requires_grad_(false);
    fsdp.forward(x).sum().backward();
    m->to(tinytorch::kFloat64);
    CHECK_THROWS_WITH(fsdp.forward(x), Catch::Contains("\"0.weight\" no longer views the flat parameter"));
  }
  if (N == 1) return;
  SECTION("different strategies on different ranks") {
    dist::FSDPOptions fo;
    fo.sharding_strategy = r == 0 ? dist::ShardingStrategy::SHARD_GRAD_OP : dist::ShardingStrategy::NO_SHARD;
    CHECK_THROWS_WITH(dist::FullyShardedDataParallel(make_mlp({2, 2}), fo),
                      "FullyShardedDataParallel: FSDPOptions::sharding_strategy differs across ranks (SHARD_GRAD_OP "
                      "and NO_SHARD)");
    dist::FSDPOptions f2;
    f2.forward_prefetch = r == 0;  // the all_gathers would be issued in different orders
    CHECK_THROWS_WITH(dist::FullyShardedDataParallel(make_mlp({2, 2}), f2),
                      Catch::StartsWith("FullyShardedDataParallel: FSDPOptions::forward_prefetch differs across ranks"));
    dist::FSDPOptions f3;
    if (r == 0) f3.backward_prefetch = std::nullopt;
    CHECK_THROWS_WITH(dist::FullyShardedDataParallel(make_mlp({2, 2}), f3),
                      Catch::StartsWith("FullyShardedDataParallel: FSDPOptions::backward_prefetch differs across ranks"));
  }
  SECTION("units called in an order that differs across ranks (equal sizes: their all_gathers would pair up)") {
    dist::FSDPOptions fo;
    fo.auto_wrap_policy = dist::transformer_auto_wrap_policy<nn::Linear>();
    dist::FullyShardedDataParallel fsdp(std::make_shared<RankOrder>(), fo);
    CHECK_THROWS_WITH(fsdp.forward(tinytorch::ones({2, 3})),
                      Catch::Contains("FullyShardedDataParallel: the units ran in a different order on different ranks "
                                      "in this forward (this rank: ") &&
                          Catch::Contains("Forward order differs across ranks"));
    if (dist::get_debug_level() == dist::DebugLevel::DETAIL) {  // (ctest runs the MPI tests at DETAIL)
      auto m = std::make_shared<RankOrder>();
      m->swap = false;
      dist::FullyShardedDataParallel later(m, fo);
      nn::MSELoss loss_fn;
      loss_fn(later.forward(tinytorch::ones({2, 3})), tinytorch::zeros({2, 3})).backward();
      m->swap = true;  // a later forward: only DETAIL checks it
      CHECK_THROWS_WITH(later.forward(tinytorch::ones({2, 3})),
                        Catch::Contains("found by TINYTORCH_DISTRIBUTED_DEBUG=DETAIL") &&
                            Catch::Contains("the end of a FullyShardedDataParallel forward"));
    }
  }
  SECTION("an auto_wrap_policy that differs across ranks") {
    dist::FSDPOptions fo;
    fo.sharding_strategy = dist::ShardingStrategy::SHARD_GRAD_OP;
    if (r == 0) fo.auto_wrap_policy = dist::transformer_auto_wrap_policy<nn::Linear>();
    CHECK_THROWS_WITH(dist::FullyShardedDataParallel(make_mlp({3, 4, 2}), fo),
                      Catch::StartsWith("FullyShardedDataParallel: auto_wrap_policy made different units across ranks"));
    // Units of the same sizes in other places: Linear "0" on rank 0, Linear "2" (also 12 elements) elsewhere.
    auto m = make_mlp({3, 3, 3});
    const nn::Module* target = m->get_submodule(r == 0 ? "0" : "2").get();
    fo.auto_wrap_policy = [target](const nn::Module& mod, bool recurse, int64_t) { return recurse || &mod == target; };
    CHECK_THROWS_WITH(dist::FullyShardedDataParallel(m, fo),
                      Catch::StartsWith("FullyShardedDataParallel: auto_wrap_policy made different units across ranks"));
  }
  SECTION("a shape that differs on the last rank") {
    dist::FSDPOptions fo;
    fo.sharding_strategy = dist::ShardingStrategy::SHARD_GRAD_OP;
    CHECK_THROWS_WITH(dist::FullyShardedDataParallel(make_mlp({3, 4, r == N - 1 ? 5 : 2}), fo),
                      Catch::StartsWith("FullyShardedDataParallel: FSDP expects the same model across all ranks"));
  }
}

// tests/mpi/test_model_parallel.cpp — what model parallelism is built from: point-to-point
// messages, process groups of some of the ranks, the device mesh, and tensor parallelism.
//
// Run by ctest on 2, 3 and 4 ranks with TINYTORCH_DISTRIBUTED_DEBUG=DETAIL (scripts/mpirun.sh
// -np N build/bin/test_model_parallel); also passes as a single process (the point-to-point cases
// need a peer and check only their errors there).
//
// What is checked:
//   * send / recv / isend / irecv: a tensor passed around the ring (blocking, large enough that
//     MPI cannot buffer it, and asynchronous), tags matched out of order, sizes checked on the
//     receiver (longer and shorter messages), bad peers and tags, groups of some ranks with
//     global peer ranks (ProcessGroup::send / recv on raw buffers underneath);
//   * new_group(ranks): members get the group (sorted ranks, group ranks, collectives over the
//     members only), the others nullptr; a list that differs across ranks is the same error on
//     every rank; bad lists;
//   * DeviceMesh: the grid's coordinates and groups (tp neighbours, dp strided), its repr, and
//     shapes that do not tile the world;
//   * tensor parallelism: Column/RowParallelLinear against the whole Linear (column outputs and
//     weight gradients bit for bit), f and g, the sizes P must divide; a GPT split over P ranks
//     (P = the world, or 2 of a (2, 2) mesh on 4 ranks) against the same GPT whole on each rank:
//     logits, every gradient, kSteps (50; 10 under ASan) AdamW steps' losses to 1e-5, and the bytes its all-reduces
//     carry equal Megatron's 4 B T C per block per step exactly; DDP over the dp groups of a
//     mesh with TP inside against one process on the whole batch;
//   * pipeline parallelism: the GPT cut into P stages (P = the world), GPipe and 1F1B with
//     M = 1, 2, 4, 8 micro-batches, kSteps AdamW steps with clipping against the whole model (losses
//     to 1e-5, gradients after the first step), activations kept (M, or P - s for 1F1B), stage
//     shapes that disagree (the same error on every rank).
// What a send that nobody receives turns into (the watchdog naming the peer and the tag) is
// tested by tests/mpi/hang_failure_test.sh (send_unmatched, recv_size).
// Chapter: chapters/12-model-parallelism.md. Catch2 tag: [distributed][model_parallel].
#include <catch2/catch.hpp>

#include <tinytorch/functional.hpp>
#include <tinytorch/distributed.hpp>

#include "../../examples/gpt_pp.hpp"
#include "../../examples/gpt_tp.hpp"

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dist = tinytorch::distributed;
using dist::ReduceOp;
using tinytorch::Tensor;

namespace {

void ensure_group() {
  if (!dist::is_initialized()) dist::init_process_group(dist::Backend::MPI);
}

std::string prefix() { return "rank " + std::to_string(dist::get_rank()) + ": "; }

/// Training steps compared with the whole model: 50 (the target) in the main build; 10
/// under AddressSanitizer, which looks for memory errors (the same code paths) and runs these
/// steps about 20x slower on up to 4 ranks sharing 2 cores.
/// (GCC defines __SANITIZE_ADDRESS__; clang 14, which the sanitizer build uses, only answers
/// __has_feature(address_sanitizer).)
#if defined(__SANITIZE_ADDRESS__)
#define TT_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TT_TEST_UNDER_ASAN 1
#endif
#endif
#ifdef TT_TEST_UNDER_ASAN
constexpr int kSteps = 10;
#else
constexpr int kSteps = 50;
#endif

/// [base, base + 1, ..., base + n - 1] as float32.
Tensor ramp(int64_t n, double base) { return tinytorch::arange(n).to(tinytorch::kFloat32) + base; }

}  // namespace

TEST_CASE("send and recv pass a tensor around the ring", "[distributed][model_parallel]") {
  ensure_group();
  const int r = dist::get_rank(), n = dist::get_world_size();
  if (n == 1) return;
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  const int64_t count = 300000;  // 1.2 MB: beyond MPI's eager limit, so a blocking send waits for its recv

  // Blocking: even ranks send first, odd ranks receive first (a ring of odd length ends with two
  // even ranks in a row, which works because rank 0 receives after its send has been taken).
  Tensor out = ramp(count, 1000.0 * r), in = tinytorch::zeros({count});
  if (r % 2 == 0) {
    dist::send(out, right);
    CHECK(dist::recv(in, left) == left);
  } else {
    CHECK(dist::recv(in, left) == left);
    dist::send(out, right);
  }
  CHECK(in.allclose(ramp(count, 1000.0 * left), 0.0, 0.0));

  // Asynchronous: everyone posts both, then waits.
  Tensor in2 = tinytorch::zeros({3, 4}, tinytorch::kFloat64);
  Tensor out2 = tinytorch::full({3, 4}, 10.0 * r, tinytorch::kFloat64);
  dist::Work recv_work = dist::irecv(in2, left);
  dist::Work send_work = dist::isend(out2, right);
  send_work.wait();
  recv_work.wait();
  CHECK(in2.allclose(tinytorch::full({3, 4}, 10.0 * left, tinytorch::kFloat64), 0.0, 0.0));
  CHECK(dist::get_default_group().pending() == 0);
}

TEST_CASE("messages are matched by tag; their sizes are checked on the receiver", "[distributed][model_parallel]") {
  ensure_group();
  const int r = dist::get_rank(), n = dist::get_world_size();
  if (n == 1) return;
  auto& world = dist::get_default_group();
  const uint64_t seq = world.sequence_number();
  if (r == 0) {
    dist::Work a = dist::isend(tinytorch::full({2}, 1.0), 1, nullptr, 1);
    dist::Work b = dist::isend(tinytorch::full({3}, 2.0), 1, nullptr, 2);
    a.wait();
    b.wait();
    // Then two messages of the wrong size, and one of the right size.
    float five[5] = {1, 2, 3, 4, 5};
    world.send(five, 5, tinytorch::kFloat32, 1, 3, dist::Completion::Blocking);
    world.send(five, 3, tinytorch::kFloat32, 1, 3, dist::Completion::Blocking);
    world.send(five, 4, tinytorch::kFloat32, 1, 3, dist::Completion::Blocking);
  } else if (r == 1) {
    Tensor two = tinytorch::zeros({2}), three = tinytorch::zeros({3});
    dist::recv(three, 0, nullptr, 2);  // tag 2 first: sent second
    dist::recv(two, 0, nullptr, 1);
    CHECK(two.tolist<float>() == std::vector<float>{1, 1});
    CHECK(three.tolist<float>() == std::vector<float>{2, 2, 2});
    float four[4] = {0, 0, 0, 0};
    CHECK_THROWS_WITH(world.recv(four, 4, tinytorch::kFloat32, 0, 3, dist::Completion::Blocking),
                      Catch::Contains(prefix() + "recv from rank 0 (tag 3, group \"default\"): the message is larger "
                                                 "(20 bytes) than the 4 torch.float32 elements (16 bytes) posted"));
    dist::Work w = world.recv(four, 4, tinytorch::kFloat32, 0, 3);
    CHECK_THROWS_WITH(w.wait(), Catch::Contains("recv from rank 0 (tag 3, group \"default\"): the message holds 12 "
                                                "bytes but 4 torch.float32 elements (16 bytes) were posted"));
    CHECK(world.pending() == 0);
    world.recv(four, 4, tinytorch::kFloat32, 0, 3, dist::Completion::Blocking);
    CHECK(four[3] == 4.0f);
  }
  // Point-to-point messages are not collectives: no sequence number was used.
  CHECK(world.sequence_number() == seq);
  dist::barrier();
}

TEST_CASE("bad point-to-point arguments throw before any message", "[distributed][model_parallel]") {
  ensure_group();
  const int r = dist::get_rank(), n = dist::get_world_size();
  Tensor t = tinytorch::zeros({4});
  CHECK_THROWS_WITH(dist::send(t, r), Catch::Contains(prefix() + "send: dst rank " + std::to_string(r) +
                                                      " is this rank; a rank cannot send to or receive from itself"));
  CHECK_THROWS_WITH(dist::recv(t, r), Catch::Contains("recv: src rank " + std::to_string(r) + " is this rank"));
  CHECK_THROWS_WITH(dist::send(t, n), Catch::Contains("send: dst rank " + std::to_string(n) +
                                                      " is not a member of process group \"default\""));
  CHECK_THROWS_WITH(dist::isend(t, -1), Catch::Contains("isend: dst rank -1 is not a member"));
  if (n > 1)
    CHECK_THROWS_WITH(dist::send(t, (r + 1) % n, nullptr, 0x7474),
                      Catch::Contains("send: tag 29812 is reserved for the library's own all-reduce algorithms"));
  CHECK_THROWS_WITH(dist::get_default_group().send(t.raw_data(), 4, tinytorch::kFloat32, n),
                    Catch::Contains("send: dst rank " + std::to_string(n) + " is outside [0, " + std::to_string(n) +
                                    ") of process group \"default\""));
  if (n > 1) {
    CHECK_THROWS_WITH(dist::send(t, (r + 1) % n, nullptr, -3), Catch::Contains("send: tag -3 is outside [0, "));
    CHECK_THROWS_WITH(dist::irecv(t.transpose(0, 0).expand({2, 4}), (r + 1) % n),
                      Catch::Contains("irecv: tensor must be contiguous"));
    CHECK_THROWS_WITH(dist::irecv(Tensor(), (r + 1) % n), Catch::Contains("irecv: tensor is an undefined Tensor"));
    CHECK_THROWS_WITH(dist::get_default_group().send(nullptr, 3, tinytorch::kFloat32, (r + 1) % n),
                      Catch::Contains("send: buffer is a null pointer but count is 3"));
  }
  CHECK(dist::get_default_group().pending() == 0);
}

TEST_CASE("new_group(ranks): a group of some ranks; the others get nullptr", "[distributed][model_parallel]") {
  ensure_group();
  const int r = dist::get_rank(), n = dist::get_world_size();
  auto& world = dist::get_default_group();
  const uint64_t seq = world.sequence_number();

  // The even ranks, listed backwards: sorted, as PyTorch's.
  std::vector<int> evens;
  for (int k = n - 1; k >= 0; --k)
    if (k % 2 == 0) evens.push_back(k);
  std::shared_ptr<dist::ProcessGroup> g = dist::new_group(evens);
  CHECK(world.sequence_number() == seq + 1);  // one collective of the default group
  if (r % 2 == 1) {
    CHECK(g == nullptr);
  } else {
    REQUIRE(g != nullptr);
    const int m = (n + 1) / 2;
    CHECK(g->size() == m);
    CHECK(g->rank() == r / 2);
    std::vector<int> expect;
    for (int k = 0; k < n; k += 2) expect.push_back(k);
    CHECK(g->ranks() == expect);
    CHECK(g->name() == "ranks " + [&] {
      std::string s;
      for (int k : expect) s += (s.empty() ? "" : ", ") + std::to_string(k);
      return "[" + s + "]";
    }());
    CHECK(dist::get_group_rank(*g, r) == r / 2);
    CHECK(dist::get_global_rank(*g, m - 1) == 2 * (m - 1));
    CHECK_THROWS_WITH(dist::get_group_rank(*g, 1), Catch::Contains("get_group_rank: global rank 1 is not a member"));
    CHECK_THROWS_WITH(dist::get_global_rank(*g, m), Catch::Contains("get_global_rank: rank " + std::to_string(m) +
                                                                    " is outside [0, " + std::to_string(m) + ")"));

    // Collectives reach the members only: 0 + 2 + 4 + ... over the even ranks.
    Tensor x = tinytorch::full({2}, static_cast<double>(r));
    dist::all_reduce(x, ReduceOp::SUM, *g);
    CHECK(x.tolist<float>()[0] == static_cast<float>(m * (m - 1)));
    Tensor gathered = tinytorch::zeros({m});
    dist::all_gather(gathered, tinytorch::full({1}, r + 0.5), *g);
    for (int k = 0; k < m; ++k) CHECK(gathered.tolist<float>()[static_cast<size_t>(k)] == 2.0f * k + 0.5f);
    Tensor b = tinytorch::full({1}, static_cast<double>(r));
    dist::broadcast(b, 2 * (m - 1), *g);  // src is a global rank, as PyTorch's
    CHECK(b.tolist<float>()[0] == static_cast<float>(2 * (m - 1)));
    CHECK_THROWS_WITH(dist::broadcast(b, 1, *g), Catch::Contains("get_group_rank: global rank 1 is not a member"));

    // Point to point inside the group, with global ranks: 0 -> 2 when there are two evens.
    if (m >= 2 && r <= 2) {
      Tensor t = tinytorch::full({5}, 7.0);
      if (r == 0) dist::send(t, 2, g.get(), 4);
      if (r == 2) {
        Tensor in = tinytorch::zeros({5});
        CHECK(dist::recv(in, 0, g.get(), 4) == 0);
        CHECK(in.allclose(t, 0.0, 0.0));
        CHECK_THROWS_WITH(dist::recv(in, 1, g.get()),
                          Catch::Contains("recv: src rank 1 is not a member of process group \"ranks [0, 2"));
      }
    }
  }
  // A group of everyone, in another order, is the world again.
  std::vector<int> all;
  for (int k = n - 1; k >= 0; --k) all.push_back(k);
  auto everyone = dist::new_group(all, "everyone");
  REQUIRE(everyone != nullptr);
  CHECK(everyone->rank() == r);
  CHECK(everyone->name() == "everyone");
  Tensor one = tinytorch::ones({1});
  dist::all_reduce(one, ReduceOp::SUM, *everyone);
  CHECK(one.tolist<float>()[0] == static_cast<float>(n));
}

TEST_CASE("new_group(ranks): bad lists, and lists that differ across ranks", "[distributed][model_parallel]") {
  ensure_group();
  const int r = dist::get_rank(), n = dist::get_world_size();
  CHECK_THROWS_WITH(dist::new_group(std::vector<int>{}), Catch::Contains("new_group: the list of ranks is empty"));
  CHECK_THROWS_WITH(dist::new_group({0, n}), Catch::Contains("new_group([0, " + std::to_string(n) +
                                                             "]): ranks must be in [0, " + std::to_string(n) + ")"));
  CHECK_THROWS_WITH(dist::new_group({0, 0}), Catch::Contains("new_group([0, 0]): a rank is listed twice"));
  if (n > 1) {
    // Rank 0 asks for {0}, the others for {0, 1}: every rank gets the same error.
    const std::vector<int> mine = r == 0 ? std::vector<int>{0} : std::vector<int>{0, 1};
    CHECK_THROWS_WITH(dist::new_group(mine),
                      Catch::Contains(prefix() + "new_group(\"ranks " + std::string(r == 0 ? "[0]" : "[0, 1]") +
                                      "\"): every rank must pass the same ranks (and create its groups in the same "
                                      "order), but rank 0 passed [0] and rank 1 passed [0, 1]"));
  }
  // The world still lines up afterwards.
  Tensor one = tinytorch::ones({1});
  dist::all_reduce(one);
  CHECK(one.tolist<float>()[0] == static_cast<float>(n));
}

// ---- DeviceMesh -------------------------------------------------------------------------------

TEST_CASE("DeviceMesh: the ranks as a grid, one group per line", "[distributed][model_parallel]") {
  ensure_group();
  const int r = dist::get_rank(), n = dist::get_world_size();

  // 1-D, without names: one group of everyone.
  dist::DeviceMesh line = dist::init_device_mesh("cpu", {n});
  CHECK(line.ndim() == 1);
  CHECK(line.size() == n);
  CHECK(line.get_group(0)->size() == n);
  CHECK(line.get_local_rank(0) == r);
  CHECK_THROWS_WITH(line.get_group("tp"), Catch::Contains("DeviceMesh.get_group: no mesh dimension named 'tp' (this "
                                                          "mesh has no mesh_dim_names; use an index)"));
  CHECK_THROWS_WITH(line.size(1), Catch::Contains("DeviceMesh.size: dim 1 is outside [0, 1)"));

  if (n % 2 == 0) {
    dist::DeviceMesh mesh = dist::init_device_mesh("cpu", {n / 2, 2}, {"dp", "tp"});
    CHECK(mesh.get_coordinate() == std::vector<int64_t>{r / 2, r % 2});
    CHECK(mesh.get_local_rank("tp") == r % 2);
    CHECK(mesh.get_local_rank("dp") == r / 2);
    CHECK(mesh.size("dp") == n / 2);
    auto tp = mesh.get_group("tp"), dp = mesh.get_group("dp");
    CHECK(tp->ranks() == std::vector<int>{r - r % 2, r - r % 2 + 1});  // neighbours
    std::vector<int> dp_ranks;
    for (int k = r % 2; k < n; k += 2) dp_ranks.push_back(k);  // strided
    CHECK(dp->ranks() == dp_ranks);
    CHECK(tp->rank() == r % 2);
    CHECK(tp->name() == "tp group [" + std::to_string(r - r % 2) + ", " + std::to_string(r - r % 2 + 1) + "]");
    if (n == 4) CHECK(mesh.str() == "DeviceMesh('cpu', [[0, 1], [2, 3]], mesh_dim_names=('dp', 'tp'))");
    // A sum over each group reaches its members only.
    Tensor x = tinytorch::full({1}, static_cast<double>(r));
    dist::all_reduce(x, ReduceOp::SUM, *tp);
    CHECK(x.tolist<float>()[0] == static_cast<float>(2 * (r - r % 2) + 1));
  }

  // Shapes that do not tile the world, and other misuse: the same error on every rank.
  CHECK_THROWS_WITH(dist::init_device_mesh("cpu", {n + 1}),
                    Catch::Contains(prefix() + "init_device_mesh: mesh shape [" + std::to_string(n + 1) +
                                    "] holds more than the world's " + std::to_string(n) +
                                    " ranks; the mesh must tile the world"));
  if (n > 1)  // fewer ranks than the world
    CHECK_THROWS_WITH(dist::init_device_mesh("cpu", {n - 1}),
                      Catch::Contains("mesh shape [" + std::to_string(n - 1) + "] holds " + std::to_string(n - 1) +
                                      " ranks but the world has " + std::to_string(n)));
  // A product that would overflow int64 is refused before it is formed.
  CHECK_THROWS_WITH(dist::init_device_mesh("cpu", {6148914691236517206, 3}),
                    Catch::Contains("holds more than the world's"));
  CHECK_THROWS_WITH(dist::init_device_mesh("cpu", {n, 0}), Catch::Contains("mesh shape [" + std::to_string(n) +
                                                                            ", 0] has a size below 1"));
  CHECK_THROWS_WITH(dist::init_device_mesh("cpu", {n, 1}, {"dp"}),
                    Catch::Contains("init_device_mesh: 1 mesh_dim_names for a mesh of 2 dims"));
  CHECK_THROWS_WITH(dist::init_device_mesh("cpu", {n, 1}, {"dp", "dp"}),
                    Catch::Contains("init_device_mesh: mesh_dim_names has 'dp' twice"));
  CHECK_THROWS_WITH(dist::init_device_mesh("tpu", {n}), Catch::Contains("device_type 'tpu' is not \"cpu\" or \"cuda\""));
  dist::barrier();
}

// ---- tensor parallelism -----------------------------------------------------------------------

namespace {

/// The tensor-parallel group of these tests: 2 ranks of a (2, 2) mesh on 4 ranks, else the world.
std::shared_ptr<dist::ProcessGroup> tp_group() {
  const int n = dist::get_world_size();
  if (n == 4) return dist::init_device_mesh("cpu", {2, 2}, {"dp", "tp"}).get_group("tp");
  std::vector<int> all;
  for (int k = 0; k < n; ++k) all.push_back(k);
  return dist::new_group(all, "tp");
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  return (a.to(tinytorch::kFloat64) - b.to(tinytorch::kFloat64)).abs().max().item<double>();
}

/// Rows [s*section + r*block, ... + block) of each of `sections` sections of dim 0.
Tensor row_shard(const Tensor& full, int64_t P, int64_t r, int64_t sections = 1) {
  const int64_t section = full.size(0) / sections, block = section / P;
  std::vector<Tensor> parts;
  for (int64_t s = 0; s < sections; ++s) parts.push_back(full.narrow(0, s * section + r * block, block));
  return tinytorch::cat(parts, 0);
}

/// Block r of P along the last dim.
Tensor col_shard(const Tensor& full, int64_t P, int64_t r) {
  const int64_t b = full.size(-1) / P;
  return full.narrow(-1, r * b, b);
}

/// What a tensor-parallel GPT parameter holds of the whole model's parameter `name`.
Tensor gpt_shard(const std::string& name, const Tensor& full, int64_t P, int64_t r) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  const bool weight = has(".weight");
  if (has("attn.c_attn")) return row_shard(full, P, r, 3);
  if (has("mlp.c_fc")) return row_shard(full, P, r);
  if (has("c_proj")) return weight ? col_shard(full, P, r) : full;  // Row: bias whole
  return full;                                                      // embeddings, LayerNorms
}

}  // namespace

TEST_CASE("ColumnParallelLinear and RowParallelLinear compute the whole Linear", "[distributed][model_parallel]") {
  ensure_group();
  auto tp = tp_group();
  const int64_t P = tp->size(), r = tp->rank();
  tinytorch::manual_seed(7);
  tinytorch::nn::Linear col_full(6, 12), row_full(12, 6);
  Tensor x = tinytorch::randn({3, 6}).requires_grad_(true);
  Tensor w = tinytorch::randn({3, 6});  // loss = sum(row(gelu(col(x))) * w)

  // The whole layers, on every rank: the reference.
  Tensor h_full = col_full.forward(x);
  Tensor y_full = row_full.forward(tinytorch::gelu(h_full));
  (y_full * w).sum().backward();
  const Tensor gx_full = x.grad().clone();

  dist::tensor_parallel_stats() = {};
  x.grad().zero_();
  dist::ColumnParallelLinear col(col_full, *tp);
  dist::RowParallelLinear row(row_full, *tp);
  CHECK(col.weight.sizes() == tinytorch::Shape{12 / P, 6});
  CHECK(row.weight.sizes() == tinytorch::Shape{6, 12 / P});
  CHECK(row.bias.sizes() == tinytorch::Shape{6});
  Tensor h = col.forward(x);
  // Column outputs are the whole layer's columns, bit for bit (the same dot products).
  CHECK(max_abs_diff(h, col_shard(h_full, P, r)) == 0.0);
  Tensor y = row.forward(tinytorch::gelu(h));
  CHECK(max_abs_diff(y, y_full) < 1e-6);  // partial sums added in another order
  (y * w).sum().backward();
  CHECK(max_abs_diff(x.grad(), gx_full) < 1e-6);
  CHECK(max_abs_diff(col.weight.grad(), row_shard(col_full.weight.grad(), P, r)) == 0.0);
  CHECK(max_abs_diff(col.bias.grad(), row_shard(col_full.bias.grad(), P, r)) == 0.0);
  CHECK(max_abs_diff(row.weight.grad(), col_shard(row_full.weight.grad(), P, r)) < 1e-6);
  CHECK(max_abs_diff(row.bias.grad(), row_full.bias.grad()) == 0.0);
  // One all-reduce forward (g: 3 x 6) and one backward (f: 3 x 6).
  CHECK(dist::tensor_parallel_stats().all_reduces == 2);
  CHECK(dist::tensor_parallel_stats().all_reduce_bytes == 2 * 3 * 6 * 4);

  // gather_output / input_is_parallel = false: whole tensors in and out.
  dist::ColumnParallelLinear col_gather(col_full, *tp, /*gather_output=*/true);
  CHECK(max_abs_diff(col_gather.forward(x), h_full) == 0.0);
  dist::RowParallelLinear row_whole(row_full, *tp, /*input_is_parallel=*/false);
  Tensor hw = tinytorch::gelu(h_full.detach()).requires_grad_(true);
  row_whole.forward(hw).sum().backward();
  Tensor hw_ref = tinytorch::gelu(h_full.detach()).requires_grad_(true);
  row_full.forward(hw_ref).sum().backward();
  CHECK(max_abs_diff(hw.grad(), hw_ref.grad()) < 1e-6);

  // Sizes the group does not divide, and wrong inputs.
  if (P > 1) {
    tinytorch::nn::Linear odd(5, 5 * P + 1);
    CHECK_THROWS_WITH(dist::ColumnParallelLinear(odd, *tp),
                      Catch::Contains("ColumnParallelLinear: out_features " + std::to_string(5 * P + 1) +
                                      " (in 1 sections) is not divisible by the tensor-parallel size " +
                                      std::to_string(P)));
    tinytorch::nn::Linear odd_in(5 * P + 1, 4);
    CHECK_THROWS_WITH(dist::RowParallelLinear(odd_in, *tp),
                      Catch::Contains("RowParallelLinear: in_features " + std::to_string(5 * P + 1) +
                                      " is not divisible by the tensor-parallel size " + std::to_string(P)));
    CHECK_THROWS_WITH(dist::scatter_to_tensor_parallel_region(tinytorch::zeros({2, 5 * P + 1}), *tp),
                      Catch::Contains("the last dim of [2, " + std::to_string(5 * P + 1) + "] is not divisible"));
  }
  CHECK_THROWS_WITH(dist::ColumnParallelLinear(col_full, *tp, /*gather_output=*/true, /*sections=*/3),
                    Catch::Contains("ColumnParallelLinear: gather_output with 3 sections would put the output's "
                                    "columns in rank order"));
  CHECK_THROWS_WITH(dist::ColumnParallelLinear(col_full, *tp, false, 0),
                    Catch::Contains("ColumnParallelLinear: sections must be >= 1, got 0"));
  CHECK_THROWS_WITH(col.forward(tinytorch::zeros({3, 7})),
                    Catch::Contains("ColumnParallelLinear: input of shape [3, 7] does not end in in_features=6"));
  CHECK_THROWS_WITH(row.forward(tinytorch::zeros({3, 12 / P + 1})),
                    Catch::Contains("RowParallelLinear: input of shape [3, " + std::to_string(12 / P + 1) +
                                    "] does not end in " + std::to_string(12 / P) + " (in_features / tp_size)"));
  dist::barrier();
}

TEST_CASE("a GPT split over P ranks trains like the whole GPT", "[distributed][model_parallel]") {
  ensure_group();
  auto tp = tp_group();
  const int64_t P = tp->size(), r = tp->rank();
  examples::GPTConfig cfg;
  cfg.vocab_size = 11;
  cfg.block_size = 8;
  cfg.n_layer = 2;
  cfg.n_head = 6;  // divisible by 1, 2 and 3
  cfg.n_embd = 24;
  cfg.bias = true;
  const int64_t B = 2, T = 8;

  tinytorch::manual_seed(1234);
  examples::GPT whole(cfg);
  tinytorch::manual_seed(1234);
  examples::GPT split(cfg);
  examples::parallelize_gpt(split, *tp);
  CHECK(split.transformer->blocks[0]->attn->name() == "TensorParallelCausalSelfAttention");
  CHECK(split.get_parameter("transformer.h.0.attn.c_attn.weight").sizes() == tinytorch::Shape{72 / P, 24});
  CHECK_THROWS_WITH(examples::parallelize_gpt(split, *tp), Catch::Contains("the model is already split"));

  // The same batches on every rank (a generator of their own).
  tinytorch::Generator gen(99);
  auto batch = [&] { return tinytorch::randint(0, cfg.vocab_size, {B, T + 1}, tinytorch::kInt64, &gen); };

  // One step: logits, loss, every gradient, and the bytes.
  Tensor data = batch();
  Tensor idx = data.narrow(1, 0, T).contiguous(), targets = data.narrow(1, 1, T).contiguous();
  Tensor logits_whole = whole.forward(idx);
  Tensor loss_whole = whole.loss(logits_whole, targets);
  loss_whole.backward();
  dist::tensor_parallel_stats() = {};
  Tensor logits_split = split.forward(idx);
  Tensor loss_split = split.loss(logits_split, targets);
  loss_split.backward();
  CHECK(max_abs_diff(logits_split, logits_whole) < 1e-5);
  CHECK(std::abs(loss_split.item<double>() - loss_whole.item<double>()) < 1e-6);
  const auto& stats = dist::tensor_parallel_stats();
  CHECK(stats.all_reduces == 4 * cfg.n_layer);
  CHECK(stats.all_reduce_bytes == 4 * B * T * cfg.n_embd * 4 * cfg.n_layer);  // Megatron: 4 B T C per block, fp32
  std::map<std::string, Tensor> whole_params;
  for (auto& [name, p] : whole.named_parameters()) whole_params[name] = p;
  size_t compared = 0;
  for (auto& [name, p] : split.named_parameters()) {
    INFO(name);
    REQUIRE(whole_params.count(name) == 1);
    const Tensor& w = whole_params[name];
    CHECK(max_abs_diff(p, gpt_shard(name, w, P, r)) == 0.0);
    CHECK(max_abs_diff(p.grad(), gpt_shard(name, w.grad(), P, r)) < 1e-6);
    ++compared;
  }
  CHECK(compared == whole_params.size());

  // kSteps AdamW steps with nanoGPT's groups: the same losses.
  auto opt_whole = whole.configure_optimizers(0.1, 1e-3, {0.9, 0.95});
  auto opt_split = split.configure_optimizers(0.1, 1e-3, {0.9, 0.95});
  double worst = 0.0;
  for (int step = 0; step < kSteps; ++step) {
    Tensor d = batch();
    Tensor i = d.narrow(1, 0, T).contiguous(), t = d.narrow(1, 1, T).contiguous();
    opt_whole->zero_grad();
    Tensor lw = whole.loss(whole.forward(i), t);
    lw.backward();
    opt_whole->step();
    opt_split->zero_grad();
    Tensor ls = split.loss(split.forward(i), t);
    ls.backward();
    opt_split->step();
    worst = std::max(worst, std::abs(ls.item<double>() - lw.item<double>()));
  }
  CHECK(worst < 1e-5);
  // The replicated parameters stayed equal across the group without communication.
  Tensor ln = split.get_parameter("transformer.ln_f.weight").clone();
  Tensor ln_sum = ln.clone();
  dist::all_reduce(ln_sum, ReduceOp::SUM, *tp);
  CHECK(max_abs_diff(ln_sum, ln * static_cast<double>(P)) < 1e-6);
  INFO("largest loss difference over " << kSteps << " steps: " << worst);
  dist::barrier();
}

TEST_CASE("DistributedDataParallel over the dp groups of a mesh, tensor parallel inside", "[distributed][model_parallel]") {
  ensure_group();
  const int n = dist::get_world_size();
  const int64_t tp_size = (n % 2 == 0 && n > 2) ? 2 : 1, dp_size = n / tp_size;
  dist::DeviceMesh mesh = dist::init_device_mesh("cpu", {dp_size, tp_size}, {"dp", "tp"});
  auto tp = mesh.get_group("tp"), dp = mesh.get_group("dp");
  const int64_t d = mesh.get_local_rank("dp");
  examples::GPTConfig cfg;
  cfg.vocab_size = 11;
  cfg.block_size = 8;
  cfg.n_layer = 2;
  cfg.n_head = 4;
  cfg.n_embd = 16;
  const int64_t B = 2, T = 8;

  tinytorch::manual_seed(5);
  auto whole = std::make_shared<examples::GPT>(cfg);  // one process, the dp_size batches together
  tinytorch::manual_seed(5);
  auto split = std::make_shared<examples::GPT>(cfg);
  examples::parallelize_gpt(*split, *tp);
  dist::DDPOptions o;
  o.process_group = dp;
  dist::DistributedDataParallel ddp(split, o);
  CHECK(ddp.world_size() == dp_size);
  auto opt_whole = whole->configure_optimizers(0.1, 1e-3, {0.9, 0.95});
  auto opt_split = split->configure_optimizers(0.1, 1e-3, {0.9, 0.95});

  tinytorch::Generator gen(17);
  double worst = 0.0;
  for (int step = 0; step < 20; ++step) {
    Tensor data = tinytorch::randint(0, cfg.vocab_size, {dp_size * B, T + 1}, tinytorch::kInt64, &gen);
    Tensor idx = data.narrow(1, 0, T).contiguous(), targets = data.narrow(1, 1, T).contiguous();
    opt_whole->zero_grad();
    Tensor lw = whole->loss(whole->forward(idx), targets);
    lw.backward();
    opt_whole->step();
    // This replica's rows: batch d of dp_size.
    Tensor mine = idx.narrow(0, d * B, B).contiguous(), my_targets = targets.narrow(0, d * B, B).contiguous();
    opt_split->zero_grad();
    Tensor ls = split->loss(ddp.forward(mine), my_targets);
    ls.backward();
    opt_split->step();
    Tensor mean = ls.detach().clone();
    dist::all_reduce(mean, ReduceOp::AVG, *dp);  // the replicas' mean = the loss of the whole batch
    worst = std::max(worst, std::abs(mean.item<double>() - lw.item<double>()));
  }
  INFO("largest loss difference over 20 steps: " << worst);
  CHECK(worst < 1e-5);
  std::map<std::string, Tensor> whole_params;
  for (auto& [name, p] : whole->named_parameters()) whole_params[name] = p;
  for (auto& [name, p] : split->named_parameters()) {
    INFO(name);
    CHECK(max_abs_diff(p, gpt_shard(name, whole_params[name], tp_size, tp->rank())) < 1e-5);
  }
}

// ---- pipeline parallelism ---------------------------------------------------------------------

namespace {

examples::GPTConfig pipeline_config() {
  examples::GPTConfig cfg;
  cfg.vocab_size = 11;
  cfg.block_size = 8;
  cfg.n_layer = 4;  // 4 stages at most
  cfg.n_head = 2;
  cfg.n_embd = 16;
  return cfg;
}

/// Micro-batch k of M of a (B, ...) batch.
std::vector<Tensor> split_batch(const Tensor& t, int64_t M) {
  std::vector<Tensor> out;
  const int64_t b = t.size(0) / M;
  for (int64_t k = 0; k < M; ++k) out.push_back(t.narrow(0, k * b, b).contiguous());
  return out;
}

}  // namespace

TEST_CASE("a GPT cut into pipeline stages trains like the whole GPT (GPipe and 1F1B)", "[distributed][model_parallel]") {
  ensure_group();
  const int P = dist::get_world_size(), s = dist::get_rank();
  std::vector<int> everyone;
  for (int k = 0; k < P; ++k) everyone.push_back(k);
  auto pp_group = dist::new_group(everyone, "pp");
  auto embedding_group = P > 1 ? dist::new_group({0, P - 1}, "embedding") : nullptr;
  const examples::GPTConfig cfg = pipeline_config();
  const int64_t B = 8, T = 8;
  auto loss_fn = [](const Tensor& logits, const Tensor& targets) {
    return tinytorch::cross_entropy(logits.reshape({-1, logits.size(2)}), targets.reshape({-1}));
  };

  for (auto schedule : {dist::pipeline::Schedule::GPipe, dist::pipeline::Schedule::OneFOneB}) {
    for (int64_t M : {1, 2, 4, 8}) {
      INFO(dist::pipeline::schedule_name(schedule) << ", M = " << M);
      tinytorch::manual_seed(21);
      examples::GPT whole(cfg);
      tinytorch::manual_seed(21);
      examples::GPT full_copy(cfg);  // each rank builds the whole model, then keeps its stage
      auto stage_module = std::make_shared<examples::GPTStage>(full_copy, s, P);
      const Tensor example = s == 0 ? tinytorch::zeros({B / M, T}, tinytorch::kInt64)
                                    : tinytorch::zeros({B / M, T, cfg.n_embd});
      dist::PipelineStage stage(stage_module, *pp_group, example);
      auto opt_whole = whole.configure_optimizers(0.1, 1e-3, {0.9, 0.95});
      auto opt_stage = examples::configure_adamw(stage_module->parameters(), 0.1, 1e-3, {0.9, 0.95});
      std::map<std::string, Tensor> whole_params;
      for (auto& [name, p] : whole.named_parameters()) whole_params[name] = p;

      tinytorch::Generator gen(33);
      double worst = 0.0;
      for (int step = 0; step < kSteps; ++step) {
        Tensor d = tinytorch::randint(0, cfg.vocab_size, {B, T + 1}, tinytorch::kInt64, &gen);
        Tensor idx = d.narrow(1, 0, T).contiguous(), targets = d.narrow(1, 1, T).contiguous();
        opt_whole->zero_grad();
        Tensor lw = loss_fn(whole.forward(idx), targets);
        lw.backward();
        tinytorch::nn::utils::clip_grad_norm_(whole.parameters(), 1.0);
        opt_stage->zero_grad();
        dist::PipelineStepStats st = stage.step(M, split_batch(idx, M), split_batch(targets, M), loss_fn, schedule);
        stage_module->tie_embedding_grads(embedding_group.get());
        if (step == 0) {
          CHECK(st.peak_in_flight ==
                (schedule == dist::pipeline::Schedule::GPipe ? M : std::min<int64_t>(P - s, M)));
          for (auto& [name, p] : stage_module->named_parameters()) {
            INFO(name);
            REQUIRE(whole_params.count(name) == 1);
            CHECK(max_abs_diff(p.grad(), whole_params[name].grad()) < 1e-6);
          }
        }
        dist::clip_grad_norm_across_(stage_module->norm_parameters(), stage_module->parameters(), 1.0, *pp_group);
        opt_whole->step();
        opt_stage->step();
        worst = std::max(worst, std::abs(st.loss - lw.item<double>()));
      }
      INFO("largest loss difference over " << kSteps << " steps: " << worst);
      CHECK(worst < 1e-5);
      // The weights after kSteps steps: Adam divides by sqrt(v), so gradients that differ in the
      // last bits (summed over micro-batches in another order) move tiny weights by ~1e-5.
      for (auto& [name, p] : stage_module->named_parameters()) {
        INFO(name);
        CHECK(max_abs_diff(p, whole_params[name]) < 1e-4);
      }
    }
  }

  // Stage shapes that disagree (the last stage expects 7 positions), and a stage whose module
  // refuses its example input (a width of 17): every rank throws.
  if (P > 1) {
    tinytorch::manual_seed(21);
    examples::GPT model(cfg);
    auto stage_module = std::make_shared<examples::GPTStage>(model, s, P);
    auto example = [&](int64_t t, int64_t c) {
      if (s == 0) return tinytorch::zeros({2, T}, tinytorch::kInt64);
      return s == P - 1 ? tinytorch::zeros({2, t, c}) : tinytorch::zeros({2, T, cfg.n_embd});
    };
    CHECK_THROWS_WITH(dist::PipelineStage(stage_module, *pp_group, example(7, cfg.n_embd)),
                      Catch::Contains(prefix() + "PipelineStage: stage " + std::to_string(P - 2) +
                                      " sends activations of [2, 8, 16] torch.float32 but stage " +
                                      std::to_string(P - 1) + " expects [2, 7, 16] torch.float32"));
    CHECK_THROWS_WITH(dist::PipelineStage(stage_module, *pp_group, example(T, 17)),
                      Catch::Contains(prefix() + "PipelineStage: stage " + std::to_string(P - 1) +
                                      " cannot run its module on its example_input [2, 8, 17] torch.float32: "
                                      "layer_norm: Given normalized_shape=[16]"));
  }
  tinytorch::manual_seed(21);
  examples::GPT small(cfg);
  CHECK_THROWS_WITH(examples::GPTStage(small, 0, 5), Catch::Contains("GPTStage: 5 pipeline stages for 4 blocks"));
  dist::barrier();
}

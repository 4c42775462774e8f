// tests/test_accumulation.cpp — chapter 09: gradient accumulation, activation checkpointing and
// the memory they save.
//   * k micro-batches of b rows, each loss / k, accumulate the gradient of one batch of k*b rows
//     (MSE and cross-entropy, mean reduction) to 1e-6, and train to the same weights; without the
//     division the gradient is exactly k times too large;
//   * utils::checkpoint / checkpoint_sequential: the same gradients, bit for bit, as without
//     checkpointing (float64), for the input and for the parameters inside; gradcheck; Dropout
//     inside recomputes the same mask (the RNG state is saved and replayed); no input requiring
//     grad (use_reentrant=False semantics); the error paths;
//   * memory_allocated / max_memory_allocated / reset_peak_memory_stats count tensor bytes;
//   * examples/checkpoint_memory.hpp: the exact peak bytes and layer-forward counts that
//     chapters/09-gradient-accumulation.md and build/bin/checkpoint_memory print.
// The no_sync half of the chapter is tests/mpi/test_ddp.cpp ("no_sync over k micro-steps ...").
// Headers under test: utils/checkpoint.hpp, core/allocator.hpp (memory counters).
// Chapter: chapters/09-gradient-accumulation.md. Tags: [ch09].
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include <tinytorch/tinytorch.hpp>

#include "../examples/checkpoint_memory.hpp"

using namespace tinytorch;
using Catch::Contains;

namespace {

std::shared_ptr<nn::Sequential> mlp(uint64_t seed) {  // 6 -> 16 -> ReLU -> 3
  manual_seed(seed);
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(6, 16), std::make_shared<nn::ReLU>(),
                                          std::make_shared<nn::Linear>(16, 3));
}

std::vector<double> grads_of(const nn::Module& m) {
  std::vector<double> out;
  for (const Tensor& p : m.parameters()) {
    auto g = p.grad().tolist<double>();
    out.insert(out.end(), g.begin(), g.end());
  }
  return out;
}

std::vector<double> params_of(const nn::Module& m) {
  std::vector<double> out;
  for (const Tensor& p : m.parameters()) {
    auto v = p.tolist<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b, double scale_b = 1) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - scale_b * b[i]));
  return d;
}

double max_abs(const std::vector<double>& a) {
  double m = 0;
  for (double v : a) m = std::max(m, std::fabs(v));
  return m;
}

// The gradient of `loss_fn` over the whole batch, and the one accumulated over k micro-batches.
template <class LossFn>
void accumulate(nn::Module& model, const Tensor& x, const Tensor& y, int64_t k, bool divide, LossFn loss_fn) {
  const int64_t b = x.size(0) / k;
  for (int64_t j = 0; j < k; ++j) {
    Tensor loss = loss_fn(model.forward(x.narrow(0, j * b, b)), y.narrow(0, j * b, b));
    if (divide) loss = loss / static_cast<double>(k);
    loss.backward();
  }
}

}  // namespace

// ---- gradient accumulation ---------------------------------------------------------------------

TEST_CASE("k micro-batches of b, each loss / k, give the gradient of one batch of k*b", "[ch09]") {
  const int64_t k = 4, b = 8;
  Generator g(3);
  Tensor x = randn({k * b, 6}, {}, &g);
  Tensor y_reg = randn({k * b, 3}, {}, &g);
  Tensor y_cls = randint(0, 3, {k * b}, kInt64, &g);
  auto mse = [](const Tensor& out, const Tensor& t) { return mse_loss(out, t); };
  auto ce = [](const Tensor& out, const Tensor& t) { return cross_entropy(out, t); };
  for (int which = 0; which < 2; ++which) {
    INFO((which == 0 ? "mse_loss" : "cross_entropy") << " (mean reduction)");
    const Tensor& y = which == 0 ? y_reg : y_cls;
    auto full = mlp(1), micro = mlp(1), bug = mlp(1);
    accumulate(*full, x, y, 1, true, [&](const Tensor& o, const Tensor& t) { return which == 0 ? mse(o, t) : ce(o, t); });
    accumulate(*micro, x, y, k, true, [&](const Tensor& o, const Tensor& t) { return which == 0 ? mse(o, t) : ce(o, t); });
    accumulate(*bug, x, y, k, false, [&](const Tensor& o, const Tensor& t) { return which == 0 ? mse(o, t) : ce(o, t); });
    const auto gf = grads_of(*full), gm = grads_of(*micro), gb = grads_of(*bug);
    REQUIRE(max_abs(gf) > 1e-2);
    CHECK(max_abs_diff(gm, gf) < 1e-6);  // float32: only the order of the additions differs
    // The bug: backward on the undivided micro-batch losses sums k means: k times the gradient.
    CHECK(max_abs_diff(gb, gf, static_cast<double>(k)) < 4e-6);
    CHECK(max_abs_diff(gb, gf) > 0.5 * max_abs(gf));
  }
}

TEST_CASE("accumulated SGD steps end at the weights of full-batch steps; the bug does not", "[ch09]") {
  const int64_t k = 4, b = 8;
  Generator g(5);
  auto full = mlp(2), micro = mlp(2), bug = mlp(2);
  optim::SGD of(full->parameters(), 0.1, 0.9), om(micro->parameters(), 0.1, 0.9), ob(bug->parameters(), 0.1, 0.9);
  std::vector<double> loss_full, loss_micro;
  for (int step = 0; step < 5; ++step) {
    Tensor x = randn({k * b, 6}, {}, &g), y = randn({k * b, 3}, {}, &g);
    of.zero_grad();
    Tensor l = mse_loss(full->forward(x), y);
    l.backward();
    of.step();
    loss_full.push_back(l.item<double>());
    om.zero_grad();  // once per k micro-batches, not once per micro-batch
    double lm = 0;
    for (int64_t j = 0; j < k; ++j) {
      Tensor lj = mse_loss(micro->forward(x.narrow(0, j * b, b)), y.narrow(0, j * b, b)) / static_cast<double>(k);
      lj.backward();
      lm += lj.item<double>();  // the batch loss, for the log
    }
    om.step();
    loss_micro.push_back(lm);
    ob.zero_grad();
    accumulate(*bug, x, y, k, false, [](const Tensor& o, const Tensor& t) { return mse_loss(o, t); });
    ob.step();
  }
  CHECK(max_abs_diff(loss_micro, loss_full) < 1e-6);  // the same loss curve
  CHECK(max_abs_diff(params_of(*micro), params_of(*full)) < 1e-6);
  CHECK(max_abs_diff(params_of(*bug), params_of(*full)) > 1e-2);  // a 4x learning rate
}

// ---- memory counters ---------------------------------------------------------------------------

TEST_CASE("memory_allocated counts tensor bytes; max_memory_allocated keeps the peak", "[ch09]") {
  const size_t base = memory_allocated();
  reset_peak_memory_stats();
  CHECK(max_memory_allocated() == base);
  {
    Tensor a = zeros({1000});          // 4000 bytes
    Tensor v = a.view({10, 100});      // a view: no new storage
    Tensor d = zeros({3}, kFloat64);   // 24 bytes (kept inside the Storage object, still counted)
    CHECK(memory_allocated() == base + 4024);
    {
      Tensor big = zeros({1 << 20});
      CHECK(memory_allocated() == base + 4024 + (size_t{4} << 20));
    }
    CHECK(memory_allocated() == base + 4024);
    CHECK(max_memory_allocated() == base + 4024 + (size_t{4} << 20));
    reset_peak_memory_stats();
    CHECK(max_memory_allocated() == base + 4024);
  }
  CHECK(memory_allocated() == base);
}

// ---- activation checkpointing ------------------------------------------------------------------

namespace {
struct Mlp64 {  // float64 weights of a 5 -> 7 -> 4 MLP with tanh, as plain leaves
  Tensor w1, b1, w2, b2;
  explicit Mlp64(uint64_t seed) {
    Generator g(seed);
    w1 = randn({7, 5}, kFloat64, &g).requires_grad_();
    b1 = randn({7}, kFloat64, &g).requires_grad_();
    w2 = randn({4, 7}, kFloat64, &g).requires_grad_();
    b2 = randn({4}, kFloat64, &g).requires_grad_();
  }
  Tensor operator()(const Tensor& x) const { return linear(tanh(linear(x, w1, b1)), w2, b2); }  // (N,5)->(N,4)
  std::vector<Tensor> params() const { return {w1, b1, w2, b2}; }
};
std::vector<std::vector<double>> grads(const std::vector<Tensor>& ts) {
  std::vector<std::vector<double>> out;
  for (const Tensor& t : ts) out.push_back(t.grad().defined() ? t.grad().tolist<double>() : std::vector<double>{});
  return out;
}
}  // namespace

TEST_CASE("checkpoint gives the same gradients, bit for bit, as the plain forward", "[ch09]") {
  Generator g(11);
  Tensor x0 = randn({3, 5}, kFloat64, &g);
  Mlp64 plain(1), ckpt(1);
  Tensor xa = x0.clone().requires_grad_(), xb = x0.clone().requires_grad_();
  Tensor ya = plain(xa);
  Tensor yb = utils::checkpoint([&](const Tensor& x) { return ckpt(x); }, xb);
  CHECK(yb.grad_fn()->name() == "CheckpointFunctionBackward");
  CHECK(ya.tolist<double>() == yb.tolist<double>());
  (ya * ya).sum().backward();
  (yb * yb).sum().backward();
  CHECK(xa.grad().tolist<double>() == xb.grad().tolist<double>());  // exact
  CHECK(grads(plain.params()) == grads(ckpt.params()));             // exact

  SECTION("a second backward accumulates into .grad, like without checkpointing") {
    (plain(xa) * 2.0).sum().backward();
    utils::checkpoint([&](const Tensor& x) { return ckpt(x) * 2.0; }, xb).sum().backward();
    CHECK(grads(plain.params()) == grads(ckpt.params()));
  }
  SECTION("the input needs no grad: the parameters inside still get theirs (use_reentrant=False)") {
    Mlp64 p2(2), c2(2);
    Tensor y2 = utils::checkpoint([&](const Tensor& x) { return c2(x); }, x0);
    REQUIRE(y2.requires_grad());
    y2.sum().backward();
    p2(x0).sum().backward();
    CHECK(grads(p2.params()) == grads(c2.params()));
  }
  SECTION("nested: checkpoint inside checkpoint") {
    Mlp64 p3(3), c3(3);
    Tensor xc = x0.clone().requires_grad_(), xd = x0.clone().requires_grad_();
    p3(tanh(xc * 2.0)).sum().backward();
    auto inner = [](const Tensor& x) { return utils::checkpoint([](const Tensor& z) { return tanh(z * 2.0); }, x); };
    utils::checkpoint([&](const Tensor& x) { return c3(inner(x)); }, xd).sum().backward();
    CHECK(xc.grad().tolist<double>() == xd.grad().tolist<double>());
    CHECK(grads(p3.params()) == grads(c3.params()));
  }
}

TEST_CASE("checkpoint passes gradcheck for its input and for the parameters it uses", "[ch09]") {
  Generator g(13);
  Tensor x = randn({2, 5}, kFloat64, &g).requires_grad_();
  Mlp64 m(4);
  auto f = [&](const std::vector<Tensor>& in) {
    Mlp64 local = m;
    local.w1 = in[1];
    local.b2 = in[2];
    return utils::checkpoint([local](const Tensor& z) { return local(z); }, in[0]);
  };
  CHECK(gradcheck(f, {x, m.w1, m.b2}));
}

TEST_CASE("checkpoint replays the RNG: Dropout inside recomputes the same mask", "[ch09]") {
  auto run = [](bool checkpointed, bool preserve) {
    manual_seed(21);
    auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(6, 32), std::make_shared<nn::Dropout>(0.5),
                                                  std::make_shared<nn::Linear>(32, 3));
    Tensor x = randn({4, 6});
    Tensor y = checkpointed ? utils::checkpoint([&](const Tensor& z) { return model->forward(z); }, x, preserve)
                            : model->forward(x);
    y.pow(2.0).sum().backward();
    std::vector<double> out = grads_of(*model);
    out.push_back(rand({1}).item<double>());  // where the default generator stands afterwards
    return out;
  };
  const auto plain = run(false, true);
  CHECK(run(true, true) == plain);  // same mask, same gradients, generator left where the forward left it
  CHECK(run(true, false) != plain); // without the replay the recompute draws a new mask: wrong gradients
}

TEST_CASE("checkpoint's special cases and errors", "[ch09]") {
  Mlp64 m(5);
  auto fn = [&](const Tensor& z) { return m(z); };
  Generator g(17);
  Tensor x = randn({2, 5}, kFloat64, &g).requires_grad_();
  SECTION("under NoGradGuard it is just fn(x)") {
    NoGradGuard ng;
    Tensor y = utils::checkpoint(fn, x);
    CHECK_FALSE(y.requires_grad());
  }
  SECTION("nothing requires grad: neither does the output (no warning, as use_reentrant=False)") {
    Tensor c = randn({2, 5}, kFloat64, &g);
    Tensor y = utils::checkpoint([](const Tensor& z) { return z * 2.0; }, c);
    CHECK_FALSE(y.requires_grad());
  }
  SECTION("fn returning its input still gives a fresh tensor with the node") {
    Tensor y = utils::checkpoint([](const Tensor& z) { return z; }, x);
    CHECK(y.grad_fn() != nullptr);
    CHECK(x.grad_fn() == nullptr);
    y.sum().backward();
    CHECK(x.grad().tolist<double>() == std::vector<double>(10, 1.0));
  }
  SECTION("the input changed in place before backward") {
    Tensor h = x * 1.0;
    Tensor y = utils::checkpoint(fn, h);
    {
      NoGradGuard ng;
      h.add_(1.0);
    }
    CHECK_THROWS_WITH(y.sum().backward(), Contains("modified by an inplace operation"));
  }
  SECTION("a second backward without retain_graph") {
    Tensor y = utils::checkpoint(fn, x).sum();
    y.backward();
    CHECK_THROWS_WITH(y.backward(), Contains("backward through the graph a second time"));
  }
  SECTION("retain_graph: a second backward recomputes again and accumulates") {
    Tensor y = utils::checkpoint(fn, x).sum();
    y.backward(Tensor(), true);
    auto once = x.grad().tolist<double>();
    y.backward();
    auto twice = x.grad().tolist<double>();
    for (size_t i = 0; i < once.size(); ++i) CHECK(twice[i] == 2 * once[i]);
  }
  SECTION("a function that computes something else the second time") {
    int calls = 0;
    Tensor y = utils::checkpoint([&](const Tensor& z) { return ++calls == 1 ? z * 2.0 : z.sum(0); }, x);
    CHECK_THROWS_WITH(y.sum().backward(), Contains("Recomputed values for the output have different metadata"));
  }
  SECTION("bad arguments") {
    CHECK_THROWS_WITH(utils::checkpoint(nullptr, x), Contains("checkpoint: function is empty"));
    CHECK_THROWS_WITH(utils::checkpoint(fn, Tensor()), Contains("undefined"));
    // An fn returning an undefined tensor, whether or not x requires grad (found by breaking,
    // issue 11: with x not requiring grad the message did not name checkpoint).
    auto undefined_fn = [](const Tensor&) { return Tensor(); };
    CHECK_THROWS_WITH(utils::checkpoint(undefined_fn, x), Contains("checkpoint: the function returned an undefined tensor"));
    CHECK_THROWS_WITH(utils::checkpoint(undefined_fn, x.detach()),
                      Contains("checkpoint: the function returned an undefined tensor"));
    // An integer output cannot require grad (it did, and an int64 tensor carried a graph).
    Tensor idx = utils::checkpoint([](const Tensor& z) { return z.argmax(); }, x);
    CHECK(idx.dtype() == kInt64);
    CHECK_FALSE(idx.requires_grad());
    nn::Sequential seq(std::make_shared<nn::ReLU>(), std::make_shared<nn::ReLU>());
    CHECK_THROWS_WITH(utils::checkpoint_sequential(seq, 0, x), Contains("segments must be between 1 and the number of modules (2), got 0"));
    CHECK_THROWS_WITH(utils::checkpoint_sequential(seq, 3, x), Contains("got 3"));
    // A null module is an error, not a null dereference (found by breaking, issue 11).
    std::vector<std::shared_ptr<nn::Module>> with_null{std::make_shared<nn::ReLU>(), nullptr};
    CHECK_THROWS_WITH(utils::checkpoint_sequential(with_null, 1, x), Contains("checkpoint_sequential: module 1 is null"));
  }
}

// ---- the chapter's numbers (build/bin/checkpoint_memory) -----------------------------------------

TEST_CASE("checkpoint_memory: peak bytes and layer forwards of the 48-layer MLP", "[ch09][examples]") {
  const int64_t L = 48, H = 64, B = 1024;
  const size_t A = B * H * 4;  // one activation: 262144 bytes
  struct Row {
    int64_t segments;
    size_t peak_bytes;
    int64_t layer_forwards;
  };
  // build/bin/checkpoint_memory's table (chapters/09-gradient-accumulation.md, section 9.5)
  const std::vector<Row> expected{{0, 13123848, 48}, {2, 7756040, 72},  {4, 4934920, 84},  {6, 4344072, 88},
                                  {7, 5259528, 84},  {8, 4310792, 90},  {12, 4801800, 92}, {16, 5571592, 93},
                                  {24, 7389960, 94}, {48, 13402632, 95}};
  auto none = examples::deep_mlp_step(L, H, B, 0);
  for (const Row& row : expected) {
    INFO("segments " << row.segments);
    auto r = row.segments == 0 ? none : examples::deep_mlp_step(L, H, B, row.segments);
    CHECK(r.peak_bytes == row.peak_bytes);
    CHECK(r.layer_forwards == row.layer_forwards);
    CHECK(r.loss == none.loss);
    CHECK(r.grads == none.grads);  // checkpointing changes no bit of the gradients
  }
  CHECK(A == 262144);
}

TEST_CASE("checkpoint_memory: accumulation keeps the gradient and divides the activations by k", "[ch09][examples]") {
  const int64_t L = 48, H = 64, B = 1024;
  // build/bin/checkpoint_memory's accumulation table (chapter section 9.2): peak bytes for k = 1, 2, 4, 8
  const std::vector<size_t> peak{13107216, 7352336, 4075536, 2437136};
  auto one = examples::deep_mlp_accumulate(L, H, B, 1);
  CHECK(one.peak_bytes == peak[0]);
  for (int64_t k : {2, 4, 8}) {
    INFO("k = " << k);
    auto r = examples::deep_mlp_accumulate(L, H, B, k);
    CHECK(r.peak_bytes == peak[k == 2 ? 1 : k == 4 ? 2 : 3]);
    CHECK(max_abs_diff(r.grads, one.grads) < 1e-6);
    CHECK(std::fabs(r.loss - one.loss) < 1e-6);
  }
  auto bug = examples::deep_mlp_accumulate(L, H, B, 4, false);
  CHECK(max_abs_diff(bug.grads, one.grads, 4.0) < 1e-6);
  CHECK(one.grads.size() * 4 == 798720);  // the gradients: 48 x (64 x 64 + 64) floats
}

// tests/test_autograd.cpp — the autograd: gradients of every op against PyTorch
// (tests/reference/ops_ref.hpp), gradcheck in float64 for every differentiable op, grad_fn names,
// and the engine's behaviour: non-scalar backward, accumulation, diamonds and reused leaves,
// broadcast gradients, detach, NoGradGuard, hooks, post-accumulate-grad hooks, retain_graph,
// in-place checks on leaves, requires_grad_ and is_leaf (in-place autograd: test_inplace.cpp).
// Headers under test: autograd/{node,engine,functions,grad_mode,gradcheck,dot}.hpp, functional.hpp.
// Chapter: chapters/02-autograd.md (its numbers and graphs: the "chapter 02" section at the end,
// against tests/reference/autograd_graph_ref.hpp from gen_autograd_graph.py). Tags: [ch02][autograd].
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <tinytorch/autograd/dot.hpp>
#include <tinytorch/autograd/engine.hpp>
#include <tinytorch/autograd/function.hpp>
#include <tinytorch/autograd/gradcheck.hpp>
#include <tinytorch/functional.hpp>

#include "ops_cases.hpp"
#include "reference/autograd_graph_ref.hpp"

using namespace tinytorch;
using Catch::Contains;

namespace {
std::vector<double> vals(const Tensor& t) { return t.tolist<double>(); }
TensorOptions rg(DType d = kFloat32) { return TensorOptions(d).requires_grad(true); }
}  // namespace

// ---- gradients of every op against PyTorch -----------------------------------------------------

TEST_CASE("gradients of every op match PyTorch for a fixed upstream gradient", "[ch02][autograd]") {
  int checked = 0;
  for (const auto& c : ops_reference::kCases) {
    const auto* op = ops_test::find_case(c.name);
    REQUIRE(op != nullptr);
    const std::string name = c.name;
    if (!ops_test::find_array(name + ".gout")) continue;  // not differentiable (argmax)
    INFO("case " << name);
    auto in = ops_test::load_inputs(c, true);
    Tensor out = op->fn(in);
    REQUIRE(out.requires_grad());
    out.backward(ops_test::load(name + ".gout"));
    for (int i = 0; i < c.n_inputs; ++i) {
      const std::string gname = name + ".grad" + std::to_string(i);
      if (!ops_test::find_array(gname)) {
        CHECK_FALSE(in[i].grad().defined());  // int64 targets get no gradient
        continue;
      }
      INFO("input " << i);
      REQUIRE(in[i].grad().defined());
      CHECK(in[i].grad().dtype() == in[i].dtype());
      std::string err = ops_test::compare(in[i].grad(), gname);
      INFO(err);
      CHECK(err.empty());
      ++checked;
    }
  }
  CHECK(checked >= 150);
}

TEST_CASE("gradients match PyTorch when the leaves are non-contiguous", "[ch02][autograd]") {
  for (const auto& c : ops_reference::kCases) {
    const std::string name = c.name;
    if (!ops_test::find_array(name + ".gout") || name.rfind("view", 0) == 0) continue;  // view() needs a viewable layout
    INFO("case " << name);
    std::vector<Tensor> in;
    for (auto& t : ops_test::load_inputs(c, false)) {
      Tensor s = ops_test::strided_copy(t);
      if (s.is_floating_point()) s.requires_grad_();
      in.push_back(s);
    }
    Tensor out = ops_test::find_case(c.name)->fn(in);
    out.backward(ops_test::strided_copy(ops_test::load(name + ".gout")));
    for (int i = 0; i < c.n_inputs; ++i) {
      const std::string gname = name + ".grad" + std::to_string(i);
      if (!ops_test::find_array(gname)) continue;
      INFO("input " << i);
      std::string err = ops_test::compare(in[i].grad(), gname);
      INFO(err);
      CHECK(err.empty());
    }
  }
}

TEST_CASE("derivatives at kinks follow PyTorch's conventions", "[ch02][autograd]") {
  Tensor x = tensor({0.0, -1.0, 1.0}, rg());
  x.abs().sum().backward();
  CHECK(vals(x.grad()) == std::vector<double>{0, -1, 1});  // sign(0) = 0
  x.set_grad(Tensor());
  x.relu().sum().backward();
  CHECK(vals(x.grad()) == std::vector<double>{0, 0, 1});
  x.set_grad(Tensor());
  x.clamp(-1, 1).sum().backward();
  CHECK(vals(x.grad()) == std::vector<double>{1, 1, 1});  // the bounds pass the gradient
  x.set_grad(Tensor());
  x.clamp_min(0).sum().backward();
  CHECK(vals(x.grad()) == std::vector<double>{1, 0, 1});
  x.set_grad(Tensor());
  x.sqrt().sum().backward();
  auto g = vals(x.grad());
  CHECK(std::isinf(g[0]));
  CHECK(std::isnan(g[1]));
  CHECK(g[2] == 0.5);
  Tensor y = tensor({2, 2, 1}, rg());
  std::get<0>(y.max(0)).backward();
  CHECK(vals(y.grad()) == std::vector<double>{1, 0, 0});  // first index on ties
}

TEST_CASE("gradcheck passes in float64 for every differentiable op", "[ch02][autograd]") {
  int checked = 0;
  for (const auto& c : ops_reference::kCases) {
    if (!c.gradcheck) continue;
    const auto* op = ops_test::find_case(c.name);
    REQUIRE(op != nullptr);
    INFO("case " << c.name);
    std::vector<Tensor> all = ops_test::load_inputs(c, true, true);
    std::vector<Tensor> diff;
    std::vector<size_t> where;
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i].is_floating_point()) {
        diff.push_back(all[i]);
        where.push_back(i);
      }
    auto f = [&](const std::vector<Tensor>& xs) {
      std::vector<Tensor> args = all;
      for (size_t k = 0; k < xs.size(); ++k) args[where[k]] = xs[k];
      return op->fn(args);
    };
    bool ok = false;
    try {
      ok = gradcheck(f, diff);
    } catch (const Error& e) {
      FAIL_CHECK(e.what());
    }
    CHECK(ok);
    ++checked;
  }
  CHECK(checked >= 95);
}

TEST_CASE("gradcheck passes for compositions: broadcasting, views of reused leaves, losses", "[ch02][autograd]") {
  Generator g(3);
  auto r = [&](Shape s) { return rand(s, rg(kFloat64), &g) - 0.5; };
  auto leaf = [&](Shape s) { return r(s).detach().requires_grad_(); };
  using Vs = std::vector<Tensor>;
  // (B, M, K) @ (K) with a broadcast bias, softmax over the last dim, through a transpose
  CHECK(gradcheck([](const Vs& x) { return (matmul(x[0], x[1]).unsqueeze(-1) + x[2]).transpose(0, 1).softmax(-1); },
                  {leaf({2, 3, 4}), leaf({4}), leaf({1, 5})}));
  // a leaf used through two views of itself
  CHECK(gradcheck([](const Vs& x) { return x[0].t().matmul(x[0]) + x[0].narrow(0, 1, 3).sum(0); },
                  {leaf({4, 3})}));
  // cat of slices of one leaf, then max over a dim and log_softmax
  CHECK(gradcheck([](const Vs& x) {
                    auto p = x[0].split(2, 1);
                    return std::get<0>(cat({p[1], p[0] * 2.0}, 0).max(1, true)).log_softmax(0);
                  },
                  {leaf({3, 4})}));
  // expand of a 0-d tensor, division by a broadcast denominator, mean over a dim
  CHECK(gradcheck([](const Vs& x) { return (x[0].expand({2, 3}) / (x[1].exp() + 1.0)).mean(1); },
                  {leaf({}), leaf({3})}));
  // a two-layer MLP with cross entropy
  Tensor target = tensor({2, 0, 1, 2}, kInt64);
  CHECK(gradcheck([&](const Vs& x) { return cross_entropy(linear(linear(x[0], x[1], x[2]).tanh(), x[3]), target); },
                  {leaf({4, 5}), leaf({6, 5}), leaf({6}), leaf({3, 6})}));
  // mse with a target that also requires grad, squeezed and permuted
  CHECK(gradcheck([](const Vs& x) { return mse_loss(x[0].permute({1, 0, 2}).squeeze(2), x[1], Reduction::Sum); },
                  {leaf({2, 3, 1}), leaf({3, 2})}));
  // sigmoid, clamp_min, sqrt, log chained
  CHECK(gradcheck([](const Vs& x) { return (x[0].sigmoid().clamp_min(0.3) + 1.0).sqrt().log() * x[0].abs(); },
                  {leaf({5})}));
}

TEST_CASE("gradcheck detects a wrong gradient and rejects bad inputs", "[ch02][autograd]") {
  Tensor x = tensor({0.5, 1.5, -2.0}, rg(kFloat64));
  auto wrong = [](const std::vector<Tensor>& v) { return v[0] * v[0].detach(); };  // d/dx is 2x, backward says x
  REQUIRE_THROWS_WITH(gradcheck(wrong, {x}), Contains("gradcheck: Jacobian mismatch for output 0 with respect to input 0"));
  GradcheckOptions quiet;
  quiet.raise_exception = false;
  CHECK_FALSE(gradcheck(wrong, {x}, quiet));
  Tensor f32 = tensor({1.0}, rg());
  REQUIRE_THROWS_WITH(gradcheck([](const std::vector<Tensor>& v) { return v[0] * 2.0; }, {f32}),
                      Contains("gradcheck: input 0 must be a float64 leaf with requires_grad=true"));
  Tensor no_grad = tensor({1.0}, kFloat64);
  REQUIRE_THROWS_WITH(gradcheck([](const std::vector<Tensor>& v) { return v[0] * 2.0; }, {no_grad}),
                      Contains("must be a float64 leaf"));
  REQUIRE_THROWS_WITH(gradcheck([](const std::vector<Tensor>& v) { return v[0].detach() * 2.0; }, {x}),
                      Contains("gradcheck: output does not require grad but the numerical gradient of input 0 is nonzero"));
  Tensor strided = tensor({1, 2, 3, 4}, {2, 2}, kFloat64).t().requires_grad_();
  REQUIRE_THROWS_WITH(gradcheck([](const std::vector<Tensor>& v) { return v[0] * 2.0; }, {strided}),
                      Contains("gradcheck: inputs must be contiguous"));
  CHECK_FALSE(x.grad().defined());  // gradcheck leaves no gradient behind, even on a mismatch
  x.set_grad(tensor({7, 8, 9}, kFloat64));
  CHECK(gradcheck([](const std::vector<Tensor>& v) { return v[0].exp(); }, {x}));
  CHECK(vals(x.grad()) == std::vector<double>{7, 8, 9});  // an existing .grad survives
}

// ---- grad_fn names ----------------------------------------------------------------------------

TEST_CASE("grad_fn names match PyTorch's, except where tinytorch records a different graph", "[ch02][autograd]") {
  // case -> {our out.grad_fn, our next node along input 0}, where PyTorch 1.13 records other nodes:
  //  matmul: PyTorch picks dot/mv/bmm+views; tinytorch builds it from mm/bmm and (un)squeeze/expand.
  //  stack:  StackBackward0 there; cat of unsqueezed inputs here.
  //  chunk/split: one SplitBackward0 there; one SliceBackward0 per piece here (one-output nodes).
  //  reshape/flatten of a contiguous tensor: 1.13's ReshapeAliasBackward0 is ViewBackward0 in 2.x.
  //  linear without bias: PyTorch uses mm; tinytorch's Linear node is always AddmmBackward0.
  //  2.0 / x: PyTorch reciprocal() * 2 (MulBackward0, Python scalar); here pow(x, -1) * 2.0.
  const std::map<std::string, std::pair<std::string, std::string>> ours = {
      {"matmul_1d_1d", {"SumBackward0", "MulBackward0"}},
      {"matmul_2d_1d", {"SqueezeBackward1", "MmBackward0"}},
      {"matmul_1d_2d", {"SqueezeBackward1", "MmBackward0"}},
      {"matmul_3d_3d", {"BmmBackward0", "ExpandBackward0"}},
      {"matmul_3d_2d", {"ViewBackward0", "MmBackward0"}},
      {"matmul_2d_3d", {"BmmBackward0", "ExpandBackward0"}},
      {"matmul_3d_1d", {"SqueezeBackward1", "ViewBackward0"}},
      {"matmul_1d_3d", {"SqueezeBackward1", "BmmBackward0"}},
      {"matmul_bcast_batch", {"BmmBackward0", "ExpandBackward0"}},
      {"stack_dim0", {"CatBackward0", "UnsqueezeBackward0"}},
      {"stack_dim1", {"CatBackward0", "UnsqueezeBackward0"}},
      {"stack_neg", {"CatBackward0", "UnsqueezeBackward0"}},
      {"chunk", {"CatBackward0", "SliceBackward0"}},
      {"chunk_fewer", {"CatBackward0", "SliceBackward0"}},
      {"split", {"CatBackward0", "SliceBackward0"}},
      {"reshape", {"MulBackward0", "ViewBackward0"}},
      {"flatten", {"MulBackward0", "ViewBackward0"}},
      {"linear_nobias", {"AddmmBackward0", "torch::autograd::AccumulateGrad"}},
      {"rdiv_scalar", {"MulBackward1", "PowBackward0"}},
  };
  for (const auto& c : ops_reference::kCases) {
    if (std::string(c.grad_fn).empty()) continue;
    INFO("case " << c.name);
    auto in = ops_test::load_inputs(c, true);
    Tensor out = ops_test::find_case(c.name)->fn(in);
    REQUIRE(out.grad_fn() != nullptr);
    std::string got = out.grad_fn()->name();
    auto& edges = out.grad_fn()->next_edges;
    std::string inner = !edges.empty() && edges[0].fn ? edges[0].fn->name() : "";
    auto it = ours.find(c.name);
    if (it == ours.end()) {
      CHECK(got == c.grad_fn);
      CHECK(inner == c.inner);
    } else {
      CHECK(got == it->second.first);
      CHECK(inner == it->second.second);
    }
  }
  // views and copies not covered above
  Tensor x = ones({2, 3}, rg());
  CHECK(x.view({6}).grad_fn()->name() == "ViewBackward0");
  CHECK(x.t().reshape({6}).grad_fn()->name() == "UnsafeViewBackward0");
  CHECK(x.flatten().grad_fn()->name() == "ViewBackward0");
  CHECK(x.narrow(1, 0, 2).grad_fn()->name() == "SliceBackward0");
  CHECK(x[0].grad_fn()->name() == "SelectBackward0");
  CHECK(x.clone().grad_fn()->name() == "CloneBackward0");
  CHECK(x.to(kFloat64).grad_fn()->name() == "ToCopyBackward0");
  CHECK(x.t().contiguous().grad_fn()->name() == "CloneBackward0");
  CHECK(x.squeeze().grad_fn()->name() == "SqueezeBackward0");
  CHECK(x.unsqueeze(0).squeeze(0).grad_fn()->name() == "SqueezeBackward1");
  CHECK(bmm(x.unsqueeze(0), x.t().unsqueeze(0)).grad_fn()->name() == "BmmBackward0");
  CHECK(x.contiguous().is_same(x));  // no node for a no-op
  CHECK(x.grad_fn() == nullptr);
}

// ---- engine behaviour ---------------------------------------------------------------------------

TEST_CASE("backward on a non-scalar needs a gradient of the output's shape", "[ch02][autograd]") {
  Tensor x = tensor({1, 2, 3}, rg());
  Tensor y = x * 2.0;
  REQUIRE_THROWS_WITH(y.backward(), Contains("grad can be implicitly created only for scalar outputs") &&
                                        Contains("[3]"));
  REQUIRE_THROWS_WITH(y.backward(ones({2, 3})),
                      Contains("Mismatch in shape: grad_output[0] has a shape of [2, 3] and output[0] has a shape of [3]"));
  y.backward(tensor({1, 10, 100}));
  CHECK(vals(x.grad()) == std::vector<double>{2, 20, 200});
  Tensor s = (x * 3.0).sum().unsqueeze(0);  // one element, 1-D: implicit gradient allowed
  x.set_grad(Tensor());
  s.backward();
  CHECK(vals(x.grad()) == std::vector<double>{3, 3, 3});
  Tensor c = tensor({1, 2});
  REQUIRE_THROWS_WITH(c.sum().backward(), Contains("element 0 of tensors does not require grad and does not have a grad_fn"));
}

TEST_CASE("gradients accumulate over two backward calls", "[ch02][autograd]") {
  Tensor x = tensor({1, 2, 3}, rg());
  (x * x).sum().backward();
  CHECK(vals(x.grad()) == std::vector<double>{2, 4, 6});
  (x * 10.0).sum().backward();
  CHECK(vals(x.grad()) == std::vector<double>{12, 14, 16});
  x.set_grad(Tensor());
  x.sum().backward();
  CHECK(vals(x.grad()) == std::vector<double>{1, 1, 1});
  REQUIRE_THROWS_WITH(x.set_grad(ones({2})), Contains("assigned grad has data of a different size ([2] vs [3])"));
  REQUIRE_THROWS_WITH(x.set_grad(ones({3}, kFloat64)),  // PyTorch: "assigned grad has data of a different type"
                      Contains("assigned grad has data of a different type (torch.float64 vs torch.float32)"));
}

TEST_CASE("diamonds and reused leaves get every contribution", "[ch02][autograd]") {
  Tensor x = tensor({0.5, -1.0}, rg(kFloat64));
  Tensor a = x * 2.0;                      // shared intermediate
  Tensor y = (a.exp() + a * 3.0).sum();    // two paths from a
  y.backward();
  for (int i = 0; i < 2; ++i) {
    double xv = x.at({i});
    CHECK(x.grad().at({i}) == Approx(2 * (std::exp(2 * xv) + 3)));
  }
  Tensor z = tensor({3.0}, rg());
  (z * z + z).sum().backward();  // 2z + 1
  CHECK(z.grad().item() == 7);
  Tensor w = tensor({2.0}, rg());
  (w * w * w).backward(tensor({1.0}));  // 3 w^2
  CHECK(w.grad().item() == 12);
  // a diamond whose branches meet in matmul
  Tensor m = tensor({1, 2, 3, 4}, {2, 2}, rg());
  matmul(m, m).sum().backward();  // d sum(M M) = 1 M^T + M^T 1
  CHECK(vals(m.grad()) == std::vector<double>{7, 11, 9, 13});
}

TEST_CASE("a broadcast input gets its gradient summed back to its own shape", "[ch02][autograd]") {
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3}, rg());
  Tensor b = tensor({10, 20, 30}, rg());
  Tensor c = tensor({2}, {1, 1}, rg());
  Tensor s = scalar_tensor(3, rg());
  Tensor gout = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  ((a + b) * c - s).backward(gout);
  CHECK(b.grad().sizes() == Shape{3});
  CHECK(vals(b.grad()) == std::vector<double>{10, 14, 18});  // 2 * column sums of gout
  CHECK(c.grad().sizes() == Shape{1, 1});
  CHECK(c.grad().item() == Approx(1 * 11 + 2 * 22 + 3 * 33 + 4 * 14 + 5 * 25 + 6 * 36));
  CHECK(s.grad().dim() == 0);
  CHECK(s.grad().item() == -21);
  CHECK(vals(a.grad()) == std::vector<double>{2, 4, 6, 8, 10, 12});
  Tensor col = tensor({1, 2}, {2, 1}, rg());
  (col * ones({3, 2, 4})).sum().backward();
  CHECK(col.grad().sizes() == Shape{2, 1});
  CHECK(vals(col.grad()) == std::vector<double>{12, 12});
}

TEST_CASE("only inputs that require grad get a gradient; .grad of a non-leaf stays undefined", "[ch02][autograd]") {
  Tensor a = tensor({1, 2}, rg());
  Tensor b = tensor({3, 4});
  Tensor h = a * b;
  CHECK(h.requires_grad());
  CHECK_FALSE(h.is_leaf());
  h.sum().backward();
  CHECK(vals(a.grad()) == std::vector<double>{3, 4});
  CHECK_FALSE(b.grad().defined());
  CHECK_FALSE(h.grad().defined());
  CHECK_FALSE((b * 2.0).requires_grad());
}

TEST_CASE("gradients flow across dtypes and arrive in each leaf's own dtype", "[ch02][autograd]") {
  Tensor x = tensor({0.5, 1.0}, rg());                 // float32
  Tensor y = tensor({2.0, 3.0}, rg(kFloat64));         // float64
  Tensor out = (x.exp() * y + x.sigmoid().to(kFloat64)).sum();
  CHECK(out.dtype() == kFloat64);
  out.backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().dtype() == kFloat32);
  CHECK(y.grad().dtype() == kFloat64);
  for (int i = 0; i < 2; ++i) {
    double xv = x.at({i}), sg = 1 / (1 + std::exp(-xv));
    CHECK(x.grad().at({i}) == Approx(std::exp(xv) * y.at({i}) + sg * (1 - sg)).epsilon(1e-6));
    CHECK(y.grad().at({i}) == Approx(std::exp(xv)).epsilon(1e-6));
  }
  // cat of a float32 and a float64 leaf, log_softmax and linear downstream
  Tensor p = tensor({1, 2}, {1, 2}, rg()), q = tensor({3, 4}, {1, 2}, rg(kFloat64));
  cat({p, q}, 0).log_softmax(1).sum().backward();
  CHECK(p.grad().dtype() == kFloat32);
  // d/dp sum(log_softmax(row)) = 1 - 2 softmax(row): row (1, 2) gives (1 - 2 s1, 1 - 2 s2)
  CHECK(p.grad().at({0, 0}) == Approx(1 - 2 / (1 + std::exp(1.0))));
  CHECK(p.grad().at({0, 1}) == Approx(1 - 2 / (1 + std::exp(-1.0))));
  CHECK(q.grad().dtype() == kFloat64);
  // an explicit float64 gradient for a float32 output
  Tensor z = tensor({1, 2}, rg());
  z.exp().backward(tensor({1, 1}, kFloat64));
  CHECK(z.grad().dtype() == kFloat32);
  CHECK(z.grad().at({1}) == Approx(std::exp(2.0)));
}

TEST_CASE("detach and detach_ cut the graph but share the data", "[ch02][autograd]") {
  Tensor x = tensor({1, 2}, rg());
  Tensor y = x * 2.0;
  Tensor d = y.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  CHECK(d.impl()->storage == y.impl()->storage);
  (d * 3.0 + y).sum().backward();  // only the y path reaches x
  CHECK(vals(x.grad()) == std::vector<double>{2, 2});
  Tensor xd = x.detach();
  {
    NoGradGuard ng;
    xd.mul_(10.0);  // visible in x
  }
  CHECK(vals(x) == std::vector<double>{10, 20});
  Tensor z = x * 2.0;
  z.detach_();
  CHECK(z.is_leaf());
  CHECK_FALSE(z.requires_grad());
  CHECK(z.grad_fn() == nullptr);
}

TEST_CASE("NoGradGuard records no graph and restores the previous mode", "[ch02][autograd]") {
  Tensor x = tensor({1, 2}, rg());
  CHECK(GradMode::is_enabled());
  Tensor y;
  {
    NoGradGuard ng;
    CHECK_FALSE(GradMode::is_enabled());
    y = (x * 2.0).exp().sum(0);
    CHECK(y.grad_fn() == nullptr);
    CHECK_FALSE(y.requires_grad());
    CHECK(y.is_leaf());
    {
      NoGradGuard inner;
      CHECK_FALSE(GradMode::is_enabled());
    }
    CHECK_FALSE(GradMode::is_enabled());
    x.add_(1.0);  // in-place on a leaf is allowed here (as optimizers do)
  }
  CHECK(GradMode::is_enabled());
  CHECK(vals(x) == std::vector<double>{2, 3});
  CHECK((x * 2.0).grad_fn() != nullptr);
  REQUIRE_THROWS_WITH(y.backward(), Contains("does not require grad"));
}

TEST_CASE("register_hook sees and can replace the gradient, on leaves and non-leaves", "[ch02][autograd]") {
  Tensor x = tensor({1, 2, 3}, rg());
  std::vector<double> seen_leaf, seen_mid;
  x.register_hook([&](const Tensor& g) {
    seen_leaf = vals(g);
    return Tensor();  // keep
  });
  Tensor y = x * 2.0;
  y.register_hook([&](const Tensor& g) {
    seen_mid = vals(g);
    return g * 10.0;  // replace: x sees 10x
  });
  (y * y).sum().backward();
  CHECK(seen_mid == std::vector<double>{4, 8, 12});          // d/dy y^2 = 2y
  CHECK(seen_leaf == std::vector<double>{80, 160, 240});     // replaced, times dy/dx = 2
  CHECK(vals(x.grad()) == std::vector<double>{80, 160, 240});
  CHECK_FALSE(y.grad().defined());

  Tensor w = tensor({1.0, 1.0}, rg());
  w.register_hook([](const Tensor& g) { return g * 0.5; });
  w.register_hook([](const Tensor& g) { return g + 1.0; });  // hooks chain in registration order
  (w * 4.0).sum().backward();
  CHECK(vals(w.grad()) == std::vector<double>{3, 3});

  Tensor m = tensor({1.0}, rg());
  Tensor shared = m * 3.0;
  int calls = 0;
  shared.register_hook([&](const Tensor& g) {
    ++calls;
    CHECK(g.item() == 5);  // both uses summed before the hook runs
    return Tensor();
  });
  (shared * 2.0 + shared * 3.0).sum().backward();
  CHECK(calls == 1);
  REQUIRE_THROWS_WITH(tensor({1}).register_hook([](const Tensor&) { return Tensor(); }),
                      Contains("cannot register a hook on a tensor that doesn't require gradient"));
  Tensor v = tensor({1, 2}, rg());
  v.register_hook([](const Tensor& g) { return g.sum(); });  // wrong shape for the leaf
  REQUIRE_THROWS_WITH((v * 2.0).sum().backward(), Contains("backward: hook 'hook' has changed the size of value (a hook on a leaf tensor of shape [2] returned a gradient of shape [] for a value of shape [2])"));
}

TEST_CASE("a hook that changes the gradient's size or dtype raises instead of reading out of bounds", "[ch02][autograd]") {
  Tensor x = tensor({1, 2, 3}, rg());
  Tensor y = x.exp();
  y.register_hook([](const Tensor&) { return ones({1000}); });
  REQUIRE_THROWS_WITH(y.sum().backward(), Contains("backward: hook 'hook' has changed the size of value (a hook on the output of ExpBackward0 returned a gradient of shape [1000] for a value of shape [3])"));
  CHECK_FALSE(x.grad().defined());

  Tensor y2 = x.exp();
  y2.register_hook([](const Tensor& g) { return g.to(kFloat64); });
  REQUIRE_THROWS_WITH(y2.sum().backward(), Contains("backward: hook 'hook' has changed the type of value (was torch.FloatTensor got torch.DoubleTensor; a hook on the output of ExpBackward0)"));

  Tensor w = tensor({1, 2}, rg());
  w.register_hook([](const Tensor& g) { return g.to(kFloat64); });
  REQUIRE_THROWS_WITH((w * 2.0).sum().backward(), Contains("has changed the type of value (was torch.FloatTensor got torch.DoubleTensor; a hook on a leaf tensor of shape [2])"));

  // A hook that keeps the shape and dtype may still replace the gradient.
  Tensor z = x.exp();
  z.register_hook([](const Tensor& g) { return g * 2.0; });  // same shape and dtype: fine
  z.sum().backward();
  CHECK(x.grad().allclose(x.exp() * 2.0));
}

TEST_CASE("a leaf's hook that keeps the gradient does not make .grad alias it", "[ch02][autograd]") {
  Tensor a = tensor({1, 2}, rg()), b = tensor({3, 4}, rg());
  Tensor kept;
  a.register_hook([&](const Tensor& g) {
    kept = g;
    return Tensor();
  });
  (a + b).sum().backward();  // Add hands the same gradient tensor to both leaves
  {
    NoGradGuard ng;
    a.grad().zero_();
  }
  CHECK(vals(b.grad()) == std::vector<double>{1, 1});
  CHECK(vals(kept) == std::vector<double>{1, 1});
  Tensor seed = tensor({5, 6});
  Tensor leaf = tensor({0, 0}, rg());
  leaf.backward(seed);
  {
    NoGradGuard ng;
    seed.fill_(0);
  }
  CHECK(vals(leaf.grad()) == std::vector<double>{5, 6});
}

TEST_CASE("post-accumulate-grad hooks fire after .grad is updated, once per backward", "[ch02][autograd]") {
  Tensor p = tensor({1, 2}, rg());
  int calls = 0;
  std::vector<double> grad_in_hook;
  p.register_post_accumulate_grad_hook([&](Tensor& leaf) {
    ++calls;
    CHECK(leaf.is_same(p));
    grad_in_hook = vals(leaf.grad());
  });
  (p * p + p * 3.0).sum().backward();  // p used twice: one accumulation
  CHECK(calls == 1);
  CHECK(grad_in_hook == std::vector<double>{5, 7});
  (p * 2.0).sum().backward();
  CHECK(calls == 2);
  CHECK(grad_in_hook == std::vector<double>{7, 9});  // sees the accumulated value
  Tensor unused = tensor({1}, rg());
  int unused_calls = 0;
  unused.register_post_accumulate_grad_hook([&](Tensor&) { ++unused_calls; });
  (p * 2.0).sum().backward();
  CHECK(unused_calls == 0);
  REQUIRE_THROWS_WITH((p * 2.0).register_post_accumulate_grad_hook([](Tensor&) {}),
                      Contains("post accumulate grad hooks cannot be registered on non-leaf tensors"));
  REQUIRE_THROWS_WITH(tensor({1}).register_post_accumulate_grad_hook([](Tensor&) {}),
                      Contains("doesn't require gradient"));
}

TEST_CASE("a second backward through a freed graph raises unless retain_graph", "[ch02][autograd]") {
  Tensor x = tensor({1, 2}, rg());
  Tensor y = (x * x).sum();
  y.backward(Tensor(), true);
  y.backward(Tensor(), true);
  CHECK(vals(x.grad()) == std::vector<double>{4, 8});
  y.backward();  // frees
  CHECK(vals(x.grad()) == std::vector<double>{6, 12});
  REQUIRE_THROWS_WITH(y.backward(), Contains("Trying to backward through the graph a second time") &&
                                        Contains("retain_graph=true") && Contains("MulBackward0"));
  CHECK(vals(x.grad()) == std::vector<double>{6, 12});  // unchanged by the failed call
  // a graph whose nodes save nothing can run again, as in PyTorch
  Tensor z = (x + 1.0).sum();
  z.backward();
  z.backward();
  CHECK(vals(x.grad()) == std::vector<double>{8, 14});
}

TEST_CASE("in-place ops on leaves that require grad raise; requires_grad_ rules", "[ch02][autograd]") {
  Tensor x = tensor({1, 2}, rg());
  REQUIRE_THROWS_WITH(x.add_(1.0), Contains("a leaf Variable that requires grad is being used in an in-place operation"));
  REQUIRE_THROWS_WITH(x.mul_(tensor({2, 2})), Contains("mul_: a leaf Variable that requires grad"));
  REQUIRE_THROWS_WITH(x.zero_(), Contains("zero_: a leaf Variable"));
  REQUIRE_THROWS_WITH(x.copy_(ones({2})), Contains("copy_: a leaf Variable"));
  Tensor y = x * 2.0;
  y.add_(1.0);  // a non-leaf: recorded, as PyTorch (tests/test_inplace.cpp has the details)
  CHECK(y.grad_fn()->name() == "AddBackward1");
  REQUIRE_THROWS_WITH(y.requires_grad_(false), Contains("you can only change requires_grad flags of leaf variables"));
  CHECK_NOTHROW(y.requires_grad_(true));  // as PyTorch: asking a non-leaf for grad is a no-op
  REQUIRE_THROWS_WITH(tensor({1}, kInt64).requires_grad_(),
                      Contains("only Tensors of floating point dtype can require gradients (got torch.int64)"));
  REQUIRE_THROWS_WITH((x * 1.0).to(kInt64), Contains("cannot convert a tensor that requires grad to int64"));
  Tensor l = tensor({1.0});
  CHECK_FALSE(l.requires_grad());
  CHECK(&l.requires_grad_() == &l);
  CHECK(l.requires_grad());
  CHECK(l.is_leaf());
  l.requires_grad_(false);
  CHECK_FALSE(l.requires_grad());
  l.add_(1.0);  // fine once it no longer requires grad
  CHECK(l.item() == 2);
}

TEST_CASE("is_leaf: user tensors and no-grad results are leaves, op results are not", "[ch02][autograd]") {
  Tensor a = ones({2});
  Tensor b = ones({2}, rg());
  CHECK(a.is_leaf());
  CHECK(b.is_leaf());
  CHECK((a * 2.0).is_leaf());  // no input requires grad: no node
  CHECK_FALSE((b * 2.0).is_leaf());
  CHECK_FALSE(b.view({2, 1}).is_leaf());
  CHECK(b.detach().is_leaf());
  Tensor g;
  {
    NoGradGuard ng;
    g = b.exp();
  }
  CHECK(g.is_leaf());
  (b * 3.0).sum().backward();
  CHECK(b.grad().is_leaf());
  CHECK_FALSE(b.grad().requires_grad());
}

TEST_CASE("a graph is freed when its output is dropped (no reference cycles)", "[ch02][autograd]") {
  for (const auto& c : ops_reference::kCases) {
    if (std::string(c.grad_fn).empty()) continue;
    INFO("case " << c.name);
    auto in = ops_test::load_inputs(c, true);
    std::weak_ptr<autograd::Node> node;
    {
      Tensor out = ops_test::find_case(c.name)->fn(in);
      node = out.grad_fn();
      REQUIRE_FALSE(node.expired());
    }
    CHECK(node.expired());
  }
}

TEST_CASE("backward runs through a long chain without recursion", "[ch02][autograd]") {
  Tensor x = tensor({1.0}, rg(kFloat64));
  Tensor y = x;
  for (int i = 0; i < 3000; ++i) y = y * 1.001;
  y.backward();
  CHECK(x.grad().item() == Approx(std::pow(1.001, 3000)));
}

TEST_CASE("destroying a very long graph does not overflow the stack", "[ch02][autograd]") {
  Tensor x = tensor({1.0}, rg());
  std::weak_ptr<autograd::Node> first;
  {
    Tensor y = x;
    for (int i = 0; i < 300000; ++i) {
      y = y + 1.0;
      if (i == 0) first = y.grad_fn();
    }
    CHECK_FALSE(first.expired());
  }  // y's 300000 nodes are freed here, iteratively
  CHECK(first.expired());
  // Shared parts of a graph outlive a dropped branch.
  Tensor shared = x * 2.0;
  std::weak_ptr<autograd::Node> shared_node = shared.grad_fn();
  { Tensor branch = shared + 1.0; }
  CHECK_FALSE(shared_node.expired());
  (shared * 3.0).sum().backward();
  CHECK(x.grad().item() == 6);
}

TEST_CASE("detach_ on an undefined tensor raises", "[ch02][autograd]") {
  REQUIRE_THROWS_WITH(Tensor().detach_(), Contains("detach_: undefined tensor"));
  REQUIRE_THROWS_WITH(Tensor().detach(), Contains("undefined tensor"));
}

TEST_CASE("relu's gradient follows PyTorch's threshold_backward, NaN included", "[ch02][autograd]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = tensor({nan, 1, -1, 0}, rg());
  relu(x).sum().backward();  // dx = dy where relu(x) > 0 or is NaN, else 0
  CHECK(vals(x.grad()) == std::vector<double>{1, 1, 0, 0});
  Tensor c = tensor({nan, 0.5, 2}, rg());
  clamp(c, 0, 1).sum().backward();  // NaN is not inside [0, 1]: no gradient, as PyTorch
  CHECK(vals(c.grad()) == std::vector<double>{0, 1, 0});
}

TEST_CASE("gradients of views write into the right places of the base's gradient", "[ch02][autograd]") {
  Tensor x = zeros({3, 4}, rg());
  Tensor parts = x.narrow(1, 1, 2).t().select(0, 1) * tensor({1, 2, 3});  // column 2, scaled
  Tensor e = x.unsqueeze(0).expand({2, 3, 4}).sum();                     // 2 everywhere
  (parts.sum() + e).backward();
  CHECK(vals(x.grad()) == std::vector<double>{2, 2, 3, 2, 2, 2, 4, 2, 2, 2, 5, 2});
  Tensor m = tensor({1, 2, 3, 4}, {2, 2}, rg());
  auto [v, i] = m.max(1);
  (v * tensor({10, 100})).sum().backward();
  CHECK(vals(m.grad()) == std::vector<double>{0, 10, 0, 100});
  CHECK_FALSE(i.requires_grad());
}

// ---- chapter 02: the graph of example_single's loss, to_dot, and the chapter's numbers ----------

namespace {
using Edges = std::vector<std::pair<std::string, std::string>>;

/// The nodes (in to_dot's order) and node-to-node edges of to_dot's text, each node named as
/// gen_autograd_graph.py names PyTorch's: "AddmmBackward0", "AccumulateGrad(weight)".
struct DotGraph {
  std::vector<std::string> nodes;
  Edges edges;
};
DotGraph parse_dot(const std::string& text) {
  std::map<std::string, std::string> label;  // id -> label as written ("weight\\n (1, 2)")
  Edges raw;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '\t') continue;
    line = line.substr(1);
    const size_t arrow = line.find(" -> ");
    const size_t lab = line.find(" [label=\"");
    if (arrow != std::string::npos) {
      raw.push_back({line.substr(0, arrow), line.substr(arrow + 4)});
    } else if (lab != std::string::npos) {
      const size_t begin = lab + 9;
      label[line.substr(0, lab)] = line.substr(begin, line.find('"', begin) - begin);
    }
  }
  std::map<std::string, std::string> named;  // n<k> -> name with the leaf's name for AccumulateGrad
  for (const auto& [id, l] : label)
    if (id[0] == 'n') named[id] = l;
  for (const auto& [from, to] : raw)
    if (from[0] == 'v') named[to] += "(" + label[from].substr(0, label[from].find("\\n")) + ")";
  DotGraph g;
  for (size_t k = 0; named.count("n" + std::to_string(k)); ++k) g.nodes.push_back(named["n" + std::to_string(k)]);
  for (const auto& [from, to] : raw)
    if (from[0] == 'n' && to[0] == 'n') g.edges.push_back({named[from], named[to]});
  return g;
}

/// PyTorch's graph with nn.Linear's TBackward0 nodes taken out: tinytorch's Linear node (named
/// AddmmBackward0, as PyTorch's) takes the weight directly (autograd/functions/linalg.hpp, Linear), where
/// PyTorch records addmm(bias, x, weight.t()): AccumulateGrad(weight) -> TBackward0 -> Addmm.
/// gen_autograd_graph.py lists the edge TBackward0 -> Addmm just before AccumulateGrad(w) -> TBackward0.
DotGraph without_t(std::vector<std::string> nodes, const Edges& edges) {
  nodes.erase(std::remove(nodes.begin(), nodes.end(), "TBackward0"), nodes.end());
  Edges out;
  for (size_t i = 0; i < edges.size(); ++i) {
    if (edges[i].first == "TBackward0") {
      REQUIRE(i + 1 < edges.size());
      REQUIRE(edges[i + 1].second == "TBackward0");
      out.push_back({edges[i + 1].first, edges[i].second});
      ++i;
    } else {
      out.push_back(edges[i]);
    }
  }
  return {nodes, out};
}

template <class T>
std::vector<T> sorted(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v;
}

/// example_single's model and first loss: Linear(2,1) with weight [[0.25, -0.5]], bias [0.1],
/// MSELoss on X = [[1, 0.5], [0.5, 1]], y = [[2], [1.5]] (examples/single_loop.hpp, epoch 0).
struct SingleStep {
  Tensor weight = tensor({0.25, -0.5}, {1, 2}, rg());
  Tensor bias = tensor({0.1}, rg());
  Tensor X = tensor({1.0, 0.5, 0.5, 1.0}, {2, 2});
  Tensor y = tensor({2.0, 1.5}, {2, 1});
  Tensor loss = mse_loss(linear(X, weight, bias), y);
};
}  // namespace

TEST_CASE("to_dot draws example_single's first loss: the text example_single --dot writes", "[ch02][autograd]") {
  SingleStep s;
  // chapters/img/ch02-graph.dot holds this text (ctest example_single_dot compares the two).
  const std::string expected =
      "digraph {\n"
      "\tgraph [size=\"12,12\"]\n"
      "\tnode [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]\n"
      "\tout [label=\"loss\\n ()\" fillcolor=darkolivegreen1]\n"
      "\tn0 -> out\n"
      "\tn0 [label=\"MseLossBackward0\"]\n"
      "\tn1 -> n0\n"
      "\tn1 [label=\"AddmmBackward0\"]\n"
      "\tn2 -> n1\n"
      "\tn3 -> n1\n"
      "\tv2 [label=\"weight\\n (1, 2)\" fillcolor=lightblue]\n"
      "\tv2 -> n2\n"
      "\tn2 [label=\"AccumulateGrad\"]\n"
      "\tv3 [label=\"bias\\n (1)\" fillcolor=lightblue]\n"
      "\tv3 -> n3\n"
      "\tn3 [label=\"AccumulateGrad\"]\n"
      "}\n";
  const std::string dot = autograd::to_dot(s.loss, {{"weight", s.weight}, {"bias", s.bias}}, "loss");
  CHECK(dot == expected);
  CHECK(autograd::to_dot(s.loss, {{"weight", s.weight}, {"bias", s.bias}}, "loss") == dot);  // deterministic
  // Names are escaped for dot (found by breaking, issue 11: a NUL byte made Graphviz fail with
  // "syntax error ... scanning a quoted string"; quotes and newlines were already escaped).
  const std::string odd = autograd::to_dot(s.loss, {{std::string("w\"]\n\0x", 6), s.weight}}, "a\\b");
  CHECK(odd.find('\0') == std::string::npos);
  CHECK(odd.find("label=\"w\\\"]\\n\\\\0x\\n (1, 2)\"") != std::string::npos);
  CHECK(odd.find("label=\"a\\\\b\\n ()\"") != std::string::npos);

  // The same nodes and edges as PyTorch's graph (tests/reference/gen_autograd_graph.py), less
  // the TBackward0 that tinytorch's Linear node does without.
  namespace ref = autograd_graph_reference;
  DotGraph ours = parse_dot(dot);
  DotGraph torch = without_t(ref::example_single_nodes, ref::example_single_edges);
  CHECK(ours.nodes.size() == 4);
  CHECK(ref::example_single_nodes.size() == 5);  // + TBackward0
  CHECK(sorted(ours.nodes) == sorted(torch.nodes));
  CHECK(sorted(ours.edges) == sorted(torch.edges));

  // The engine's order (engine.hpp, topological_order): the loss's node first, every node before
  // the nodes it feeds; the depth-first post-order reversed puts bias's AccumulateGrad before weight's.
  std::vector<autograd::Node*> order = autograd::topological_order(s.loss.grad_fn().get());
  std::vector<std::string> names;
  for (autograd::Node* n : order) names.push_back(n->name());
  CHECK(names == std::vector<std::string>{"MseLossBackward0", "AddmmBackward0", "torch::autograd::AccumulateGrad",
                                          "torch::autograd::AccumulateGrad"});
  CHECK(order[2] == autograd::gradient_edge(s.bias).fn.get());
  CHECK(order[3] == autograd::gradient_edge(s.weight).fn.get());
}

TEST_CASE("example_single's first step: loss and gradients as PyTorch's, gradcheck passes", "[ch02][autograd]") {
  namespace ref = autograd_graph_reference;
  SingleStep s;
  CHECK(s.loss.item() == Approx(ref::example_single_loss).epsilon(0).margin(1e-6));  // 3.3803
  s.loss.backward();
  // dW = [-2.7875, -2.725], db = [-3.675]: chapter 01 derives dW by hand
  REQUIRE(vals(s.weight.grad()).size() == 2);
  for (int j = 0; j < 2; ++j) CHECK(vals(s.weight.grad())[j] == Approx(ref::example_single_weight_grad[j]).epsilon(0).margin(1e-6));
  CHECK(vals(s.bias.grad())[0] == Approx(ref::example_single_bias_grad[0]).epsilon(0).margin(1e-6));

  // gradcheck of the same function in float64, at the same point: true
  Tensor w = tensor({0.25, -0.5}, {1, 2}, rg(kFloat64)), b = tensor({0.1}, rg(kFloat64));
  Tensor X = tensor({1.0, 0.5, 0.5, 1.0}, {2, 2}, kFloat64), y = tensor({2.0, 1.5}, {2, 1}, kFloat64);
  auto f = [&](const std::vector<Tensor>& p) { return mse_loss(linear(X, p[0], p[1]), y); };
  CHECK(gradcheck(f, {w, b}));
  // ... and false for a backward that forgets the factor 2 of d (p - y)^2 / dp
  auto wrong = [&](const std::vector<Tensor>& p) {
    Tensor d = linear(X, p[0], p[1]) - y;
    return (d * d.detach()).mean();
  };
  GradcheckOptions quiet;
  quiet.raise_exception = false;
  CHECK_FALSE(gradcheck(wrong, {w, b}, quiet));
}

TEST_CASE("to_dot's nodes and edges match PyTorch's for an MLP and a reused leaf", "[ch02][autograd]") {
  namespace ref = autograd_graph_reference;
  // Linear(3,4) - ReLU - Linear(4,2) - mse_loss, parameters named as nn.Sequential names them
  Tensor w0 = zeros({4, 3}, rg()), b0 = zeros({4}, rg()), w2 = zeros({2, 4}, rg()), b2 = zeros({2}, rg());
  Tensor x = ones({5, 3}), t = ones({5, 2});
  Tensor loss = mse_loss(linear(relu(linear(x, w0, b0)), w2, b2), t);
  DotGraph ours = parse_dot(autograd::to_dot(loss, {{"0.weight", w0}, {"0.bias", b0}, {"2.weight", w2}, {"2.bias", b2}}));
  DotGraph torch = without_t(ref::mlp_nodes, ref::mlp_edges);
  CHECK(ours.nodes.size() == 8);  // PyTorch: 10, with two TBackward0
  CHECK(sorted(ours.nodes) == sorted(torch.nodes));
  CHECK(sorted(ours.edges) == sorted(torch.edges));

  // (x * x + x).sum(): the same graph as PyTorch's, node for node in the same order, and the same
  // edges (to_dot lists them by consuming node, torchviz as it walks); x reached three times has
  // one AccumulateGrad, with two arrows into MulBackward0.
  Tensor r = tensor({1.0, 2.0, 3.0}, rg());
  Tensor s = (r * r + r).sum();
  const std::string dot = autograd::to_dot(s, {{"x", r}});
  DotGraph g = parse_dot(dot);
  CHECK(g.nodes == ref::reused_leaf_nodes);
  CHECK(sorted(g.edges) == sorted(ref::reused_leaf_edges));
  CHECK_THAT(dot, Contains("\tv3 [label=\"x\\n (3)\" fillcolor=lightblue]\n"));
  CHECK_THAT(dot, Contains("\tout [label=\"\\n ()\" fillcolor=darkolivegreen1]\n"));  // unnamed, as torchviz
  s.backward();
  CHECK(vals(r.grad()) == ref::reused_leaf_grad);  // 2x + 1 = [3, 5, 7]

  // A leaf that is not in params gets an empty name; a tensor without grad_fn is one box.
  CHECK_THAT(autograd::to_dot((r * 2.0).sum()), Contains("\tv2 [label=\"\\n (3)\" fillcolor=lightblue]\n"));
  CHECK(parse_dot(autograd::to_dot(r)).nodes.empty());
  CHECK_THAT(autograd::to_dot(tensor({1, 2}), {}, "a \"b\""), Contains("\tout [label=\"a \\\"b\\\"\\n (2)\" fillcolor=darkolivegreen1]\n"));
  REQUIRE_THROWS_WITH(autograd::to_dot(Tensor()), Contains("to_dot: the tensor is undefined"));
}

// ---- custom functions: autograd::Function<T> (torch.autograd.Function) -------------------------

namespace {
using autograd::AutogradContext;
using autograd::tensor_list;

// y = e^x, saving its output (as PyTorch's ExpBackward0 does).
struct MyExp : autograd::Function<MyExp> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    Tensor y = x.exp();
    ctx->save_for_backward({y});
    return y;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list g) { return {g[0] * ctx->get_saved_variables()[0]}; }
};

// y = a * b * scale + c, with a non-tensor argument; counts the backward calls.
int muladd_backward_calls = 0;
struct MulAdd : autograd::Function<MulAdd> {
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b, double scale, const Tensor& c) {
    ctx->save_for_backward({a, b});
    ctx->saved_data["scale"] = scale;
    return a * b * scale + c;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list g) {
    ++muladd_backward_calls;
    const tensor_list s = ctx->get_saved_variables();
    const double scale = ctx->saved_data["scale"];
    Tensor ga = ctx->needs_input_grad(0) ? g[0] * s[1] * scale : Tensor();
    Tensor gb = ctx->needs_input_grad(1) ? g[0] * s[0] * scale : Tensor();
    return {ga, gb, Tensor(), g[0]};
  }
};

struct WrongCount : autograd::Function<WrongCount> {
  static Tensor forward(AutogradContext*, const Tensor& x, double) { return x * 2.0; }
  static tensor_list backward(AutogradContext*, tensor_list g) { return {g[0]}; }
};
struct GradForNumber : autograd::Function<GradForNumber> {
  static Tensor forward(AutogradContext*, const Tensor& x, double) { return x * 2.0; }
  static tensor_list backward(AutogradContext*, tensor_list g) { return {g[0], g[0]}; }
};
struct WrongShape : autograd::Function<WrongShape> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x.sum(); }
  static tensor_list backward(AutogradContext*, tensor_list g) { return {g[0]}; }  // () instead of x's shape
};
struct Identity : autograd::Function<Identity> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x; }
  static tensor_list backward(AutogradContext*, tensor_list g) { return {g[0]}; }
};
struct ArgmaxFn : autograd::Function<ArgmaxFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    Tensor i = x.argmax();
    ctx->mark_non_differentiable({i});
    return i;
  }
  static tensor_list backward(AutogradContext*, tensor_list) { return {Tensor()}; }
};
}  // namespace

TEST_CASE("Function<T>: a custom exp gives exp's gradient and passes gradcheck", "[ch02][autograd][function]") {
  Tensor x = tensor({0.5, -1.0, 2.0}, rg(kFloat64));
  Tensor y = MyExp::apply(x);
  CHECK(y.grad_fn()->name() == "MyExpBackward");
  y.sum().backward();
  CHECK(vals(x.grad()) == vals(x.detach().exp()));
  CHECK(gradcheck([](const std::vector<Tensor>& v) { return MyExp::apply(v[0] * 1.5); },
                  {tensor({0.3, -0.7, 1.1, 0.0}, rg(kFloat64))}));
  // grad mode off or no input requiring grad: no node
  CHECK_FALSE(MyExp::apply(tensor({1.0})).requires_grad());
  {
    NoGradGuard no_grad;
    CHECK_FALSE(MyExp::apply(x).requires_grad());
  }
}

TEST_CASE("Function<T>: several inputs, a non-tensor argument, needs_input_grad", "[ch02][autograd][function]") {
  Tensor a = tensor({1.0, 2.0}, rg(kFloat64)), b = tensor({3.0, -1.0}, rg(kFloat64));
  Tensor c = tensor({0.5, 0.5}, kFloat64);  // needs no gradient
  MulAdd::apply(a, b, 2.0, c).sum().backward();
  CHECK(vals(a.grad()) == std::vector<double>{6.0, -2.0});
  CHECK(vals(b.grad()) == std::vector<double>{2.0, 4.0});
  CHECK_FALSE(c.grad().defined());
  CHECK(gradcheck([&](const std::vector<Tensor>& v) { return MulAdd::apply(v[0], v[1], -0.5, v[2]); },
                  {tensor({0.2, 0.4, -1.0}, rg(kFloat64)), tensor({1.5, -0.3, 0.8}, rg(kFloat64)),
                   tensor({0.1, 0.0, 2.0}, rg(kFloat64))}));
}

TEST_CASE("Function<T>: PyTorch's errors for a wrong backward", "[ch02][autograd][function]") {
  Tensor x = tensor({1.0, 2.0}, rg());
  CHECK_THROWS_WITH(WrongCount::apply(x, 1.0).sum().backward(),
                    Contains("function WrongCountBackward returned an incorrect number of gradients (expected 2, got 1)"));
  CHECK_THROWS_WITH(GradForNumber::apply(x, 1.0).sum().backward(),
                    Contains("returned a gradient different than None at position 2, but the corresponding forward "
                             "input was not a Variable"));
  CHECK_THROWS_WITH(WrongShape::apply(x).backward(),
                    Contains("Function WrongShapeBackward returned an invalid gradient at index 0 - got [] but "
                             "expected shape compatible with [2]"));
}

TEST_CASE("Function<T>: saved tensors are version-checked and freed after backward", "[ch02][autograd][function]") {
  Tensor x = tensor({0.1, 0.2}, rg());
  Tensor y = MyExp::apply(x);
  {
    NoGradGuard no_grad;
    y.mul_(2.0);  // changes the saved output
  }
  CHECK_THROWS_WITH(y.sum().backward(), Contains("modified by an inplace operation"));
  Tensor z = MyExp::apply(x);
  Tensor loss = z.sum();
  loss.backward(Tensor(), /*retain_graph=*/false);
  CHECK_THROWS_WITH(loss.backward(), Contains("Trying to backward through the graph a second time"));
}

TEST_CASE("Function<T>: an input returned as is, and a non-differentiable output", "[ch02][autograd][function]") {
  Tensor x = tensor({1.0, 5.0, 2.0}, rg());
  Tensor y = Identity::apply(x);
  CHECK(x.is_leaf());  // the input keeps its own history
  CHECK(y.grad_fn() != nullptr);
  {
    NoGradGuard no_grad;
    Tensor z = Identity::apply(x);
    z.mul_(2.0);  // a copy: x is not changed behind autograd's back
  }
  CHECK(vals(x) == std::vector<double>{1.0, 5.0, 2.0});
  (y * 3.0).sum().backward();
  CHECK(vals(x.grad()) == std::vector<double>{3.0, 3.0, 3.0});
  Tensor i = ArgmaxFn::apply(x);
  CHECK_FALSE(i.requires_grad());
  CHECK(i.item<int64_t>() == 1);
}

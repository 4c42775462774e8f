// tests/test_parallel.cpp — DataParallel and its parts (scatter, replicate, parallel_apply,
// gather), Module::clone(), Tensor::to(Device), on CPU replicas.
//
// Reference values: tests/reference/gen_dp.py (PyTorch): the batch split for B = 1..33 on
// n = 1..8 devices, and a float64 MLP's full-batch gradients, which DataParallel's summed replica
// gradients must equal (1e-12), called with one input and with several (forward<M>(x, mask, scale)). Also run under ThreadSanitizer (ctest label "threads";
// scripts/test.sh builds build-tsan). Chapter: chapters/05-data-parallel.md.
#include <catch2/catch.hpp>
#include <tinytorch/tinytorch.hpp>

#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <typeinfo>

#include "reference/dp_ref.hpp"

using namespace tinytorch;
namespace ref = dp_reference;

namespace {

std::vector<Device> cpus(size_t n) { return std::vector<Device>(n, Device::cpu()); }

/// 5 -> 7 (tanh) -> 3 in float64 with gen_dp.py's weights: a user module with its own clone().
class Mlp64 : public nn::Module {
 public:
  Tensor w1, b1, w2, b2;
  Mlp64() {
    w1 = register_parameter("w1", tensor(ref::w1, {7, 5}, kFloat64));
    b1 = register_parameter("b1", tensor(ref::b1, {7}, kFloat64));
    w2 = register_parameter("w2", tensor(ref::w2, {3, 7}, kFloat64));
    b2 = register_parameter("b2", tensor(ref::b2, {3}, kFloat64));
  }
  Tensor forward(const Tensor& x) override { return linear(tanh(linear(x, w1, b1)), w2, b2); }
  std::shared_ptr<Module> clone() const override { return clone_rebound<Mlp64>(); }
  std::string name() const override { return "Mlp64"; }

 protected:
  /// clone_as<M>() with the member handles pointed at the clone's own parameters.
  template <class M>
  std::shared_ptr<M> clone_rebound() const {
    auto m = clone_as<M>();
    m->w1 = m->get_parameter("w1");
    m->b1 = m->get_parameter("b1");
    m->w2 = m->get_parameter("w2");
    m->b2 = m->get_parameter("b2");
    return m;
  }
};

/// Mlp64 with a forward of several arguments: mlp(x) * mask * scale (gen_dp.py, part 3).
class MaskedMlp64 : public Mlp64 {
 public:
  using Mlp64::forward;
  Tensor forward(const Tensor& x, const Tensor& mask, double scale) { return Mlp64::forward(x) * mask * scale; }
  std::shared_ptr<Module> clone() const override { return clone_rebound<MaskedMlp64>(); }
  std::string name() const override { return "MaskedMlp64"; }
};

/// Records what each replica's forward(x, y, tag) received (shared by its clones).
class SeesArguments : public nn::Module {
 public:
  struct Call {
    int64_t x_rows, y_rows;
    std::string tag;
  };
  std::shared_ptr<std::mutex> mutex = std::make_shared<std::mutex>();
  std::shared_ptr<std::vector<Call>> calls = std::make_shared<std::vector<Call>>();
  Tensor forward(const Tensor& x) override { return x; }
  Tensor forward(const Tensor& x, const Tensor& y, const std::string& tag) {
    std::lock_guard<std::mutex> lock(*mutex);
    calls->push_back({x.size(0), y.size(0), tag});
    return x + y.sum(1, true);
  }
  /// A list of tensors (PyTorch's scatter splits each): x + the row sums of every tensor in ys.
  Tensor forward(const Tensor& x, const std::vector<Tensor>& ys) {
    std::lock_guard<std::mutex> lock(*mutex);
    calls->push_back({x.size(0), ys.empty() ? -1 : ys[0].size(0), tinytorch::detail::str_cat(ys.size(), " tensors")});
    Tensor out = x;
    for (const Tensor& y : ys) out = out + y.sum(1, true);
    return out;
  }
  std::shared_ptr<Module> clone() const override { return clone_as<SeesArguments>(); }
  std::string name() const override { return "SeesArguments"; }
};

/// Throws from forward when its chunk has exactly `bad_rows` rows.
class FailsOnRows : public nn::Module {
 public:
  int64_t bad_rows;
  explicit FailsOnRows(int64_t r) : bad_rows(r) {}
  Tensor forward(const Tensor& x) override {
    TT_CHECK(x.size(0) != bad_rows, "FailsOnRows: got ", x.size(0), " rows");
    return x * 2.0;
  }
  std::shared_ptr<Module> clone() const override { return clone_as<FailsOnRows>(); }
  std::string name() const override { return "FailsOnRows"; }
};

class NoClone : public nn::Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  std::string name() const override { return "NoClone"; }
};

/// Without name(): the error names the C++ class.
class Nameless : public nn::Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
};

/// A Linear subclass that does not override clone(): Linear::clone would drop the derived part.
class MyLinear : public nn::Linear {
 public:
  MyLinear() : nn::Linear(2, 2) {}
  Tensor forward(const Tensor& x) override { return nn::Linear::forward(x) * 2.0; }
};

/// Counts forward calls in a buffer, in place (as BatchNorm's num_batches_tracked).
class Counter : public nn::Module {
 public:
  Tensor count;
  Counter() { count = register_buffer("count", zeros({1}, kInt64)); }
  Tensor forward(const Tensor& x) override {
    count.add_(1);  // an int64 buffer: an integral Scalar (add_(1.0) throws, as PyTorch)
    return x;
  }
  std::shared_ptr<Module> clone() const override {
    auto m = clone_as<Counter>();
    m->count = m->get_buffer("count");
    return m;
  }
};

/// Uses a tensor that requires grad but is not a registered parameter (every replica's thread
/// then reaches the same leaf).
class UnregisteredScale : public nn::Module {
 public:
  Tensor scale = full({1}, 3.0, TensorOptions().requires_grad(true));
  Tensor forward(const Tensor& x) override { return x * scale; }
  std::shared_ptr<Module> clone() const override { return clone_as<UnregisteredScale>(); }
};

void check_values(const Tensor& t, const std::vector<double>& expected, double tol) {
  std::vector<double> got = t.tolist<double>();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(expected[i]).epsilon(0).margin(tol));
  }
}

/// A DataParallel run's output, loss and the model's summed gradients against a gen_dp.py case
/// (grad_cases or masked_cases: PyTorch's full-batch run), to 1e-12.
template <class Case>
void check_run(const Tensor& y, const Tensor& loss, const Mlp64& model, const Case& c) {
  CHECK(loss.item<double>() == Approx(c.loss).epsilon(0).margin(1e-12));
  check_values(y, c.output, 1e-12);
  check_values(model.w1.grad(), c.dw1, 1e-12);
  check_values(model.b1.grad(), c.db1, 1e-12);
  check_values(model.w2.grad(), c.dw2, 1e-12);
  check_values(model.b2.grad(), c.db2, 1e-12);
}

}  // namespace

TEST_CASE("scatter splits the batch as PyTorch's DataParallel (torch.chunk sizes)", "[ch05][parallel]") {
  for (const auto& c : ref::chunk_cases) {
    INFO("B=" << c.batch << " n=" << c.devices);
    Tensor x = arange(c.batch).view({c.batch, 1});
    std::vector<Tensor> chunks = parallel::scatter(x, cpus(static_cast<size_t>(c.devices)));
    std::vector<int64_t> sizes;
    int64_t next = 0;
    for (const Tensor& t : chunks) {
      sizes.push_back(t.size(0));
      CHECK(t.at<int64_t>({0, 0}) == next);  // consecutive rows, in device order
      next += t.size(0);
    }
    CHECK(sizes == c.sizes);
  }
  // the examples
  CHECK(parallel::scatter(zeros({10, 2}), cpus(4)).size() == 4);
  CHECK(parallel::scatter(zeros({9, 2}), cpus(4)).size() == 3);
  CHECK(parallel::scatter(zeros({3, 2}), cpus(4)).size() == 3);
}

TEST_CASE("scatter along another dim, and its errors", "[ch05][parallel]") {
  Tensor x = arange(12).view({2, 6});
  auto parts = parallel::scatter(x, cpus(4), 1);
  REQUIRE(parts.size() == 3);
  CHECK(parts[2].sizes() == Shape{2, 2});
  CHECK(parts[2].at<int64_t>({1, 1}) == 11);
  CHECK_THROWS_WITH(parallel::scatter(x, {}), Catch::Contains("scatter: expected at least one device"));
  CHECK_THROWS_WITH(parallel::scatter(scalar_tensor(1.0), cpus(2)), Catch::Contains("at least one dimension"));
  CHECK_THROWS_WITH(parallel::scatter(x, cpus(2), 2), Catch::Contains("chunk"));
}

TEST_CASE("DataParallel's .grad equals PyTorch's full-batch gradient (float64, 1e-12)", "[ch05][parallel]") {
  for (size_t n : {1, 2, 3, 4}) {
    for (const auto& c : ref::grad_cases) {
      INFO("B=" << c.batch << " on " << n << " CPU replicas");
      auto model = std::make_shared<Mlp64>();
      nn::DataParallel dp(model, cpus(n));
      Tensor x = tensor(c.x, {c.batch, 5}, kFloat64);
      Tensor target = tensor(c.target, {c.batch, 3}, kFloat64);
      Tensor y = dp.forward(x);
      REQUIRE(y.sizes() == Shape{c.batch, 3});
      Tensor loss = mse_loss(y, target);
      loss.backward();
      check_run(y, loss, *model, c);
      // and tinytorch's own single-module run
      auto single = std::make_shared<Mlp64>();
      mse_loss(single->forward(x), target).backward();
      CHECK(model->w1.grad().allclose(single->w1.grad(), 0, 1e-12));
      CHECK(model->b2.grad().allclose(single->b2.grad(), 0, 1e-12));
    }
  }
}

TEST_CASE("DataParallel::forward<M> with several arguments gives PyTorch's full-batch run (float64, 1e-12)",
          "[ch05][parallel]") {
  for (size_t n : {0, 1, 2, 3, 4}) {
    for (const auto& c : ref::masked_cases) {
      INFO("B=" << c.batch << " on " << n << " CPU replicas");
      auto model = std::make_shared<MaskedMlp64>();
      nn::DataParallel dp(model, cpus(n));
      const Tensor x = tensor(c.x, {c.batch, 5}, kFloat64);
      const Tensor mask = tensor(c.mask, {c.batch, 3}, kFloat64);
      const Tensor target = tensor(c.target, {c.batch, 3}, kFloat64);
      const Tensor y = dp.forward<MaskedMlp64>(x, mask, c.scale);
      REQUIRE(y.sizes() == Shape{c.batch, 3});
      const Tensor loss = mse_loss(y, target);
      loss.backward();
      check_run(y, loss, *model, c);
    }
  }
}

TEST_CASE("DataParallel::forward<M>: tensors split by torch.chunk, other arguments to every replica",
          "[ch05][parallel]") {
  auto model = std::make_shared<SeesArguments>();
  nn::DataParallel dp(model, cpus(3));
  auto calls = [&] {
    std::vector<std::tuple<int64_t, int64_t, std::string>> out;
    for (const auto& c : *model->calls) out.emplace_back(c.x_rows, c.y_rows, c.tag);
    std::sort(out.begin(), out.end());
    model->calls->clear();
    return out;
  };
  using Seen = std::vector<std::tuple<int64_t, int64_t, std::string>>;
  // 5 rows on 3 devices: torch.chunk gives 2, 2, 1 (tests/reference/dp_ref.hpp, chunk_cases)
  Tensor y = dp.forward<SeesArguments>(ones({5, 2}), ones({5, 4}), std::string("same"));
  CHECK(calls() == Seen{{1, 1, "same"}, {2, 2, "same"}, {2, 2, "same"}});
  CHECK(y.sizes() == Shape{5, 2});
  CHECK(y.tolist<double>() == std::vector<double>(10, 5.0));
  // 2 rows on 3 devices: 2 chunks, so only 2 replicas run (PyTorch: device_ids[:len(inputs)])
  dp.forward<SeesArguments>(ones({2, 2}), ones({2, 1}), std::string("two"));
  CHECK(calls() == Seen{{1, 1, "two"}, {1, 1, "two"}});
  // split along dim 1
  nn::DataParallel by_column(model, cpus(2), std::nullopt, 1);
  const Tensor z = by_column.forward<SeesArguments>(ones({3, 4}), ones({3, 4}), std::string("cols"));
  CHECK(calls() == Seen{{3, 3, "cols"}, {3, 3, "cols"}});
  CHECK(z.sizes() == Shape{3, 4});
  // a std::vector<Tensor>: each element split (5 rows: 2, 2, 1), replica i gets the chunks i
  const Tensor w = dp.forward<SeesArguments>(ones({5, 2}), std::vector<Tensor>{ones({5, 3}), ones({5, 1})});
  CHECK(calls() == Seen{{1, 1, "2 tensors"}, {2, 2, "2 tensors"}, {2, 2, "2 tensors"}});
  CHECK(w.tolist<double>() == std::vector<double>(10, 5.0));
  dp.forward<SeesArguments>(ones({3, 2}), std::vector<Tensor>{});  // empty list: to every replica
  CHECK(calls() == Seen{{1, -1, "0 tensors"}, {1, -1, "0 tensors"}, {1, -1, "0 tensors"}});
}

/// forward() of no argument at all: PyTorch runs one replica (inputs padded to ((),)).
class NoArguments : public nn::Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  Tensor forward() { return ones({1}); }
  std::shared_ptr<Module> clone() const override { return clone_as<NoArguments>(); }
};

TEST_CASE("DataParallel::forward<M>() of no argument runs one replica, as PyTorch", "[ch05][parallel]") {
  nn::DataParallel dp(std::make_shared<NoArguments>(), cpus(3));
  CHECK(dp.forward<NoArguments>().sizes() == Shape{1});
}

TEST_CASE("DataParallel::forward<M>: errors name the arguments", "[ch05][parallel]") {
  auto model = std::make_shared<SeesArguments>();
  nn::DataParallel dp(model, cpus(2));
  CHECK_THROWS_WITH(dp.forward<SeesArguments>(ones({4, 2}), ones({6, 2}), std::string("x")),
                    "DataParallel: every tensor argument is split along dim 0 and must have the same size there, but "
                    "argument 0 has 4 (shape [4, 2]) and argument 1 has 6 (shape [6, 2]); PyTorch would silently drop "
                    "the extra chunks");
  CHECK_THROWS_WITH(dp.forward<SeesArguments>(ones({4, 2}), scalar_tensor(1.0), std::string("x")),
                    "DataParallel: argument 1 is a tensor with no dimension to split along dim 0 ([])");
  CHECK_THROWS_WITH(dp.forward<MaskedMlp64>(ones({4, 5}), ones({4, 3}), 1.0),
                    "DataParallel::forward<M>: the wrapped module is a SeesArguments, not the class M named in "
                    "forward<M>(...)");
  CHECK_THROWS_WITH(dp.forward<SeesArguments>(ones({4, 2}), ones({4, 2}, kFloat64).t(), std::string("x")),
                    Catch::Contains("argument 0 has 4 (shape [4, 2]) and argument 1 has 2 (shape [2, 4])"));
  CHECK_THROWS_WITH(dp.forward<SeesArguments>(ones({4, 2}), std::vector<Tensor>{ones({4, 1}), ones({3, 1})}),
                    Catch::Contains("argument 0 has 4 (shape [4, 2]) and argument 1 element 1 has 3 (shape [3, 1])"));
  nn::DataParallel by_column(model, cpus(2), std::nullopt, 1);
  CHECK_THROWS_WITH(by_column.forward<SeesArguments>(ones({4, 2}), ones({4}), std::string("x")),
                    "DataParallel: argument 1 of shape [4]: dimension out of range (expected to be in range of "
                    "[-1, 0], but got 1)");
  CHECK(model->calls->empty());  // nothing ran
}

TEST_CASE("DataParallel: the graph goes through replicas, gather and BroadcastBackward", "[ch05][parallel]") {
  auto model = std::make_shared<nn::Linear>(3, 2);
  nn::DataParallel dp(model, cpus(2));
  Tensor y = dp.forward(ones({4, 3}));
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->name() == "CatBackward0");
  auto replicas = parallel::replicate(*model, cpus(2));
  REQUIRE(replicas.size() == 2);
  auto r1 = std::dynamic_pointer_cast<nn::Linear>(replicas[1]);
  REQUIRE(r1);
  CHECK_FALSE(r1->weight.is_leaf());
  CHECK(r1->weight.grad_fn()->name() == "BroadcastBackward");
  CHECK(r1->weight.impl()->storage == model->weight.impl()->storage);  // CPU replicas share the values
  CHECK_FALSE(r1->weight.is_same(model->weight));
  // names as PyTorch's DataParallel: "module." + the module's names
  auto names = dp.named_parameters();
  REQUIRE(names.size() == 2);
  CHECK(names[0].first == "module.weight");
  CHECK(names[1].first == "module.bias");
  CHECK(dp.parameters()[0].is_same(model->weight));
}

TEST_CASE("DataParallel under no_grad: detached replicas, no graph", "[ch05][parallel]") {
  auto model = std::make_shared<nn::Linear>(3, 2);
  nn::DataParallel dp(model, cpus(3));
  NoGradGuard ng;
  Tensor y = dp.forward(ones({5, 3}));
  CHECK_FALSE(y.requires_grad());
  CHECK(y.grad_fn() == nullptr);
  auto replicas = parallel::replicate(*model, cpus(2));
  auto r1 = std::dynamic_pointer_cast<nn::Linear>(replicas[1]);
  CHECK(r1->weight.grad_fn() == nullptr);
  CHECK_FALSE(r1->weight.requires_grad());
}

TEST_CASE("DataParallel: one device calls the module, no device too", "[ch05][parallel]") {
  auto model = std::make_shared<nn::Linear>(3, 2);
  Tensor x = ones({4, 3});
  Tensor expected = model->forward(x);
  nn::DataParallel one(model, cpus(1)), none(model, {});
  Tensor a = one.forward(x), b = none.forward(x);
  CHECK(a.grad_fn()->name() == "AddmmBackward0");  // no replicas, no gather
  CHECK(a.equal(expected));
  CHECK(b.equal(expected));
}

TEST_CASE("DataParallel rethrows a replica's error with its index and device", "[ch05][parallel]") {
  // 10 rows on 4 devices: 3,3,3,1 — only replica 3 gets one row.
  nn::DataParallel dp(std::make_shared<FailsOnRows>(1), cpus(4));
  CHECK_THROWS_WITH(dp.forward(ones({10, 2})), "in replica 3 on device cpu: FailsOnRows: got 1 rows");
  // every replica fails: the lowest index is reported
  nn::DataParallel lin(std::make_shared<nn::Linear>(3, 2), cpus(2));
  CHECK_THROWS_WITH(lin.forward(ones({4, 5})), Catch::StartsWith("in replica 0 on device cpu: Linear: input of shape [2, 5]"));
  // and the graph is still usable afterwards
  CHECK(lin.forward(ones({4, 3})).sizes() == Shape{4, 2});
}

TEST_CASE("DataParallel needs clone(); and the module on device_ids[0]", "[ch05][parallel]") {
  nn::DataParallel dp(std::make_shared<NoClone>(), cpus(2));
  CHECK_THROWS_WITH(dp.forward(ones({4, 2})), Catch::StartsWith("NoClone does not implement clone(); DataParallel needs it"));
  auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(2, 2), std::make_shared<NoClone>());
  CHECK_THROWS_WITH(nn::DataParallel(seq, cpus(2)).forward(ones({4, 2})), Catch::StartsWith("NoClone does not implement"));
  // The message starts with the class's demangled name. Its enclosing namespaces depend on how the
  // tests are built (build/bin/unit_tests puts this file in namespace tt_test_parallel), so the
  // expected prefix is the demangled typeid, which must end in "(anonymous namespace)::<class>".
  auto demangled = [](const std::type_info& type) {
    int status = 0;
    char* d = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
    const std::string out = status == 0 && d ? d : type.name();
    std::free(d);
    return out;
  };
  const std::string nameless = demangled(typeid(Nameless)), my_linear = demangled(typeid(MyLinear));
  CHECK_THAT(nameless, Catch::EndsWith("(anonymous namespace)::Nameless"));
  CHECK_THAT(my_linear, Catch::EndsWith("(anonymous namespace)::MyLinear"));
  CHECK_THROWS_WITH(Nameless().clone(), Catch::StartsWith(nameless + " does not implement clone()"));
  CHECK_THROWS_WITH(MyLinear().clone(), Catch::StartsWith(my_linear + " does not implement clone(); DataParallel needs it"));
  nn::DataParallel gpu(std::make_shared<nn::Linear>(2, 2), {Device::cuda(0), Device::cuda(1)});
  CHECK_THROWS_WITH(gpu.forward(ones({4, 2})),
                    "DataParallel: module must have its parameters and buffers on device cuda:0 (device_ids[0]) but "
                    "found one of them on device: cpu (weight)");
  CHECK_THROWS_WITH(nn::DataParallel(nullptr, cpus(2)), "DataParallel: module is null");
}

TEST_CASE("Module::clone copies values without re-running constructors", "[ch05][parallel][nn]") {
  manual_seed(3);
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::ReLU>(),
                                                std::make_shared<nn::Dropout>(0.25), std::make_shared<nn::Tanh>(),
                                                std::make_shared<nn::Sigmoid>(), std::make_shared<nn::Flatten>(),
                                                std::make_shared<nn::Linear>(3, 2, /*bias=*/false));
  model->eval();
  Generator before = default_generator();
  auto copy = std::dynamic_pointer_cast<nn::Sequential>(model->clone());
  REQUIRE(copy);
  CHECK(default_generator().next_u64() == before.next_u64());  // nothing drawn
  CHECK(copy->repr() == model->repr());
  CHECK_FALSE(copy->is_training());
  auto a = model->named_parameters(), b = copy->named_parameters();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].first == b[i].first);
    CHECK(b[i].second.equal(a[i].second));
    CHECK(b[i].second.impl()->storage != a[i].second.impl()->storage);  // a copy, not an alias
    CHECK(b[i].second.requires_grad());
    CHECK(b[i].second.is_leaf());
  }
  // members point at the copy's own tensors
  auto lin = std::dynamic_pointer_cast<nn::Linear>((*copy)[0]);
  CHECK(lin->weight.is_same(b[0].second));
  CHECK_FALSE(std::dynamic_pointer_cast<nn::Linear>((*copy)[6])->bias.defined());
  {
    NoGradGuard ng;
    lin->weight.fill_(7.0);
  }
  CHECK(a[0].second.max().item<double>() < 7.0);  // the original is untouched
  Tensor x = randn({5, 4});
  CHECK_FALSE(copy->forward(x).equal(model->forward(x)));
  // losses clone too
  CHECK(nn::MSELoss("sum").clone()->name() == "MSELoss");
  CHECK(std::dynamic_pointer_cast<nn::MSELoss>(nn::MSELoss("sum").clone())->reduction == Reduction::Sum);
  CHECK(nn::CrossEntropyLoss().clone()->name() == "CrossEntropyLoss");
  CHECK(nn::NLLLoss().clone()->name() == "NLLLoss");
}

TEST_CASE("Weights tied by assigning a member are refused, not silently untied", "[ch05][parallel]") {
  auto a = std::make_shared<nn::Linear>(3, 3), b = std::make_shared<nn::Linear>(3, 3);
  b->weight = a->weight;
  auto seq = std::make_shared<nn::Sequential>(a, std::make_shared<nn::Tanh>(), b);
  nn::DataParallel dp(seq, cpus(2));
  CHECK_THROWS_WITH(dp.forward(ones({4, 3})), Catch::StartsWith("Linear: member `weight` is not the registered tensor"));
  CHECK_THROWS_WITH(seq->clone(), Catch::StartsWith("Linear: member `weight` is not the registered tensor"));
  // one module used twice is the supported way to share weights, and DataParallel follows it
  auto shared = std::make_shared<nn::Linear>(3, 3);
  auto twice = std::make_shared<nn::Sequential>(shared, std::make_shared<nn::Tanh>(), shared);
  Tensor x = randn({5, 3});
  Tensor expected = twice->forward(x);
  expected.sum().backward();
  Tensor g = shared->weight.grad().clone();
  twice->zero_grad();
  nn::DataParallel dp2(twice, cpus(3));
  Tensor y = dp2.forward(x);
  y.sum().backward();
  CHECK(y.allclose(expected, 1e-6, 1e-6));
  CHECK(shared->weight.grad().allclose(g, 1e-5, 1e-6));
}

TEST_CASE("DataParallel: nested, and a leaf that is not a parameter", "[ch05][parallel][threads]") {
  auto inner = std::make_shared<nn::DataParallel>(std::make_shared<Mlp64>(), cpus(2));
  nn::DataParallel outer(inner, cpus(2));
  const auto& c = ref::grad_cases.back();  // 33 rows
  Tensor x = tensor(c.x, {c.batch, 5}, kFloat64), target = tensor(c.target, {c.batch, 3}, kFloat64);
  mse_loss(outer.forward(x), target).backward();
  auto model = std::dynamic_pointer_cast<Mlp64>(inner->module());
  check_values(model->w1.grad(), c.dw1, 1e-12);
  check_values(model->b2.grad(), c.db2, 1e-12);
  // every replica's thread reaches the same leaf `scale`: one AccumulateGrad, the sum lands once
  auto m = std::make_shared<UnregisteredScale>();
  nn::DataParallel dp(m, cpus(4));
  dp.forward(ones({8, 2})).sum().backward();
  CHECK(m->scale.grad().item<double>() == 16.0);
}

TEST_CASE("DataParallel: manual_seed makes runs repeat; construction draws nothing", "[ch05][parallel][threads]") {
  auto model = std::make_shared<nn::Dropout>(0.5);
  nn::DataParallel dp(model, cpus(2));
  manual_seed(7);
  Tensor a = dp.forward(ones({4, 32}));
  manual_seed(7);
  Tensor b = dp.forward(ones({4, 32}));
  CHECK(a.equal(b));
  manual_seed(5);
  double first = rand({1}).item<double>();
  manual_seed(5);
  { nn::DataParallel d(model, cpus(2)); }
  CHECK(rand({1}).item<double>() == first);
}

TEST_CASE("DataParallel::forward from two threads at once", "[ch05][parallel][threads]") {
  manual_seed(0);
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(8, 8), std::make_shared<nn::Dropout>(0.3),
                                                std::make_shared<nn::Linear>(8, 2));
  nn::DataParallel dp(model, cpus(2));
  Tensor x = randn({6, 8});
  Tensor y1, y2;  // forward runs concurrently; backward (one engine, shared .grad) runs on one thread
  auto work = [&](Tensor& out) {
    for (int i = 0; i < 20; ++i) out = i == 0 ? dp.forward(x).sum() : out + dp.forward(x).sum();
  };
  std::thread t1(work, std::ref(y1)), t2(work, std::ref(y2));
  t1.join();
  t2.join();
  (y1 + y2).backward();
  CHECK(model->parameters()[0].grad().defined());
}

TEST_CASE("Buffers: replica 0 shares the original's, the others copy", "[ch05][parallel]") {
  auto model = std::make_shared<Counter>();
  nn::DataParallel dp(model, cpus(3));
  dp.forward(ones({6, 1}));
  dp.forward(ones({6, 1}));
  CHECK(model->count.item<int64_t>() == 2);  // replica 0's updates persist, replicas 1-2's are lost
}

TEST_CASE("Tensor::to(Device) and its errors", "[ch05][parallel][tensor]") {
  Tensor x = ones({2, 2}, TensorOptions().requires_grad(true));
  CHECK(x.to(Device::cpu()).is_same(x));  // as PyTorch: no copy when already there
  CHECK_THROWS_WITH(x.to(Device::cuda(1)), "to: copying a tensor from cpu to cuda:1 needs the CUDA backend, which "
                                           "this build does not have (compile with nvcc, or with -DTINYTORCH_CUDA_SIM=1 "
                                           "for the kernel simulator)");
}

TEST_CASE("gather: scalars become a vector; mismatched shapes are errors", "[ch05][parallel]") {
  Tensor g = parallel::gather({scalar_tensor(1.0), scalar_tensor(2.0), scalar_tensor(3.0)}, Device::cpu());
  CHECK(g.sizes() == Shape{3});
  CHECK(g.tolist<double>() == std::vector<double>{1, 2, 3});
  CHECK_THROWS_WITH(parallel::gather({zeros({2, 3}), zeros({1, 4})}, Device::cpu()),
                    "Gather got an input of invalid size: got [1, 4], but expected [1, 3]");
  CHECK_THROWS_WITH(parallel::gather({}, Device::cpu()), "gather: expected at least one tensor");
  Tensor c = parallel::gather({ones({2, 1}), zeros({2, 2})}, Device::cpu(), 1);
  CHECK(c.sizes() == Shape{2, 3});
}

TEST_CASE("DataParallel: 100 steps keep the allocator flat and never touch the default generator",
          "[ch05][parallel][threads]") {
  manual_seed(0);
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(8, 16), std::make_shared<nn::ReLU>(),
                                                std::make_shared<nn::Dropout>(0.2), std::make_shared<nn::Linear>(16, 4));
  auto dp = std::make_shared<nn::DataParallel>(model, cpus(3));
  optim::SGD opt(dp->parameters(), 0.05, 0.9);
  Tensor x = randn({30, 8}), t = randn({30, 4});
  Generator before = default_generator();
  size_t allocated_at_10 = 0;
  double first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    opt.zero_grad();
    Tensor loss = mse_loss(dp->forward(x), t);
    loss.backward();
    opt.step();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    if (step == 10) allocated_at_10 = cpu_memory_stats().allocated_bytes;
  }
  CHECK(cpu_memory_stats().allocated_bytes == allocated_at_10);
  CHECK(default_generator().next_u64() == before.next_u64());
  CHECK(last < first);
}

TEST_CASE("DataParallel with Dropout: per-replica streams, and runs repeat", "[ch05][parallel][threads]") {
  auto run = [] {
    manual_seed(42);
    auto model = std::make_shared<nn::Dropout>(0.5);
    nn::DataParallel dp(model, cpus(2));
    return std::make_pair(dp.forward(ones({2, 64})), dp.forward(ones({2, 64})));
  };
  auto [a1, a2] = run();
  auto [b1, b2] = run();
  CHECK(a1.equal(b1));
  CHECK(a2.equal(b2));
  CHECK_FALSE(a1.equal(a2));                // the streams go on between steps
  CHECK_FALSE(a1[0].equal(a1[1]));          // replica 0 and replica 1 draw different masks
  // a Dropout with its own Generator would be shared by the replicas' threads: refused
  Generator g(1);
  nn::DataParallel shared(std::make_shared<nn::Dropout>(0.5, &g), cpus(2));
  CHECK_THROWS_WITH(shared.forward(ones({2, 4})), Catch::StartsWith("Dropout: cannot be replicated by DataParallel"));
  CHECK(nn::Dropout(0.5, &g).clone() != nullptr);  // a plain clone may share it (same thread)
}

TEST_CASE("parallel_apply: grad mode and errors of any kind", "[ch05][parallel][threads]") {
  auto lin = std::make_shared<nn::Linear>(2, 2);
  auto replicas = parallel::replicate(*lin, cpus(2));
  {
    NoGradGuard ng;
    auto out = parallel::parallel_apply(replicas, {ones({1, 2}), ones({1, 2})}, cpus(2));
    CHECK_FALSE(out[0].requires_grad());
  }
  auto out = parallel::parallel_apply(replicas, {ones({1, 2}), ones({1, 2})}, cpus(2));
  CHECK(out[1].requires_grad());
  CHECK_THROWS_WITH(parallel::parallel_apply(replicas, {ones({1, 2})}, cpus(2)),
                    Catch::StartsWith("parallel_apply: expected as many inputs, devices and generators as replicas (2)"));
}

// tests/test_loss_norm.cpp — losses, normalisation layers and gradient clipping: CrossEntropyLoss /
// NLLLoss with class weights, ignore_index and label_smoothing; BatchNorm1d (training steps, running statistics,
// eval, momentum=None, no affine / no tracking); LayerNorm; clip_grad_norm_ / clip_grad_value_.
// Each: values and gradients against PyTorch, gradcheck in float64, the errors PyTorch raises,
// and for modules state_dict / save / load (buffers included) and clone().
// Headers under test: nn/loss.hpp, nn/batchnorm.hpp, nn/normalization.hpp, nn/utils/clip_grad.hpp,
// autograd/functions/normalization.hpp, functional.hpp (nll_loss, cross_entropy, batch_norm, layer_norm).
// Reference numbers: tests/reference/loss_norm_ref.hpp (tests/reference/gen_loss_norm.py).
// Tag: [loss_norm].
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include <tinytorch/autograd/gradcheck.hpp>
#include <tinytorch/nn/batchnorm.hpp>
#include <tinytorch/nn/loss.hpp>
#include <tinytorch/nn/normalization.hpp>
#include <tinytorch/nn/utils/clip_grad.hpp>
#include <tinytorch/serialization.hpp>

#include "reference/loss_norm_ref.hpp"
#include "reference/ref_arrays.hpp"

using namespace tinytorch;
using Catch::Contains;
using Vs = std::vector<Tensor>;

namespace {

const loss_norm_ref::Array& array(const std::string& name) { return ref_arrays::get(loss_norm_ref::arrays(), name); }
/// The reference array `name` as a tensor (float32 unless told).
Tensor from_ref(const std::string& name, DType dtype = kFloat32) { return ref_arrays::to_tensor(array(name), dtype); }
Tensor leaf(const std::string& name, DType dtype = kFloat32) { return from_ref(name, dtype).requires_grad_(); }
/// "" when `got` matches the reference array `name` (tests/reference/ref_arrays.hpp); otherwise the first difference.
std::string compare(const Tensor& got, const std::string& name, double rtol = 1e-5, double atol = 1e-6) {
  return ref_arrays::compare(got, array(name), name, rtol, atol);
}

Tensor targets(const std::string& name) { return from_ref(name, kInt64); }

/// A file name under the temp dir, removed at scope exit.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& stem)
      : path("/tmp/tt_loss_norm_" + stem + "_" + std::to_string(::getpid()) + ".tt") {}
  ~TempFile() { std::remove(path.c_str()); }
};

struct LossCase {
  const char* name;
  bool nll, weighted;
  const char* target;
  int64_t ignore_index;
  double label_smoothing;
};
// The same table as LOSS_CASES in gen_loss_norm.py.
const LossCase kLossCases[] = {
    {"nll_w", true, true, "loss.target_default", -100, 0.0},
    {"nll_ig2", true, false, "loss.target_two", 2, 0.0},
    {"nll_wig2", true, true, "loss.target_two", 2, 0.0},
    {"ce_w", false, true, "loss.target_default", -100, 0.0},
    {"ce_ls", false, false, "loss.target_default", -100, 0.1},
    {"ce_wls", false, true, "loss.target_default", -100, 0.25},
    {"ce_wig2ls", false, true, "loss.target_two", 2, 0.1},
    {"ce_ls1", false, true, "loss.target_default", -100, 1.0},
};
const char* const kReductions[] = {"mean", "sum", "none"};

/// The module for a case: CrossEntropyLoss / NLLLoss built with the case's arguments.
std::shared_ptr<nn::Loss> make_loss(const LossCase& c, const std::string& reduction, DType dtype = kFloat32) {
  const Tensor w = c.weighted ? from_ref("loss.weight", dtype) : Tensor();
  if (c.nll) return std::make_shared<nn::NLLLoss>(w, c.ignore_index, reduction);
  return std::make_shared<nn::CrossEntropyLoss>(w, c.ignore_index, reduction, c.label_smoothing);
}

}  // namespace

// ---- losses ----------------------------------------------------------------------------------

TEST_CASE("nll_loss / cross_entropy with weight, ignore_index, label_smoothing match PyTorch", "[loss_norm]") {
  for (const LossCase& c : kLossCases) {
    for (const std::string red : kReductions) {
      const std::string n = std::string(c.name) + "." + red;
      INFO(n);
      Tensor x = leaf("loss.x");
      auto loss = make_loss(c, red);
      // NLLLoss gets log-probabilities; its gradient reaches x through log_softmax, as in the script
      Tensor out = (*loss)(c.nll ? x.log_softmax(1) : x, targets(c.target));
      CHECK(compare(out, n + ".out") == "");
      if (!c.nll) CHECK(out.grad_fn()->name() == (c.label_smoothing > 0 ? "AddBackward0" : "NllLossBackward0"));
      out.backward(red == "none" ? from_ref("loss.gout_none") : scalar_tensor(1.5));
      CHECK(compare(x.grad(), n + ".grad") == "");
      // the functional form gives the same
      const Tensor w = c.weighted ? from_ref("loss.weight") : Tensor();
      const Reduction r = nn::reduction_from_string(red);
      Tensor f = c.nll ? nll_loss(x.log_softmax(1), targets(c.target), w, c.ignore_index, r)
                       : cross_entropy(x, targets(c.target), w, c.ignore_index, r, c.label_smoothing);
      CHECK(f.equal(out));
    }
  }
}

// (N, C, d1, ..., dk) with targets (N, d1, ..., dk), and unbatched (C) with a 0-d target: the
// ND_CASES x ND_LOSSES table of gen_loss_norm.py (C = 4, the loss.weight classes).
namespace {
struct NdLoss {
  const char* name;
  bool nll, weighted;
  int64_t ignore_index;
  double label_smoothing;
};
const NdLoss kNdLosses[] = {
    {"nll_w", true, true, -100, 0.0},
    {"ce_w", false, true, -100, 0.0},
    {"ce_ig1ls", false, false, 1, 0.1},
    {"ce_wls", false, true, -100, 0.2},
};
/// The case's target; with another ignore_index the position holding -100 holds that index
/// instead (as in the script), so it is ignored either way.
Tensor nd_target(const std::string& c, int64_t ignore_index) {
  Tensor t = targets("nd." + c + ".target");
  if (ignore_index != -100) t = where(t == -100.0, full_like(t, static_cast<double>(ignore_index)), t);
  return t;
}
}  // namespace

TEST_CASE("nll_loss / cross_entropy over (N, C, d1, ...) and unbatched (C) match PyTorch", "[loss_norm]") {
  for (const std::string c : {"nd3", "nd4", "nd5", "unb"}) {
    for (const NdLoss& l : kNdLosses) {
      for (const std::string red : kReductions) {
        const std::string n = "nd." + c + "." + l.name + "." + red;
        INFO(n);
        Tensor x = leaf("nd." + c + ".x");
        const Tensor t = nd_target(c, l.ignore_index);
        const Tensor w = l.weighted ? from_ref("loss.weight") : Tensor();
        const Reduction r = nn::reduction_from_string(red);
        const int64_t cdim = x.dim() == 1 ? 0 : 1;
        Tensor out = l.nll ? nll_loss(x.log_softmax(cdim), t, w, l.ignore_index, r)
                           : cross_entropy(x, t, w, l.ignore_index, r, l.label_smoothing);
        CHECK(compare(out, n + ".out") == "");
        out.backward(red == "none" ? from_ref("nd." + c + ".gout_none") : scalar_tensor(1.5));
        CHECK(compare(x.grad(), n + ".grad") == "");
      }
    }
  }
  // and they pass gradcheck in float64 (a 3-d and an unbatched case, every reduction)
  for (const std::string c : {"nd3", "unb"}) {
    for (const std::string red : kReductions) {
      INFO(c << " " << red);
      const Tensor t = nd_target(c, 1);
      const Reduction r = nn::reduction_from_string(red);
      CHECK(gradcheck([&](const Vs& v) { return cross_entropy(v[0], t, Tensor(), 1, r, 0.1); },
                      {leaf("nd." + c + ".x", kFloat64)}));
    }
  }
}

TEST_CASE("loss shapes PyTorch refuses give its messages", "[loss_norm]") {
  const Tensor x3 = zeros({2, 3, 4}), x4 = zeros({2, 3, 4, 5});
  const auto t = [](const Shape& s) { return zeros(s, kInt64); };
  CHECK_THROWS_WITH(nll_loss(x3, t({2, 5})), Contains("Expected target size [2, 4], got [2, 5]"));
  CHECK_THROWS_WITH(nll_loss(x4, t({2, 4, 6})),
                    Contains("size mismatch (got input: [2, 3, 4, 5] , target: [2, 4, 6]"));
  CHECK_THROWS_WITH(nll_loss(x4, t({2, 20})), Contains("only batches of spatial targets supported (3D tensors) but "
                                                      "got targets of dimension: 2"));
  CHECK_THROWS_WITH(nll_loss(x3, t({3, 4})), Contains("Expected input batch_size (2) to match target batch_size (3)."));
  CHECK_THROWS_WITH(nll_loss(zeros({3}), t({1})), Contains("size mismatch (got input: [3], target: [1])"));
  CHECK_THROWS_WITH(nll_loss(zeros({}), t({})), Contains("Expected 1 or more dimensions (got 0)"));
  CHECK_THROWS_WITH(nll_loss(zeros({2, 3, 4, 5, 6}), t({2, 4, 5, 7})),
                    Contains("Expected target size [2, 4, 5, 6], got [2, 4, 5, 7]"));
  CHECK_THROWS_WITH(cross_entropy(x3, tensor({0, 1, 2, 5, 0, 0, 0, 0}, {2, 4}, kInt64)),
                    Contains("Target 5 is out of bounds"));
  // the unbatched loss is 0-d for every reduction, as PyTorch's
  CHECK(cross_entropy(zeros({3}), scalar_tensor(1, kInt64), Reduction::None).dim() == 0);
}

TEST_CASE("weighted / ignoring / smoothed losses pass gradcheck in float64", "[loss_norm]") {
  for (const LossCase& c : kLossCases) {
    for (const std::string red : kReductions) {
      INFO(c.name << "." << red);
      auto loss = make_loss(c, red, kFloat64);
      const Tensor t = targets(c.target);
      CHECK(gradcheck([&](const Vs& v) { return (*loss)(c.nll ? v[0].log_softmax(1) : v[0], t); },
                      {leaf("loss.x", kFloat64)}));
    }
  }
}

TEST_CASE("a mean over targets that are all ignored is nan, with a zero gradient, as PyTorch", "[loss_norm]") {
  Tensor x = leaf("loss.x");
  const Tensor t = full({6}, -100, kInt64);
  Tensor l = cross_entropy(x, t);
  CHECK(std::isnan(l.item()));
  l.backward();
  CHECK(x.grad().abs().sum().item() == 0);
  Tensor ls = cross_entropy(x, t, Tensor(), -100, Reduction::Mean, 0.1);
  CHECK(std::isnan(ls.item()));
  x.set_grad(Tensor());
  ls.backward();  // label smoothing's part too: 0, not 0 * inf (PyTorch's masked_fill)
  CHECK(x.grad().abs().sum().item() == 0);
  CHECK(cross_entropy(x, t, Reduction::Sum).item() == 0);
  CHECK(nll_loss(x, t, Reduction::None).abs().sum().item() == 0);
}

TEST_CASE("the unweighted defaults are unchanged: weight 1 and ignore_index -100 change nothing", "[loss_norm]") {
  Tensor x = from_ref("loss.x");
  const Tensor t = tensor({0, 3, 1, 1, 3, 2}, kInt64);
  CHECK(cross_entropy(x, t).allclose(cross_entropy(x, t, ones({4}), -100, Reduction::Mean, 0.0)));
  CHECK(nll_loss(x, t, Reduction::Sum).allclose(nll_loss(x, t, ones({4}), -100, Reduction::Sum)));
  // a weighted mean divides by the sum of the weights of the targets, not by N
  Tensor w = tensor({1, 2, 3, 4});
  const double by_hand = -(x.at({0, 0}) * 1 + x.at({1, 3}) * 4 + x.at({2, 1}) * 2 + x.at({3, 1}) * 2 +
                           x.at({4, 3}) * 4 + x.at({5, 2}) * 3) / (1 + 4 + 2 + 2 + 4 + 3);
  CHECK(nll_loss(x, t, w).item() == Approx(by_hand).epsilon(1e-6));
}

TEST_CASE("losses reject bad targets, weights and label_smoothing with PyTorch's messages", "[loss_norm]") {
  Tensor x = zeros({2, 3});
  // a target equal to ignore_index may lie outside [0, C); any other may not, and is named
  CHECK(nll_loss(x, tensor({0, 7}, kInt64), Tensor(), 7).item() == 0);
  REQUIRE_THROWS_WITH(nll_loss(x, tensor({0, 7}, kInt64), Tensor(), 5), Contains("Target 7 is out of bounds"));
  REQUIRE_THROWS_WITH(cross_entropy(x, tensor({-100, -1}, kInt64)), Contains("Target -1 is out of bounds"));
  REQUIRE_THROWS_WITH(nn::CrossEntropyLoss(ones({2}))(x, tensor({0, 1}, kInt64)),
                      Contains("weight tensor should be defined either for all 3 classes or no classes but got weight "
                               "tensor of shape: [2]"));
  REQUIRE_THROWS_WITH(nll_loss(x, tensor({0, 1}, kInt64), ones({3, 1})),
                      Contains("for all 3 classes or no classes but got weight tensor of shape: [3, 1]"));
  REQUIRE_THROWS_WITH(nll_loss(x, tensor({0, 1}, kInt64), ones({3}, kFloat64)),
                      Contains("nll_loss: expected weight of dtype torch.float32 (the input's), got torch.float64"));
  REQUIRE_THROWS_WITH(nll_loss(x, tensor({0, 1}, kInt64), ones({3}).requires_grad_()),
                      Contains("is not differentiable with respect to argument 'weight'"));
  REQUIRE_THROWS_WITH(cross_entropy(x, tensor({0, 1}, kInt64), Tensor(), -100, Reduction::Mean, 1.5),
                      Contains("label_smoothing must be between 0.0 and 1.0. Got: 1.5"));
  // PyTorch ignores a negative value silently; tinytorch raises (functional.hpp)
  REQUIRE_THROWS_WITH(nn::CrossEntropyLoss(Tensor(), -100, "mean", -0.1),
                      Contains("CrossEntropyLoss: label_smoothing must be between 0.0 and 1.0. Got: -0.1"));
  // label_smoothing 1 is allowed: the uniform target
  CHECK(cross_entropy(x, tensor({0, 1}, kInt64), Tensor(), -100, Reduction::Mean, 1.0).item() == Approx(std::log(3.0)));
}

TEST_CASE("loss modules keep their class weight as a buffer: state_dict, clone, repr", "[loss_norm]") {
  nn::CrossEntropyLoss ce(tensor({1, 2, 3}), 1, Reduction::Sum, 0.2);
  auto sd = ce.state_dict();
  REQUIRE(sd.size() == 1);
  CHECK(sd[0].first == "weight");
  CHECK(sd[0].second.is_same(ce.weight));
  CHECK(ce.ignore_index == 1);
  CHECK(ce.label_smoothing == 0.2);
  CHECK(ce.reduction == Reduction::Sum);
  CHECK(ce.repr() == "CrossEntropyLoss()");
  auto copy = std::dynamic_pointer_cast<nn::CrossEntropyLoss>(ce.clone());
  REQUIRE(copy);
  CHECK(copy->weight.equal(ce.weight));
  CHECK(!copy->weight.is_same(ce.weight));
  CHECK(copy->get_buffer("weight").is_same(copy->weight));
  CHECK(copy->label_smoothing == 0.2);
  CHECK(nn::CrossEntropyLoss().state_dict().empty());
  nn::NLLLoss nll(tensor({1, 2}), 0, "none");
  CHECK(nll.state_dict().size() == 1);
  CHECK(std::dynamic_pointer_cast<nn::NLLLoss>(nll.clone())->ignore_index == 0);
  CHECK(nll.repr() == "NLLLoss()");
}

// ---- BatchNorm1d -----------------------------------------------------------------------------

namespace {
/// Runs the training steps and the eval step gen_loss_norm.py's bn_run recorded under `prefix`.
void check_bn_run(nn::BatchNorm1d& bn, const std::string& prefix, int steps, int grad_step) {
  for (int k = 0; k < steps; ++k) {
    const std::string s = std::to_string(k);
    INFO(prefix << " step " << k);
    Tensor x = leaf(prefix + ".x" + s);
    Tensor y = bn(x);
    CHECK(y.grad_fn()->name() == "NativeBatchNormBackward0");
    CHECK(compare(y, prefix + ".y" + s, 1e-5, 2e-6) == "");
    if (bn.track_running_stats) {
      CHECK(compare(bn.running_mean, prefix + ".running_mean" + s) == "");
      CHECK(compare(bn.running_var, prefix + ".running_var" + s) == "");
      CHECK(compare(bn.num_batches_tracked, prefix + ".num_batches_tracked" + s, 0, 0) == "");
      CHECK(bn.num_batches_tracked.dtype() == kInt64);
    }
    if (k == grad_step) {
      y.backward(from_ref(prefix + ".gout"));
      CHECK(compare(x.grad(), prefix + ".grad_x", 1e-4, 1e-5) == "");
      if (bn.affine) {
        CHECK(compare(bn.weight.grad(), prefix + ".grad_weight", 1e-5, 1e-5) == "");
        CHECK(compare(bn.bias.grad(), prefix + ".grad_bias", 1e-5, 1e-5) == "");
      }
    }
  }
  bn.eval();
  Tensor x = leaf(prefix + ".x_eval");
  Tensor y = bn(x);
  CHECK(compare(y, prefix + ".y_eval", 1e-5, 2e-6) == "");
  y.backward(from_ref(prefix + ".gout_eval"));
  CHECK(compare(x.grad(), prefix + ".grad_x_eval", 1e-4, 1e-5) == "");
}

void set_affine(nn::Module& m, const std::string& prefix) {
  NoGradGuard ng;
  m.get_parameter("weight").copy_(from_ref(prefix + ".weight"));
  m.get_parameter("bias").copy_(from_ref(prefix + ".bias"));
}
}  // namespace

TEST_CASE("BatchNorm1d on (N, C): three training steps and eval match PyTorch", "[loss_norm]") {
  nn::BatchNorm1d bn(3);
  CHECK(bn.weight.tolist<double>() == std::vector<double>{1, 1, 1});
  CHECK(bn.bias.tolist<double>() == std::vector<double>{0, 0, 0});
  CHECK(bn.running_var.tolist<double>() == std::vector<double>{1, 1, 1});
  set_affine(bn, "bn");
  check_bn_run(bn, "bn", 3, 1);
  CHECK(bn.num_batches_tracked.item<int64_t>() == 3);  // eval does not count
}

TEST_CASE("BatchNorm1d on (N, C, L) with momentum=None (cumulative average) and eps=1e-3", "[loss_norm]") {
  nn::BatchNorm1d bn(2, 1e-3, std::nullopt);
  set_affine(bn, "bn3");
  check_bn_run(bn, "bn3", 3, 2);
  CHECK(bn.repr() == "BatchNorm1d(2, eps=0.001, momentum=None, affine=True, track_running_stats=True)");
}

TEST_CASE("BatchNorm1d without affine or running statistics uses batch statistics in eval too", "[loss_norm]") {
  nn::BatchNorm1d bn(3, 1e-5, 0.1, false, false);
  CHECK(bn.parameters().empty());
  CHECK(bn.buffers().empty());
  check_bn_run(bn, "bn_plain", 1, 0);
  CHECK(bn.repr() == "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)");
}

TEST_CASE("batch_norm passes gradcheck: batch statistics, running statistics, with and without affine", "[loss_norm]") {
  for (const Shape& shape : {Shape{5, 3}, Shape{4, 3, 2}}) {
    for (bool training : {true, false}) {
      for (bool affine : {true, false}) {
        INFO(shape_str(shape) << " training=" << training << " affine=" << affine);
        Tensor x = (randn(shape, kFloat64) * 2.0 + 0.5).detach().requires_grad_();
        Tensor w = (randn({3}, kFloat64) + 1.0).detach().requires_grad_();
        Tensor b = randn({3}, kFloat64).requires_grad_();
        const Tensor rm = randn({3}, kFloat64), rv = rand({3}, kFloat64) + 0.5;
        // running stats are copied per call: training updates them in place
        auto f = [&](const Vs& v) {
          return batch_norm(v[0], rm.clone(), rv.clone(), affine ? v[1] : Tensor(), affine ? v[2] : Tensor(),
                            training, 0.1, 1e-5);
        };
        CHECK(gradcheck(f, {x, w, b}));
      }
    }
  }
}

TEST_CASE("batch_norm in training updates the running statistics in place; eval leaves them", "[loss_norm]") {
  Tensor x = tensor({1, 2, 3, 5}, {4, 1});
  Tensor rm = zeros({1}), rv = ones({1});
  Tensor y = batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.5, 0.0);
  // mean 2.75, biased var 2.1875, unbiased 2.9166...
  CHECK(rm.item() == Approx(0.5 * 2.75));
  CHECK(rv.item() == Approx(0.5 + 0.5 * 2.1875 * 4 / 3));
  CHECK(y.at({0, 0}) == Approx((1 - 2.75) / std::sqrt(2.1875)));
  batch_norm(x, rm, rv, Tensor(), Tensor(), false);
  CHECK(rm.item() == Approx(0.5 * 2.75));
  // without running statistics training works, evaluation needs them
  CHECK(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true).allclose(y, 1e-5, 1e-5));
  REQUIRE_THROWS_WITH(batch_norm(x, Tensor(), Tensor()), Contains("running_mean must be defined in evaluation mode"));
  REQUIRE_THROWS_WITH(batch_norm(x, rm, Tensor()), Contains("running_var must be defined in evaluation mode"));
}

TEST_CASE("BatchNorm1d rejects bad input with PyTorch's messages, leaving its state alone", "[loss_norm]") {
  nn::BatchNorm1d bn(3);
  REQUIRE_THROWS_WITH(bn(ones({1, 3})), Contains("Expected more than 1 value per channel when training, got input size "
                                                 "torch.Size([1, 3])"));
  REQUIRE_THROWS_WITH(bn(ones({1, 3, 1})), Contains("got input size torch.Size([1, 3, 1])"));
  CHECK(bn.num_batches_tracked.item<int64_t>() == 0);
  CHECK(bn.running_mean.tolist<double>() == std::vector<double>{0, 0, 0});
  CHECK(bn(ones({1, 3, 2})).sizes() == Shape{1, 3, 2});  // two values per channel suffice
  REQUIRE_THROWS_WITH(bn(ones({2, 3, 2, 2})), Contains("BatchNorm1d: expected 2D or 3D input (got 4D input)"));
  REQUIRE_THROWS_WITH(bn(ones({3})), Contains("expected 2D or 3D input (got 1D input)"));
  REQUIRE_THROWS_WITH(bn(ones({2, 4})), Contains("running_mean should contain 4 elements not 3"));
  REQUIRE_THROWS_WITH(nn::BatchNorm1d(3, 1e-5, 0.1, true, false)(ones({2, 4})),
                      Contains("weight should contain 4 elements not 3"));
  REQUIRE_THROWS_WITH(bn(ones({2, 3}, kInt64)), Contains("batch_norm: expected a floating point input, got torch.int64"));
  REQUIRE_THROWS_WITH(nn::BatchNorm1d(0), Contains("BatchNorm1d: num_features must be positive, got 0"));
  REQUIRE_THROWS_WITH(batch_norm(ones({2, 3}, kFloat64), zeros({3}), ones({3}), ones({3})),
                      Contains("expected weight and bias of dtype torch.float64 (the input's), got torch.float32"));
  REQUIRE_THROWS_WITH(batch_norm(ones({2, 3}), Tensor(), Tensor(), ones({3}), ones({2}), true),
                      Contains("bias should contain 3 elements not 2"));
  // an empty batch gives an empty output and leaves the running statistics alone (as PyTorch)
  const auto mean_before = bn.running_mean.tolist<double>();
  CHECK(bn(ones({0, 3})).sizes() == Shape{0, 3});
  CHECK(bn.running_mean.tolist<double>() == mean_before);
  bn.eval();  // one sample is fine in evaluation
  CHECK(bn(ones({1, 3})).sizes() == Shape{1, 3});
}

TEST_CASE("BatchNorm1d's buffers go through state_dict, save / load and clone", "[loss_norm]") {
  nn::BatchNorm1d a(3);
  set_affine(a, "bn");
  for (int k = 0; k < 2; ++k) a(from_ref("bn.x" + std::to_string(k)));
  auto sd = a.state_dict();
  std::vector<std::string> names;
  for (auto& e : sd) names.push_back(e.first);
  CHECK(names == std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
  CHECK(a.named_buffers().size() == 3);
  CHECK(a.parameters().size() == 2);

  TempFile f("bn");
  save(a.state_dict(), f.path);
  nn::BatchNorm1d b(3);
  b.load_state_dict(load(f.path));
  CHECK(b.running_mean.equal(a.running_mean));
  CHECK(b.running_var.equal(a.running_var));
  CHECK(b.num_batches_tracked.item<int64_t>() == 2);
  CHECK(b.num_batches_tracked.dtype() == kInt64);
  CHECK(b.weight.equal(a.weight));
  a.eval();
  b.eval();
  const Tensor x = from_ref("bn.x_eval");
  CHECK(b(x).equal(a(x)));
  // the loaded module carries on training exactly where the saved one was
  a.train();
  b.train();
  CHECK(compare(b(from_ref("bn.x2")), "bn.y2") == "");
  CHECK(compare(b.running_mean, "bn.running_mean2") == "");

  auto c = std::dynamic_pointer_cast<nn::BatchNorm1d>(a.clone());
  REQUIRE(c);
  CHECK(c->running_var.equal(a.running_var));
  CHECK(c->running_var.is_same(c->get_buffer("running_var")));
  CHECK(c->num_batches_tracked.is_same(c->get_buffer("num_batches_tracked")));
  CHECK(!c->running_var.is_same(a.running_var));
  c->reset_parameters();
  CHECK(c->num_batches_tracked.item<int64_t>() == 0);
  CHECK(c->running_var.tolist<double>() == std::vector<double>{1, 1, 1});
  CHECK(c->weight.tolist<double>() == std::vector<double>{1, 1, 1});
  CHECK(a.num_batches_tracked.item<int64_t>() == 2);  // the original is untouched
}

// ---- LayerNorm -------------------------------------------------------------------------------

TEST_CASE("LayerNorm / layer_norm match PyTorch: last dim, last two dims, no bias", "[loss_norm]") {
  {
    nn::LayerNorm ln({4});
    set_affine(ln, "ln");
    Tensor x = leaf("ln.x");
    Tensor y = ln(x);
    CHECK(y.grad_fn()->name() == "NativeLayerNormBackward0");
    CHECK(compare(y, "ln.y", 1e-5, 2e-6) == "");
    y.backward(from_ref("ln.gout"));
    CHECK(compare(x.grad(), "ln.grad_x", 1e-4, 1e-5) == "");
    CHECK(compare(ln.weight.grad(), "ln.grad_weight", 1e-5, 1e-5) == "");
    CHECK(compare(ln.bias.grad(), "ln.grad_bias", 1e-5, 1e-5) == "");
  }
  {
    nn::LayerNorm ln({3, 4}, 1e-5, false);
    CHECK(ln.parameters().empty());
    Tensor x = leaf("ln2.x");
    Tensor y = ln(x);
    CHECK(compare(y, "ln2.y", 1e-5, 2e-6) == "");
    y.backward(from_ref("ln2.gout"));
    CHECK(compare(x.grad(), "ln2.grad_x", 1e-4, 1e-5) == "");
    // the default affine map (weight 1, bias 0) computes the same
    CHECK(nn::LayerNorm({3, 4})(x).allclose(y, 1e-6, 1e-6));
  }
  {
    nn::LayerNorm ln({4}, 1e-5, true, false);  // bias=false (PyTorch 2.1)
    CHECK(!ln.bias.defined());
    CHECK(ln.parameters().size() == 1);
    {
      NoGradGuard ng;
      ln.weight.copy_(from_ref("ln_nobias.weight"));
    }
    Tensor x = leaf("ln_nobias.x");
    Tensor y = ln(x);
    CHECK(compare(y, "ln_nobias.y", 1e-5, 2e-6) == "");
    y.backward(from_ref("ln_nobias.gout"));
    CHECK(compare(x.grad(), "ln_nobias.grad_x", 1e-4, 1e-5) == "");
    CHECK(compare(ln.weight.grad(), "ln_nobias.grad_weight", 1e-5, 1e-5) == "");
  }
  CHECK(nn::LayerNorm({3}).repr() == "LayerNorm((3,), eps=1e-05, elementwise_affine=True)");
  CHECK(nn::LayerNorm({2, 3}, 1e-5, false).repr() == "LayerNorm((2, 3), eps=1e-05, elementwise_affine=False)");
}

TEST_CASE("layer_norm passes gradcheck over one and two normalised dims", "[loss_norm]") {
  for (const Shape& ns : {Shape{4}, Shape{3, 4}}) {
    for (bool affine : {true, false}) {
      INFO(shape_str(ns) << " affine=" << affine);
      Tensor x = (randn({2, 3, 4}, kFloat64) * 1.5).detach().requires_grad_();
      Tensor w = (randn(ns, kFloat64) + 1.0).detach().requires_grad_();
      Tensor b = randn(ns, kFloat64).requires_grad_();
      auto f = [&](const Vs& v) { return layer_norm(v[0], ns, affine ? v[1] : Tensor(), affine ? v[2] : Tensor()); };
      CHECK(gradcheck(f, {x, w, b}));
    }
  }
}

TEST_CASE("layer_norm: an in-place change of a non-contiguous input before backward raises", "[loss_norm]") {
  // the node keeps contiguous copies of x and weight; it watches the caller's tensors too
  // (a bad-input trial found the change going unnoticed)
  Tensor base = randn({4, 3}).requires_grad_();
  Tensor x = base * 1.0;
  Tensor xt = x.t();  // (3, 4), not contiguous
  Tensor y = layer_norm(xt, {4});
  xt.mul_(2.0);
  REQUIRE_THROWS_WITH(y.sum().backward(), Catch::Contains("modified by an inplace operation"));
  Tensor w = randn({4, 2}).requires_grad_();
  Tensor w2 = w * 1.0;
  Tensor wcol = w2.select(1, 0);  // (4), stride 2
  Tensor y2 = layer_norm(randn({3, 4}), {4}, wcol);
  wcol.add_(1.0);
  REQUIRE_THROWS_WITH(y2.sum().backward(), Catch::Contains("modified by an inplace operation"));
}

TEST_CASE("LayerNorm rejects bad shapes with PyTorch's messages; state_dict, save / load, clone", "[loss_norm]") {
  nn::LayerNorm ln({3});
  REQUIRE_THROWS_WITH(ln(ones({2, 4})), Contains("Given normalized_shape=[3], expected input with shape [*, 3], but got "
                                                 "input of size[2, 4]"));
  REQUIRE_THROWS_WITH(layer_norm(ones({2, 3}), {2, 3, 4}),
                      Contains("expected input with shape [*, 2, 3, 4], but got input of size[2, 3]"));
  REQUIRE_THROWS_WITH(layer_norm(ones({2, 3}), {}), Contains("Expected normalized_shape to be at least 1-dimensional"));
  REQUIRE_THROWS_WITH(layer_norm(ones({2, 3}), {3}, ones({2})),
                      Contains("Expected weight to be of same shape as normalized_shape, but got weight of shape [2] "
                               "and normalized_shape = [3]"));
  REQUIRE_THROWS_WITH(layer_norm(ones({2, 3}), {3}, Tensor(), ones({3, 1})),
                      Contains("Expected bias to be of same shape as normalized_shape, but got bias of shape [3, 1]"));
  REQUIRE_THROWS_WITH(nn::LayerNorm(Shape{}), Contains("LayerNorm: normalized_shape must have at least one dim"));
  CHECK(ln(ones({3})).sizes() == Shape{3});  // an unbatched input is fine

  nn::LayerNorm a({4});
  set_affine(a, "ln");
  TempFile f("ln");
  save(a.state_dict(), f.path);
  nn::LayerNorm b({4});
  b.load_state_dict(load(f.path));
  CHECK(b.weight.equal(a.weight));
  CHECK(b.bias.equal(a.bias));
  CHECK(b(from_ref("ln.x")).equal(a(from_ref("ln.x"))));
  auto c = std::dynamic_pointer_cast<nn::LayerNorm>(a.clone());
  REQUIRE(c);
  CHECK(c->weight.is_same(c->get_parameter("weight")));
  CHECK(c->normalized_shape == Shape{4});
}

// ---- clip_grad -------------------------------------------------------------------------------

namespace {
/// Three parameters with the recorded gradients and a fourth without one.
std::vector<Tensor> clip_params() {
  std::vector<Tensor> ps;
  for (int k = 0; k < 3; ++k) {
    Tensor g = from_ref("clip.g" + std::to_string(k));
    Tensor p = zeros(g.sizes()).requires_grad_();
    p.set_grad(g);
    ps.push_back(p);
  }
  ps.push_back(zeros({2}).requires_grad_());
  return ps;
}
}  // namespace

TEST_CASE("clip_grad_norm_ matches PyTorch for norm types 2, 1, inf, 3 and 0.5", "[loss_norm]") {
  const std::tuple<const char*, double, double> cases[] = {
      {"clip_l2", 1.0, 2.0},   {"clip_l2_noclip", 100.0, 2.0}, {"clip_l1", 0.5, 1.0},
      {"clip_inf", 0.3, INFINITY}, {"clip_l3", 2.0, 3.0},     {"clip_lhalf", 0.1, 0.5}};
  for (const auto& [name, max_norm, norm_type] : cases) {
    INFO(name);
    auto ps = clip_params();
    Tensor total = nn::utils::clip_grad_norm_(ps, max_norm, norm_type);
    CHECK(total.dim() == 0);
    CHECK(total.dtype() == kFloat32);
    CHECK(compare(total, std::string(name) + ".total") == "");
    for (int k = 0; k < 3; ++k) CHECK(compare(ps[k].grad(), std::string(name) + ".g" + std::to_string(k)) == "");
    CHECK(!ps[3].grad().defined());  // skipped, not created
  }
  // the clipped gradients have norm max_norm (just below: the 1e-6)
  auto ps = clip_params();
  nn::utils::clip_grad_norm_(ps, 1.0);
  CHECK(nn::utils::clip_grad_norm_(ps, 1e9).item() == Approx(1.0).epsilon(1e-5));
}

TEST_CASE("clip_grad_norm_: no gradients, one tensor, float64, non-finite norms", "[loss_norm]") {
  Tensor none = nn::utils::clip_grad_norm_(std::vector<Tensor>{zeros({2}).requires_grad_()}, 1.0);
  CHECK(none.item() == 0);
  CHECK(none.dtype() == kFloat32);
  CHECK(nn::utils::clip_grad_norm_(std::vector<Tensor>{}, 1.0).item() == 0);

  Tensor p = zeros({2}, kFloat64).requires_grad_();
  p.set_grad(tensor({3, 4}, kFloat64));
  Tensor total = nn::utils::clip_grad_norm_(p, 1.0);  // one tensor, not a list
  CHECK(total.dtype() == kFloat64);
  CHECK(total.item() == 5.0);
  CHECK(p.grad().tolist<double>()[0] == Approx(3.0 / (5.0 + 1e-6)).epsilon(1e-12));

  Tensor q = zeros({3}).requires_grad_();
  q.set_grad(tensor({INFINITY, 1, 2}));
  REQUIRE_THROWS_WITH(nn::utils::clip_grad_norm_(q, 1.0, 2.0, true),
                      Contains("The total norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot "
                               "be clipped. To disable this error and scale the gradients by the non-finite norm "
                               "anyway, set `error_if_nonfinite=False`"));
  REQUIRE_THROWS_WITH(nn::utils::clip_grad_norm_(q, 1.0, INFINITY, true), Contains("The total norm of order inf"));
  CHECK(std::isinf(q.grad().tolist<double>()[0]));  // unchanged by the refused call
  q.set_grad(tensor({NAN, 1, 2}));
  CHECK(std::isnan(nn::utils::clip_grad_norm_(q, 1.0).item()));  // as PyTorch: nan everywhere
  CHECK(std::isnan(q.grad().tolist<double>()[1]));
}

TEST_CASE("clip_grad_value_ clamps every gradient element, skipping missing gradients", "[loss_norm]") {
  auto ps = clip_params();
  nn::utils::clip_grad_value_(ps, 0.25);
  for (int k = 0; k < 3; ++k) CHECK(compare(ps[k].grad(), "clip_value.g" + std::to_string(k), 0, 0) == "");
  CHECK(!ps[3].grad().defined());
  Tensor p = zeros({3}).requires_grad_();
  p.set_grad(tensor({-3, NAN, 0.1}));
  nn::utils::clip_grad_value_(p, 1.0);
  const auto g = p.grad().tolist<double>();
  CHECK(g[0] == -1);
  CHECK(std::isnan(g[1]));
  CHECK(g[2] == Approx(0.1));
}

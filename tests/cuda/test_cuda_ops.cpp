// tests/cuda/test_cuda_ops.cpp — every op of the CPU case table (tests/ops_cases.hpp) on CUDA
// tensors, forward and backward, against the same case on the CPU and against PyTorch.
//
// For each case of tests/ops_cases.hpp (inputs and PyTorch's outputs/gradients from
// tests/reference/ops_ref.hpp, written by gen_ops.py): the inputs are moved to cuda:0, the op and
// out.backward(gout on cuda:0) run there, and the output and gradients, copied back, must equal the
// CPU run of the same case (float: 1e-5 relative; int64 outputs, comparisons and argmax: exactly)
// and PyTorch's reference arrays. Cases whose ops have no CUDA path yet are listed in
// kNotOnCudaYet and must throw "not implemented for CUDA tensors yet": a case that starts working
// or a new case that fails makes the test fail, so the list cannot silently grow.
// Direct tests: broadcasting (3,1)+(1,4) on cuda:1, int64 wraparound, NaN in max, a bad label in
// cross_entropy (an error, no crash), mixed devices. In the simulator any host read of CUDA data
// segfaults, so passing here also proves the ops never read device memory on the host.
// Chapter: chapters/10-gpu-kernels.md. Reference: PyTorch (tests/reference/gen_ops.py).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <tinytorch/ops/elementwise.hpp>  // ops::binary, ops::unary_ (an op written on the internals)
#include <tinytorch/tinytorch.hpp>

#include "../ops_cases.hpp"

// File-local names live in a namespace named after the file (nvcc builds all tests/cuda/*.cpp in one TU).
namespace test_cuda_ops {

using tinytorch::Device;
using tinytorch::Tensor;

const Device kCuda0 = Device::cuda(0);

/// Cases whose ops do not run on CUDA tensors yet: each must throw "not implemented for CUDA
/// tensors yet". Keep this list exact (the test checks both directions).
const std::set<std::string> kNotOnCudaYet = {};

/// x on `d` as a new leaf (requires_grad as x).
inline Tensor leaf_on(const Tensor& x, Device d) {
  Tensor t = x.detach().to(d);
  if (x.requires_grad()) t.requires_grad_(true);
  return t;
}

/// "" when a (CUDA result copied back) equals b (the CPU result): same shape and dtype; int64
/// exactly; floats within rtol (relative) + a tiny atol; NaN == NaN, equal infinities.
inline std::string same(const Tensor& a_dev, const Tensor& b, const std::string& what, double rtol = 1e-5) {
  if (!a_dev.defined() || !b.defined())
    return a_dev.defined() == b.defined() ? "" : what + ": defined on one device only";
  if (a_dev.device() != kCuda0 && a_dev.device() != Device::cuda(1))
    return what + ": result on " + a_dev.device().str() + ", expected a CUDA device";
  const Tensor a = a_dev.to(Device::cpu());
  if (a.sizes() != b.sizes()) return what + ": shape " + tinytorch::shape_str(a.sizes()) + " vs " + tinytorch::shape_str(b.sizes());
  if (a.dtype() != b.dtype()) return what + ": dtype " + tinytorch::dtype_name(a.dtype()) + " vs " + tinytorch::dtype_name(b.dtype());
  if (a.dtype() == tinytorch::kInt64) return a.tolist<int64_t>() == b.tolist<int64_t>() ? "" : what + ": int64 values differ";
  const std::vector<double> x = a.tolist<double>(), y = b.tolist<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    const bool ok = (std::isnan(x[i]) && std::isnan(y[i])) || x[i] == y[i] ||
                    std::abs(x[i] - y[i]) <= 1e-7 + rtol * std::abs(y[i]);
    if (!ok) return what + ": element " + std::to_string(i) + " is " + std::to_string(x[i]) + " on CUDA, " +
                    std::to_string(y[i]) + " on the CPU";
  }
  return "";
}

struct Run {
  Tensor out;
  std::vector<Tensor> grads;
};

/// Runs case `c` with its inputs on `d` (forward, and backward with gout when it has one).
inline Run run_case(const ops_reference::Case& c, const ops_test::OpCase& op, Device d) {
  std::vector<Tensor> in;
  for (const Tensor& x : ops_test::load_inputs(c, true)) in.push_back(leaf_on(x, d));
  Run r;
  r.out = op.fn(in);
  const std::string gname = std::string(c.name) + ".gout";
  if (ops_test::find_array(gname)) {
    r.out.backward(ops_test::load(gname).to(d));
    for (const Tensor& x : in) r.grads.push_back(x.grad());
  }
  return r;
}

inline bool not_on_cuda_error(const tinytorch::Error& e) {
  return std::string(e.what()).find("not implemented for CUDA tensors yet") != std::string::npos;
}

TEST_CASE("every op of the CPU case table runs on cuda:0 and matches the CPU and PyTorch", "[cuda][ops]") {
  REQUIRE(tinytorch::cuda::is_available());
  std::set<std::string> unsupported;
  for (const auto& c : ops_reference::kCases) {
    const ops_test::OpCase* op = ops_test::find_case(c.name);
    if (!op) continue;
    INFO("case " << c.name);
    const Run cpu = run_case(c, *op, Device::cpu());
    Run gpu;
    try {
      gpu = run_case(c, *op, kCuda0);
    } catch (const tinytorch::Error& e) {
      INFO(e.what());
      CHECK(not_on_cuda_error(e));
      unsupported.insert(c.name);
      continue;
    }
    std::string err = same(gpu.out, cpu.out, "out");
    INFO(err);
    CHECK(err.empty());
    err = ops_test::compare(gpu.out.to(Device::cpu()), std::string(c.name) + ".out");
    INFO(err);
    CHECK(err.empty());
    REQUIRE(gpu.grads.size() == cpu.grads.size());
    for (size_t i = 0; i < cpu.grads.size(); ++i) {
      err = same(gpu.grads[i], cpu.grads[i], "grad" + std::to_string(i));
      INFO(err);
      CHECK(err.empty());
      const std::string gname = std::string(c.name) + ".grad" + std::to_string(i);
      if (ops_test::find_array(gname)) {
        err = ops_test::compare(gpu.grads[i].to(Device::cpu()), gname);
        INFO(err);
        CHECK(err.empty());
      }
    }
  }
  CHECK(unsupported == kNotOnCudaYet);
  for (const auto& name : unsupported) WARN("not on CUDA yet: " << name);
}

TEST_CASE("broadcasting add (3,1) + (1,4) on cuda:1", "[cuda][ops]") {
  REQUIRE(tinytorch::cuda::device_count() >= 2);
  const Device d1 = Device::cuda(1);
  Tensor a = tinytorch::tensor({1, 2, 3}, {3, 1}).to(d1);
  Tensor b = tinytorch::tensor({10, 20, 30, 40}, {1, 4}).to(d1);
  Tensor c = a + b;
  CHECK(c.device() == d1);
  CHECK(c.sizes() == tinytorch::Shape{3, 4});
  CHECK(c.to(Device::cpu()).tolist<double>() ==
        std::vector<double>{11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43});
  // in place with a broadcast operand, and on a transposed (non-contiguous) self
  Tensor s = tinytorch::zeros({4, 3}).to(d1).t();
  s.add_(a);
  CHECK(s.to(Device::cpu()).tolist<double>() == std::vector<double>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
}

TEST_CASE("int64 arithmetic wraps modulo 2^64 on CUDA", "[cuda][ops]") {
  const int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
  Tensor a = tinytorch::tensor({static_cast<double>(0), 5}, tinytorch::kInt64).to(kCuda0);
  Tensor big = tinytorch::full({2}, max, tinytorch::kInt64).to(kCuda0);
  CHECK((big + 1).to(Device::cpu()).tolist<int64_t>() == std::vector<int64_t>{min, min});
  CHECK((big + big).to(Device::cpu()).tolist<int64_t>() == std::vector<int64_t>{-2, -2});
  CHECK((big * 2).to(Device::cpu()).tolist<int64_t>() == std::vector<int64_t>{-2, -2});
  CHECK((-(big + 1)).to(Device::cpu()).tolist<int64_t>() == std::vector<int64_t>{min, min});
  CHECK((a - big).to(Device::cpu()).tolist<int64_t>() == std::vector<int64_t>{-max, min + 6});
  CHECK(tinytorch::full({1}, 3, tinytorch::kInt64).to(kCuda0).pow(41).to(Device::cpu()).tolist<int64_t>() ==
        std::vector<int64_t>{-420491770248316829});
  Tensor s = big.sum();
  CHECK(s.to(Device::cpu()).item<int64_t>() == -2);
  big.add_(1);
  CHECK(big.to(Device::cpu()).tolist<int64_t>() == std::vector<int64_t>{min, min});
}

TEST_CASE("max propagates NaN on CUDA, and its backward goes to the NaN", "[cuda][ops]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = tinytorch::tensor({1, nan, 3, 4, 5, 6}, {2, 3}).to(kCuda0).requires_grad_(true);
  Tensor m = x.max();
  CHECK(std::isnan(m.to(Device::cpu()).item<double>()));
  auto [v, i] = x.max(1);
  const std::vector<double> vh = v.to(Device::cpu()).tolist<double>();
  CHECK(std::isnan(vh[0]));
  CHECK(vh[1] == 6);
  CHECK(i.to(Device::cpu()).tolist<int64_t>() == std::vector<int64_t>{1, 2});
  m.backward();
  CHECK(x.grad().to(Device::cpu()).tolist<double>() == std::vector<double>{0, 1, 0, 0, 0, 0});
  Tensor mx = tinytorch::maximum(x.detach(), tinytorch::full({2, 3}, 2.0).to(kCuda0));
  CHECK(std::isnan(mx.to(Device::cpu()).tolist<double>()[1]));
}

TEST_CASE("cross_entropy with a bad label on CUDA throws, and nothing crashes", "[cuda][ops]") {
  Tensor logits = tinytorch::randn({2, 3}).to(kCuda0).requires_grad_(true);
  using Catch::Matchers::Contains;
  REQUIRE_THROWS_WITH(tinytorch::cross_entropy(logits, tinytorch::tensor({0, 3}, tinytorch::kInt64).to(kCuda0)),
                      Contains("Target 3 is out of bounds"));
  REQUIRE_THROWS_WITH(tinytorch::nll_loss(logits, tinytorch::tensor({-1, 0}, tinytorch::kInt64).to(kCuda0)),
                      Contains("Target -1 is out of bounds"));
  // the device is still usable
  Tensor loss = tinytorch::cross_entropy(logits, tinytorch::tensor({0, 2}, tinytorch::kInt64).to(kCuda0));
  loss.backward();
  CHECK(loss.device() == kCuda0);
  const std::vector<double> row_sums = logits.grad().sum(1).to(Device::cpu()).tolist<double>();
  for (double r : row_sums) CHECK(std::abs(r) < 1e-6);  // softmax - onehot sums to 0 per row
}

TEST_CASE("ops on tensors of two devices throw PyTorch's error", "[cuda][ops]") {
  Tensor a = tinytorch::ones({3}).to(kCuda0);
  Tensor b = tinytorch::ones({3});
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(a + b, Contains("Expected all tensors to be on the same device, but found at least two devices, "
                                    "cuda:0 and cpu!"));
  CHECK_THROWS_WITH(tinytorch::where(a.gt(0.0), a, b), Contains("Expected all tensors to be on the same device"));
  CHECK_THROWS_WITH(a.mul_(b), Contains("Expected all tensors to be on the same device"));
  a.copy_(b + 1);  // copy_ moves across devices, as PyTorch's
  CHECK(a.to(Device::cpu()).tolist<double>() == std::vector<double>{2, 2, 2});
}

TEST_CASE("min/amax, maximum, pow, remainder, clamp, where and in-place ops give the CPU values on CUDA",
          "[cuda][ops]") {
  using namespace tinytorch;
  using V = std::vector<Tensor>;
  struct Op {
    const char* name;
    std::function<Tensor(const V&)> fn;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // x: (3, 4) with a NaN, a tie and zeros; y: (4) broadcast; z: (3, 1) positive
  const Tensor x = tensor({0.5, -1.5, 2.0, 0.0, 3.0, nan, -0.25, 2.0, 1.0, 1.0, -2.0, 0.75}, {3, 4});
  const Tensor y = tensor({1.0, -1.5, 0.5, 2.0}, {4});
  const Tensor z = tensor({0.5, 1.5, 2.5}, {3, 1});
  const std::vector<Op> ops = {
      {"min_all", [](const V& v) { return v[0].min(); }},
      {"min_dim", [](const V& v) { return std::get<0>(v[0].min(1)); }},
      {"argmin", [](const V& v) { return argmin(v[0], 0); }},
      {"amax", [](const V& v) { return amax(v[0], {0}, true); }},
      {"amin_all", [](const V& v) { return amin(v[0], {}); }},
      {"maximum", [](const V& v) { return maximum(v[0], v[1]); }},
      {"minimum", [](const V& v) { return minimum(v[0], v[1]); }},
      {"pow_tensor", [](const V& v) { return pow(v[2], v[1]); }},
      {"pow_scalar_base", [](const V& v) { return pow(2.0, v[0]); }},
      {"remainder", [](const V& v) { return remainder(v[0], v[1]); }},
      {"fmod", [](const V& v) { return fmod(v[0], v[1]); }},
      {"floor_divide", [](const V& v) { return floor_divide(v[0].detach(), v[1].detach()); }},
      {"clamp_tensor", [](const V& v) { return clamp(v[0], v[1], v[2]); }},
      {"clamp_min_nan", [](const V& v) { return v[0].clamp_min(std::numeric_limits<double>::quiet_NaN()); }},
      {"where", [](const V& v) { return where(v[0].gt(0.0), v[0], v[1]); }},
      {"where_scalar", [](const V& v) { return where(v[1].le(0.5), v[1], 7.0); }},
      {"compare_scalar", [](const V& v) { return v[0].ge(1.0); }},
      {"eq_tensor", [](const V& v) { return v[0].eq(v[1]); }},
      {"int64_floor_divide", [](const V& v) { return floor_divide(v[1].detach().to(kInt64) * 7, v[2].detach().to(kInt64) + 1); }},
      {"sigmoid_tanh_abs_relu", [](const V& v) { return v[0].sigmoid() + v[0].tanh() + v[0].abs() + v[0].relu(); }},
      {"inplace_scalar", [](const V& v) { Tensor t = v[0] * 1.0; t.add_(2.5); t.mul_(-0.5); t.sub_(1); t.div_(4.0); return t; }},
      {"inplace_tensor", [](const V& v) { Tensor t = v[0] * 1.0; t.add_(v[1], 2); t.mul_(v[2]); t.div_(v[2]); t.sub_(v[1]); return t; }},
      {"addcmul_addcdiv", [](const V& v) { Tensor t = v[0] * 1.0; t.addcmul_(v[1], v[2], 0.5); t.addcdiv_(v[1], v[2], 2); return t; }},
      {"copy_fill_zero", [](const V& v) {
         Tensor t = v[0] * 1.0;
         t.narrow(1, 1, 2).copy_(v[2].expand({3, 2}));
         t.select(0, 0).fill_(3.5);
         t.t().narrow(0, 3, 1).zero_();
         return t;
       }},
  };
  for (const Op& op : ops) {
    INFO("op " << op.name);
    Tensor cpu_out;
    std::vector<Tensor> cpu_grads;
    for (Device d : {Device::cpu(), kCuda0}) {
      V in;
      for (const Tensor& t : {x, y, z}) in.push_back(t.detach().to(d).requires_grad_(true));  // fresh leaves
      Tensor out = op.fn(in);
      std::vector<Tensor> grads;
      if (out.requires_grad()) {
        const Tensor gout = arange(1, 1 + out.numel(), 1, out.dtype()).reshape(out.sizes()) * 0.25;
        out.backward(gout.to(d));
        for (const Tensor& t : in) grads.push_back(t.grad());
      }
      if (d.is_cpu()) {
        cpu_out = out.detach();
        cpu_grads = grads;
        continue;
      }
      std::string err = same(out.detach(), cpu_out, "out");
      INFO(err);
      CHECK(err.empty());
      REQUIRE(grads.size() == cpu_grads.size());
      for (size_t i = 0; i < grads.size(); ++i) {
        err = same(grads[i], cpu_grads[i], "grad" + std::to_string(i));
        INFO(err);
        CHECK(err.empty());
      }
    }
  }
}

TEST_CASE("ops without a CUDA path yet throw the clear error (conv2d, max_pool2d, batch_norm)", "[cuda][ops]") {
  using Catch::Matchers::Contains;
  const Tensor x = tinytorch::ones({1, 1, 4, 4}).to(kCuda0);
  const char* msg = "not implemented for CUDA tensors yet";
  CHECK_THROWS_WITH(tinytorch::conv2d(x, tinytorch::ones({1, 1, 3, 3}).to(kCuda0)), Contains(msg));
  CHECK_THROWS_WITH(tinytorch::max_pool2d(x, 2), Contains(msg));
  CHECK_THROWS_WITH(tinytorch::batch_norm(x, tinytorch::zeros({1}).to(kCuda0), tinytorch::ones({1}).to(kCuda0)),
                    Contains(msg));
  // (layer_norm has one since issue 23: tests/cuda/test_cuda_transformer.cpp)
  CHECK(tinytorch::layer_norm(x, {4}).device() == kCuda0);
}

TEST_CASE("uniform_ and normal_ draw the CPU's numbers into a CUDA tensor", "[cuda][ops]") {
  tinytorch::Generator g1(7), g2(7);
  Tensor a = tinytorch::empty({5, 3});
  Tensor b = tinytorch::empty({3, 5}).to(kCuda0).t();  // a strided CUDA view
  a.uniform_(-1, 2, &g1);
  b.uniform_(-1, 2, &g2);
  CHECK(same(b, a, "uniform_").empty());
  a.normal_(0.5, 2, &g1);
  b.normal_(0.5, 2, &g2);
  CHECK(same(b, a, "normal_").empty());
}

TEST_CASE("an op given a lambda refuses a CUDA tensor with a clear error; integer division by zero is caught",
          "[cuda][ops]") {
  using Catch::Matchers::Contains;
  Tensor a = tinytorch::ones({3}).to(kCuda0);
  CHECK_THROWS_WITH(tinytorch::ops::binary(a, a, [](auto u, auto) { return u; }, "my_op"),
                    Contains("my_op: not implemented for CUDA tensors yet"));
  CHECK_THROWS_WITH(tinytorch::ops::unary_(a, [](auto u) { return u; }, "my_op_"),
                    Contains("my_op_: not implemented for CUDA tensors yet"));
  Tensor c = tinytorch::ones({3});  // the CPU path still takes lambdas
  CHECK(tinytorch::ops::binary(c, c, [](auto u, auto w) { return u + w; }, "my_op").tolist<double>() ==
        std::vector<double>{2, 2, 2});
  Tensor i = tinytorch::tensor({4, 5}, tinytorch::kInt64).to(kCuda0);
  CHECK_THROWS_WITH(tinytorch::floor_divide(i, tinytorch::tensor({1, 0}, tinytorch::kInt64).to(kCuda0)),
                    Contains("ZeroDivisionError"));
}

}  // namespace test_cuda_ops

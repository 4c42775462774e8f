// tests/cuda/test_cuda_tensor.cpp — CUDA tensors end to end through the Tensor API: to(Device) /
// cuda() / cpu() round trips (cpu <-> cuda:i <-> cuda:j, float32/float64/int64, views), ToCopyBackward0
// carrying gradients back across devices, the engine's seed and AccumulateGrad on a GPU, factories
// with a device (the same seed gives the same random numbers on the CPU and a GPU), item/at/tolist/
// printing through a host copy, copy_/fill_/zero_/contiguous/clone/cat on a GPU, and the errors:
// mixed devices (PyTorch's "Expected all tensors to be on the same device, ...") and a GPU the machine
// does not have ("invalid device ordinal").
//
// Compiled as test_cuda_tensor_sim (g++ -DTINYTORCH_CUDA_SIM=1: the simulator, 4 devices, where any
// host read of device memory segfaults, so every path here is shown to copy through the runtime)
// and into test_cuda_nvcc (nvcc; skipped without a GPU). Tests use up to 4 devices, as many as there
// are. Reference values: the CPU tensors themselves (a copy is exact); repr strings follow PyTorch's
// _tensor_str (the device suffix comes first: checked with torch's meta device,
// repr(torch.tensor([1., 2.], dtype=torch.float64, device='meta')) ==
// "tensor(..., device='meta', size=(2,), dtype=torch.float64)").
// Covers ops/dispatch.hpp, ops/shape.hpp (to_device, copy_into_strided), ops/creation.hpp,
// functional.hpp (to/cuda/cpu/item/at/tolist/str/copy_/fill_), autograd/engine.hpp.
// Chapter: chapters/10-gpu-kernels.md. Reference: torch.Tensor.to, Tensor.cuda, Tensor.cpu.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.hpp>

using Catch::Matchers::Contains;
using tinytorch::Device;
using tinytorch::Tensor;
using tinytorch::TensorOptions;

namespace test_cuda_tensor {

/// The number of GPUs the tests use: as many as there are, at most 4.
inline int devices() {
  const int n = tinytorch::cuda::device_count();
  return n < 4 ? n : 4;
}
inline TensorOptions on(Device d, tinytorch::DType dt = tinytorch::kFloat32) { return TensorOptions(dt).device(d); }

}  // namespace test_cuda_tensor

TEST_CASE("to/cuda/cpu round trips keep every value, across devices and dtypes", "[cuda][tensor]") {
  using namespace test_cuda_tensor;
  const int n = devices();
  REQUIRE(n >= 1);
  for (tinytorch::DType dt : {tinytorch::kFloat32, tinytorch::kFloat64, tinytorch::kInt64}) {
    const Tensor x = tinytorch::tensor({1, -2, 3.5, 4, 0, 6}, {2, 3}, dt);
    const std::vector<double> want = x.tolist<double>();
    for (int i = 0; i < n; ++i) {
      const Tensor g = x.cuda(i);
      CHECK(g.device() == Device::cuda(i));
      CHECK(g.is_cuda());
      CHECK(g.dtype() == dt);
      CHECK(g.sizes() == x.sizes());
      CHECK(g.tolist<double>() == want);
      const Tensor back = g.cpu();
      CHECK(back.device() == Device::cpu());
      CHECK(back.tolist<double>() == want);
      // GPU to GPU (the next one round the ring; the same one when there is a single GPU)
      const Tensor other = g.to(Device::cuda((i + 1) % n));
      CHECK(other.device() == Device::cuda((i + 1) % n));
      CHECK(other.cpu().tolist<double>() == want);
    }
  }
  // int64 beyond 2^53 is copied exactly (bytes, never through a double)
  const int64_t big = (int64_t(1) << 53) + 1;
  const Tensor i64 = tinytorch::full({3}, big, tinytorch::kInt64);
  CHECK(i64.cuda().cpu().tolist<int64_t>() == std::vector<int64_t>{big, big, big});
  // an empty tensor
  const Tensor e = tinytorch::empty({0, 3}).cuda();
  CHECK(e.sizes() == tinytorch::Shape{0, 3});
  CHECK(e.cpu().numel() == 0);
}

TEST_CASE("to() of views: transposed, narrowed and expanded sources", "[cuda][tensor]") {
  const Tensor x = tinytorch::arange(0.0, 12.0, 1.0, tinytorch::kFloat32).view({3, 4});
  const Tensor t = x.t();  // (4, 3), strides (1, 4)
  CHECK(t.cuda().tolist<double>() == t.tolist<double>());
  CHECK(t.cuda().is_contiguous());
  const Tensor s = x.narrow(1, 1, 2);  // (3, 2), offset 1
  CHECK(s.cuda(0).cpu().tolist<double>() == s.tolist<double>());
  const Tensor b = x.select(0, 1).unsqueeze(0).expand({3, 4});  // stride 0
  CHECK(b.cuda().tolist<double>() == b.tolist<double>());
  // a view of a GPU tensor back to the CPU
  const Tensor g = x.cuda();
  CHECK(g.t().cpu().tolist<double>() == t.tolist<double>());
  CHECK(g.narrow(1, 1, 2).cpu().tolist<double>() == s.tolist<double>());
  CHECK(g.t().contiguous().cpu().tolist<double>() == t.tolist<double>());
  CHECK(g.t().clone().is_cuda());
}

TEST_CASE("to() on the same device returns the same tensor; to(device, dtype) converts", "[cuda][tensor]") {
  const Tensor x = tinytorch::ones({2});
  CHECK(x.to(Device::cpu()).is_same(x));
  CHECK(x.cpu().is_same(x));
  const Tensor g = x.cuda();
  CHECK(g.cuda().is_same(g));
  CHECK(g.cuda(0).is_same(g));
  CHECK(g.to(Device::cuda(0)).is_same(g));
  const Tensor d = x.to(Device::cuda(0), tinytorch::kFloat64);
  CHECK(d.dtype() == tinytorch::kFloat64);
  CHECK(d.is_cuda());
  CHECK(d.tolist<double>() == std::vector<double>{1, 1});
  const Tensor l = g.to(Device::cpu(), tinytorch::kInt64);
  CHECK(l.dtype() == tinytorch::kInt64);
  CHECK(l.device() == Device::cpu());
  CHECK(g.to(tinytorch::kFloat64).is_cuda());  // a dtype conversion on the GPU
}

TEST_CASE("ToCopyBackward0 carries the gradient back to the CPU leaf", "[cuda][tensor][autograd]") {
  using namespace test_cuda_tensor;
  Tensor x = tinytorch::tensor({1, 2, 3}, TensorOptions().requires_grad(true));
  const Tensor y = x.cuda();
  REQUIRE(y.grad_fn() != nullptr);
  CHECK(y.grad_fn()->name() == "ToCopyBackward0");
  CHECK_FALSE(y.is_leaf());
  y.backward(tinytorch::tensor({0.5, -1, 2}, on(Device::cuda(0))));
  REQUIRE(x.grad().defined());
  CHECK(x.grad().device() == Device::cpu());
  CHECK(x.grad().tolist<double>() == std::vector<double>{0.5, -1, 2});

  // cpu -> cuda:0 -> cuda:(1) -> cpu, with a float64 hop: the gradient retraces every hop
  Tensor a = tinytorch::tensor({4, 5}, TensorOptions().requires_grad(true));
  const int other = devices() > 1 ? 1 : 0;
  const Tensor z = a.cuda(0).to(Device::cuda(other), tinytorch::kFloat64).cpu();
  CHECK(z.dtype() == tinytorch::kFloat64);
  CHECK(z.grad_fn()->name() == "ToCopyBackward0");
  z.backward(tinytorch::tensor({3, 7}, tinytorch::kFloat64));
  CHECK(a.grad().dtype() == tinytorch::kFloat32);
  CHECK(a.grad().device() == Device::cpu());
  CHECK(a.grad().tolist<double>() == std::vector<double>{3, 7});
}

TEST_CASE("backward from a GPU scalar: the seed is made on the GPU; grads land on the leaf's device",
          "[cuda][tensor][autograd]") {
  using namespace test_cuda_tensor;
  Tensor x = tinytorch::tensor({2.5}, TensorOptions().requires_grad(true));
  x.cuda(0).backward();  // seed = ones_like(root), on cuda:0
  CHECK(x.grad().tolist<double>() == std::vector<double>{1});

  // a GPU leaf: its grad stays on the GPU
  Tensor w = tinytorch::tensor({1, 2}, on(Device::cuda(0)).requires_grad(true));
  CHECK(w.is_leaf());
  const Tensor c = w.cpu();
  c.backward(tinytorch::tensor({6, 8}));
  REQUIRE(w.grad().defined());
  CHECK(w.grad().device() == Device::cuda(0));
  CHECK(w.grad().tolist<double>() == std::vector<double>{6, 8});

  // a gradient on the wrong device: PyTorch's validate_outputs wording
  Tensor v = tinytorch::tensor({1, 2}, on(Device::cuda(0)).requires_grad(true));
  v.register_hook([](const Tensor& g) { return g.cpu(); });
  CHECK_THROWS_WITH(v.cpu().backward(tinytorch::tensor({1, 1})),
                    Contains("invalid gradient at index 0 - expected device cuda:0 but got cpu"));
  // backward(gradient) with the gradient on another device than the root
  Tensor u = tinytorch::tensor({1, 2}, TensorOptions().requires_grad(true));
  CHECK_THROWS_WITH(u.cuda().backward(tinytorch::tensor({1, 1})),
                    Contains("invalid gradient at index 0 - expected device cuda:0 but got cpu"));
  // set_grad onto another device
  CHECK_THROWS_WITH(u.set_grad(tinytorch::zeros({2}, on(Device::cuda(0)))),
                    Contains("assigned grad has data located on a different device"));
}

TEST_CASE("factories with a device equal the CPU factories", "[cuda][tensor]") {
  using namespace test_cuda_tensor;
  const int last = devices() - 1;
  const Device d = Device::cuda(last);
  CHECK(tinytorch::zeros({2, 3}, on(d)).device() == d);
  CHECK(tinytorch::zeros({2, 3}, on(d)).tolist<double>() == std::vector<double>(6, 0.0));
  CHECK(tinytorch::ones({4}, on(d, tinytorch::kInt64)).tolist<int64_t>() == std::vector<int64_t>(4, 1));
  CHECK(tinytorch::full({3}, 2.5, on(d, tinytorch::kFloat64)).tolist<double>() == std::vector<double>(3, 2.5));
  CHECK(tinytorch::empty({5}, on(d)).device() == d);
  CHECK(tinytorch::tensor({1, 2, 3}, {3}, on(d)).tolist<double>() == std::vector<double>{1, 2, 3});
  CHECK(tinytorch::scalar_tensor(7, on(d)).item<double>() == 7);
  const Tensor r = tinytorch::ones({2}, on(d).requires_grad(true));
  CHECK(r.requires_grad());
  CHECK(r.is_leaf());
  // the same seed gives the same numbers on the CPU and on the GPU (drawn on the host, then copied)
  tinytorch::manual_seed(123);
  const Tensor hn = tinytorch::randn({17});
  const Tensor hu = tinytorch::rand({5}, tinytorch::kFloat64);
  const Tensor hi = tinytorch::randint(-5, 5, {9});
  tinytorch::manual_seed(123);
  const Tensor gn = tinytorch::randn({17}, on(d));
  const Tensor gu = tinytorch::rand({5}, on(d, tinytorch::kFloat64));
  const Tensor gi = tinytorch::randint(-5, 5, {9}, on(d, tinytorch::kInt64));
  CHECK(gn.device() == d);
  CHECK(gn.tolist<double>() == hn.tolist<double>());
  CHECK(gu.tolist<double>() == hu.tolist<double>());
  CHECK(gi.tolist<int64_t>() == hi.tolist<int64_t>());
  // in-place random fills draw the same numbers as on the CPU too (a strided GPU destination included)
  tinytorch::manual_seed(7);
  Tensor hc = tinytorch::zeros({3, 4});
  hc.normal_(1.0, 2.0);
  Tensor hv = tinytorch::zeros({4});
  hv.uniform_(-1.0, 1.0);
  tinytorch::manual_seed(7);
  Tensor gc = tinytorch::zeros({4, 3}, on(d));
  Tensor gct = gc.t();
  gct.normal_(1.0, 2.0);
  Tensor gv = tinytorch::zeros({4}, on(d));
  gv.uniform_(-1.0, 1.0);
  CHECK(gct.tolist<double>() == hc.tolist<double>());
  CHECK(gv.tolist<double>() == hv.tolist<double>());
  // *_like keep the device
  const Tensor g = tinytorch::tensor({1, 2}, on(d, tinytorch::kFloat64));
  for (const Tensor& t : {tinytorch::zeros_like(g), tinytorch::ones_like(g), tinytorch::empty_like(g),
                          tinytorch::full_like(g, 3)}) {
    CHECK(t.device() == d);
    CHECK(t.dtype() == tinytorch::kFloat64);
  }
  CHECK(tinytorch::full_like(g, 3).tolist<double>() == std::vector<double>{3, 3});
}

TEST_CASE("item, at, tolist, equal, allclose and printing read a GPU tensor through a host copy",
          "[cuda][tensor]") {
  using namespace test_cuda_tensor;
  const Tensor g = tinytorch::tensor({1, 2}, on(Device::cuda(0)));
  CHECK(g.str() == "tensor([1., 2.], device='cuda:0')");
  const int last = devices() - 1;
  const std::string dev = "device='cuda:" + std::to_string(last) + "'";
  CHECK(tinytorch::tensor({1, 2}, on(Device::cuda(last), tinytorch::kInt64)).str() == "tensor([1, 2], " + dev + ")");
  CHECK(tinytorch::tensor({0.5, 2}, on(Device::cuda(last), tinytorch::kFloat64)).str() ==
        "tensor([0.5000, 2.0000], " + dev + ", dtype=torch.float64)");
  CHECK(tinytorch::ones({2}, on(Device::cuda(0)).requires_grad(true)).str() ==
        "tensor([1., 1.], device='cuda:0', requires_grad=True)");
  CHECK(tinytorch::empty({0, 3}, on(Device::cuda(0))).str() == "tensor([], device='cuda:0', size=(0, 3))");
  Tensor leaf = tinytorch::ones({2}, TensorOptions().requires_grad(true));
  CHECK(leaf.cuda().str() == "tensor([1., 1.], device='cuda:0', grad_fn=<ToCopyBackward0>)");

  const Tensor m = tinytorch::tensor({1, 2, 3, 4, 5, 6}, {2, 3}, on(Device::cuda(0), tinytorch::kFloat64));
  CHECK(m.at<double>({1, 2}) == 6);
  CHECK(m.t().at<double>({2, 1}) == 6);
  CHECK(m.select(0, 1).select(0, 0).item<double>() == 4);
  CHECK(m.t().tolist<double>() == std::vector<double>{1, 4, 2, 5, 3, 6});
  CHECK(m.equal(m.cpu().cuda()));
  CHECK(m.allclose(m.cpu()));  // values compared on the host, as the tests use them
}

TEST_CASE("copy_, fill_, zero_ and cat on a GPU", "[cuda][tensor]") {
  using namespace test_cuda_tensor;
  const int other = devices() > 1 ? 1 : 0;
  Tensor g = tinytorch::zeros({2, 3}, on(Device::cuda(0)));
  g.copy_(tinytorch::tensor({1, 2, 3, 4, 5, 6}, {2, 3}));  // cpu -> cuda
  CHECK(g.tolist<double>() == std::vector<double>{1, 2, 3, 4, 5, 6});
  g.copy_(tinytorch::tensor({7, 8, 9}, on(Device::cuda(other), tinytorch::kInt64)));  // broadcast, cast, other GPU
  CHECK(g.tolist<double>() == std::vector<double>{7, 8, 9, 7, 8, 9});
  Tensor h = tinytorch::zeros({3, 2});
  h.copy_(g.t());  // cuda -> cpu, strided source
  CHECK(h.tolist<double>() == std::vector<double>{7, 7, 8, 8, 9, 9});
  Tensor gt = g.t();  // a strided GPU destination
  gt.copy_(tinytorch::tensor({1, 2, 3, 4, 5, 6}, {3, 2}));
  CHECK(g.tolist<double>() == std::vector<double>{1, 3, 5, 2, 4, 6});
  g.narrow(1, 1, 2).fill_(-1);
  CHECK(g.tolist<double>() == std::vector<double>{1, -1, -1, 2, -1, -1});
  g.fill_(2.5);
  CHECK(g.tolist<double>() == std::vector<double>(6, 2.5));
  g.zero_();
  CHECK(g.tolist<double>() == std::vector<double>(6, 0.0));
  CHECK(g._version() == 6);

  const Tensor a = tinytorch::tensor({1, 2, 3, 4}, {2, 2}, on(Device::cuda(0)));
  const Tensor b = tinytorch::tensor({5, 6}, {2, 1}, on(Device::cuda(0)));
  const Tensor c = tinytorch::cat({a, b}, 1);
  CHECK(c.is_cuda());
  CHECK(c.sizes() == tinytorch::Shape{2, 3});
  CHECK(c.tolist<double>() == std::vector<double>{1, 2, 5, 3, 4, 6});
  CHECK(tinytorch::cat({a, a.t()}, 0).tolist<double>() == std::vector<double>{1, 2, 3, 4, 1, 3, 2, 4});
  const Tensor s = tinytorch::stack({a.select(0, 0), a.select(0, 1)}, 1);
  CHECK(s.tolist<double>() == std::vector<double>{1, 3, 2, 4});
  CHECK_THROWS_WITH(tinytorch::cat({a, a.cpu()}, 0),
                    Contains("Expected all tensors to be on the same device, but found at least two devices, "
                             "cuda:0 and cpu!"));
}

TEST_CASE("device errors: mixed devices, a GPU that is not there", "[cuda][tensor]") {
  using namespace test_cuda_tensor;
  const Tensor c = tinytorch::ones({2});
  const Tensor g = c.cuda();
  CHECK_THROWS_WITH(tinytorch::ops::check_same_device("add", g, c),
                    "add: Expected all tensors to be on the same device, but found at least two devices, cuda:0 "
                    "and cpu!");
  CHECK_THROWS_WITH(tinytorch::ops::check_same_device("mul", c, Tensor(), g),
                    "mul: Expected all tensors to be on the same device, but found at least two devices, cpu and "
                    "cuda:0!");
  CHECK_NOTHROW(tinytorch::ops::check_same_device("add", g, g, Tensor()));
  CHECK_NOTHROW(tinytorch::ops::check_device(g, "add"));
  // CUDA's own string for a device the machine does not have
  const int missing = tinytorch::cuda::device_count();
  CHECK_THROWS_WITH(c.cuda(missing), Contains("invalid device ordinal"));
  CHECK_THROWS_WITH(c.to(Device::cuda(7 > missing ? 7 : missing)), Contains("invalid device ordinal"));
  CHECK_THROWS_WITH(tinytorch::zeros({2}, on(Device::cuda(missing))), Contains("invalid device ordinal"));
  // ops and primitives with no CUDA twin yet say so
  const Tensor img = tinytorch::ones({1, 1, 4, 4}, test_cuda_tensor::on(Device::cuda(0)));
  CHECK_THROWS_WITH(tinytorch::conv2d(img, tinytorch::ones({1, 1, 3, 3}, test_cuda_tensor::on(Device::cuda(0)))),
                    Contains("conv2d: not implemented for CUDA tensors yet"));
  CHECK_THROWS_WITH(tinytorch::max_pool2d(img, 2), Contains("max_pool2d: not implemented for CUDA tensors yet"));
  CHECK_THROWS_WITH(tinytorch::backend::dispatch::max_pool2d_kernel(Device::cuda(0), (const float*)nullptr,
                                                                    (float*)nullptr, (int64_t*)nullptr,
                                                                    tinytorch::backend::cpu::Pool2dGeometry{}),
                    Contains("max_pool2d: not implemented for CUDA tensors yet"));
  CHECK_THROWS_WITH(tinytorch::backend::dispatch::gemm(Device::cuda(0), 1, 1, 1, int64_t(1), (const int64_t*)nullptr,
                                                       1, false, (const int64_t*)nullptr, 1, false, int64_t(0),
                                                       (int64_t*)nullptr, 1),
                    Contains("\"addmm_cuda\" not implemented for 'Long'"));
}

TEST_CASE("float16/bfloat16 on a GPU: every pattern converts as on the CPU; ops are float32 rounded once",
          "[cuda][tensor][half][ch11]") {
  using namespace test_cuda_tensor;
  REQUIRE(devices() >= 1);
  namespace tt = tinytorch;
  for (const tt::DType dt : {tt::kFloat16, tt::kBFloat16}) {
    INFO(tt::dtype_name(dt));
    // all 65,536 bit patterns, converted to float32 by the device's copy kernel and back
    Tensor patterns = tt::empty({65536}, dt);
    auto* p = static_cast<uint16_t*>(patterns.raw_data());
    for (uint32_t i = 0; i < 65536; ++i) p[i] = static_cast<uint16_t>(i);
    const Tensor f_cpu = patterns.to(tt::kFloat32), f_gpu = patterns.cuda(0).to(tt::kFloat32).cpu();
    CHECK(std::memcmp(f_cpu.raw_data(), f_gpu.raw_data(), 65536 * 4) == 0);
    const Tensor back_cpu = f_cpu.to(dt), back_gpu = f_cpu.cuda(0).to(dt).cpu();
    CHECK(std::memcmp(back_cpu.raw_data(), back_gpu.raw_data(), 65536 * 2) == 0);
    // ops on the device: the float32 op on the device, rounded once; elementwise ones also equal the CPU's
    tt::manual_seed(0);
    const Tensor x = tt::randn({8, 8}).to(dt).cuda(0), y = tt::randn({8, 8}).to(dt).cuda(0);
    const Tensor x32 = x.to(tt::kFloat32), y32 = y.to(tt::kFloat32);
    auto vals = [](const Tensor& t) { return t.cpu().to(tt::kFloat32).tolist<float>(); };  // exact: no NaN here
    CHECK(vals(x + y) == vals((x32 + y32).to(dt)));
    CHECK(vals(x * y) == vals((x32 * y32).to(dt)));
    CHECK(vals(x + y) == vals(x.cpu() + y.cpu()));
    CHECK(vals(x.exp()) == vals(x32.exp().to(dt)));
    CHECK(vals(x.sum()) == vals(x32.sum().to(dt)));
    CHECK(vals(x.matmul(y)) == vals(x32.matmul(y32).to(dt)));
    CHECK(vals(x.softmax(1)) == vals(x32.softmax(1).to(dt)));
    CHECK(x.matmul(y).dtype() == dt);
    CHECK(x.matmul(y).is_cuda());
  }
}

namespace test_cuda_tensor {
/// The 16-bit words of a float16/bfloat16 tensor (NaN compared by its bits too).
inline std::vector<uint16_t> words(const Tensor& t) {
  const Tensor c = t.cpu().contiguous();
  const auto* p = static_cast<const uint16_t*>(c.raw_data());
  return std::vector<uint16_t>(p, p + c.numel());
}
/// n values of dtype dt on `d` with NaN, +-inf, -0.0, 0, the dtype's extremes and subnormals planted.
inline Tensor planted(const tinytorch::Shape& shape, tinytorch::DType dt, Device d, uint64_t seed) {
  namespace tt = tinytorch;
  tt::manual_seed(seed);
  Tensor x = (tt::randn(shape) * 3.0).contiguous();
  auto* p = static_cast<float*>(x.raw_data());
  const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 65504.0f, -60000.0f, 6e-8f, -1e-6f, 3e38f};
  for (size_t i = 0; i < sizeof(specials) / sizeof(float) && static_cast<int64_t>(i * 7) < x.numel(); ++i)
    p[i * 7] = specials[i];
  return x.to(dt).to(d);
}
}  // namespace test_cuda_tensor

TEST_CASE("float16/bfloat16 CUDA kernels read and write 16 bits and equal the float32 kernels rounded once",
          "[cuda][tensor][half][ch11]") {
  // The CUDA backend runs float16/bfloat16 elementwise ops, matrix products and sums in 16-bit
  // kernels (backend::Opmath, gemm.cuh, reduce.cuh); their naive twin is the float32 op on float32
  // copies of the operands, rounded once: bit for bit the same, NaN included.
  using namespace test_cuda_tensor;
  REQUIRE(devices() >= 1);
  namespace tt = tinytorch;
  const Device d = Device::cuda(0);
  for (const tt::DType dt : {tt::kFloat16, tt::kBFloat16}) {
    INFO(tt::dtype_name(dt));
    const Tensor x = planted({33, 40}, dt, d, 1), y = planted({33, 40}, dt, d, 2);
    const Tensor row = planted({1, 40}, dt, d, 3);                   // broadcast: the strided kernel
    const Tensor xt = planted({40, 33}, dt, d, 4).t();               // a transposed view
    auto f32 = [](const Tensor& t) { return t.to(tt::kFloat32); };
    auto same = [&](const Tensor& native, const Tensor& via_float32, const char* what) {
      INFO(what);
      CHECK(native.dtype() == dt);
      CHECK(native.is_cuda());
      CHECK(words(native) == words(via_float32.to(dt)));
    };
    for (const Tensor& b : {y, row, xt}) {
      same(x + b, f32(x) + f32(b), "add");
      same(x - b, f32(x) - f32(b), "sub");
      same(x * b, f32(x) * f32(b), "mul");
      same(x / b, f32(x) / f32(b), "div");
      same(tt::maximum(x, b), tt::maximum(f32(x), f32(b)), "maximum");
      same(tt::pow(x, b), tt::pow(f32(x), f32(b)), "pow");
      same(x.clone().add_(b), f32(x).add_(f32(b)), "add_");
      CHECK(x.lt(b).cpu().tolist<int64_t>() == f32(x).lt(f32(b)).cpu().tolist<int64_t>());
      CHECK(x.eq(b).cpu().tolist<int64_t>() == f32(x).eq(f32(b)).cpu().tolist<int64_t>());
    }
    for (const Tensor& a : {x, xt}) {
      same(a.exp(), f32(a).exp(), "exp");
      same(a.log(), f32(a).log(), "log");
      same(a.sqrt(), f32(a).sqrt(), "sqrt");
      same(a.tanh(), f32(a).tanh(), "tanh");
      same(a.sigmoid(), f32(a).sigmoid(), "sigmoid");
      same(a.relu(), f32(a).relu(), "relu");
      same(tt::gelu(a), tt::gelu(f32(a)), "gelu");
      same(-a, -f32(a), "neg");
      same(a.abs(), f32(a).abs(), "abs");
      // a number joins a 16-bit op rounded to the op's dtype (ops::scalar)
      same(a * 0.1, f32(a) * tt::detail::round_to(0.1, dt), "mul 0.1");
      same(a + 3.0, f32(a) + 3.0, "add 3");
      same(a.pow(2), f32(a).pow(2), "pow 2");
      same(a.clone().mul_(0.5), f32(a).mul_(0.5), "mul_");
      same(a.sum(), f32(a).sum(), "sum");
      same(a.sum(0), f32(a).sum(0), "sum(0)");
      same(a.sum(1), f32(a).sum(1), "sum(1)");
      same(a.mean(1), f32(a).mean(1), "mean(1)");
    }
    // matrix products: odd shapes, a transposed operand, bias (addmm's beta = 1), batches, and the
    // shapes where float32 takes the register-blocked kernel (the 16-bit gemm stays tiled)
    const Tensor w = planted({17, 40}, dt, d, 5), bias = planted({17}, dt, d, 6);
    const Tensor m = tt::randn({40, 17}).to(dt).to(d), a128 = tt::randn({128, 128}).to(dt).to(d);
    same(x.matmul(m), f32(x).matmul(f32(m)), "mm");
    same(xt.matmul(m), f32(xt).matmul(f32(m)), "mm of a transposed view");
    same(tt::linear(x, w, bias), tt::linear(f32(x), f32(w), f32(bias)), "linear (addmm)");
    same(a128.matmul(a128), f32(a128).matmul(f32(a128)), "mm 128");
    const Tensor b3 = tt::randn({3, 5, 8}).to(dt).to(d), c3 = tt::randn({3, 8, 6}).to(dt).to(d);
    same(tt::bmm(b3, c3), tt::bmm(f32(b3), f32(c3)), "bmm");
    same(b3.sum(std::vector<int64_t>{0, 2}), f32(b3).sum(std::vector<int64_t>{0, 2}), "sum over (0, 2)");
    // 16 bits in, 16 bits out: the op allocates its 16-bit result and nothing else (the float32
    // detour would peak at three float32 buffers more)
    for (int op = 0; op < 3; ++op) {
      INFO("op " << op);
      tt::cuda::reset_peak_memory_stats(0);
      const size_t before = tt::cuda::memory_allocated(0);
      const Tensor r = op == 0 ? x * y : op == 1 ? x.exp() : x.matmul(m);
      CHECK(tt::cuda::memory_allocated(0) > before);
      CHECK(tt::cuda::max_memory_allocated(0) == tt::cuda::memory_allocated(0));
    }
  }
}

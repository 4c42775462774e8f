// tests/test_device.cpp — devices in a CPU-only build (TINYTORCH_WITH_CUDA == 0): every way of
// reaching a GPU (a factory with a CUDA device, to/cuda(), the dispatch fork, a raw copy) throws a
// clear tinytorch::Error naming the device and how to get the CUDA backend, and the CPU paths of
// to()/cpu()/check_same_device/to_host/copy_bytes work. The CUDA side of the same API is tested in
// tests/cuda/test_cuda_tensor.cpp. Covers ops/dispatch.hpp, ops/shape.hpp (to_device),
// functional.hpp (to/cuda/cpu). Chapter: chapters/10-gpu-kernels.md. Reference: torch.Tensor.to.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include <tinytorch/tinytorch.hpp>
#include <tinytorch/ops/dispatch.hpp>  // backend::dispatch (internals under test)
#include <tinytorch/ops/shape.hpp>

using Catch::Matchers::Contains;
using tinytorch::Device;
using tinytorch::Tensor;
using tinytorch::TensorOptions;

#if !TINYTORCH_WITH_CUDA
TEST_CASE("CUDA tensors throw a clear error in a CPU build", "[device]") {
  const Tensor x = tinytorch::ones({2});
  CHECK_FALSE(x.is_cuda());
  CHECK_THROWS_WITH(tinytorch::zeros({2}, TensorOptions().device(Device::cuda(0))),
                    Contains("cuda:0 needs the CUDA backend"));
  CHECK_THROWS_WITH(x.cuda(), Contains("to: copying a tensor from cpu to cuda:0 needs the CUDA backend"));
  CHECK_THROWS_WITH(x.to(Device::cuda(1)), Contains("to: copying a tensor from cpu to cuda:1 needs the CUDA backend"));
  CHECK_THROWS_WITH(x.to(Device::cuda(0), tinytorch::kFloat64), Contains("needs the CUDA backend"));
  std::vector<float> a{1, 2}, b(2);
  CHECK_THROWS_WITH(tinytorch::backend::dispatch::unary_kernel(Device::cuda(0), a.data(), b.data(), 2,
                                                               tinytorch::backend::NegOp{}),
                    Contains("unary_kernel: tensor on cuda:0 needs the CUDA backend"));
  CHECK_THROWS_WITH(tinytorch::backend::dispatch::copy_bytes(Device::cuda(0), b.data(), Device::cpu(), a.data(), 8),
                    Contains("copy_bytes: tensor on cuda:0 needs the CUDA backend"));
}
#endif

TEST_CASE("CPU paths of the device API", "[device]") {
  const Tensor x = tinytorch::tensor({1, 2, 3});
  CHECK(x.device() == Device::cpu());
  CHECK(x.cpu().is_same(x));
  CHECK(x.to(Device::cpu()).is_same(x));
  const Tensor d = x.to(Device::cpu(), tinytorch::kFloat64);
  CHECK(d.dtype() == tinytorch::kFloat64);
  CHECK(d.tolist<double>() == std::vector<double>{1, 2, 3});
  CHECK(tinytorch::ops::to_host(x).is_same(x));
  CHECK(x.str() == "tensor([1., 2., 3.])");
  CHECK_NOTHROW(tinytorch::ops::check_same_device("add", x, x, Tensor()));
  CHECK_THROWS_WITH(tinytorch::ops::check_device(Tensor(), "add"), "add: got an undefined tensor");
  std::vector<int64_t> a{5, -6}, b(2);
  tinytorch::backend::dispatch::copy_bytes(Device::cpu(), b.data(), Device::cpu(), a.data(), sizeof(int64_t) * 2);
  CHECK(b == a);
  CHECK_THROWS_WITH(tinytorch::backend::dispatch::max_pool2d_kernel(Device::cuda(0), (const float*)nullptr,
                                                                    (float*)nullptr, (int64_t*)nullptr,
                                                                    tinytorch::backend::cpu::Pool2dGeometry{}),
                    Contains("max_pool2d: not implemented for CUDA tensors yet"));
  // the *_like factories keep dtype and device
  const Tensor l = tinytorch::zeros_like(d);
  CHECK(l.device() == Device::cpu());
  CHECK(l.dtype() == tinytorch::kFloat64);
  // ToCopyBackward0 of a dtype conversion on the CPU
  Tensor w = tinytorch::tensor({1, 2}, TensorOptions().requires_grad(true));
  const Tensor y = w.to(Device::cpu(), tinytorch::kFloat64);
  CHECK(y.grad_fn()->name() == "ToCopyBackward0");
  y.backward(tinytorch::tensor({3, 4}, tinytorch::kFloat64));
  CHECK(w.grad().dtype() == tinytorch::kFloat32);
  CHECK(w.grad().tolist<double>() == std::vector<double>{3, 4});
}

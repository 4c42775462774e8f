// tests/cuda/test_cuda_parallel.cpp — nn::DataParallel on CUDA devices (simulated GPUs in CI).
//
// DataParallel on {cuda:0, cuda:1, cuda:2} (and {cuda:0, cuda:0}: two replicas on one GPU, which
// is how one real GPU checks the copies, the gather and backward): the batch is scattered with
// to(Device), replicas 1.. get copies of the parameters on their devices, the outputs are
// gathered on output_device, and backward sums every replica's gradient into the original
// parameters on cuda:0. What is checked (float32; the replicas sum their batch slices in another
// order than the single module, hence 1e-6 rather than bitwise):
//   * the output equals the single-module output, on output_device (default devices[0]; cuda:1);
//   * the parameters' .grad on cuda:0 equals the single-device full-batch gradient (1e-6) for
//     batch sizes 1, 5, 7 (fewer rows than devices uses the first B devices);
//   * a module whose parameters are not on devices[0] throws PyTorch's message ("module must have
//     its parameters and buffers on device cuda:0 (device_ids[0]) but found one of them on
//     device: cpu", torch/nn/parallel/data_parallel.py).
// Built as test_cuda_parallel_sim (the kernel simulator; each replica's thread launches its own
// kernels) and into test_cuda_nvcc (a real GPU: {cuda:0, cuda:0} always, three GPUs if present).
// Chapter: chapters/05-data-parallel.md, 10-gpu-kernels.md. Catch2 tags: [cuda][parallel].
#include <catch2/catch.hpp>

#include <tinytorch/tinytorch.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace test_cuda_parallel {

namespace nn = tinytorch::nn;
using tinytorch::Device;
using tinytorch::Tensor;

inline std::shared_ptr<nn::Sequential> make_mlp() {
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Linear>(5, 8));
  m->push_back(std::make_shared<nn::Tanh>());
  m->push_back(std::make_shared<nn::Linear>(8, 2));
  return m;
}

inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.cpu().tolist<double>(), y = b.cpu().tolist<double>();
  REQUIRE(x.size() == y.size());
  double d = 0;
  for (size_t i = 0; i < x.size(); ++i) d = std::max(d, std::abs(x[i] - y[i]));
  return d;
}

/// DataParallel(devices) vs one module on devices[0]; batch B.
inline void check_against_single(const std::vector<Device>& devices, int64_t B, Device output_device) {
  CAPTURE(B, devices.size(), output_device.str());
  tinytorch::manual_seed(3);
  auto model = make_mlp();
  tinytorch::manual_seed(3);
  auto single = make_mlp();
  model->to(devices[0]);
  single->to(devices[0]);
  nn::DataParallel dp(model, devices, output_device);
  tinytorch::Generator g(11 + static_cast<uint64_t>(B));
  Tensor x = tinytorch::randn({B, 5}, {}, &g);
  Tensor y = tinytorch::randn({B, 2}, {}, &g);

  Tensor out = dp.forward(x.to(devices[0]));
  CHECK(out.device() == output_device);
  Tensor ref = single->forward(x.to(devices[0]));
  CHECK(max_abs_diff(out, ref) < 1e-6);
  tinytorch::mse_loss(out, y.to(output_device)).backward();
  tinytorch::mse_loss(ref, y.to(devices[0])).backward();
  const auto p = model->parameters(), q = single->parameters();
  for (size_t i = 0; i < p.size(); ++i) {
    REQUIRE(p[i].grad().defined());
    CHECK(p[i].grad().device() == devices[0]);
    CHECK(max_abs_diff(p[i].grad(), q[i].grad()) < 1e-6);
  }
}

}  // namespace test_cuda_parallel

TEST_CASE("DataParallel on cuda:0, cuda:1, cuda:2 equals one device", "[cuda][parallel]") {
  using namespace test_cuda_parallel;
  if (tinytorch::cuda::device_count() < 3) return;  // a real machine with fewer GPUs
  const std::vector<Device> devs{Device::cuda(0), Device::cuda(1), Device::cuda(2)};
  for (int64_t B : {1, 5, 7}) check_against_single(devs, B, Device::cuda(0));
  check_against_single(devs, 7, Device::cuda(1));  // gathered elsewhere
}

TEST_CASE("DataParallel on cuda:0, cuda:0 (two replicas, one GPU) equals one device", "[cuda][parallel]") {
  using namespace test_cuda_parallel;
  const std::vector<Device> devs{Device::cuda(0), Device::cuda(0)};
  for (int64_t B : {1, 5, 7}) check_against_single(devs, B, Device::cuda(0));
}

TEST_CASE("DataParallel refuses a module that is not on device_ids[0]", "[cuda][parallel]") {
  using namespace test_cuda_parallel;
  auto model = make_mlp();  // on the CPU
  nn::DataParallel dp(model, {Device::cuda(0), Device::cuda(0)});
  try {
    dp.forward(tinytorch::randn({4, 5}).cuda());
    FAIL("expected an error");
  } catch (const tinytorch::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("module must have its parameters and buffers on device cuda:0 "
                                         "(device_ids[0]) but found one of them on device: cpu"));
  }
}

// tests/cuda/test_cuda_ddp.cpp — DistributedDataParallel at world size 1 through its buckets.
//
// NCCL refuses two ranks on one GPU ("Duplicate GPU detected"), so the one-GPU check of DDP's
// CUDA path runs one rank with DDPOptions::force_bucket_path_single_rank: every gradient is copied
// (divided by 1) into its bucket on the parameters' device, the bucket is all-reduced (a group of
// one: nothing moves) and copied back into .grad (design/CUDA.md section 8). Built, as every
// tests/cuda/test_cuda_*.cpp, for the simulator (test_cuda_ddp_sim, no MPI: world size 1) and
// under nvcc (test_cuda_nvcc, on a real GPU when one is present).
// What is checked:
//   * CPU parameters: 3 SGD(momentum) steps of DDP through the buckets equal the plain model
//     bitwise, and last_iteration_stats() says the buckets were used (without the option: not);
//   * CUDA parameters (cuda:0): the same through buckets on the device (the hook's copy and scale
//     are kernels) equals the plain model on the CPU (1e-5), and the buckets live on cuda:0.
// Chapter: chapters/06-distributed-data-parallel.md, 10-gpu-kernels.md.
// Catch2 tags: [cuda][distributed][ddp].
#include <catch2/catch.hpp>

#include <tinytorch/distributed.hpp>
#include <tinytorch/tinytorch.hpp>

#include <cmath>
#include <memory>
#include <vector>

namespace test_cuda_ddp {

namespace dist = tinytorch::distributed;
namespace nn = tinytorch::nn;
using tinytorch::Device;
using tinytorch::Tensor;

inline std::shared_ptr<nn::Sequential> make_mlp() {
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Linear>(6, 16));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::Linear>(16, 3));
  return m;
}

inline std::vector<double> flat_params(const nn::Module& m) {
  std::vector<double> out;
  for (const Tensor& p : m.parameters()) {
    auto v = p.to(Device::cpu()).tolist<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

/// 3 SGD steps of `ddp` (parameters on `device`) and of a plain CPU copy; returns the max abs
/// parameter difference. first_bucket_mb tiny: one bucket per parameter (four buckets).
inline double ddp_vs_plain(Device device, bool force, bool* bucket_path_used) {
  if (!dist::is_initialized()) dist::init_process_group(dist::Backend::MPI);
  REQUIRE(dist::get_world_size() == 1);
  tinytorch::manual_seed(7);
  auto model = make_mlp();
  tinytorch::manual_seed(7);
  auto plain = make_mlp();
  model->to(device);
  dist::DDPOptions o;
  o.force_bucket_path_single_rank = force;
  o.first_bucket_mb = 1e-6;
  o.bucket_cap_mb = 1e-6;
  dist::DistributedDataParallel ddp(model, o);
  tinytorch::optim::SGD opt(ddp.parameters(), 0.1, 0.9);
  tinytorch::optim::SGD plain_opt(plain->parameters(), 0.1, 0.9);
  nn::MSELoss loss_fn;
  for (int s = 0; s < 3; ++s) {
    tinytorch::Generator g(100 + static_cast<uint64_t>(s));
    Tensor x = tinytorch::randn({5, 6}, {}, &g);
    Tensor y = tinytorch::randn({5, 3}, {}, &g);
    opt.zero_grad();
    loss_fn(ddp.forward(x.to(device)), y.to(device)).backward();
    opt.step();
    plain_opt.zero_grad();
    loss_fn(plain->forward(x), y).backward();
    plain_opt.step();
  }
  *bucket_path_used = ddp.last_iteration_stats().valid;
  CHECK(ddp.bucket_indices().size() == 4);
  return max_abs_diff(flat_params(*model), flat_params(*plain));
}

}  // namespace test_cuda_ddp

TEST_CASE("DDP at world size 1 through the buckets equals the plain model (CPU)", "[cuda][distributed][ddp]") {
  using namespace test_cuda_ddp;
  bool used = false;
  CHECK(ddp_vs_plain(Device::cpu(), true, &used) == 0.0);  // g / 1 copied and back: bitwise
  CHECK(used);
  CHECK(ddp_vs_plain(Device::cpu(), false, &used) == 0.0);
  CHECK_FALSE(used);  // without the option world size 1 skips the buckets
}

TEST_CASE("DDP at world size 1 through buckets on cuda:0 equals the plain CPU model", "[cuda][distributed][ddp]") {
  using namespace test_cuda_ddp;
  bool used = false;
  CHECK(ddp_vs_plain(Device::cuda(0), true, &used) < 1e-5);
  CHECK(used);
}

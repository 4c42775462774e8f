// tests/mpi/test_mpi_cuda_sim.cpp — the MPI backend on CUDA tensors, on simulated GPUs.
//
// Built as the other tests/mpi/test_*.cpp (tinytorch::mpi, the MPI Catch2 main) and run by ctest
// on 2, 3 and 4 ranks; this file alone turns on the kernel simulator (TINYTORCH_CUDA_SIM, defined
// before the first include): every rank's tensors live on "cuda:<local rank>", simulated device
// memory that is PROT_NONE outside kernels and runtime copies, so any host read of device memory
// in distributed/ (a collective that forgot to stage, a DDP hook that loops on the host) segfaults
// here. What is checked (N = world size):
//   * all_reduce (SUM, AVG, MAX, MIN; float32, float64, int64), the teaching ring all-reduce,
//     broadcast, all_gather (into a tensor and into a list), reduce_scatter, and the async forms
//     on CUDA tensors give exactly what the same collectives give on CPU tensors (staged through
//     host memory, device_staging.hpp);
//   * a collective mixing a CPU and a CUDA tensor throws, naming both devices;
//   * DistributedDataParallel on cuda:<local rank> (buckets on the device: the hook's
//     scale-and-copy and the write-back are device operations, each bucket all-reduce staged)
//     ends 3 SGD(momentum) steps with the parameters of the same DDP on the CPU (1e-5), with one
//     bucket and with one bucket per parameter; a module on two devices is refused.
// The test's process group lives in the simulator's ABI namespace (tinytorch::sim_abi), not in
// mpi_main.cpp's (cpu_abi): the last test case destroys it.
// Chapter: chapters/06-distributed-data-parallel.md, 07-all-reduce.md, 10-gpu-kernels.md.
// Catch2 tags: [distributed][cuda_sim].
#define TINYTORCH_CUDA_SIM 1

#include <catch2/catch.hpp>

#include <tinytorch/core/cuda_runtime.hpp>
#include <tinytorch/distributed.hpp>
#include <tinytorch/tinytorch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <cstring>
#include <string>
#include <vector>

namespace dist = tinytorch::distributed;
using tinytorch::Device;
using tinytorch::Tensor;
using tinytorch::TensorOptions;

namespace mpi_cuda_sim {

void ensure_group() {
  if (!dist::is_initialized()) dist::init_process_group(dist::Backend::MPI);
}

Device my_gpu() { return Device::cuda(dist::get_local_rank()); }

/// A CUDA copy of a CPU tensor through the runtime (independent of Tensor::to).
Tensor to_device(const Tensor& cpu, Device d) {
  Tensor c = cpu.contiguous();
  Tensor out = tinytorch::empty(c.sizes(), TensorOptions(c.dtype()).device(d));
  tinytorch::backend::cuda::memcpy_h2d(out.raw_data(), c.raw_data(),
                                       static_cast<size_t>(c.numel()) * tinytorch::element_size(c.dtype()));
  return out;
}

/// A CPU copy of a contiguous CUDA tensor.
Tensor to_host(const Tensor& dev) {
  Tensor out = tinytorch::empty(dev.sizes(), TensorOptions(dev.dtype()));
  tinytorch::backend::cuda::memcpy_d2h(out.raw_data(), dev.raw_data(),
                                       static_cast<size_t>(dev.numel()) * tinytorch::element_size(dev.dtype()));
  return out;
}

/// Rank-dependent values: x[k] = (rank + 1) * (k + 1) * 0.37 - k (exact in float32/float64 sums
/// of a few ranks? not needed: CPU and CUDA results are compared bitwise, both via MPI).
Tensor values(int64_t n, tinytorch::DType dtype, int rank, int salt = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    v[static_cast<size_t>(k)] = dtype == tinytorch::kInt64 ? double((rank + 1) * (k + 1) - 3 * k + salt)
                                                           : (rank + 1) * (k + 1) * 0.37 - double(k) + salt;
  return tinytorch::tensor(v, {n}, TensorOptions(dtype));
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.numel() == b.numel() &&
         std::memcmp(a.raw_data(), b.raw_data(), static_cast<size_t>(a.numel()) * tinytorch::element_size(a.dtype())) == 0;
}

}  // namespace mpi_cuda_sim

using namespace mpi_cuda_sim;

TEST_CASE("MPI collectives on CUDA tensors stage through host memory", "[distributed][cuda_sim]") {
  ensure_group();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  const Device gpu = my_gpu();
  REQUIRE(gpu.index < tinytorch::backend::cuda::device_count());
  for (auto dtype : {tinytorch::kFloat32, tinytorch::kFloat64, tinytorch::kInt64}) {
    for (auto op : {dist::ReduceOp::SUM, dist::ReduceOp::AVG, dist::ReduceOp::MAX, dist::ReduceOp::MIN}) {
      if (op == dist::ReduceOp::AVG && dtype == tinytorch::kInt64) continue;
      for (int64_t n : {1, 7, 33, 129}) {
        Tensor cpu = values(n, dtype, rank);
        Tensor dev = to_device(cpu, gpu);
        dist::all_reduce(cpu, op);
        dist::all_reduce(dev, op);
        CAPTURE(tinytorch::dtype_name(dtype), dist::reduce_op_name(op), n);
        CHECK(same_bits(to_host(dev), cpu));
      }
    }
  }
  // The teaching ring all-reduce on a device tensor.
  {
    Tensor cpu = values(37, tinytorch::kFloat32, rank);
    Tensor dev = to_device(cpu, gpu);
    dist::all_reduce(cpu, dist::ReduceOp::SUM, "ring");
    const dist::CommStats stats = dist::all_reduce(dev, dist::ReduceOp::SUM, "ring");
    CHECK(same_bits(to_host(dev), cpu));
    if (world > 1) CHECK(stats.messages_sent > 0);
  }
  // Async: the result reaches the device when the Work completes.
  {
    Tensor cpu = values(50, tinytorch::kFloat64, rank);
    Tensor dev = to_device(cpu, gpu);
    dist::all_reduce(cpu);
    dist::Work w = dist::all_reduce_async(dev);
    w.wait();
    CHECK(same_bits(to_host(dev), cpu));
  }
}

TEST_CASE("broadcast, all_gather and reduce_scatter on CUDA tensors", "[distributed][cuda_sim]") {
  ensure_group();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  const Device gpu = my_gpu();
  const int src = world - 1;
  {  // broadcast from the last rank, blocking and async
    Tensor cpu = values(11, tinytorch::kFloat32, rank);
    Tensor dev = to_device(cpu, gpu);
    Tensor dev2 = to_device(cpu, gpu);
    dist::broadcast(cpu, src);
    dist::broadcast(dev, src);
    dist::Work w = dist::broadcast_async(dev2, src);
    w.wait();
    CHECK(same_bits(to_host(dev), cpu));
    CHECK(same_bits(to_host(dev2), cpu));
    CHECK(same_bits(cpu, values(11, tinytorch::kFloat32, src)));
  }
  {  // all_gather into one tensor and into a list
    Tensor in_cpu = values(5, tinytorch::kInt64, rank);
    Tensor in_dev = to_device(in_cpu, gpu);
    Tensor out_cpu = tinytorch::zeros({world * 5}, tinytorch::kInt64);
    Tensor out_dev = to_device(out_cpu, gpu);
    dist::all_gather(out_cpu, in_cpu);
    dist::all_gather(out_dev, in_dev);
    CHECK(same_bits(to_host(out_dev), out_cpu));
    Tensor out_dev2 = to_device(tinytorch::zeros({world * 5}, tinytorch::kInt64), gpu);
    dist::Work w = dist::all_gather_async(out_dev2, in_dev);
    w.wait();
    CHECK(same_bits(to_host(out_dev2), out_cpu));
    std::vector<Tensor> list;
    for (int r = 0; r < world; ++r) list.push_back(to_device(tinytorch::zeros({5}, tinytorch::kInt64), gpu));
    dist::all_gather(list, in_dev);
    for (int r = 0; r < world; ++r) CHECK(same_bits(to_host(list[static_cast<size_t>(r)]), values(5, tinytorch::kInt64, r)));
  }
  {  // reduce_scatter, blocking and async
    Tensor in_cpu = values(world * 6, tinytorch::kFloat64, rank);
    Tensor in_dev = to_device(in_cpu, gpu);
    Tensor out_cpu = tinytorch::zeros({6}, tinytorch::kFloat64);
    Tensor out_dev = to_device(out_cpu, gpu);
    Tensor out_dev2 = to_device(out_cpu, gpu);
    dist::reduce_scatter(out_cpu, in_cpu);
    dist::reduce_scatter(out_dev, in_dev);
    dist::Work w = dist::reduce_scatter_async(out_dev2, in_dev);
    w.wait();
    CHECK(same_bits(to_host(out_dev), out_cpu));
    CHECK(same_bits(to_host(out_dev2), out_cpu));
  }
  {  // one collective, two devices: an error naming both (every rank throws: nothing was sent)
    Tensor in_dev = to_device(values(3, tinytorch::kFloat32, rank), gpu);
    Tensor out_cpu = tinytorch::zeros({world * 3});
    try {
      dist::all_gather(out_cpu, in_dev);
      FAIL("expected an error");
    } catch (const tinytorch::Error& e) {
      const std::string msg = e.what();
      CHECK(msg.find("all_gather: output is on cpu but input is on " + gpu.str()) != std::string::npos);
    }
  }
}

namespace mpi_cuda_sim {

std::shared_ptr<tinytorch::nn::Sequential> make_mlp() {
  namespace nn = tinytorch::nn;
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Linear>(6, 16));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::Linear>(16, 8));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::Linear>(8, 3));
  return m;
}

/// 3 SGD(momentum) steps of DDP with the model on `device` (rank r: rows [r*B, (r+1)*B) of the
/// step's global batch); returns every parameter, flattened, on the CPU.
std::vector<double> train_ddp(Device device, const dist::DDPOptions& options) {
  namespace nn = tinytorch::nn;
  const int r = dist::get_rank(), N = dist::get_world_size();
  const int64_t B = 4;
  tinytorch::manual_seed(42 + static_cast<uint64_t>(r));  // different per rank: DDP broadcasts rank 0's
  auto model = make_mlp();
  model->to(device);
  auto ddp = std::make_shared<dist::DistributedDataParallel>(model, options);
  tinytorch::optim::SGD opt(ddp->parameters(), 0.1, 0.9);
  nn::MSELoss loss_fn;
  for (int s = 0; s < 3; ++s) {
    tinytorch::Generator g(1000 + static_cast<uint64_t>(s));
    Tensor x = tinytorch::randn({N * B, 6}, {}, &g);
    Tensor y = tinytorch::randn({N * B, 3}, {}, &g);
    opt.zero_grad();
    loss_fn(ddp->forward(x.narrow(0, r * B, B).to(device)), y.narrow(0, r * B, B).to(device)).backward();
    opt.step();
  }
  CHECK(ddp->last_iteration_stats().valid);
  for (const Tensor& p : model->parameters()) CHECK(p.device() == device);
  std::vector<double> out;
  for (const Tensor& p : model->parameters()) {
    auto v = p.cpu().tolist<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace mpi_cuda_sim

TEST_CASE("DDP on cuda:local_rank equals DDP on the CPU after 3 steps", "[distributed][cuda_sim][ddp]") {
  ensure_group();
  for (double cap : {25.0, 1e-6}) {  // one bucket; one bucket per parameter (six)
    dist::DDPOptions o;
    o.bucket_cap_mb = cap;
    o.first_bucket_mb = cap;
    const std::vector<double> cpu = train_ddp(Device::cpu(), o);
    const std::vector<double> gpu = train_ddp(my_gpu(), o);
    REQUIRE(cpu.size() == gpu.size());
    double d = 0;
    for (size_t i = 0; i < cpu.size(); ++i) d = std::max(d, std::abs(cpu[i] - gpu[i]));
    CAPTURE(cap);
    CHECK(d < 1e-5);
  }
}

TEST_CASE("DDP with parameters on two devices throws", "[distributed][cuda_sim][ddp]") {
  ensure_group();
  auto model = make_mlp();
  (*model)[0]->to(my_gpu());
  try {
    dist::DistributedDataParallel ddp(model);
    FAIL("expected an error");
  } catch (const tinytorch::Error& e) {
    CHECK(std::string(e.what()).find("expects all parameters of the module on one device") != std::string::npos);
  }
}

// Last (Catch2 runs test cases in declaration order): this file's process group belongs to the
// simulator's ABI namespace, which mpi_main.cpp's clean-up does not see.
TEST_CASE("destroy the simulator build's process group", "[distributed][cuda_sim]") {
  if (dist::is_initialized()) dist::destroy_process_group();
  CHECK_FALSE(dist::is_initialized());
}

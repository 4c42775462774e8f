// tests/cuda/test_nccl_allreduce.cu — NCCL bootstrapped through MPI, all-reduce of device buffers.
//
// What it checks (world size 1 under ctest on one GPU; the full world under
// `scripts/mpirun.sh -np G` on a machine with G GPUs — NCCL refuses two ranks on one GPU):
//   * init_process_group(Backend::NCCL): MPI bootstrap (rank 0 ncclGetUniqueId, MPI_Bcast,
//     cudaSetDevice(local_rank), ncclCommInitRank), the group's MPI side still works;
//   * nccl_all_reduce on raw device buffers: SUM (float32), AVG (float64), MAX (int64), checked
//     element by element against the values computed on the host;
//   * argument errors (host pointer, int64 AVG) throw tinytorch::Error before any NCCL call;
//   * CUDA tensors (issue 7): all_reduce / broadcast / all_gather on Tensors go to NCCL on the
//     communicator's own non-blocking stream, ordered by events (no host sync in between: the
//     copies back to the host follow in stream order); with Backend::MPI the same calls stage
//     through host memory;
//   * DDP at world size 1 through its buckets on the GPU (DDPOptions::
//     force_bucket_path_single_rank; NCCL refuses two ranks on one GPU) equals the plain model.
// Without a GPU the shared CUDA test main (tests/cuda/cuda_main.cpp, built with
// TT_TEST_WITH_MPI=1, which also brackets the run with MPI_Init_thread/MPI_Finalize) exits with
// 77 and ctest reports the test as skipped.
//
// Build by hand (both files in one nvcc line; see chapters/07-all-reduce.md):
//   nvcc -std=c++17 -I include -I /usr/include/eigen3 $(mpicxx --showme:compile) -DTT_TEST_WITH_MPI=1
//        tests/cuda/test_nccl_allreduce.cu tests/cuda/cuda_main.cpp -o test_nccl_allreduce
//        -L/usr/local/cuda/lib64 -lnccl $(mpicxx --showme:link)
// Chapter: chapters/07-all-reduce.md ("NCCL: the same all-reduce on GPUs").
// Reference: karpathy/llm.c dev/cuda/nccl_all_reduce.cu. Catch2 tag: [distributed][nccl].
#include <catch2/catch.hpp>

#include <tinytorch/distributed/buffer_collectives.hpp>
#include <tinytorch/distributed/nccl.hpp>
#include <tinytorch/distributed/process_group.hpp>
#include <tinytorch/distributed.hpp>
#include <tinytorch/tinytorch.hpp>

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace dist = tinytorch::distributed;
using dist::ReduceOp;

static_assert(TINYTORCH_WITH_NCCL, "this test must be compiled by nvcc with MPI and <nccl.h> reachable");

namespace {

#define TT_TEST_CUDA(call) REQUIRE((call) == cudaSuccess)

// Copies host -> device, all-reduces on `stream`, copies back.
template <typename T>
std::vector<T> nccl_round_trip(const std::vector<T>& host, ReduceOp op, cudaStream_t stream) {
  T* dev = nullptr;
  const size_t bytes = host.size() * sizeof(T);
  TT_TEST_CUDA(cudaMalloc(&dev, bytes));
  TT_TEST_CUDA(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice));
  dist::nccl_all_reduce(dev, static_cast<int64_t>(host.size()), tinytorch::dtype_of<T>(), op, stream);
  TT_TEST_CUDA(cudaStreamSynchronize(stream));
  std::vector<T> out(host.size());
  TT_TEST_CUDA(cudaMemcpy(out.data(), dev, bytes, cudaMemcpyDeviceToHost));
  TT_TEST_CUDA(cudaFree(dev));
  return out;
}

}  // namespace

TEST_CASE("NCCL process group: bootstrap through MPI and all-reduce of device buffers", "[distributed][nccl]") {
  dist::init_process_group(dist::Backend::NCCL);
  const int r = dist::get_rank(), n = dist::get_world_size();
  CHECK(dist::get_backend() == dist::Backend::NCCL);
  CHECK(dist::get_nccl_device() == dist::get_local_rank());
  int current = -1;
  TT_TEST_CUDA(cudaGetDevice(&current));
  CHECK(current == dist::get_local_rank());  // cudaSetDevice(local_rank) happened before NCCL init

  cudaStream_t stream;
  TT_TEST_CUDA(cudaStreamCreate(&stream));

  // SUM, float32, 1M elements (several NCCL chunks): x_r[i] = r + 1 + (i % 7)
  const int64_t count = (int64_t{1} << 20) + 3;
  std::vector<float> f(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) f[i] = static_cast<float>(r + 1 + i % 7);
  std::vector<float> fs = nccl_round_trip(f, ReduceOp::SUM, stream);
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i)
    wrong += fs[i] != static_cast<float>(n * (n + 1) / 2 + n * (i % 7)) ? 1 : 0;
  CHECK(wrong == 0);

  // AVG, float64 (ncclAvg)
  std::vector<double> d = {double(r), 2.0 * r, 5.0};
  std::vector<double> da = nccl_round_trip(d, ReduceOp::AVG, stream);
  CHECK(da[0] == Approx((n - 1) / 2.0));
  CHECK(da[1] == Approx(double(n - 1)));
  CHECK(da[2] == Approx(5.0));

  // MAX, int64
  std::vector<int64_t> m = {r, -r, 42};
  CHECK(nccl_round_trip(m, ReduceOp::MAX, stream) == std::vector<int64_t>{n - 1, 0, 42});

  // Errors before any NCCL call: a host pointer, int64 AVG.
  std::vector<float> host(4, 1.0f);
  CHECK_THROWS_WITH(dist::nccl_all_reduce(host.data(), 4, tinytorch::kFloat32, ReduceOp::SUM, stream),
                    Catch::Contains("nccl_all_reduce: dev_buf must point to CUDA device (or managed) memory"));
  int64_t* dev_i = nullptr;
  TT_TEST_CUDA(cudaMalloc(&dev_i, 4 * sizeof(int64_t)));
  CHECK_THROWS_WITH(dist::nccl_all_reduce(dev_i, 4, tinytorch::kInt64, ReduceOp::AVG, stream),
                    Catch::Contains("ReduceOp::AVG is not supported for torch.int64"));
  TT_TEST_CUDA(cudaFree(dev_i));

  // The NCCL group keeps its MPI communicator for CPU work.
  float cpu = 1.0f;
  dist::all_reduce(&cpu, 1, ReduceOp::SUM);
  CHECK(cpu == static_cast<float>(n));

  TT_TEST_CUDA(cudaStreamDestroy(stream));
  dist::destroy_process_group();
  CHECK_FALSE(dist::is_initialized());
  CHECK_THROWS_WITH(dist::nccl_all_reduce(nullptr, 0, tinytorch::kFloat32), Catch::Contains("has not been initialized"));
}

TEST_CASE("nccl_all_reduce refuses an MPI group", "[distributed][nccl]") {
  dist::init_process_group(dist::Backend::MPI);
  float* dev = nullptr;
  TT_TEST_CUDA(cudaMalloc(&dev, sizeof(float)));
  CHECK_THROWS_WITH(dist::nccl_all_reduce(dev, 1, tinytorch::kFloat32),
                    Catch::Contains("created with Backend::mpi; call init_process_group(Backend::NCCL)"));
  TT_TEST_CUDA(cudaFree(dev));
  dist::destroy_process_group();
}

namespace nccl_tensors {

using tinytorch::Device;
using tinytorch::Tensor;
using tinytorch::TensorOptions;

Tensor to_device(const std::vector<double>& v, tinytorch::DType dtype, Device d) {
  Tensor c = tinytorch::tensor(v, {static_cast<int64_t>(v.size())}, TensorOptions(dtype));
  Tensor out = tinytorch::empty(c.sizes(), TensorOptions(dtype).device(d));
  tinytorch::backend::cuda::memcpy_h2d(out.raw_data(), c.raw_data(), static_cast<size_t>(c.numel()) * tinytorch::element_size(dtype));
  return out;
}

std::vector<double> to_host(const Tensor& t) {
  Tensor out = tinytorch::empty(t.sizes(), TensorOptions(t.dtype()));
  tinytorch::backend::cuda::memcpy_d2h(out.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()) * tinytorch::element_size(t.dtype()));
  return out.tolist<double>();
}

void check_tensor_collectives() {
  const int r = dist::get_rank(), n = dist::get_world_size();
  const Device gpu = Device::cuda(dist::get_local_rank());
  Tensor a = to_device({double(r), 1.0, 2.5}, tinytorch::kFloat32, gpu);
  dist::all_reduce(a);  // SUM
  CHECK(to_host(a) == std::vector<double>{n * (n - 1) / 2.0, double(n), 2.5 * n});
  Tensor m = to_device({double(r), -double(r)}, tinytorch::kInt64, gpu);
  dist::all_reduce(m, ReduceOp::MIN);
  CHECK(to_host(m) == std::vector<double>{0.0, -double(n - 1)});
  Tensor b = to_device({double(r) + 0.5, 7.0}, tinytorch::kFloat64, gpu);
  dist::broadcast(b, n - 1);
  CHECK(to_host(b) == std::vector<double>{n - 0.5, 7.0});
  Tensor in = to_device({double(r), 10.0 + r}, tinytorch::kFloat32, gpu);
  Tensor out = tinytorch::empty({2 * n}, TensorOptions(tinytorch::kFloat32).device(gpu));
  dist::all_gather(out, in);
  std::vector<double> expect;
  for (int q = 0; q < n; ++q) expect.insert(expect.end(), {double(q), 10.0 + q});
  CHECK(to_host(out) == expect);
}

}  // namespace nccl_tensors

TEST_CASE("NCCL collectives on CUDA tensors, ordered by events", "[distributed][nccl]") {
  dist::init_process_group(dist::Backend::NCCL);
  nccl_tensors::check_tensor_collectives();
  // A tensor on another GPU than this rank's communicator: an error before any NCCL call.
  int ndev = 0;
  TT_TEST_CUDA(cudaGetDeviceCount(&ndev));
  if (ndev > dist::get_local_rank() + 1) {
    tinytorch::Tensor t = tinytorch::empty({2}, tinytorch::TensorOptions().device(tinytorch::Device::cuda(dist::get_local_rank() + 1)));
    CHECK_THROWS_WITH(dist::all_reduce(t), Catch::Contains("but this rank's NCCL communicator uses cuda:"));
  }
  dist::destroy_process_group();
}

TEST_CASE("MPI backend with CUDA tensors stages through host memory (nvcc build)", "[distributed][nccl]") {
  dist::init_process_group(dist::Backend::MPI);
  nccl_tensors::check_tensor_collectives();
  dist::destroy_process_group();
}

TEST_CASE("DDP at world size 1 through NCCL buckets on the GPU equals the plain model", "[distributed][nccl][ddp]") {
  dist::init_process_group(dist::Backend::NCCL);
  if (dist::get_world_size() != 1) {  // the multi-rank DDP check is tests/mpi (MPI on simulated GPUs)
    dist::destroy_process_group();
    return;
  }
  namespace nn = tinytorch::nn;
  using tinytorch::Device;
  using tinytorch::Tensor;
  auto make = [] {
    auto m = std::make_shared<nn::Sequential>();
    m->push_back(std::make_shared<nn::Linear>(6, 16));
    m->push_back(std::make_shared<nn::ReLU>());
    m->push_back(std::make_shared<nn::Linear>(16, 3));
    return m;
  };
  tinytorch::manual_seed(7);
  auto model = make();
  tinytorch::manual_seed(7);
  auto plain = make();
  const Device gpu = Device::cuda(0);
  model->to(gpu);
  dist::DDPOptions o;
  o.force_bucket_path_single_rank = true;
  o.first_bucket_mb = 1e-6;  // one bucket per parameter: four NCCL all-reduces per step
  o.bucket_cap_mb = 1e-6;
  {
    dist::DistributedDataParallel ddp(model, o);
    tinytorch::optim::SGD opt(ddp.parameters(), 0.1, 0.9);
    tinytorch::optim::SGD plain_opt(plain->parameters(), 0.1, 0.9);
    nn::MSELoss loss_fn;
    for (int s = 0; s < 3; ++s) {
      tinytorch::Generator g(100 + static_cast<uint64_t>(s));
      Tensor x = tinytorch::randn({5, 6}, {}, &g);
      Tensor y = tinytorch::randn({5, 3}, {}, &g);
      opt.zero_grad();
      loss_fn(ddp.forward(x.to(gpu)), y.to(gpu)).backward();
      opt.step();
      plain_opt.zero_grad();
      loss_fn(plain->forward(x), y).backward();
      plain_opt.step();
    }
    CHECK(ddp.last_iteration_stats().valid);
    const auto mp = model->parameters(), pp = plain->parameters();
    for (size_t i = 0; i < mp.size(); ++i) {
      const auto a = mp[i].to(Device::cpu()).tolist<double>(), b = pp[i].tolist<double>();
      for (size_t k = 0; k < a.size(); ++k) CHECK(a[k] == Approx(b[k]).margin(1e-5));
    }
  }
  dist::destroy_process_group();
}

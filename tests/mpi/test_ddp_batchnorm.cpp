// tests/mpi/test_ddp_batchnorm.cpp — DistributedDataParallel with a BatchNorm1d: its buffers.
//
// Run by ctest on 2, 3 and 4 ranks (scripts/mpirun.sh -np N build/bin/test_ddp_batchnorm); it
// also passes as a single process (world size 1). What is checked:
//   * at construction DDP broadcasts rank 0's buffers (running_mean, running_var and the int64
//     0-d num_batches_tracked), which started different on every rank;
//   * before every forward DDP broadcasts them again (broadcast_buffers = true, PyTorch's
//     default), so after a training forward every rank holds rank 0's statistics from before
//     the step updated with its *own* batch (each rank normalises with its own batch statistics:
//     this is not SyncBatchNorm);
//   * BatchNorm1d's weight and bias are trained like any parameter: identical on every rank;
//   * in eval mode every rank normalises with rank 0's running statistics (same output).
// Chapter: chapters/06-distributed-data-parallel.md. Reference: torch.nn.parallel.
// DistributedDataParallel (broadcast_buffers; _sync_buffers before forward).
// Catch2 tags: [distributed][ddp][loss_norm].
#include <catch2/catch.hpp>

#include <tinytorch/distributed.hpp>
#include <tinytorch/tinytorch.hpp>

#include <memory>
#include <vector>

namespace dist = tinytorch::distributed;
namespace nn = tinytorch::nn;
using tinytorch::NoGradGuard;
using tinytorch::Tensor;

namespace {

void ensure_group() {
  if (!dist::is_initialized()) dist::init_process_group(dist::Backend::MPI);
}

std::vector<double> flat(const std::vector<Tensor>& ts) {
  std::vector<double> out;
  for (const Tensor& t : ts) {
    auto v = t.tolist<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

/// Rank 0's `v` (a collective).
std::vector<double> from_rank0(std::vector<double> v) {
  dist::broadcast(v.data(), static_cast<int64_t>(v.size()), 0);
  return v;
}

/// True on every rank iff every rank's `v` equals rank 0's exactly.
bool identical_on_all_ranks(const std::vector<double>& v) {
  int64_t bad = from_rank0(v) == v ? 0 : 1;
  dist::all_reduce(&bad, 1, dist::ReduceOp::MAX);
  return bad == 0;
}

}  // namespace

TEST_CASE("DDP broadcasts BatchNorm1d's buffers from rank 0 at construction and before every forward",
          "[distributed][ddp][loss_norm]") {
  ensure_group();
  const int r = dist::get_rank();
  tinytorch::manual_seed(7);
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::BatchNorm1d>(3),
                                                std::make_shared<nn::Linear>(3, 2));
  auto bn = model->get_submodule<nn::BatchNorm1d>("1");
  {
    NoGradGuard ng;  // every rank starts with other buffers
    bn->running_mean.fill_(r);
    bn->running_var.fill_(1 + r);
    bn->num_batches_tracked.fill_(10 * r);
  }
  auto ddp = std::make_shared<dist::DistributedDataParallel>(model);
  CHECK(bn->running_mean.tolist<double>() == std::vector<double>(3, 0.0));
  CHECK(bn->running_var.tolist<double>() == std::vector<double>(3, 1.0));
  CHECK(bn->num_batches_tracked.item<int64_t>() == 0);

  tinytorch::optim::SGD opt(ddp->parameters(), 0.1);
  nn::MSELoss loss_fn;
  for (int s = 0; s < 3; ++s) {
    tinytorch::Generator g(100 + 10 * static_cast<uint64_t>(s) + static_cast<uint64_t>(r));  // this rank's batch
    Tensor x = tinytorch::randn({5, 4}, {}, &g), y = tinytorch::randn({5, 2}, {}, &g);
    // expected: rank 0's buffers from before this step, updated with this rank's batch
    nn::BatchNorm1d expect(3);
    {
      NoGradGuard ng;
      expect.running_mean.copy_(tinytorch::tensor(from_rank0(bn->running_mean.tolist<double>())));
      expect.running_var.copy_(tinytorch::tensor(from_rank0(bn->running_var.tolist<double>())));
      expect.num_batches_tracked.fill_(from_rank0({bn->num_batches_tracked.item()})[0]);
      expect((*model)[0]->forward(x));
    }
    opt.zero_grad();
    Tensor out = ddp->forward(x);
    CHECK(bn->running_mean.equal(expect.running_mean));
    CHECK(bn->running_var.equal(expect.running_var));
    CHECK(bn->num_batches_tracked.item<int64_t>() == s + 1);
    loss_fn(out, y).backward();
    opt.step();
    CHECK(identical_on_all_ranks(flat(model->parameters())));  // BatchNorm1d's weight and bias too
  }
  CHECK(bn->weight.grad().defined());

  // evaluation: the forward's broadcast gives every rank rank 0's running statistics
  model->eval();
  NoGradGuard ng;
  tinytorch::Generator g(5);
  Tensor x = tinytorch::randn({2, 4}, {}, &g);  // the same on every rank
  Tensor out = ddp->forward(x);
  CHECK(identical_on_all_ranks(out.tolist<double>()));
  CHECK(identical_on_all_ranks(flat(model->buffers())));
}

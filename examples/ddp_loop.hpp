// examples/ddp_loop.hpp — the seed article's example_ddp.py training loop, shared by
// examples/example_ddp.cpp and its test (tests/mpi/test_ddp.cpp), so the test checks exactly
// what the example runs.
//
//   model = DDP(SimpleMLP{fc = Linear(2, 1)}); loss = MSELoss(); opt = SGD(lr=0.01)
//   X = [[1.0,0.5],[0.5,1.0],[0.2,0.8],[0.9,0.1]]  (4, 2);   y = [[2.0],[1.5],[1.0],[2.2]]  (4, 1)
//   sampler = DistributedSampler(4, num_replicas=N, rank=r, shuffle); loader: batch 2
//   each epoch k: sampler.set_epoch(k); for each batch: zero_grad, forward, loss, backward
//                 (gradients averaged over the N ranks), step; record the last batch's loss.
// With N = 2 each rank sees 2 samples per epoch (one batch), with N = 1 all 4 (two batches).
//
// Math of one step: rank r's batch B_r gives L_r = mean_{i in B_r} (w.x_i + b - y_i)^2; DDP sets
// every rank's gradient to (1/N) sum_r dL_r/dtheta, so all ranks apply the same SGD step and the
// replicas stay equal. Shapes: xb (2, 2), yb (2, 1), preds (2, 1), loss scalar.
//
// Initial weights: fixed (fc.weight [[0.25, -0.5]], fc.bias [0.1], as example_single) so that
// the losses can be compared with PyTorch; random_init draws them from Generator(seed + rank)
// instead — different on every rank, which shows DDP's broadcast from rank 0 at construction.
// Shuffle: our sampler's permutation stream differs from torch.randperm's, so only the
// unshuffled run (shuffle = false) reproduces PyTorch's numbers
// (tests/reference/gen_examples.py, example_ddp_losses_w1 / _w2). Both are deterministic.
// Chapter: chapters/06-distributed-data-parallel.md. Reference: the seed article's
// example_ddp.py; torch.utils.data.DistributedSampler; torch.nn.parallel.DistributedDataParallel.
#pragma once

#include <tinytorch/distributed.hpp>
#include <tinytorch/tinytorch.hpp>

#include <memory>
#include <vector>

#include "simple_mlp.hpp"

namespace examples {

struct DdpExampleOptions {
  int epochs = 5;
  bool shuffle = true;       ///< DistributedSampler's default, as in the article
  bool random_init = false;  ///< weights from Generator(seed + rank) instead of the fixed ones
  uint64_t seed = 0;         ///< sampler seed (and init seed with random_init)
  double lr = 0.01;
};

struct DdpExampleResult {
  std::vector<double> losses;  ///< this rank's last-batch loss of each epoch
  std::vector<double> weight;  ///< final fc.weight (2 values), this rank
  double bias = 0;             ///< final fc.bias, this rank
};

/// Runs the loop on this rank of the default process group (which must be initialised; world
/// size 1 works without mpirun).
inline DdpExampleResult train_ddp(const DdpExampleOptions& o = {}) {
  using namespace tinytorch;
  namespace dist = tinytorch::distributed;
  const int rank = dist::get_rank(), world = dist::get_world_size();

  Generator gen(o.seed + static_cast<uint64_t>(rank));
  auto model = std::make_shared<SimpleMLP>(&gen);
  if (!o.random_init) {
    NoGradGuard no_grad;
    model->fc->weight.copy_(tensor({0.25, -0.5}, {1, 2}));
    model->fc->bias.copy_(tensor({0.1}));
  }
  auto ddp = std::make_shared<dist::DistributedDataParallel>(model);  // rank 0's weights everywhere

  Tensor X = tensor({1.0, 0.5, 0.5, 1.0, 0.2, 0.8, 0.9, 0.1}, {4, 2});  // X: (4, 2)
  Tensor y = tensor({2.0, 1.5, 1.0, 2.2}, {4, 1});                      // y: (4, 1)
  auto dataset = std::make_shared<data::TensorDataset>(X, y);
  auto sampler = std::make_shared<data::DistributedSampler>(*dataset, world, rank, o.shuffle, o.seed);
  data::DataLoaderOptions lo;
  lo.batch_size = 2;
  lo.sampler = sampler;
  data::DataLoader loader(dataset, lo);

  optim::SGD optimizer(ddp->parameters(), o.lr);
  nn::MSELoss loss_fn;

  DdpExampleResult r;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    sampler->set_epoch(epoch);  // a new shuffle each epoch (same on every rank)
    double last = 0;
    for (auto& batch : loader) {
      optimizer.zero_grad();
      Tensor preds = ddp->forward(batch.data);   // preds: (2, 1)
      Tensor loss = loss_fn(preds, batch.target);  // scalar, this rank's batch
      loss.backward();                             // returns with gradients averaged over ranks
      optimizer.step();
      last = loss.item<double>();
    }
    r.losses.push_back(last);
  }
  r.weight = model->fc->weight.tolist<double>();
  r.bias = model->fc->bias.item<double>();
  return r;
}

}  // namespace examples

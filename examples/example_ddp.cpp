// examples/example_ddp.cpp — the seed article's example_ddp.py: DistributedDataParallel on four
// samples, one process per rank.
//
//   scripts/mpirun.sh -np 2 build/bin/example_ddp          # 2 ranks, 2 samples each per epoch
//   scripts/mpirun.sh -np 2 build/bin/example_ddp --no-shuffle   # PyTorch's numbers
//   build/bin/example_ddp                                   # world size 1: all 4 samples
//
// Model Linear(2,1) ("fc" inside SimpleMLP), MSELoss, SGD(lr=0.01), DistributedSampler
// (num_replicas = world size, rank), DataLoader batch 2, 5 epochs with set_epoch. Rank 0 alone
// prints "epoch k: loss=0.xxxx" (k = 0..4, 4 decimals): the loss of its last batch in epoch k.
// The loop lives in examples/ddp_loop.hpp (tests/mpi/test_ddp.cpp runs the same code). With
// --no-shuffle the losses equal PyTorch's (tests/reference/gen_examples.py simulates DDP in one
// process); shuffled orders come from our Generator, not torch.randperm, so they differ.
// The article's script as printed never runs: its __main__ block is `pass` (main() is never
// called, so `torchrun --nproc_per_node=2` starts two processes that do nothing), it feeds
// tinytorch Tensors to torch's TensorDataset, and it picks the GPU by global rank
// (set_device(rank)), which breaks on a second node. Here mpirun starts the ranks, the process
// group comes from MPI, the local rank (dist::get_local_rank()) is what would pick a GPU, and a
// guard ends the whole job if one rank fails.
// Chapter: chapters/06-distributed-data-parallel.md.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "ddp_loop.hpp"
#include "flags.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tinytorch example_ddp: DistributedDataParallel Linear(2,1) on four samples (run under mpirun)"};
  examples::DdpExampleOptions o;
  bool no_shuffle = false;
  app.add_flag("--no-shuffle", no_shuffle, "visit the samples in order (PyTorch-comparable numbers)");
  app.add_flag("--random-init", o.random_init, "draw the initial weights (per rank; DDP broadcasts rank 0's)");
  app.add_option("--epochs", o.epochs, "number of epochs")->check(flags::integer_in(1, 1000000));
  app.add_option("--seed", o.seed, "sampler seed (and init seed with --random-init)")->check(flags::seed());
  CLI11_PARSE(app, argc, argv);
  o.shuffle = !no_shuffle;

  namespace dist = tinytorch::distributed;
  dist::ProcessGroupGuard pg(dist::Backend::MPI);  // world size 1 without mpirun
  try {
    // Every flag changes what every rank computes: they must be the same on every rank.
    dist::check_same_across_ranks("example_ddp", {{"--no-shuffle", no_shuffle ? "on" : "off"},
                                                  {"--random-init", o.random_init ? "on" : "off"},
                                                  {"--epochs", std::to_string(o.epochs)},
                                                  {"--seed", std::to_string(o.seed)}});
    examples::DdpExampleResult r = examples::train_ddp(o);
    if (dist::get_rank() == 0) {
      std::printf("world_size=%d\n", dist::get_world_size());
      for (size_t k = 0; k < r.losses.size(); ++k) std::printf("epoch %zu: loss=%.4f\n", k, r.losses[k]);
    }
  } catch (const std::exception& e) {
    pg.abort(e);  // prints "rank r: <error>" and ends every rank (MPI_Abort)
  }
  return 0;
}

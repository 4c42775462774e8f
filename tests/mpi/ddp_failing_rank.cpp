// tests/mpi/ddp_failing_rank.cpp — DDP jobs in which one rank goes wrong; run by
// tests/mpi/ddp_failure_test.sh, which asserts that the whole job ends within seconds with the
// failing rank's message instead of hanging.
//
//   scripts/mpirun.sh -np 2 build/bin/ddp_failing_rank <mode>
//
// Modes (main() is pattern A of include/tinytorch/distributed/guard.hpp: a guard, no try/catch,
// so an exception reaches std::terminate, whose handler prints "rank r: <what()>" and calls
// MPI_Abort):
//   mismatch  the last rank builds a different model: every rank throws the same
//             "DDP expects same model across all ranks" from the DDP constructor.
//   unused    rank 1 skips layer fc_b in forward (the other ranks use it). Rank 0's single bucket
//             completes, so its backward waits for an all-reduce that rank 1 never starts;
//             rank 1's next forward throws "Expected to have finished reduction ... fc_b.weight,
//             fc_b.bias" and its MPI_Abort ends rank 0's wait.
//   throw     rank 1 throws in the middle of its second iteration (between forward and
//             backward), while rank 0's communication thread waits in the bucket all-reduce.
//   unused_last  rank 1 skips fc_b in the last iteration only, and the loop never calls another
//             forward that would notice: rank 0 waits in the bucket all-reduce, rank 1 in
//             destroy_process_group. Each rank's watchdog reports after the timeout
//             (TINYTORCH_DIST_TIMEOUT) and the job ends.
//   unequal_steps  rank 1 trains 2 iterations, the others 3 (e.g. a different --limit per rank).
//             With TINYTORCH_DISTRIBUTED_DEBUG=DETAIL, rank 0's third forward meets the end of
//             rank 1's DDP (its destructor): the same "collective mismatch" error on both.
//   skip_backward  rank 1 throws between forward and backward in its second iteration, catches
//             it and goes on. Its third forward throws "Expected to have finished reduction in the
//             prior iteration ... Rank 1 ran no backward after its previous forward" at once, and
//             its MPI_Abort ends rank 0's wait in the bucket all-reduce (PyTorch would average
//             rank 1's third gradients with rank 0's second and then hang). At DETAIL the third
//             forward first meets rank 0's bucket all-reduce on DDP's group: the mismatch error
//             on both.
//   ok        nobody fails: three iterations, exit 0, rank 0 prints "ddp ok: N ranks".
// Chapter: chapters/06-distributed-data-parallel.md ("When a rank goes wrong").
#include <tinytorch/distributed.hpp>
#include <tinytorch/tinytorch.hpp>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

namespace dist = tinytorch::distributed;
namespace nn = tinytorch::nn;
using tinytorch::Tensor;

namespace {

class TwoLayers : public nn::Module {
 public:
  explicit TwoLayers(int64_t out) {
    fc_a = register_module("fc_a", std::make_shared<nn::Linear>(4, out));
    fc_b = register_module("fc_b", std::make_shared<nn::Linear>(4, out));
  }
  Tensor forward(const Tensor& x) override { return use_b ? fc_a->forward(x) + fc_b->forward(x) : fc_a->forward(x); }
  std::shared_ptr<nn::Linear> fc_a, fc_b;
  bool use_b = true;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "ok";
  if (mode != "ok" && mode != "mismatch" && mode != "unused" && mode != "throw" && mode != "unused_last" &&
      mode != "unequal_steps" && mode != "skip_backward") {
    std::fprintf(stderr,
                 "ddp_failing_rank: unknown mode '%s' (ok, mismatch, unused, throw, unused_last, unequal_steps, "
                 "skip_backward)\n",
                 mode.c_str());
    return 2;
  }
  dist::ProcessGroupGuard pg(dist::Backend::MPI);
  const int r = dist::get_rank(), n = dist::get_world_size();
  auto model = std::make_shared<TwoLayers>(mode == "mismatch" && r == n - 1 ? 3 : 2);
  model->use_b = !(mode == "unused" && r == 1);
  dist::DistributedDataParallel ddp(model);
  tinytorch::optim::SGD opt(ddp.parameters(), 0.1);
  nn::MSELoss loss_fn;
  Tensor x = tinytorch::ones({3, 4}), y = tinytorch::zeros({3, 2});
  const int iterations = mode == "unequal_steps" && r == 1 ? 2 : 3;
  for (int it = 0; it < iterations; ++it) {
    if (mode == "unused_last" && r == 1) model->use_b = it < 2;
    opt.zero_grad();
    Tensor loss = loss_fn(ddp.forward(x), y);
    if (mode == "throw" && r == 1 && it == 1)
      throw std::runtime_error("rank-local failure between forward and backward (e.g. a NaN check)");
    if (mode == "skip_backward" && r == 1 && it == 1) continue;  // e.g. a caught NaN check: no backward
    loss.backward();
    opt.step();
  }
  if (r == 0) std::printf("ddp ok: %d ranks\n", n);
  return 0;
}

// tinytorch/distributed/ddp_naive.hpp — DataParallelNaive: data parallelism in its plainest form,
// the rung below DistributedDataParallel (picotron's DataParallelNaive).
//
// Every rank holds the whole model and trains on its own slice of the batch. The replicas stay
// equal because every step they apply the same gradient, the mean over all N ranks:
//   construction   each parameter is broadcast from rank 0: the replicas start equal;
//   backward       a post-accumulate-grad hook on each parameter all-reduces its .grad (SUM) the
//                  moment backward has written it, and divides it by N:
//                    g <- (g_0 + g_1 + ... + g_{N-1}) / N
// One blocking all-reduce per parameter, on the thread that runs backward. No buckets (a message
// per parameter), no overlap (backward waits for each), no checks across ranks, no no_sync():
// every backward all-reduces the whole .grad, so call zero_grad() before each one. The hooks
// stay on the parameters after the wrapper is gone.
//
// DistributedDataParallel (ddp.hpp) is this plus buckets (few large messages), a communication
// thread (all-reduces overlap backward) and the checks. On 2 ranks both give the same weights bit
// for bit (dividing by 2 is exact): tests/mpi/test_ddp.cpp checks it.
// Chapter: chapters/06-distributed-data-parallel.md.
#pragma once

#include <memory>
#include <utility>

#include "tinytorch/autograd/grad_mode.hpp"
#include "tinytorch/nn/module.hpp"
#include "tinytorch/distributed/collectives.hpp"
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed {

class DataParallelNaive : public nn::Module {
 public:
  /// Wraps `module` (its parameters are broadcast from rank 0, then hooked). Needs
  /// init_process_group; throws tinytorch::Error for a null module.
  explicit DataParallelNaive(std::shared_ptr<nn::Module> module) : module_(std::move(module)) {
    detail::check(module_ != nullptr, "DataParallelNaive: module is null");
    register_module("module", module_);
    const int world = get_world_size();
    for (const Tensor& p : module_->parameters()) {
      {
        NoGradGuard no_grad;
        broadcast(p, 0);  // rank 0's initial weights everywhere
      }
      if (!p.requires_grad()) continue;
      p.register_post_accumulate_grad_hook([world](Tensor& param) {
        Tensor g = param.grad();
        all_reduce(g, ReduceOp::SUM);  // every rank's gradient, summed
        NoGradGuard no_grad;
        g.div_(world);  // the gradient of the mean loss over all N*B samples
      });
    }
  }

  Tensor forward(const Tensor& x) override { return module_->forward(x); }

 private:
  std::shared_ptr<nn::Module> module_;
};

}  TT_NAMESPACE_END  // namespace tinytorch::distributed

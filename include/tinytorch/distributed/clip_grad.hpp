// tinytorch/distributed/clip_grad.hpp — gradient clipping for a model whose parameters are spread
// over the ranks of a group (tensor-parallel shards, pipeline stages).
//
// torch.nn.utils.clip_grad_norm_ (2-norm) computes ||g|| over every gradient of the model. When
// each rank holds only some parameters, each rank sums the squares of the gradients it owns, one
// all-reduce adds the sums, and every rank scales its gradients by the same coefficient:
//   norm = sqrt( sum over ranks r of sum_{p owned by r} ||g_p||^2 )
//   coef = min(max_norm / (norm + 1e-6), 1)          g_p *= coef on every rank, for every p it holds
// A parameter held by several ranks (a LayerNorm on every tensor-parallel rank, the tied
// embedding on the first and last pipeline stages) must be counted by one of them only: the
// caller passes `counted` (this rank's share of the sum) and `all` (every gradient to scale).
// Sums in float64. Megatron-LM's clip_grad_norm_fp32 does the same.
// Chapter: chapters/12-model-parallelism.md. Reference: torch.nn.utils.clip_grad_norm_;
// Megatron-LM core/optimizer/clip_grads.py.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "tinytorch/autograd/grad_mode.hpp"
#include "tinytorch/functional.hpp"
#include "tinytorch/tensor.hpp"
#include "tinytorch/distributed/process_group.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed {

/// Scales the .grad of every tensor in `all` so that the gradient norm of the whole model
/// (the squares of `counted` summed over `group`) is at most max_norm; returns that norm before
/// clipping. A collective of the group. Tensors without a .grad are skipped.
inline double clip_grad_norm_across_(const std::vector<Tensor>& counted, const std::vector<Tensor>& all,
                                     double max_norm, ProcessGroup& group) {
  double sum = 0.0;
  for (const Tensor& p : counted) {
    if (!p.grad().defined()) continue;
    const Tensor g = p.grad().to(kFloat64);
    sum += (g * g).sum().item<double>();
  }
  if (group.size() > 1) group.all_reduce(&sum, 1, kFloat64, ReduceOp::SUM, Completion::Blocking, "clip_grad_norm_");
  const double norm = std::sqrt(sum);
  const double coef = std::min(max_norm / (norm + 1e-6), 1.0);
  if (coef < 1.0) {
    NoGradGuard no_grad;
    for (const Tensor& p : all)
      if (p.grad().defined()) p.grad().mul_(coef);
  }
  return norm;
}

}  TT_NAMESPACE_END  // namespace tinytorch::distributed

// tinytorch/autograd/reduction.hpp — how a loss reduces its per-element values: Reduction.
//
// None keeps them (the loss has the input's batch shape), Mean averages them (nll_loss and
// cross_entropy divide by the sum of the weights of the targets not ignored), Sum adds them; as
// PyTorch's reduction='none' | 'mean' | 'sum' (at::Reduction in ATen/core/Reduction.h).
// Used by the loss nodes (autograd/functions/loss.hpp), functional.hpp and nn/loss.hpp.
// Chapter: chapters/01-training-loop.md.
#pragma once

#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

enum class Reduction { None, Mean, Sum };

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

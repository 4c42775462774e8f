// tinytorch/nn/activation.ipp — the bodies of activation.hpp that need the library's internals: Dropout::forward.
//
// Not a header to include: activation.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The declarations and their documentation are in activation.hpp.
// Chapter: chapters/01-training-loop.md.
#pragma once

#include "tinytorch/nn/activation.hpp"
#include "tinytorch/functional.hpp"  // dropout
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace nn {

TT_DECL Tensor Dropout::forward(const Tensor& x) { return dropout(x, p, is_training(), gen); }

}  TT_NAMESPACE_END  // namespace tinytorch::nn

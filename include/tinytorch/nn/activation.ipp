// tinytorch/nn/activation.ipp — the bodies of activation.hpp that need the library's internals: Dropout::forward.
//
// Not a header to include: activation.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The declarations and their documentation are in activation.hpp.
#pragma once

#include "activation.hpp"
#include "../ops/elementwise.hpp"
#include "../core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace nn {

TT_DECL Tensor Dropout::forward(const Tensor& x) {
  if (!is_training() || p == 0) return x;
  if (p == 1) return x * 0.0;
  Tensor mask = rand(x.sizes(), x.dtype(), gen);
  {
    NoGradGuard ng;
    const double keep_scale = 1.0 / (1.0 - p);
    const double drop = p;
    ops::unary_(mask, [=](auto u) { return u < drop ? 0.0 : keep_scale; }, "dropout");
  }
  // The mask is drawn on the host (the same numbers on every device), then moved to x's device.
  return x * mask.to(x.device());
}

}  TT_NAMESPACE_END  // namespace tinytorch::nn

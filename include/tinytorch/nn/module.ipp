// tinytorch/nn/module.ipp — the bodies of module.hpp that need the library's internals: clone_module_tensor.
//
// Not a header to include: module.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The declarations and their documentation are in module.hpp.
#pragma once

#include "module.hpp"
#include "../ops/creation.hpp"
#include "../ops/shape.hpp"
#include "../core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace detail {

TT_DECL Tensor clone_module_tensor(const Tensor& t) {
  if (!t.defined()) return t;
  Tensor out;
  if (ReplicateClone::active()) {
    out = ops::make_view(t, t.sizes(), t.strides(), t.storage_offset());
  } else {
    NoGradGuard no_grad;
    out = ops::clone(t);
  }
  out.impl()->requires_grad = t.requires_grad();
  return out;
}

}  TT_NAMESPACE_END  // namespace tinytorch::detail

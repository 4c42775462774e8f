// tinytorch/optim/optimizer.ipp — the bodies of optimizer.hpp that need the library's internals: Optimizer::step_impl.
//
// Not a header to include: optimizer.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The declarations and their documentation are in optimizer.hpp.
#pragma once

#include "optimizer.hpp"
#include "../ops/dispatch.hpp"
#include "../core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace optim {

TT_DECL void Optimizer::step_impl() {
  NoGradGuard no_grad;
  for (ParamGroup& group : param_groups_) {
    for (Tensor& p : group.params) {
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      ParamState& st = state_[p.impl()];
      // State made on another device (the model moved after the optimizer's first step) would
      // be read through the wrong pointers: PyTorch's error instead (its foreach kernels raise it).
      ops::check_same_device("Optimizer.step", p, grad, st.momentum_buffer, st.exp_avg, st.exp_avg_sq,
                             st.max_exp_avg_sq);
      update(p, grad, st, group);
    }
  }
}

}  TT_NAMESPACE_END  // namespace tinytorch::optim

// tinytorch/parallel/replicate.ipp — the bodies of replicate.hpp that need the library's internals: BroadcastBackward::apply and replicate.
//
// Not a header to include: replicate.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The declarations and their documentation are in replicate.hpp.
// Chapter: chapters/05-data-parallel.md.
#pragma once

#include "tinytorch/parallel/replicate.hpp"
#include "tinytorch/ops/shape.hpp"
#include "tinytorch/ops/elementwise.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace parallel {

TT_DECL std::vector<Tensor> detail::BroadcastBackward::backward(const Tensor& grad) { return {ops::to_device(grad, device)}; }

TT_DECL std::vector<std::shared_ptr<nn::Module>> replicate(const nn::Module& module, const std::vector<Device>& devices) {
  TT_CHECK(!devices.empty(), "replicate: expected at least one device");
  detail::check_module_device(module, devices[0], "replicate");
  const bool record = GradMode::is_enabled();
  const auto params = module.parameters();
  const auto buffers = module.buffers();
  std::vector<std::shared_ptr<nn::Module>> replicas;
  replicas.reserve(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    std::shared_ptr<nn::Module> r;
    {
      tinytorch::detail::ReplicateClone share;  // new handles on the original's storage, no copies
      r = module.clone();
    }
    const auto r_params = r->parameters();
    const auto r_buffers = r->buffers();
    TT_CHECK(r_params.size() == params.size() && r_buffers.size() == buffers.size(), "replicate: ", module.name(),
             "::clone() returned a module with ", r_params.size(), " parameters and ", r_buffers.size(),
             " buffers; the original has ", params.size(), " and ", buffers.size());
    for (size_t j = 0; j < params.size(); ++j) {
      const Tensor& p = params[j];
      TensorImpl* q = r_params[j].impl();
      if (devices[i] != p.device()) detail::set_storage(q, ops::to_device(p, devices[i]));  // a copy (CUDA)
      q->requires_grad = false;  // a replica's parameter is never a leaf that requires grad
      if (record && p.requires_grad()) {
        auto node = std::make_shared<detail::BroadcastBackward>();
        node->device = p.device();
        node->next_edges.push_back(autograd::gradient_edge(p));
        q->grad_fn = std::move(node);
      }
    }
    for (size_t j = 0; j < buffers.size(); ++j) {
      if (i == 0 && devices[i] == buffers[j].device()) continue;  // replica 0 shares the storage
      NoGradGuard no_grad;
      detail::set_storage(r_buffers[j].impl(), ops::to_device(ops::clone(buffers[j]), devices[i]));
    }
    replicas.push_back(std::move(r));
  }
  return replicas;
}

}  TT_NAMESPACE_END  // namespace tinytorch::parallel

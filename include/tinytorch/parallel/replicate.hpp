// tinytorch/parallel/replicate.hpp — replicate: one copy of a module per device, inside the
// autograd graph.
//
//   replicas = replicate(module, devices)      replicas[i] lives on devices[i]
// Each replica comes from module.clone() (no constructor re-run, no random draws) with, for each
// parameter p of the original and p_i of replica i:
//   p_i = p's values on devices[i]: the same storage when devices[i] is p's device (replica 0,
//         and every CPU replica), else a copy;
//   p_i.grad_fn = BroadcastBackward, one edge to p:  d loss/d p = sum_i d loss/d p_i.
// So the replicas' parameters are not leaves: backward carries each replica's gradient back to
// the original parameter, where the engine adds them up before AccumulateGrad runs once. The
// sum is not divided by the number of replicas (as PyTorch's ReduceAddCoalesced): with a mean
// loss over the gathered batch it equals the one-module full-batch gradient.
// With grad mode off (evaluation) the replicas are detached: no graph, no grad_fn.
// Buffers (running statistics): replica 0's share the original's storage, so in-place updates
// made there persist; the other replicas get copies, whose updates are lost (as PyTorch).
// Reference: torch/nn/parallel/replicate.py, torch/nn/parallel/_functions.py (Broadcast,
// ReduceAddCoalesced); libtorch's torch/nn/parallel/data_parallel.h (clone + a gradient edge).
// Chapter: chapters/05-data-parallel.md.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tinytorch/nn/module.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace parallel {

namespace detail {

/// p_i = broadcast of p to replica i  =>  dp = dp_i, copied back to p's device.
struct BroadcastBackward : autograd::Node {
  Device device;  ///< the original parameter's device
  std::string name() const override { return "BroadcastBackward"; }
  std::vector<Tensor> backward(const Tensor& grad) override;
};

/// Throws unless every parameter and buffer of `module` lives on `device` (PyTorch's check).
inline void check_module_device(const nn::Module& module, Device device, const char* op) {
  for (const auto& named : {module.named_parameters(), module.named_buffers()})
    for (const auto& [name, t] : named)
      TT_CHECK(t.device() == device, op, ": module must have its parameters and buffers on device ", device.str(),
               " (device_ids[0]) but found one of them on device: ", t.device().str(), " (", name, ")");
}

/// Points the replica's tensor `q` at `values`' storage (a copy made for another device).
inline void set_storage(TensorImpl* q, const Tensor& values) {
  q->storage = values.impl()->storage;
  q->offset = values.storage_offset();
  q->strides = values.strides();
}

}  // namespace detail

/// One replica of `module` per device (see above). The module must live on devices[0] and
/// implement clone() (every built-in module does). Throws tinytorch::Error otherwise, or for an
/// empty device list.
TT_DECL std::vector<std::shared_ptr<nn::Module>> replicate(const nn::Module& module, const std::vector<Device>& devices);

}  TT_NAMESPACE_END  // namespace tinytorch::parallel

#if TT_HEADER_ONLY
#include "tinytorch/parallel/replicate.ipp"
#endif

// tinytorch/ops/same_device.hpp — ops::check_same_device: every operand of an op on one device.
//
// Light on purpose (Tensor and the checks only): modules whose forward is inline in a public
// header (nn/attention.hpp's MultiheadAttention) check their operands with it without pulling in
// ops/dispatch.hpp and the CPU backend's Eigen, so that a program built with
// TINYTORCH_SEPARATE_COMPILATION does not parse Eigen (scripts/compile_time.sh).
// Chapter: chapters/10-gpu-kernels.md. Reference: PyTorch's "Expected all tensors to be on the
// same device" (aten/src/ATen/native/TensorIterator, c10/core/Device).
#pragma once

#include <optional>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"
#include "tinytorch/tensor.hpp"

TT_NAMESPACE_BEGIN namespace ops {

/// Throws PyTorch's error unless every defined tensor is on one device:
///   "<op>: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
/// (the first tensor's device, then the first that differs). Undefined tensors are skipped.
/// PyTorch lets a 0-d CPU tensor join a CUDA op as a scalar; tinytorch does not (yet).
template <class... Ts>
void check_same_device(const char* op, const Ts&... tensors) {
  std::optional<Device> first;
  auto one = [&](const Tensor& t) {
    if (!t.defined()) return;
    if (!first) { first = t.device(); return; }
    TT_CHECK(t.device() == *first, op, ": Expected all tensors to be on the same device, but found at least two "
             "devices, ", first->str(), " and ", t.device().str(), "!");
  };
  (one(tensors), ...);
}

}  TT_NAMESPACE_END  // namespace tinytorch::ops

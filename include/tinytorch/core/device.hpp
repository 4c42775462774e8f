// tinytorch/core/device.hpp — where a tensor's storage lives.
//
// Device::cpu() or Device::cuda(i). A translation unit compiled without nvcc still knows
// Device::cuda(i) and throws a tinytorch::Error when a CUDA tensor would be touched.
// Prints as PyTorch does: "cpu", "cuda:0".
// Chapter: chapters/10-gpu-kernels.md.
#pragma once

#include <string>
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN

enum class DeviceType { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = -1;  ///< -1 for the CPU; the GPU ordinal for CUDA

  static Device cpu() { return {DeviceType::CPU, -1}; }
  static Device cuda(int i = 0) { return {DeviceType::CUDA, i}; }
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
};

TT_NAMESPACE_END  // namespace tinytorch

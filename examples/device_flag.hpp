// examples/device_flag.hpp — the examples' --device option: "cpu" (the default), "cuda" (= cuda:0)
// or "cuda:N", parsed into a tinytorch::Device as torch.device("cuda") would be.
//
//   std::string device_text = "cpu";
//   app.add_option("--device", device_text, "cpu, cuda or cuda:N");
//   const tinytorch::Device device = examples::parse_device("example_single", device_text);
// Errors (std::invalid_argument, the program name first): an unknown name or index, a CUDA device
// in a binary built without CUDA ("--device cuda: this binary was built without CUDA (build it
// with nvcc or -DTINYTORCH_CUDA_SIM=1)"), and an index past tinytorch::cuda::device_count().
// describe_device(device) is the line the examples print for a CUDA device ("... is simulated" in
// a TINYTORCH_CUDA_SIM build).
// Chapter: chapters/10-gpu-kernels.md (running the examples on the GPU, or in the simulator).
#pragma once

#include <stdexcept>
#include <string>

#include <tinytorch/tinytorch.hpp>

namespace examples {

inline tinytorch::Device parse_device(const std::string& text) {
  if (text == "cpu") return tinytorch::Device::cpu();
  int index = 0;
  const bool is_cuda = text == "cuda" || text.rfind("cuda:", 0) == 0;
  if (is_cuda && text.size() > 5) {
    const std::string digits = text.substr(5);
    const bool ok = !digits.empty() && digits.size() <= 4 && digits.find_first_not_of("0123456789") == std::string::npos;
    if (!ok) throw std::invalid_argument("--device " + text + ": expected cpu, cuda or cuda:N");
    index = std::stoi(digits);
  }
  if (!is_cuda) throw std::invalid_argument("--device " + text + ": expected cpu, cuda or cuda:N");
  if (!TINYTORCH_WITH_CUDA)
    throw std::invalid_argument("--device " + text +
                                ": this binary was built without CUDA (build it with nvcc or -DTINYTORCH_CUDA_SIM=1)");
  const int count = tinytorch::cuda::device_count();
  if (index >= count)
    throw std::invalid_argument("--device " + text + ": CUDA device index " + std::to_string(index) +
                                " out of range (" + std::to_string(count) + " device(s) here)");
  return tinytorch::Device::cuda(index);
}

/// The line a program prints when it runs on a CUDA device, so that a run in the simulator never
/// passes for a GPU run: "device: cuda:0 is simulated (TINYTORCH_CUDA_SIM: ...)" or "device:
/// cuda:0 (a GPU, nvcc build)". Empty for the CPU.
inline std::string describe_device(const tinytorch::Device& device) {
  if (!device.is_cuda()) return "";
  const std::string name = "cuda:" + std::to_string(device.index);
#if TINYTORCH_CUDA_SIM
  return "device: " + name + " is simulated (TINYTORCH_CUDA_SIM: the kernel simulator of chapter 10 runs every "
         "CUDA thread on the CPU; no GPU is used)";
#else
  return "device: " + name + " (a GPU, nvcc build)";
#endif
}

}  // namespace examples

// tinytorch/parallel/data_parallel.hpp — nn::DataParallel: one process, one replica of the model
// per device, the batch split between them (torch.nn.DataParallel).
//
//   auto dp = std::make_shared<nn::DataParallel>(model, std::vector<Device>{Device::cpu(), Device::cpu()});
//   Tensor y = dp->forward(x);             // x: (B, ...) -> y: (B, ...) on output_device
//   loss_fn(y, target).backward();         // model's .grad = the full-batch gradient
//   optimizer.step();                      // steps the one original model
// forward(x), every call:
//   1. scatter   x -> chunks x_0..x_{k-1} (torch.chunk sizes; k <= n devices), chunk i to device i
//   2. replicate the module to devices[0..k-1]: clones whose parameters lead back to the
//                original's in the autograd graph (BroadcastBackward)
//   3. parallel_apply  y_i = replica_i(x_i), one thread per replica
//   4. gather    y = cat(y_i) on output_device
// Backward (on the caller's thread) slices dy back to the replicas and sums each replica's
// parameter gradients into the original parameters' .grad (not divided by k). With one device
// it simply calls the module (no replicas, as PyTorch); with no devices too (PyTorch without GPUs).
// Where it loses against DistributedDataParallel: the replicas are rebuilt every step, outputs and
// gradients all meet on devices[0], and everything but the replicas' forward runs on one thread
// (bench/bench_dp.cpp measures it; chapters/05-data-parallel.md explains it).
// Devices: CUDA devices as PyTorch, and — tinytorch's documented extension, since PyTorch's
// DataParallel needs GPUs — CPU "devices": {cpu, cpu} runs two replicas in two threads over
// the same memory, with everything but the copies (which a CPU replica does not need).
// Randomness: replica i draws from DataParallel's generator i (seeded at construction from the
// default generator, in order), so Dropout differs between replicas and runs repeat.
// Reference: torch/nn/parallel/data_parallel.py (PyTorch 2.x); notes in
// shared/reference/ddp-semantics.md section 1. Chapter: chapters/05-data-parallel.md.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "parallel_apply.hpp"
#include "replicate.hpp"
#include "scatter_gather.hpp"

namespace tinytorch::nn {

class DataParallel : public Module {
 public:
  /// module: the model (must live on device_ids[0] and implement clone()); device_ids: one per
  /// replica (repeats allowed: {cpu, cpu, cpu} is three CPU replicas); output_device: where the
  /// output is gathered (default device_ids[0]); dim: the batch dimension that is split.
  /// Throws tinytorch::Error for a null module. The module is registered as the child "module",
  /// so parameter names read "module.0.weight" as in PyTorch's DataParallel.
  DataParallel(std::shared_ptr<Module> module, std::vector<Device> device_ids,
               std::optional<Device> output_device = std::nullopt, int64_t dim = 0)
      : module(module), device_ids(std::move(device_ids)), dim(dim) {
    TT_CHECK(module != nullptr, "DataParallel: module is null");
    register_module("module", module);
    this->output_device = output_device ? *output_device : this->device_ids.empty() ? Device::cpu()
                                                                                      : this->device_ids[0];
    const uint64_t seed = default_generator().next_u64();
    for (size_t i = 0; i < this->device_ids.size(); ++i) generators_.push_back(std::make_unique<Generator>(seed + i));
  }

  /// x: (B, ...) split along `dim`; returns the module's output for the whole batch, on
  /// output_device. Throws tinytorch::Error when the module is not on device_ids[0], does not
  /// implement clone(), or a replica throws ("in replica i on device d: ...").
  Tensor forward(const Tensor& x) override {
    if (device_ids.empty()) return module->forward(x);
    parallel::detail::check_module_device(*module, device_ids[0], "DataParallel");
    std::vector<Tensor> inputs = parallel::scatter(x, device_ids, dim);
    if (device_ids.size() == 1) return module->forward(inputs[0]);
    const std::vector<Device> used(device_ids.begin(), device_ids.begin() + inputs.size());
    std::vector<std::shared_ptr<Module>> replicas = parallel::replicate(*module, used);
    std::vector<Generator*> gens;
    for (size_t i = 0; i < used.size(); ++i) gens.push_back(generators_[i].get());
    std::vector<Tensor> outputs = parallel::parallel_apply(replicas, inputs, used, gens);
    return parallel::gather(outputs, output_device, dim);
  }

  std::string name() const override { return "DataParallel"; }

  std::shared_ptr<Module> module;
  std::vector<Device> device_ids;
  Device output_device;
  int64_t dim;

 private:
  std::vector<std::unique_ptr<Generator>> generators_;  // one per device slot
};

}  // namespace tinytorch::nn

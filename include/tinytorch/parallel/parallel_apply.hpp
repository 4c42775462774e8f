// tinytorch/parallel/parallel_apply.hpp — parallel_apply: run replica i on input i, each in its
// own thread, and collect the outputs.
//
//   outputs[i] = replicas[i]->forward(inputs[i])        for i = 0 .. n-1, concurrently
// Each thread runs with the caller's grad mode (GradMode is per thread, as in PyTorch) and, when
// `generators` is given, with generators[i] as its default generator (GeneratorGuard): Dropout in
// replica i draws from stream i, so runs repeat exactly and no two threads share a Generator.
// As PyTorch's, each thread also makes its replica's CUDA device current (a DeviceGuard, CUDA
// builds; every kernel runs on the one compute stream of its device). The forward graphs are built concurrently, but each replica's nodes are its own;
// backward later runs on the caller's thread.
// An exception in a replica is rethrown in the caller, after every thread has finished, as a
// tinytorch::Error "in replica i on device d: <message>" (the lowest failing i), as PyTorch's
// ExceptionWrapper does. A single replica runs on the caller's thread (no thread started). When
// the system cannot start another thread, the started ones are finished and an Error is thrown.
// Reference: torch/nn/parallel/parallel_apply.py. Chapter: chapters/05-data-parallel.md.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <optional>
#include <thread>
#include <vector>

#include "tinytorch/nn/module.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace parallel {

/// outputs[i] = replicas[i]->forward(inputs[i]), one thread per replica (see above).
/// `devices[i]` names replica i's device in error messages; `generators`, if not empty, gives
/// each replica its default generator. Throws tinytorch::Error when the list sizes differ, or
/// with the first failing replica's message.
TT_DECL std::vector<Tensor> parallel_apply(const std::vector<std::shared_ptr<nn::Module>>& replicas,
                                          const std::vector<Tensor>& inputs, const std::vector<Device>& devices,
                                          const std::vector<Generator*>& generators = {});

/// outputs[i] = replica_forward(i) for i = 0 .. devices.size() - 1, one thread per i, set up as above
/// (the caller's grad mode, generators[i], devices[i] current): the general form, for a replica
/// called with several arguments (nn::DataParallel::forward<M>). Errors as above.
TT_DECL std::vector<Tensor> parallel_apply(const std::vector<Device>& devices, const std::vector<Generator*>& generators,
                                          const std::function<Tensor(size_t)>& replica_forward);

}  TT_NAMESPACE_END  // namespace tinytorch::parallel

#if TT_HEADER_ONLY
#include "tinytorch/parallel/parallel_apply.ipp"
#endif

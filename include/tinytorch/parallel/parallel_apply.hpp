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
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <optional>
#include <thread>
#include <vector>

#include "../core/config.hpp"  // before Eigen: EIGEN_NO_CUDA under nvcc

#include <Eigen/Core>

#include "../nn/module.hpp"
#include "../ops/dispatch.hpp"  // backend::dispatch::DeviceGuard

TT_NAMESPACE_BEGIN namespace parallel {

/// outputs[i] = replicas[i]->forward(inputs[i]), one thread per replica (see above).
/// `devices[i]` names replica i's device in error messages; `generators`, if not empty, gives
/// each replica its default generator. Throws tinytorch::Error when the list sizes differ, or
/// with the first failing replica's message.
inline std::vector<Tensor> parallel_apply(const std::vector<std::shared_ptr<nn::Module>>& replicas,
                                          const std::vector<Tensor>& inputs, const std::vector<Device>& devices,
                                          const std::vector<Generator*>& generators = {}) {
  const size_t n = replicas.size();
  TT_CHECK(inputs.size() == n && devices.size() == n && (generators.empty() || generators.size() == n),
           "parallel_apply: expected as many inputs, devices and generators as replicas (", n, "), got ",
           inputs.size(), " inputs, ", devices.size(), " devices, ", generators.size(), " generators");
  // Eigen's documentation: "must be called first when calling Eigen from multiple threads".
  static std::once_flag eigen_init;
  std::call_once(eigen_init, [] { Eigen::initParallel(); });

  std::vector<Tensor> outputs(n);
  std::vector<std::exception_ptr> errors(n);
  const bool grad_mode = GradMode::is_enabled();
  auto run = [&](size_t i) {
    try {
      GradMode::set_enabled(grad_mode);
      GeneratorGuard generator(generators.empty() ? nullptr : generators[i]);
#if TINYTORCH_WITH_CUDA
      // The replica's device is this thread's current CUDA device (PyTorch's parallel_apply sets
      // it too; every dispatch primitive also guards its own launch).
      std::optional<backend::dispatch::DeviceGuard> device;
      if (devices[i].is_cuda()) device.emplace(devices[i]);
#endif
      autograd::ParallelRegion region;  // leaves shared between replicas: see grad_accumulator
      outputs[i] = replicas[i]->forward(inputs[i]);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  if (n == 1) {
    run(0);  // the caller's grad mode already; the guards restore the rest
  } else {
    std::vector<std::thread> threads;
    threads.reserve(n);
    std::string start_error;
    for (size_t i = 0; i < n && start_error.empty(); ++i) {
      try {
        threads.emplace_back(run, i);
      } catch (const std::system_error& e) {  // out of threads: finish the started ones, then fail
        start_error = tinytorch::detail::str_cat("parallel_apply: could not start a thread for replica ", i, " of ",
                                                 n, " (", e.what(), ")");
      }
    }
    for (auto& t : threads) t.join();
    TT_CHECK(start_error.empty(), start_error);
  }
  for (size_t i = 0; i < n; ++i) {
    if (!errors[i]) continue;
    std::string what;
    try {
      std::rethrow_exception(errors[i]);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
      what = "an exception that is not a std::exception";
    }
    throw Error(tinytorch::detail::str_cat("in replica ", i, " on device ", devices[i].str(), ": ", what));
  }
  return outputs;
}

}  TT_NAMESPACE_END  // namespace tinytorch::parallel

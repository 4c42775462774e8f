// tinytorch/parallel/parallel_apply.ipp — the bodies of parallel_apply.hpp that need the library's
// internals: parallel_apply (one thread per replica).
//
// Not a header to include: parallel_apply.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The declarations and their documentation are in parallel_apply.hpp.
// Chapter: chapters/05-data-parallel.md.
#pragma once

#include "tinytorch/parallel/parallel_apply.hpp"
#include "tinytorch/core/config.hpp"  // before Eigen: EIGEN_NO_CUDA under nvcc

#include <Eigen/Core>

#include "tinytorch/amp/autocast_mode.hpp"  // tt::autocast
#include "tinytorch/ops/dispatch.hpp"  // backend::dispatch::DeviceGuard
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace parallel {

TT_DECL std::vector<Tensor> parallel_apply(const std::vector<std::shared_ptr<nn::Module>>& replicas,
                                          const std::vector<Tensor>& inputs, const std::vector<Device>& devices,
                                          const std::vector<Generator*>& generators) {
  const size_t n = replicas.size();
  TT_CHECK(inputs.size() == n && devices.size() == n && (generators.empty() || generators.size() == n),
           "parallel_apply: expected as many inputs, devices and generators as replicas (", n, "), got ",
           inputs.size(), " inputs, ", devices.size(), " devices, ", generators.size(), " generators");
  return parallel_apply(devices, generators, [&](size_t i) { return replicas[i]->forward(inputs[i]); });
}

TT_DECL std::vector<Tensor> parallel_apply(const std::vector<Device>& devices, const std::vector<Generator*>& generators,
                                          const std::function<Tensor(size_t)>& replica_forward) {
  const size_t n = devices.size();
  TT_CHECK(generators.empty() || generators.size() == n, "parallel_apply: expected as many generators as devices (",
           n, "), got ", generators.size());
  // Eigen's documentation: "must be called first when calling Eigen from multiple threads".
  static std::once_flag eigen_init;
  std::call_once(eigen_init, [] { Eigen::initParallel(); });

  std::vector<Tensor> outputs(n);
  std::vector<std::exception_ptr> errors(n);
  const bool grad_mode = GradMode::is_enabled();
  // autocast is per thread: each replica's thread runs under the caller's setting (PyTorch's
  // parallel_apply enters autocast(enabled=torch.is_autocast_enabled()) in every worker)
  const amp::detail::AutocastState& caller = amp::detail::state();
  const bool autocast_on[2] = {caller.enabled[0], caller.enabled[1]};
  const DType autocast_dtype[2] = {caller.dtype[0], caller.dtype[1]};
  auto run = [&](size_t i) {
    try {
      GradMode::set_enabled(grad_mode);
      std::optional<autocast> cpu_autocast, cuda_autocast;
      if (autocast_on[0]) cpu_autocast.emplace("cpu", autocast_dtype[0]);
      if (autocast_on[1]) cuda_autocast.emplace("cuda", autocast_dtype[1]);
      GeneratorGuard generator(generators.empty() ? nullptr : generators[i]);
#if TINYTORCH_WITH_CUDA
      // The replica's device is this thread's current CUDA device (PyTorch's parallel_apply sets
      // it too; every dispatch primitive also guards its own launch).
      std::optional<backend::dispatch::DeviceGuard> device;
      if (devices[i].is_cuda()) device.emplace(devices[i]);
#endif
      autograd::ParallelRegion region;  // leaves shared between replicas: see grad_accumulator
      outputs[i] = replica_forward(i);
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

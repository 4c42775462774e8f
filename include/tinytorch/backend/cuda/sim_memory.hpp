// tinytorch/backend/cuda/sim_memory.hpp — PLACEHOLDER on branch sim-exec (owner: the sim-mem helper).
//
// The simulator's device memory (protected per-device arenas) lives here on branch sim-mem; the lead
// takes that file at merge. The launcher (launch.hpp) only needs the name below: it brackets every
// simulated kernel with a DeviceAccessScope, inside which device memory may be read and written.
// This placeholder does nothing, so launches work before the arenas land.
// Chapter: chapters/10-gpu-kernels.md.
#pragma once

#include "../../core/config.hpp"

#if TINYTORCH_CUDA_SIM
namespace tinytorch::backend::cuda::sim {

/// While alive, host code on this thread may touch device memory (a kernel or a copy is running).
/// Placeholder: no-op until sim-mem's protected arenas land.
struct DeviceAccessScope {
  DeviceAccessScope() = default;
  DeviceAccessScope(const DeviceAccessScope&) = delete;
  DeviceAccessScope& operator=(const DeviceAccessScope&) = delete;
};

}  // namespace tinytorch::backend::cuda::sim
#endif

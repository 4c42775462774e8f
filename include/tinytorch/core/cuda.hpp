// tinytorch/core/cuda.hpp — tinytorch::cuda, the few torch.cuda functions a training script uses.
//
//   is_available(), device_count()                  is there a GPU, how many
//   synchronize(device = -1)                        wait for the GPU's queued kernels
//   empty_cache()                                   give cached free blocks back to the device
//   memory_allocated / max_memory_allocated / memory_reserved / max_memory_reserved(device = 0),
//   memory_stats(device), reset_peak_memory_stats(device = 0)       the caching allocator's counters
//   OutOfMemoryError                                what a full device throws (torch.cuda.OutOfMemoryError)
// The memory functions report the CUDA caching allocator (core/cuda_allocator.hpp), in bytes of size
// classes (a 1-byte tensor holds 512), as PyTorch's do. They are not the CPU counters of
// core/allocator.hpp (tinytorch::memory_allocated(), which counts CPU storage in exact bytes).
// Three builds (core/config.hpp): nvcc (real GPUs), the kernel simulator (TINYTORCH_CUDA_SIM: the
// devices are TINYTORCH_SIM_DEVICES simulated ones, default 4), and a CPU build, where, as in a
// PyTorch built without CUDA, is_available() is false, device_count() 0, the memory functions return 0,
// empty_cache() and reset_peak_memory_stats() do nothing, and synchronize() throws.
// PyTorch takes `device` as an int, torch.device or None (the current device); here an int, and since
// tinytorch has no "current device" (kernels run on their operands' device), -1 means device 0.
// Chapter: chapters/10-gpu-kernels.md. Reference: PyTorch docs, torch.cuda and "CUDA semantics".
#pragma once

#include <cstddef>

#include "tinytorch/core/cuda_runtime.hpp"
#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"
#include "tinytorch/core/cuda_allocator.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace cuda {

/// Thrown when a device runs out of memory (torch.cuda.OutOfMemoryError); a tinytorch::Error.
using OutOfMemoryError = ::tinytorch::backend::cuda::OutOfMemoryError;

/// The number of CUDA devices this program can use (torch.cuda.device_count): the GPUs the CUDA runtime
/// sees (0 without a driver or GPU), the simulated devices in the simulator, 0 in a CPU build.
inline int device_count() {
#if TINYTORCH_WITH_CUDA
  return ::tinytorch::backend::cuda::device_count();
#else
  return 0;
#endif
}

/// True when CUDA tensors can be created: a CUDA (or simulator) build with at least one device
/// (torch.cuda.is_available).
inline bool is_available() { return device_count() > 0; }

namespace detail {
inline int device_or_default(int device) { return device == -1 ? 0 : device; }
}  // namespace detail

/// Waits until every kernel launched on `device` (-1: device 0) has finished; a no-op in the simulator,
/// where each launch runs to completion (torch.cuda.synchronize). Throws tinytorch::Error for an
/// invalid device ("invalid device ordinal") and, in a CPU build, "Torch not compiled with CUDA
/// enabled" as PyTorch does.
inline void synchronize(int device = -1) {
#if TINYTORCH_WITH_CUDA
  ::tinytorch::backend::cuda::synchronize(detail::device_or_default(device));
#else
  (void)device;
  TT_CHECK(false, "tinytorch::cuda::synchronize: Torch not compiled with CUDA enabled (this translation unit "
                  "was compiled without nvcc and without -DTINYTORCH_CUDA_SIM=1)");
#endif
}

/// Gives every cached free block on every device back to the device, so that other programs (or
/// nvidia-smi) see it free; live tensors keep theirs (torch.cuda.empty_cache). A no-op in a CPU build.
inline void empty_cache() {
#if TINYTORCH_WITH_CUDA
  ::tinytorch::detail::cuda_caching_allocator().empty_cache();
#endif
}

/// The caching allocator's statistics of `device` (-1: device 0), in bytes and counts
/// (torch.cuda.memory_stats, a subset). All zero in a CPU build. Throws "CUDA error: invalid device
/// ordinal" for a device outside [0, device_count()).
inline CudaMemoryStats memory_stats(int device = 0) {
#if TINYTORCH_WITH_CUDA
  return ::tinytorch::detail::cuda_caching_allocator().stats(detail::device_or_default(device));
#else
  (void)device;
  return CudaMemoryStats{};
#endif
}

/// Bytes held by live tensors on `device`, in size classes (torch.cuda.memory_allocated). 0 in a CPU build.
inline size_t memory_allocated(int device = 0) { return memory_stats(device).allocated_bytes; }

/// The peak of memory_allocated(device) since the start or the last reset_peak_memory_stats(device)
/// (torch.cuda.max_memory_allocated), in bytes.
inline size_t max_memory_allocated(int device = 0) { return memory_stats(device).max_allocated_bytes; }

/// Bytes the caching allocator holds on `device`: live tensors plus cached free blocks
/// (torch.cuda.memory_reserved). 0 in a CPU build.
inline size_t memory_reserved(int device = 0) { return memory_stats(device).reserved_bytes; }

/// The peak of memory_reserved(device) (torch.cuda.max_memory_reserved), in bytes.
inline size_t max_memory_reserved(int device = 0) { return memory_stats(device).max_reserved_bytes; }

/// Starts new peaks on `device`: max_memory_allocated/max_memory_reserved become the current values
/// (torch.cuda.reset_peak_memory_stats). A no-op in a CPU build (PyTorch without CUDA fails here with
/// an AttributeError, which is no use to a program that runs on both).
inline void reset_peak_memory_stats(int device = 0) {
#if TINYTORCH_WITH_CUDA
  ::tinytorch::detail::cuda_caching_allocator().reset_peak_memory_stats(detail::device_or_default(device));
#else
  (void)device;
#endif
}

}  TT_NAMESPACE_END  // namespace tinytorch::cuda

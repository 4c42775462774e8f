// tinytorch/core/cuda_runtime.hpp — raw device memory and device control, in both CUDA modes.
//
// The few CUDA runtime calls the rest of tinytorch needs, behind one small API so that the same
// code runs under nvcc (the real CUDA runtime) and in the kernel simulator (TINYTORCH_CUDA_SIM,
// backend/cuda/sim.hpp, where device memory is protected host memory: core/cuda_sim_memory.hpp):
//   device_count()                    GPUs visible (simulator: TINYTORCH_SIM_DEVICES, default 4)
//   raw_malloc(device, bytes)         `bytes` of device memory, uninitialised; nullptr for 0 bytes.
//                                     Throws OutOfMemoryError when the device is full
//                                     (cudaErrorMemoryAllocation, "out of memory"; simulator: beyond
//                                     TINYTORCH_SIM_MEMORY_MB per device, default 1024)
//   raw_free(device, ptr)             ptr from raw_malloc(device, ...); nullptr is ignored
//   raw_malloc_count()                successful raw_malloc calls so far (the caching allocator's tests)
//   mem_get_info(device, &free, &total)   bytes free and in total on `device` (cudaMemGetInfo)
//   memcpy_h2d / memcpy_d2h / memcpy_d2d(dst, src, bytes)   synchronous with respect to the host;
//                                     d2d also between two devices
//   synchronize(device)               waits for every kernel launched on `device`
// A bad device ordinal throws tinytorch::Error with CUDA's string "invalid device ordinal"
// (cudaErrorInvalidDevice). Errors throw tinytorch::Error naming the call, file, line and CUDA's
// error string (TT_CUDA_CHECK). raw_malloc and mem_get_info leave the calling thread's current device
// as they found it. This is the raw layer: the caching allocator (core/cuda_allocator.hpp) sits on
// top of it, and nothing else should call raw_malloc in a loop (cudaMalloc/cudaFree synchronise).
// Chapter: chapters/10-gpu-kernels.md. Reference: CUDA Runtime API, "Memory Management".
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"

#if TINYTORCH_WITH_CUDA && !TINYTORCH_CUDA_SIM
#include <cuda_runtime.h>
/// TT_CUDA_CHECK(call): throws tinytorch::Error("<call> failed at <file>:<line>: <CUDA's string>").
#define TT_CUDA_CHECK(call)                                                                   \
  do {                                                                                        \
    const cudaError_t tt_err_ = (call);                                                       \
    TT_CHECK(tt_err_ == cudaSuccess, #call, " failed at ", __FILE__, ":", __LINE__, ": ",     \
             cudaGetErrorString(tt_err_));                                                    \
  } while (0)
#elif TINYTORCH_CUDA_SIM
#include "tinytorch/core/cuda_sim_memory.hpp"
#endif

TT_NAMESPACE_BEGIN namespace backend::cuda {

/// Device memory ran out (PyTorch: torch.OutOfMemoryError, a RuntimeError; here a tinytorch::Error).
/// raw_malloc throws it with CUDA's string "out of memory"; the caching allocator catches it, frees
/// its cache and retries once, then throws it again with PyTorch's "CUDA out of memory. ..." message.
/// Defined in every build so that the allocator's policy can be tested without CUDA.
class OutOfMemoryError : public Error {
 public:
  explicit OutOfMemoryError(const std::string& what) : Error(what) {}
};

namespace detail {
/// Successful raw_malloc calls (both modes): a steady-state training loop must not add to it.
inline std::atomic<size_t>& raw_malloc_counter() {
  static std::atomic<size_t>* c = new std::atomic<size_t>(0);  // never destroyed, as the allocators
  return *c;
}
}  // namespace detail

/// Successful raw_malloc calls since the program started (cudaMalloc calls under nvcc).
inline size_t raw_malloc_count() { return detail::raw_malloc_counter().load(std::memory_order_relaxed); }

#if TINYTORCH_WITH_CUDA && !TINYTORCH_CUDA_SIM

namespace detail {
/// Makes `device` current for the calling thread and restores the previous device on exit
/// (c10::cuda::CUDAGuard, minimal).
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    TT_CUDA_CHECK(cudaGetDevice(&prev_));
    if (device != prev_) TT_CUDA_CHECK(cudaSetDevice(device));
  }
  ~ScopedDevice() { (void)cudaSetDevice(prev_); }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int prev_ = 0;
};
}  // namespace detail

inline int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver / no GPU: not sticky, clear it
    return 0;
  }
  return n;
}
inline void* raw_malloc(int device, size_t bytes) {
  if (bytes == 0) return nullptr;
  detail::ScopedDevice guard(device);
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky: clear it, so the next call does not report it again
    throw OutOfMemoryError(::tinytorch::detail::str_cat("cudaMalloc(", bytes, " bytes) on cuda:", device,
                                                        " failed: ", cudaGetErrorString(err)));
  }
  TT_CUDA_CHECK(err);
  detail::raw_malloc_counter().fetch_add(1, std::memory_order_relaxed);
  return p;
}
inline void raw_free(int device, void* p) {
  if (p == nullptr) return;
  detail::ScopedDevice guard(device);
  const cudaError_t err = cudaFree(p);
  if (err == cudaErrorCudartUnloading) return;  // at exit the runtime may be gone first: nothing to free
  TT_CUDA_CHECK(err);
}
inline void mem_get_info(int device, size_t* free_bytes, size_t* total_bytes) {
  detail::ScopedDevice guard(device);
  TT_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}
inline void memcpy_h2d(void* dst, const void* src, size_t bytes) {
  if (bytes) TT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}
inline void memcpy_d2h(void* dst, const void* src, size_t bytes) {
  if (bytes) TT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}
inline void memcpy_d2d(void* dst, const void* src, size_t bytes) {
  // With unified addressing (every 64-bit CUDA platform) cudaMemcpy finds each pointer's device, so
  // this also copies between two GPUs (staged through the host when they have no peer access).
  if (bytes) TT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}
inline void synchronize(int device) {
  detail::ScopedDevice guard(device);
  TT_CUDA_CHECK(cudaDeviceSynchronize());
}

#elif TINYTORCH_CUDA_SIM

// The simulator: device memory is protected host memory (core/cuda_sim_memory.hpp), kernels run to completion
// inside their launch, so synchronize() has nothing to wait for.

namespace detail {
/// Throws "<call> failed: invalid device ordinal" (cudaErrorInvalidDevice's string) unless
/// 0 <= device < device_count().
inline void check_sim_device(const char* call, int device) {
  const int n = sim::detail::Memory::get().devices();
  TT_CHECK(device >= 0 && device < n, call, " on cuda:", device, " failed: invalid device ordinal (the simulator has ",
           n, " devices; TINYTORCH_SIM_DEVICES)");
}
/// Throws unless [p, p + bytes) lies inside one live device block; returns its device.
inline int check_sim_device_range(const char* call, const char* which, const void* p, size_t bytes) {
  const int d = sim::device_of(p, bytes);
  TT_CHECK(d >= 0, call, " failed: invalid argument (", which, " ", p, " + ", bytes,
           " bytes is not inside one block of simulated device memory)");
  return d;
}
}  // namespace detail

inline int device_count() { return sim::detail::Memory::get().devices(); }
inline void* raw_malloc(int device, size_t bytes) {
  detail::check_sim_device("cudaMalloc", device);
  if (bytes == 0) return nullptr;
  sim::ReplayLock replay_lock;
  void* p = sim::detail::Memory::get().allocate(device, bytes);
  if (p == nullptr) {
    throw OutOfMemoryError(::tinytorch::detail::str_cat(
        "cudaMalloc(", bytes, " bytes) on cuda:", device, " failed: out of memory (simulated device: ",
        sim::detail::Memory::get().used_bytes(device), " of ", sim::device_capacity_bytes(),
        " bytes in use; TINYTORCH_SIM_MEMORY_MB sets the capacity)"));
  }
  detail::raw_malloc_counter().fetch_add(1, std::memory_order_relaxed);
  return p;
}
inline void raw_free(int device, void* p) {
  if (p == nullptr) return;
  detail::check_sim_device("cudaFree", device);
  sim::ReplayLock replay_lock;
  sim::detail::Memory::get().release(device, p);
}
inline void mem_get_info(int device, size_t* free_bytes, size_t* total_bytes) {
  detail::check_sim_device("cudaMemGetInfo", device);
  const size_t total = sim::device_capacity_bytes();
  *total_bytes = total;
  *free_bytes = total - sim::detail::Memory::get().used_bytes(device);
}
inline void memcpy_h2d(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  detail::check_sim_device_range("cudaMemcpy(HostToDevice)", "dst", dst, bytes);
  sim::ReplayLock replay_lock;
  sim::DeviceAccessScope scope;
  std::memcpy(dst, src, bytes);
  sim::detail::Memory::get().mark_written(dst, bytes);  // initcheck
}
inline void memcpy_d2h(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  detail::check_sim_device_range("cudaMemcpy(DeviceToHost)", "src", src, bytes);
  sim::ReplayLock replay_lock;
  sim::DeviceAccessScope scope;
  std::memcpy(dst, src, bytes);
}
inline void memcpy_d2d(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  detail::check_sim_device_range("cudaMemcpy(DeviceToDevice)", "dst", dst, bytes);
  detail::check_sim_device_range("cudaMemcpy(DeviceToDevice)", "src", src, bytes);
  sim::ReplayLock replay_lock;
  sim::DeviceAccessScope scope;
  std::memmove(dst, src, bytes);  // the same block may be both source and destination
  sim::detail::Memory::get().copy_written(dst, src, bytes);  // initcheck
}
inline void synchronize(int device) { detail::check_sim_device("cudaDeviceSynchronize", device); }

#endif

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cuda

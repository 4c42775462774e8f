// tinytorch/backend/cuda/runtime.hpp — raw device memory and device control, in both CUDA modes.
//
// The few CUDA runtime calls the rest of tinytorch needs, behind one small API so that the same
// code runs under nvcc (the real CUDA runtime) and in the kernel simulator (TINYTORCH_CUDA_SIM,
// backend/cuda/sim.hpp, where device memory is host memory):
//   device_count()                    GPUs visible (simulator: TINYTORCH_SIM_DEVICES, default 4)
//   raw_malloc(device, bytes)         `bytes` of device memory, uninitialised; nullptr for 0 bytes
//   raw_free(device, ptr)
//   memcpy_h2d / memcpy_d2h / memcpy_d2d(dst, src, bytes)   synchronous with respect to the host
//   synchronize(device)               waits for every kernel launched on `device`
// Errors throw tinytorch::Error naming the call, file, line and CUDA's error string (TT_CUDA_CHECK).
// This is the raw layer: the caching allocator (core/cuda_allocator.hpp) sits on top of it.
// Chapter: chapters/10-gpu-kernels.md. Reference: CUDA Runtime API, "Memory Management".
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../../core/check.hpp"
#include "../../core/config.hpp"

#if TINYTORCH_WITH_CUDA && !TINYTORCH_CUDA_SIM
#include <cuda_runtime.h>
/// TT_CUDA_CHECK(call): throws tinytorch::Error("<call> failed at <file>:<line>: <CUDA's string>").
#define TT_CUDA_CHECK(call)                                                                   \
  do {                                                                                        \
    const cudaError_t tt_err_ = (call);                                                       \
    TT_CHECK(tt_err_ == cudaSuccess, #call, " failed at ", __FILE__, ":", __LINE__, ": ",     \
             cudaGetErrorString(tt_err_));                                                    \
  } while (0)
#endif

TT_NAMESPACE_BEGIN namespace backend::cuda {

#if TINYTORCH_WITH_CUDA && !TINYTORCH_CUDA_SIM

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
  TT_CUDA_CHECK(cudaSetDevice(device));
  void* p = nullptr;
  TT_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}
inline void raw_free(int device, void* p) {
  if (p == nullptr) return;
  TT_CUDA_CHECK(cudaSetDevice(device));
  TT_CUDA_CHECK(cudaFree(p));
}
inline void memcpy_h2d(void* dst, const void* src, size_t bytes) {
  if (bytes) TT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}
inline void memcpy_d2h(void* dst, const void* src, size_t bytes) {
  if (bytes) TT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}
inline void memcpy_d2d(void* dst, const void* src, size_t bytes) {
  if (bytes) TT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}
inline void synchronize(int device) {
  TT_CUDA_CHECK(cudaSetDevice(device));
  TT_CUDA_CHECK(cudaDeviceSynchronize());
}

#elif TINYTORCH_CUDA_SIM

// Skeleton of the simulator's memory (replaced by protected per-device arenas: host code that
// reads device memory outside a kernel or a copy must fail loudly, as on a GPU).
inline int device_count() {
  const char* env = std::getenv("TINYTORCH_SIM_DEVICES");
  return env ? std::atoi(env) : 4;
}
inline void* raw_malloc(int device, size_t bytes) {
  TT_CHECK(device >= 0 && device < device_count(), "cudaMalloc: invalid device ordinal ", device);
  if (bytes == 0) return nullptr;
  void* p = std::malloc(bytes);
  TT_CHECK(p != nullptr, "CUDA out of memory. Tried to allocate ", bytes, " bytes on cuda:", device);
  return p;
}
inline void raw_free(int /*device*/, void* p) { std::free(p); }
inline void memcpy_h2d(void* dst, const void* src, size_t bytes) { if (bytes) std::memcpy(dst, src, bytes); }
inline void memcpy_d2h(void* dst, const void* src, size_t bytes) { if (bytes) std::memcpy(dst, src, bytes); }
inline void memcpy_d2d(void* dst, const void* src, size_t bytes) { if (bytes) std::memcpy(dst, src, bytes); }
inline void synchronize(int /*device*/) {}  // the simulator runs every launch to completion

#endif

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cuda

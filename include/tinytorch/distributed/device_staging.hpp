// tinytorch/distributed/device_staging.hpp — collectives and DDP buckets on CUDA tensors: the few
// device operations distributed/ needs, and the host staging of the MPI backend.
//
// What it implements:
//   HostStage        the MPI backend moves host memory only. A CUDA tensor is staged through a
//                    host buffer: copy device -> host (runtime's memcpy_d2h), the MPI collective
//                    on the host buffer, copy host -> device (memcpy_h2d). As PyTorch's gloo
//                    backend does for CUDA tensors (ProcessGroupGloo's "CUDA tensors are copied
//                    to pinned host memory, reduced there, copied back"); we do not rely on a
//                    CUDA-aware MPI. A CPU tensor is used in place (no copy).
//   scale_copy       dst[k] = src[k] / N (or src[k] * (1/N) when N is a power of two, which is the
//                    same correctly rounded number): DDP's gradient -> bucket slice. On the CPU a
//                    loop; on CUDA backend::cuda::scalar_kernel (a kernel on the compute stream).
//   zero_fill        dst[k] = 0 (a parameter without gradient): a loop / backend::cuda::fill_kernel.
//   copy_bytes       a contiguous block between two buffers of one device: memcpy / memcpy_d2d.
// No host code here reads device memory outside the runtime's copies: in the simulator build
// (TINYTORCH_CUDA_SIM) device pages are PROT_NONE outside kernels and copies, so a stray read
// segfaults in the tests (tests/mpi/test_mpi_cuda_sim.cpp runs every path here on simulated GPUs).
// In a build without CUDA a CUDA tensor's data cannot be reached: these throw tinytorch::Error
// naming the operation.
//
// Chapter: chapters/06-distributed-data-parallel.md, 07-all-reduce.md, 10-gpu-kernels.md.
// Reference: PyTorch ProcessGroupGloo (CUDA tensors staged through host memory);
//   torch/csrc/distributed/c10d/reducer.cpp mark_variable_ready (copy and divide into the bucket).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "../core/check.hpp"
#include "../core/config.hpp"
#include "../core/device.hpp"
#include "../core/dtype.hpp"
#include "../tensor.hpp"

#if TINYTORCH_WITH_CUDA
#include "../backend/cuda/elementwise.cuh"
#include "../core/cuda_runtime.hpp"
#endif

TT_NAMESPACE_BEGIN namespace distributed::detail {

/// Throws for a CUDA device in a build without CUDA (a CUDA tensor's memory cannot be reached there).
inline void require_cuda_build(const char* op, Device d) {
#if !TINYTORCH_WITH_CUDA
  TT_CHECK(d.is_cpu(), op, ": tensor on ", d.str(),
           " needs the CUDA backend, which this build does not have (compile with nvcc, or "
           "-DTINYTORCH_CUDA_SIM=1 for the simulator)");
#else
  (void)op, (void)d;
#endif
}

/// dst <- bytes of host memory `src`, dst on device d (CPU: memcpy).
inline void copy_from_host(Device d, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (d.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  require_cuda_build("copy_from_host", d);
#if TINYTORCH_WITH_CUDA
  backend::cuda::memcpy_h2d(dst, src, bytes);
#endif
}

/// Host memory dst <- bytes at `src` on device d (CPU: memcpy).
inline void copy_to_host(Device d, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (d.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  require_cuda_build("copy_to_host", d);
#if TINYTORCH_WITH_CUDA
  backend::cuda::memcpy_d2h(dst, src, bytes);
#endif
}

/// dst <- src, both on device d (may be the same block; CPU: memmove, CUDA: memcpy_d2d).
inline void copy_bytes(Device d, void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (d.is_cpu()) {
    std::memmove(dst, src, bytes);
    return;
  }
  require_cuda_build("copy_bytes", d);
#if TINYTORCH_WITH_CUDA
  backend::cuda::memcpy_d2d(dst, src, bytes);
#endif
}

/// dst[k] = 0 for k < n (n elements of dtype on device d).
inline void zero_fill(Device d, void* dst, int64_t n, DType dtype) {
  if (n <= 0) return;
  if (d.is_cpu()) {
    std::memset(dst, 0, static_cast<size_t>(n) * element_size(dtype));
    return;
  }
  require_cuda_build("zero_fill", d);
#if TINYTORCH_WITH_CUDA
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    backend::cuda::fill_kernel(static_cast<T*>(dst), n, T(0));
  });
#endif
}

/// dst[k] = src[k] / w for k < n, both on device d: DDP's gradient -> bucket copy. For a float
/// dtype and w a power of two, src[k] * (1/w) (1/w is exact, so the product is the same correctly
/// rounded number, and a multiply is cheaper than a divide).
inline void scale_copy(Device d, void* dst, const void* src, int64_t n, DType dtype, int w) {
  if (n <= 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = static_cast<const T*>(src);
    T* out = static_cast<T*>(dst);
    const T div = static_cast<T>(w);
    const bool mul = std::is_floating_point_v<T> && (w & (w - 1)) == 0;
    if (d.is_cpu()) {
      if (mul) {
        const T inv = T(1) / div;
        for (int64_t k = 0; k < n; ++k) out[k] = s[k] * inv;
      } else {
        for (int64_t k = 0; k < n; ++k) out[k] = s[k] / div;
      }
      return;
    }
    require_cuda_build("scale_copy", d);
#if TINYTORCH_WITH_CUDA
    if (mul)
      backend::cuda::scalar_kernel(s, T(T(1) / div), out, n, backend::MulOp{});
    else
      backend::cuda::scalar_kernel(s, div, out, n, backend::DivOp{});
#endif
  });
}

/// The host memory a collective of the MPI backend works on, for one contiguous tensor t.
/// CPU tensor: t's own data (no copy). CUDA tensor: a host buffer, filled from the device when
/// `download` (an input), written back to the device by upload() (an output).
class HostStage {
 public:
  HostStage() = default;
  explicit HostStage(const Tensor& t, bool download = true)
      : device_(t.device()), device_ptr_(t.raw_data()),
        bytes_(static_cast<size_t>(t.numel()) * element_size(t.dtype())) {
    if (device_.is_cpu()) return;
    host_.resize(bytes_);
    if (download) copy_to_host(device_, host_.data(), device_ptr_, bytes_);
  }
  /// The buffer MPI reads and writes.
  void* data() { return device_.is_cpu() ? device_ptr_ : static_cast<void*>(host_.data()); }
  /// CUDA: the host buffer -> the tensor's device memory. CPU: nothing.
  void upload() {
    if (!device_.is_cpu()) copy_from_host(device_, device_ptr_, host_.data(), bytes_);
  }
  bool staged() const { return !device_.is_cpu(); }

 private:
  Device device_ = Device::cpu();
  void* device_ptr_ = nullptr;
  size_t bytes_ = 0;
  std::vector<char> host_;
};

}  TT_NAMESPACE_END  // namespace tinytorch::distributed::detail

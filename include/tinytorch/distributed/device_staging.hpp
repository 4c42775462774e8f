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

#include "tinytorch/core/config.hpp"
#include "tinytorch/core/device.hpp"
#include "tinytorch/core/dtype.hpp"
#include "tinytorch/ops/dispatch.hpp"  // backend::dispatch: the one CPU/CUDA fork
#include "tinytorch/tensor.hpp"

TT_NAMESPACE_BEGIN namespace distributed::detail {

/// dst <- bytes of host memory `src`, dst on device d.
inline void copy_from_host(Device d, void* dst, const void* src, size_t bytes) {
  backend::dispatch::copy_bytes(d, dst, Device::cpu(), src, bytes);
}

/// Host memory dst <- bytes at `src` on device d.
inline void copy_to_host(Device d, void* dst, const void* src, size_t bytes) {
  backend::dispatch::copy_bytes(Device::cpu(), dst, d, src, bytes);
}

/// dst <- src, both on device d (nothing to do when they are the same block).
inline void copy_bytes(Device d, void* dst, const void* src, size_t bytes) {
  if (dst != src) backend::dispatch::copy_bytes(d, dst, d, src, bytes);
}

/// dst[k] = 0 for k < n (n elements of dtype on device d).
inline void zero_fill(Device d, void* dst, int64_t n, DType dtype) {
  if (n <= 0) return;
  dispatch_all(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    backend::dispatch::fill_kernel(d, static_cast<T*>(dst), n, static_cast<T>(0.0));
  });
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
    if (std::is_floating_point_v<T> && (w & (w - 1)) == 0)
      backend::dispatch::scalar_kernel(d, s, T(T(1) / div), out, n, backend::MulOp{});
    else
      backend::dispatch::scalar_kernel(d, s, div, out, n, backend::DivOp{});
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

// tests/cuda/cuda_test_util.hpp — device buffers for the CUDA kernel tests (simulator and nvcc).
//
// DeviceArray<T> owns `n` elements of device memory on one device (core/cuda_runtime.hpp) and
// copies to and from std::vector. Kernel tests upload inputs, launch, download and compare with
// the CPU backend (backend/cpu/) on the same inputs. Not a test file itself.
#pragma once

#include <cstddef>
#include <vector>

#include <tinytorch/core/cuda_runtime.hpp>

namespace cuda_test {

template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n, int device = 0)
      : n_(n), device_(device),
        ptr_(static_cast<T*>(tinytorch::backend::cuda::raw_malloc(device, n * sizeof(T)))) {}
  explicit DeviceArray(const std::vector<T>& host, int device = 0) : DeviceArray(host.size(), device) {
    upload(host);
  }
  ~DeviceArray() { tinytorch::backend::cuda::raw_free(device_, ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* data() const { return ptr_; }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& host) {
    tinytorch::backend::cuda::memcpy_h2d(ptr_, host.data(), host.size() * sizeof(T));
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    tinytorch::backend::cuda::memcpy_d2h(host.data(), ptr_, n_ * sizeof(T));
    return host;
  }

 private:
  size_t n_;
  int device_;
  T* ptr_;
};

}  // namespace cuda_test

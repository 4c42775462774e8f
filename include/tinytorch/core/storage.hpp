// tinytorch/core/storage.hpp — the memory a tensor (and all its views) point into.
//
// Storage owns `nbytes` bytes on one device. Tensors hold it through a shared_ptr, so a view
// (transpose, narrow, view, ...) shares the same Storage with a different shape/strides/offset.
// CPU buffers of 4 KiB and more are 64-byte aligned (a cache line; what Eigen's vectorised kernels
// like best); smaller ones come from plain malloc (16-byte aligned), which is much cheaper for the
// many tiny tensors of a small model's step.
// CUDA storage arrives with the CUDA backend; a CPU-only build throws if asked for it.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "check.hpp"
#include "config.hpp"
#include "device.hpp"

namespace tinytorch {

class Storage {
 public:
  /// Allocates `nbytes` on `device` (contents uninitialised). Throws tinytorch::Error for CUDA in a
  /// translation unit not compiled by nvcc.
  Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
    TT_CHECK(device.is_cpu(), "Storage: device ", device.str(),
             " needs the CUDA backend; compile this program with nvcc (TINYTORCH_WITH_CUDA=0 here)");
    if (nbytes >= 4096) data_ = std::aligned_alloc(64, ((nbytes + 63) / 64) * 64);
    else if (nbytes > 0) data_ = std::malloc(nbytes);
    if (nbytes && !data_) throw std::bad_alloc();
  }
  ~Storage() { std::free(data_); }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
};

}  // namespace tinytorch

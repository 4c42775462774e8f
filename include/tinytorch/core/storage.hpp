// tinytorch/core/storage.hpp — the memory a tensor (and all its views) point into.
//
// Storage owns `nbytes` bytes on one device. Tensors hold it through a shared_ptr, so a view
// (transpose, narrow, view, ...) shares the same Storage with a different shape/strides/offset.
// CPU memory comes from the caching allocator (core/allocator.hpp): buffers of 4 KiB and more are
// 64-byte aligned and reused across training steps instead of returned to the system; smaller
// ones come from plain malloc (16-byte aligned), and the smallest (up to kInlineBytes: a scalar, a
// bias, a loss) live inside the Storage object itself, which std::make_shared allocates together
// with its reference counts: one heap allocation per tensor buffer instead of two.
// CUDA storage (Device::cuda(i)) comes from the CUDA caching allocator (core/cuda_allocator.hpp) in
// a translation unit with the CUDA backend (nvcc, or the kernel simulator: TINYTORCH_CUDA_SIM); it is
// never kept inline (device memory is not host memory) and is not counted by memory_allocated()
// (tinytorch::cuda::memory_allocated(i) counts it). A CPU-only build throws if asked for it.
// Storage also carries PyTorch's version counter (`tensor._version`): every in-place write to any
// tensor on this storage (a view, a detach()ed alias, an optimizer step under no_grad) bumps it,
// and autograd's saved tensors compare it with the value they saw in the forward pass
// (autograd/node.hpp, Node::save). All views share one storage, so they share the counter, as
// PyTorch's views and detach() share theirs. Every Storage adds its bytes to memory_allocated()
// (core/allocator.hpp) while it lives. Chapters: chapters/02-autograd.md, 09-gradient-accumulation.md.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "tinytorch/core/allocator.hpp"
#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"
#include "tinytorch/core/device.hpp"
#if TINYTORCH_WITH_CUDA
#include "tinytorch/core/cuda_allocator.hpp"
#endif

TT_NAMESPACE_BEGIN

class Storage {
 public:
  /// Buffers up to this size are kept inside the Storage object (16-byte aligned, as malloc's).
  static constexpr size_t kInlineBytes = 32;

  /// Allocates `nbytes` on `device` (contents uninitialised). Throws tinytorch::Error for CUDA in a
  /// translation unit without the CUDA backend (neither nvcc nor TINYTORCH_CUDA_SIM), "CUDA error:
  /// invalid device ordinal" for a GPU index outside [0, tinytorch::cuda::device_count()), and when
  /// the memory is not there (CUDA: tinytorch::cuda::OutOfMemoryError with PyTorch's message).
  Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
    if (device.is_cuda()) {
      allocate_cuda(nbytes);
      return;
    }
    detail::count_storage_alloc(nbytes);  // memory_allocated() and its limit (core/allocator.hpp)
    try {
      allocate_data(nbytes);
    } catch (...) {
      detail::count_storage_free(nbytes);
      throw;
    }
  }
  ~Storage() {
#if TINYTORCH_WITH_CUDA
    if (device_.is_cuda()) {
      if (data_ != nullptr) detail::cuda_caching_allocator().deallocate(device_.index, data_, nbytes_);
      return;
    }
#endif
    if (data_ != inline_) detail::CpuCachingAllocator::get().deallocate(data_, nbytes_);
    detail::count_storage_free(nbytes_);
  }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  /// Gives the storage `nbytes` bytes in place (PyTorch's UntypedStorage.resize_): the first
  /// min(old, new) bytes are kept, the rest is uninitialised; every tensor viewing this storage
  /// sees the new memory, and the version counter is unchanged (the values are not written).
  /// resize_(0) frees the memory while the views stay alive (a tensor with elements on it then
  /// throws at data_ptr): FullyShardedDataParallel (FULL_SHARD) frees a unit's gathered
  /// parameters this way and fills the same storage again before backward, so that autograd's
  /// saved views of them stay valid. CPU; a CUDA storage only from or to 0 bytes (no copy).
  /// Throws CPU out of memory past the process limit (core/allocator.hpp), the storage unchanged.
  void resize_(size_t nbytes) {
    if (nbytes == nbytes_) return;
    if (device_.is_cuda()) {
      TT_CHECK(nbytes_ == 0 || nbytes == 0, "Storage::resize_: a CUDA storage is resized only to or from 0 bytes (",
               nbytes_, " -> ", nbytes, " asked)");
#if TINYTORCH_WITH_CUDA
      if (nbytes == 0) {
        detail::cuda_caching_allocator().deallocate(device_.index, data_, nbytes_);
        data_ = nullptr;
        nbytes_ = 0;
      } else {
        data_ = detail::cuda_caching_allocator().allocate(device_.index, nbytes);
        nbytes_ = nbytes;
      }
#endif
      return;
    }
    void* const old_data = data_;
    const size_t old_nbytes = nbytes_;
    unsigned char kept_inline[kInlineBytes];
    if (old_data == inline_) std::memcpy(kept_inline, inline_, old_nbytes);  // inline_ may be reused below
    detail::count_storage_alloc(nbytes);
    try {
      data_ = nullptr;
      if (nbytes > 0) allocate_data(nbytes);
    } catch (...) {
      data_ = old_data;
      detail::count_storage_free(nbytes);
      throw;
    }
    const size_t keep = nbytes < old_nbytes ? nbytes : old_nbytes;
    if (keep > 0) std::memcpy(data_, old_data == inline_ ? static_cast<void*>(kept_inline) : old_data, keep);
    if (old_data != nullptr && old_data != inline_) detail::CpuCachingAllocator::get().deallocate(old_data, old_nbytes);
    detail::count_storage_free(old_nbytes);
    nbytes_ = nbytes;
  }

  /// The number of in-place writes so far (PyTorch's version counter; 0 for fresh memory).
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  /// Records one in-place write (PyTorch's VariableVersion::bump). Called by every in-place op.
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void allocate_cuda(size_t nbytes) {
#if TINYTORCH_WITH_CUDA
    // The allocator checks the ordinal ("CUDA error: invalid device ordinal", as PyTorch reports it).
    data_ = detail::cuda_caching_allocator().allocate(device_.index, nbytes);
#else
    (void)nbytes;
    TT_CHECK(false, "Storage: device ", device_.str(),
             " needs the CUDA backend; compile this program with nvcc, or with -DTINYTORCH_CUDA_SIM=1 for the "
             "kernel simulator (TINYTORCH_WITH_CUDA=0 here)");
#endif
  }

  void allocate_data(size_t nbytes) {
    // Inline unless TINYTORCH_NO_MEMORY_CACHING asks for every buffer to come from the system
    // (so that valgrind or AddressSanitizer see each use after free). 0 bytes: nullptr, as before.
    if (nbytes > 0 && nbytes <= kInlineBytes && detail::CpuCachingAllocator::get().caching()) {
      data_ = inline_;
      return;
    }
    try {
      data_ = detail::CpuCachingAllocator::get().allocate(nbytes);
    } catch (const std::bad_alloc&) {
      // PyTorch's wording (c10/core/impl/alloc_cpu.cpp).
      TT_CHECK(false, "DefaultCPUAllocator: not enough memory: you tried to allocate ", nbytes, " bytes.");
    }
  }

  std::atomic<uint32_t> version_{0};
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  alignas(16) unsigned char inline_[kInlineBytes];
};

TT_NAMESPACE_END  // namespace tinytorch

// tinytorch/core/cuda_allocator.hpp — the caching allocator behind every CUDA tensor's Storage.
// cudaMalloc and cudaFree are slow and synchronise the GPU, so, as PyTorch's CUDACachingAllocator
// does, a freed block is kept for the next tensor of its size class: after the first step a
// training loop makes no cudaMalloc/cudaFree calls. A minimal version (cub's
// CachingDeviceAllocator, bins per device, is the nearer model):
//   * per device, free lists keyed by size class, a lock per device (DataParallel threads on
//     different GPUs do not wait for each other); the CPU allocator's classes (core/allocator.hpp:
//     4, 5, 6, 7 x 2^k, at most 25% waste) from PyTorch's kMinBlockSize = 512 bytes up;
//   * no splitting or merging, no pools, no streams: all tensor work on a device runs on one
//     stream (the legacy default stream), so reuse is ordered by it;
//   * when raw_malloc fails (cudaErrorMemoryAllocation) the device's cache is released and the
//     allocation retried once, then OutOfMemoryError with PyTorch's message ("CUDA out of memory.
//     Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 1.00 GiB of which 4.00 MiB is
//     free. ... allocated by tinytorch ..."; PyTorch says "by PyTorch");
//   * statistics per device in bytes of size classes: allocated, reserved (allocated + cached),
//     their peaks, and counts of allocations, frees, retries and OOMs (torch.cuda.memory_stats);
//     empty_cache() gives every cached block back (torch.cuda.empty_cache);
//   * TINYTORCH_NO_MEMORY_CACHING=1 frees every block at once and asks for exact sizes
//     (PYTORCH_NO_CUDA_MEMORY_CACHING=1), for memory checkers; the simulator's memcheck and
//     initcheck imply it;
//   * never destroyed (tensors in statics may be freed after main() returns); reused blocks are
//     not cleared.
// The policy is a template over its raw allocator (device_count, raw_malloc, raw_free,
// mem_get_info): core/cuda_runtime.hpp's (cudaMalloc, or the simulator's protected pages), or
// tests/test_cuda_allocator.cpp's fake in a plain CPU build.
// Chapter: chapters/10-gpu-kernels.md. Reference: PyTorch's c10/cuda/CUDACachingAllocator.cpp;
// PyTorch docs, "CUDA semantics: Memory management".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "tinytorch/core/allocator.hpp"  // detail::format_size
#include "tinytorch/core/cuda_runtime.hpp"
#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN

/// One device's caching-allocator statistics, in bytes of size classes (torch.cuda.memory_stats's
/// "allocated_bytes.all.current" and friends).
struct CudaMemoryStats {
  size_t allocated_bytes = 0;      ///< held by live tensors (torch.cuda.memory_allocated)
  size_t max_allocated_bytes = 0;  ///< peak of allocated_bytes (torch.cuda.max_memory_allocated)
  size_t reserved_bytes = 0;       ///< taken from the device: allocated + cached (torch.cuda.memory_reserved)
  size_t max_reserved_bytes = 0;   ///< peak of reserved_bytes (torch.cuda.max_memory_reserved)
  size_t num_device_alloc = 0;     ///< raw allocations (cudaMalloc calls)
  size_t num_device_free = 0;      ///< raw frees (cudaFree calls)
  size_t num_alloc_retries = 0;    ///< raw allocations that failed and were retried after freeing the cache
  size_t num_ooms = 0;             ///< OutOfMemoryErrors thrown
};

namespace detail {

// format_size (PyTorch's "20.00 MiB") is in allocator.hpp, shared with the CPU memory limit.

/// True unless TINYTORCH_NO_MEMORY_CACHING is 1, true, yes or on (as core/allocator.hpp reads it), or
/// the kernel simulator's memcheck or initcheck is on (TINYTORCH_SIM_CHECK: every tensor its own block,
/// fresh).
inline bool memory_caching_from_env() {
#if TINYTORCH_CUDA_SIM
  const auto& checks = backend::cuda::sim::detail::checks();
  if (checks.memcheck || checks.initcheck) return false;  // a reused block would hide stale values
#endif
  const char* e = std::getenv("TINYTORCH_NO_MEMORY_CACHING");
  const std::string v = e == nullptr ? "" : e;
  return !(v == "1" || v == "true" || v == "yes" || v == "on");
}

template <class Raw>
class CachingDeviceAllocator {
 public:
  /// PyTorch's kMinBlockSize: every block is at least this large (and a multiple of 128 bytes).
  static constexpr size_t kMinBlockSize = 512;
  /// Larger requests are not rounded (they could only fail anyway).
  static constexpr size_t kMaxRoundedBytes = size_t{1} << 62;

  /// Size class of a request of n bytes: 512 for n <= 512, else the smallest of 4, 5, 6, 7 x 2^k
  /// that holds n (under 25% waste; the same classes as the CPU allocator's from 4 KiB up).
  static size_t round_size(size_t n) {
    if (n <= kMinBlockSize) return kMinBlockSize;
    if (n > kMaxRoundedBytes) return n;
    size_t p = kMinBlockSize;  // 4 x 2^7
    while (p <= n / 2) p *= 2;  // p <= n < 2p, p = 4 x 2^k
    const size_t step = p / 4;
    return ((n + step - 1) / step) * step;
  }

  /// `caching` false: every block goes back to the device when freed (TINYTORCH_NO_MEMORY_CACHING).
  explicit CachingDeviceAllocator(Raw raw = Raw(), bool caching = memory_caching_from_env())
      : raw_(std::move(raw)), caching_(caching) {
    const int n = raw_.device_count();
    for (int d = 0; d < n; ++d) devices_.push_back(std::make_unique<DeviceState>());
  }
  /// Gives the cached blocks back (the process-wide allocator is never destroyed; test instances are).
  ~CachingDeviceAllocator() { empty_cache(); }
  CachingDeviceAllocator(const CachingDeviceAllocator&) = delete;
  CachingDeviceAllocator& operator=(const CachingDeviceAllocator&) = delete;

  /// A block of at least `nbytes` on `device` (uninitialised); nullptr for 0 bytes. Throws
  /// tinytorch::Error "CUDA error: invalid device ordinal" for a device outside [0, device_count()),
  /// and OutOfMemoryError (PyTorch's message) when the device has no room even after its cache is
  /// released.
  void* allocate(int device, size_t nbytes) {
    DeviceState& d = state(device, "allocate");
    if (nbytes == 0) return nullptr;
    const size_t size = round_size(nbytes);
    std::lock_guard<std::mutex> lock(d.mu);
    if (caching_) {
      auto it = d.free_lists.find(size);
      if (it != d.free_lists.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        d.cached_bytes -= size;
        count_alloc(d, size);
        return p;
      }
    }
    void* p = nullptr;
    // Without caching a block is never reused, so it is asked for at its exact size: a memory checker
    // (the simulator's memcheck, compute-sanitizer) then sees the tensor's own end. The statistics
    // still count size classes.
    const size_t raw_size = caching_ ? size : nbytes;
    try {
      p = raw_.raw_malloc(device, raw_size);
    } catch (const backend::cuda::OutOfMemoryError&) {
      ++d.stats.num_alloc_retries;
      release_cached(device, d);
      try {
        p = raw_.raw_malloc(device, raw_size);
      } catch (const backend::cuda::OutOfMemoryError&) {
        ++d.stats.num_ooms;
        throw backend::cuda::OutOfMemoryError(oom_message(device, d, size));
      }
    }
    ++d.stats.num_device_alloc;
    d.stats.reserved_bytes += size;
    if (d.stats.reserved_bytes > d.stats.max_reserved_bytes) d.stats.max_reserved_bytes = d.stats.reserved_bytes;
    count_alloc(d, size);
    return p;
  }

  /// Returns a block from allocate(device, nbytes) (the same device and nbytes).
  void deallocate(int device, void* p, size_t nbytes) {
    if (p == nullptr) return;
    DeviceState& d = state(device, "deallocate");
    const size_t size = round_size(nbytes);
    std::lock_guard<std::mutex> lock(d.mu);
    d.stats.allocated_bytes -= size;
    if (caching_) {
      d.free_lists[size].push_back(p);
      d.cached_bytes += size;
      return;
    }
    raw_.raw_free(device, p);
    ++d.stats.num_device_free;
    d.stats.reserved_bytes -= size;
  }

  /// Gives every cached (free) block of every device back to the device (torch.cuda.empty_cache).
  void empty_cache() {
    for (size_t i = 0; i < devices_.size(); ++i) {
      std::lock_guard<std::mutex> lock(devices_[i]->mu);
      release_cached(static_cast<int>(i), *devices_[i]);
    }
  }

  /// Statistics of `device` (throws for an invalid ordinal).
  CudaMemoryStats stats(int device) {
    DeviceState& d = state(device, "memory_stats");
    std::lock_guard<std::mutex> lock(d.mu);
    return d.stats;
  }

  /// Bytes of free blocks `device` keeps for reuse (reserved - allocated).
  size_t cached_bytes(int device) {
    DeviceState& d = state(device, "cached_bytes");
    std::lock_guard<std::mutex> lock(d.mu);
    return d.cached_bytes;
  }

  /// Starts new peaks on `device`: max_allocated = allocated, max_reserved = reserved
  /// (torch.cuda.reset_peak_memory_stats).
  void reset_peak_memory_stats(int device) {
    DeviceState& d = state(device, "reset_peak_memory_stats");
    std::lock_guard<std::mutex> lock(d.mu);
    d.stats.max_allocated_bytes = d.stats.allocated_bytes;
    d.stats.max_reserved_bytes = d.stats.reserved_bytes;
  }

  int device_count() const { return static_cast<int>(devices_.size()); }
  bool caching() const { return caching_; }
  /// The raw allocator (tests inspect their fake through it).
  Raw& raw() { return raw_; }

 private:
  struct DeviceState {
    std::mutex mu;
    std::unordered_map<size_t, std::vector<void*>> free_lists;  // size class -> free blocks
    size_t cached_bytes = 0;
    CudaMemoryStats stats;
  };

  DeviceState& state(int device, const char* what) {
    TT_CHECK(device >= 0 && device < device_count(), "CUDA error: invalid device ordinal (CUDA caching allocator ",
             what, " on cuda:", device, "; this program sees ", device_count(), " CUDA devices)");
    return *devices_[static_cast<size_t>(device)];
  }

  static void count_alloc(DeviceState& d, size_t size) {
    d.stats.allocated_bytes += size;
    if (d.stats.allocated_bytes > d.stats.max_allocated_bytes) d.stats.max_allocated_bytes = d.stats.allocated_bytes;
  }

  // Called with d.mu held.
  void release_cached(int device, DeviceState& d) {
    for (auto& entry : d.free_lists) {
      for (void* p : entry.second) {
        raw_.raw_free(device, p);
        ++d.stats.num_device_free;
        d.stats.reserved_bytes -= entry.first;
      }
    }
    d.free_lists.clear();
    d.cached_bytes = 0;
  }

  // PyTorch's message (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc), without
  // the parts about other processes, memory fractions, private pools and expandable segments, which
  // tinytorch does not have. Called with d.mu held.
  std::string oom_message(int device, const DeviceState& d, size_t alloc_size) {
    size_t free_bytes = 0, total_bytes = 0;
    raw_.mem_get_info(device, &free_bytes, &total_bytes);
    return ::tinytorch::detail::str_cat(
        "CUDA out of memory. Tried to allocate ", format_size(alloc_size), ". GPU ", device,
        " has a total capacity of ", format_size(total_bytes), " of which ", format_size(free_bytes),
        " is free. Of the allocated memory ", format_size(d.stats.allocated_bytes),
        " is allocated by tinytorch, and ", format_size(d.stats.reserved_bytes - d.stats.allocated_bytes),
        " is reserved by tinytorch but unallocated.");
  }

  Raw raw_;
  bool caching_;
  std::vector<std::unique_ptr<DeviceState>> devices_;
};

#if TINYTORCH_WITH_CUDA
/// The raw layer of the real allocator: core/cuda_runtime.hpp (nvcc: cudaMalloc/cudaFree;
/// simulator: protected host pages).
struct RuntimeRawAllocator {
  int device_count() { return backend::cuda::device_count(); }
  void* raw_malloc(int device, size_t bytes) { return backend::cuda::raw_malloc(device, bytes); }
  void raw_free(int device, void* p) { backend::cuda::raw_free(device, p); }
  void mem_get_info(int device, size_t* free_bytes, size_t* total_bytes) {
    backend::cuda::mem_get_info(device, free_bytes, total_bytes);
  }
};

using CudaCachingAllocator = CachingDeviceAllocator<RuntimeRawAllocator>;

/// The process-wide CUDA caching allocator (all devices). Never destroyed, so tensors that outlive
/// main() (statics) can still free into it. Created at the first use: the device count is read then.
inline CudaCachingAllocator& cuda_caching_allocator() {
  static CudaCachingAllocator* a = new CudaCachingAllocator();
  return *a;
}
#endif

}  // namespace detail

TT_NAMESPACE_END  // namespace tinytorch

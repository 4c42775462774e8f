// tinytorch/core/allocator.hpp — the CPU caching allocator behind every tensor's Storage.
// Why cache. A training step allocates the same buffers every time (activations, gradients,
// temporaries) and frees them again. glibc hands large blocks (from 128 KiB up, and with its
// dynamic threshold often smaller ones too) back to the kernel on free; the next step's
// allocation then page-faults every 4 KiB page in again and the kernel zeroes it. For the
// 784-256-128-10 MLP at batch 256 that is ~190 page faults per step, ~10% of the step time, and
// in a multi-threaded process each unmap costs a TLB shoot-down on the other cores. PyTorch's CUDA
// caching allocator exists for the same reason; its CPU allocator does not cache.
// How. Blocks of at least kMinCachedBytes are rounded up to a size class — four classes per
// power of two (4, 5, 6, 7 x 2^k bytes), so at most 25% is wasted — and a freed block goes onto
// its class's free list instead of back to the system. The next allocation of that class pops
// it: no system call, no page fault, and the memory is likely still in cache. Smaller blocks go
// straight to malloc (its per-thread caches are already fast for them). At most
// kMaxCachedBytes of free blocks are kept; beyond that, free() really frees. All blocks are
// 64-byte aligned (a cache line; what Eigen's vectorised kernels like best); smaller ones come
// from malloc (16-byte aligned). Requests over 1 TiB are not cached (nor likely to succeed).
// Contents of a reused block are not cleared (as malloc's are not): Storage is uninitialised.
// Thread-safe (one mutex; uncontended it costs ~20 ns per call).
// Set TINYTORCH_NO_MEMORY_CACHING=1 (or true, yes, on) to allocate and free every block
// directly (like PyTorch's PYTORCH_NO_CUDA_MEMORY_CACHING=1): tools such as valgrind or
// AddressSanitizer then see every use after free. empty_cache() returns all cached blocks to the
// system (torch.cuda.empty_cache).
// memory_allocated() / max_memory_allocated() / reset_peak_memory_stats() count the bytes of live
// tensor storage and their peak (torch.cuda.memory_allocated and friends; chapter 09 measures
// activation memory with them).
// A memory limit for the process (TINYTORCH_MAX_MEMORY_MB, or set_per_process_memory_limit): a new
// CPU storage that would take memory_allocated() past it throws an out-of-memory tinytorch::Error
// worded as PyTorch's CUDA one, so that a lab can show a model that does not fit one rank under
// DDP and fits under ZeRO (chapter 13).
// Chapter: chapters/01-training-loop.md ("How fast is it?"), chapters/09-gradient-accumulation.md.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <sstream>
#include <vector>
#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN

/// What the CPU caching allocator holds, in bytes (sizes after rounding to a size class).
struct CpuMemoryStats {
  size_t allocated_bytes = 0;  ///< in use by live Storage (blocks >= kMinCachedBytes only)
  size_t cached_bytes = 0;     ///< freed blocks kept for reuse (torch.cuda.memory_reserved - allocated)
  size_t hits = 0;             ///< allocations served from the cache
  size_t misses = 0;           ///< allocations that went to the system
};

namespace detail {

class CpuCachingAllocator {
 public:
  static constexpr size_t kMinCachedBytes = 4096;
  static constexpr size_t kMaxCachedBytes = size_t{1} << 30;  // 1 GiB of free blocks at most
  static constexpr size_t kMaxBlockBytes = size_t{1} << 40;  // larger requests are not cached
  static constexpr size_t kAlignment = 64;

  /// The process-wide allocator. Never destroyed, so tensors that outlive main() (statics) can
  /// still free into it.
  static CpuCachingAllocator& get() {
    static CpuCachingAllocator* a = new CpuCachingAllocator();
    return *a;
  }

  /// Size class of a request of n >= kMinCachedBytes bytes: the smallest of 4, 5, 6, 7 x 2^k
  /// that holds n (so the waste is under 25%).
  static size_t round_size(size_t n) {
    size_t p = kMinCachedBytes;  // 4 x 2^10
    while (p <= n / 2) p *= 2;   // p <= n < 2p, p = 4 x 2^k
    const size_t step = p / 4;
    return ((n + step - 1) / step) * step;
  }

  /// A block of at least n bytes, 64-byte aligned (16 below kMinCachedBytes); nullptr for
  /// n == 0. Throws std::bad_alloc when the system has no memory for it.
  void* allocate(size_t n) {
    if (n == 0) return nullptr;
    if (n < kMinCachedBytes) return small_alloc(n);
    if (!caching_ || n > kMaxBlockBytes) return system_alloc(n);
    const size_t size = round_size(n);
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::vector<void*>& list = free_[slot(size)];
      if (!list.empty()) {
        void* p = list.back();
        list.pop_back();
        stats_.cached_bytes -= size;
        stats_.allocated_bytes += size;
        ++stats_.hits;
        return p;
      }
    }
    void* p = system_alloc(size);  // throws std::bad_alloc: nothing counted
    std::lock_guard<std::mutex> lock(mu_);
    stats_.allocated_bytes += size;
    ++stats_.misses;
    return p;
  }

  /// Returns a block from allocate(n) (the same n).
  void deallocate(void* p, size_t n) {
    if (p == nullptr) return;
    if (n < kMinCachedBytes || !caching_ || n > kMaxBlockBytes) return std::free(p);
    const size_t size = round_size(n);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.allocated_bytes -= size;
      if (stats_.cached_bytes + size <= kMaxCachedBytes) {
        free_[slot(size)].push_back(p);
        stats_.cached_bytes += size;
        return;
      }
    }
    std::free(p);
  }

  /// Frees every cached block.
  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& list : free_) {
      for (void* p : list) std::free(p);
      list.clear();
    }
    stats_.cached_bytes = 0;
  }

  /// False under TINYTORCH_NO_MEMORY_CACHING: every block then comes from the system and goes back.
  bool caching() const { return caching_; }

  CpuMemoryStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  CpuCachingAllocator() {
    const char* e = std::getenv("TINYTORCH_NO_MEMORY_CACHING");
    const std::string v = e == nullptr ? "" : e;
    caching_ = !(v == "1" || v == "true" || v == "yes" || v == "on");
  }

  static size_t round_up(size_t n, size_t a) { return ((n + a - 1) / a) * a; }

  /// Below kMinCachedBytes: plain malloc (16-byte aligned), much cheaper than aligned_alloc for
  /// the many tiny tensors of a small model's step.
  static void* small_alloc(size_t n) {
    void* p = std::malloc(n);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }

  static void* system_alloc(size_t n) {
    if (n > SIZE_MAX - kAlignment) throw std::bad_alloc();  // round_up would wrap around
    void* p = std::aligned_alloc(kAlignment, round_up(n, kAlignment));
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }

  /// Index of a size class: 4 per power of two from 4 KiB.
  static size_t slot(size_t size) {
    size_t p = kMinCachedBytes, k = 0;
    while (p <= size / 2) p *= 2, ++k;
    return 4 * k + (size / (p / 4) - 4);
  }

  bool caching_ = true;
  std::mutex mu_;
  std::vector<void*> free_[4 * 64];
  CpuMemoryStats stats_;
};

}  // namespace detail

/// Statistics of the CPU caching allocator (core/allocator.hpp).
inline CpuMemoryStats cpu_memory_stats() { return detail::CpuCachingAllocator::get().stats(); }

/// Returns every cached free CPU block to the system (PyTorch: torch.cuda.empty_cache()).
inline void empty_cache() { detail::CpuCachingAllocator::get().empty_cache(); }

// ---- Live tensor memory and its peak (chapter 09) ------------------------------------------
// Every Storage (core/storage.hpp) adds its byte count here when it is created and subtracts it
// when it dies, whatever the size and whether the block is cached, inline or from malloc: the
// count is the sum of the `nbytes` of all live tensor storages (views share one). PyTorch's
// torch.cuda.memory_allocated counts the caching allocator's blocks instead, rounded up to 512
// bytes; we count the exact bytes so that a chapter can derive them by hand (B x H x 4 for one
// float32 activation). Memory outside tensors (Eigen's scratch, the graph's nodes) is not counted.

namespace detail {
/// A byte count as PyTorch's allocator prints it (c10 format_size): "512 bytes", "1.50 KiB",
/// "20.00 MiB", "1.00 GiB" (two decimals; each unit up to and including 1024 of it).
inline std::string format_size(uint64_t size) {
  std::ostringstream os;
  os.precision(2);
  os << std::fixed;
  if (size <= 1024) {
    os << size << " bytes";
  } else if (size <= 1048576) {
    os << static_cast<double>(size) / 1024.0 << " KiB";
  } else if (size <= 1073741824ULL) {
    os << static_cast<double>(size) / 1048576.0 << " MiB";
  } else {
    os << static_cast<double>(size) / 1073741824.0 << " GiB";
  }
  return os.str();
}

/// TINYTORCH_MAX_MEMORY_MB as bytes (MiB: 2^20 bytes each; a decimal such as 0.5 or 1e3 is
/// allowed), 0 when unset or empty. Throws for anything else: text that is not a plain decimal
/// number (spaces, hex, inf, nan), a limit under one byte, or one of 10^12 MiB and more.
inline size_t memory_limit_from_env() {
  const char* v = std::getenv("TINYTORCH_MAX_MEMORY_MB");
  if (v == nullptr || *v == '\0') return 0;
  const std::string text(v);
  char* end = nullptr;
  const double mb = std::strtod(v, &end);
  const bool decimal = text.find_first_not_of("0123456789.eE+-") == std::string::npos;
  TT_CHECK(decimal && end != v && *end == '\0' && mb * 1048576.0 >= 1.0 && mb < 1e12, "TINYTORCH_MAX_MEMORY_MB='",
           text, "' is not a number of MiB in [2^-20, 10^12)");
  return static_cast<size_t>(mb * 1048576.0);
}

struct MemoryCounters {
  std::atomic<size_t> allocated{0};
  std::atomic<size_t> peak{0};
  std::atomic<size_t> limit{memory_limit_from_env()};  ///< 0: none
  std::atomic<bool> limit_from_env{limit.load() != 0};
};
/// Process-wide counters, never destroyed (as the allocator above): a storage freed by a static
/// destructor after main() returns may still count.
inline MemoryCounters& memory_counters() {
  static MemoryCounters* c = new MemoryCounters();
  return *c;
}
/// Called by Storage's constructor before it allocates; throws, counting nothing, when the
/// process's memory limit would be passed.
inline void count_storage_alloc(size_t nbytes) {
  MemoryCounters& c = memory_counters();
  const size_t now = c.allocated.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
  const size_t limit = c.limit.load(std::memory_order_relaxed);
  if (limit != 0 && now > limit) {
    const size_t before = c.allocated.fetch_sub(nbytes, std::memory_order_relaxed) - nbytes;
    TT_CHECK(false, "CPU out of memory. Tried to allocate ", format_size(nbytes), ". The process has a limit of ",
             format_size(limit), c.limit_from_env ? " (TINYTORCH_MAX_MEMORY_MB)" : "", " of which ",
             format_size(limit > before ? limit - before : 0), " is free. Of the allocated memory ",
             format_size(before), " is allocated by tinytorch.");
  }
  size_t peak = c.peak.load(std::memory_order_relaxed);
  while (now > peak && !c.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
/// Called by Storage's destructor.
inline void count_storage_free(size_t nbytes) {
  memory_counters().allocated.fetch_sub(nbytes, std::memory_order_relaxed);
}
}  // namespace detail

/// Bytes held by live CPU tensor storage now (PyTorch: torch.cuda.memory_allocated(), which
/// counts 512-byte-rounded blocks; here the exact nbytes of each storage).
inline size_t memory_allocated() { return detail::memory_counters().allocated.load(std::memory_order_relaxed); }

/// The highest memory_allocated() since the program started or since the last
/// reset_peak_memory_stats() (PyTorch: torch.cuda.max_memory_allocated()).
inline size_t max_memory_allocated() { return detail::memory_counters().peak.load(std::memory_order_relaxed); }

/// Limits memory_allocated() to `bytes` (0: no limit) for the rest of the process; replaces
/// TINYTORCH_MAX_MEMORY_MB. A storage that would pass it throws "CPU out of memory. Tried to allocate
/// 2.00 MiB. The process has a limit of 8.00 MiB of which 1.50 MiB is free. Of the allocated memory
/// 6.50 MiB is allocated by tinytorch." (the wording of PyTorch's CUDA out-of-memory error; PyTorch's
/// nearest knob is torch.cuda.set_per_process_memory_fraction). CPU tensors only.
inline void set_per_process_memory_limit(size_t bytes) {
  detail::MemoryCounters& c = detail::memory_counters();
  c.limit.store(bytes, std::memory_order_relaxed);
  c.limit_from_env = false;
}

/// The limit in bytes (0: none).
inline size_t per_process_memory_limit() { return detail::memory_counters().limit.load(std::memory_order_relaxed); }

/// Starts a new peak: max_memory_allocated() becomes memory_allocated() (PyTorch:
/// torch.cuda.reset_peak_memory_stats()).
inline void reset_peak_memory_stats() {
  detail::MemoryCounters& c = detail::memory_counters();
  c.peak.store(c.allocated.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

TT_NAMESPACE_END  // namespace tinytorch

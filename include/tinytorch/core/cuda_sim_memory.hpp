// tinytorch/core/cuda_sim_memory.hpp — the kernel simulator's device memory: protected host pages.
//
// In the simulator (TINYTORCH_CUDA_SIM, backend/cuda/sim.hpp) a "GPU" is host memory. On a real GPU
// host code cannot dereference a device pointer: it segfaults. So that the simulator catches the same
// bug (a host loop reading `t.data_ptr<float>()` of a CUDA tensor), its device memory is mapped
// PROT_NONE except while a kernel or a copy runs:
//   * each raw allocation (core/cuda_runtime.hpp raw_malloc) is its own anonymous mmap region,
//     rounded up to whole pages and recorded in a registry (one mutex) with its simulated device;
//   * a DeviceAccessScope (RAII) makes every region PROT_READ|PROT_WRITE while at least one scope is
//     open anywhere in the process (a counter under the mutex, so that DataParallel threads may launch
//     concurrently), and PROT_NONE again when the last one closes. The launcher (launch.hpp) opens one
//     around every simulated kernel launch; memcpy_h2d/d2h/d2d open one around the copy.
//   * a host access to device memory outside any scope therefore gets SIGSEGV, as on a GPU. Nothing
//     catches that signal: the program dies, and `gdb` (or the core dump) shows the offending host
//     line. Protection is process-wide, not per thread: while thread A runs a kernel, thread B's host
//     read of device memory goes unnoticed (a false negative, never a false alarm).
// Environment (read once, at the first use; a malformed value throws tinytorch::Error):
//   TINYTORCH_SIM_DEVICES      number of simulated GPUs, 0..64 (default 4)
//   TINYTORCH_SIM_MEMORY_MB    capacity of each simulated GPU in MiB, 1..1048576 (default 1024); pages
//                              count against it, so a 512-byte block uses 4 KiB of it. Beyond it the
//                              raw allocation fails as cudaMalloc does (cudaErrorMemoryAllocation).
//   TINYTORCH_SIM_UNPROTECTED  1/true/yes/on: regions stay readable and writable (debugging: print
//                              device data from gdb; a host read of device memory then goes unnoticed).
// Regions are mapped MAP_NORESERVE: untouched pages cost nothing, so the capacity is a limit, not a
// reservation. Memory is never shared between simulated devices; copies between them are memcpy.
// Chapter: chapters/10-gpu-kernels.md. Reference: numba's CUDA simulator (NUMBA_ENABLE_CUDASIM), which
// likewise runs kernels on the host; mmap(2) / mprotect(2).
#pragma once

#include "config.hpp"

#if TINYTORCH_CUDA_SIM

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "check.hpp"

TT_NAMESPACE_BEGIN namespace backend::cuda::sim {

namespace detail {

/// The integer value of environment variable `name` (`fallback` when unset), checked to lie in
/// [lo, hi]. Throws tinytorch::Error naming the variable and the bad value otherwise.
inline long env_int(const char* name, long fallback, long lo, long hi) {
  const char* e = std::getenv(name);
  if (e == nullptr || *e == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(e, &end, 10);
  TT_CHECK(errno == 0 && end != e && *end == '\0' && v >= lo && v <= hi, name, " must be an integer in [", lo,
           ", ", hi, "], got \"", e, "\"");
  return v;
}

/// True when environment variable `name` is 1, true, yes or on.
inline bool env_flag(const char* name) {
  const char* e = std::getenv(name);
  const std::string v = e == nullptr ? "" : e;
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

/// The process-wide registry of simulated device memory. Never destroyed (as the allocators), so
/// storage freed by a static destructor after main() returns still finds it.
class Memory {
 public:
  static Memory& get() {
    static Memory* m = new Memory();  // a bad environment variable throws here, and again next time
    return *m;
  }

  int devices() const { return devices_; }
  size_t capacity_bytes() const { return capacity_; }
  bool protected_mode() const { return !unprotected_; }

  /// `bytes` (> 0) of fresh zeroed memory on `device` (valid), or nullptr when the device's capacity
  /// (or the host) has no room for it.
  void* allocate(int device, size_t bytes) {
    const size_t page = page_size();
    if (bytes > SIZE_MAX - page) return nullptr;
    const size_t mapped = (bytes + page - 1) / page * page;
    std::lock_guard<std::mutex> lock(mu_);
    if (mapped > capacity_ - used_[device]) return nullptr;
    void* p = mmap(nullptr, mapped, current_prot(), MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    regions_[reinterpret_cast<uintptr_t>(p)] = Region{bytes, mapped, device};
    used_[device] += mapped;
    return p;
  }

  /// Unmaps a block from allocate(device, ...). Throws tinytorch::Error ("invalid argument", as
  /// cudaFree says) for a pointer that is not the start of a live region of that device.
  void release(int device, void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = regions_.find(reinterpret_cast<uintptr_t>(p));
    TT_CHECK(it != regions_.end() && it->second.device == device, "cudaFree(", p, ") on cuda:", device,
             " failed: invalid argument (not a live block of that simulated device)");
    munmap(p, it->second.mapped);
    used_[device] -= it->second.mapped;
    regions_.erase(it);
  }

  /// The device whose live block holds all of [p, p + bytes), or -1.
  int device_of(const void* p, size_t bytes) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = regions_.upper_bound(a);
    if (it == regions_.begin()) return -1;
    --it;
    const uintptr_t begin = it->first;
    if (a - begin > it->second.bytes || bytes > it->second.bytes - (a - begin)) return -1;
    return it->second.device;
  }

  /// Bytes of `device`'s capacity in use (whole pages).
  size_t used_bytes(int device) {
    std::lock_guard<std::mutex> lock(mu_);
    return used_[device];
  }

  void open_scope() {
    std::lock_guard<std::mutex> lock(mu_);
    if (scopes_++ == 0 && !unprotected_) protect_all(PROT_READ | PROT_WRITE);
  }
  void close_scope() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--scopes_ == 0 && !unprotected_) protect_all(PROT_NONE);
  }

 private:
  struct Region {
    size_t bytes;   ///< as asked
    size_t mapped;  ///< whole pages
    int device;
  };

  Memory()
      : devices_(static_cast<int>(env_int("TINYTORCH_SIM_DEVICES", 4, 0, 64))),
        capacity_(static_cast<size_t>(env_int("TINYTORCH_SIM_MEMORY_MB", 1024, 1, 1L << 20)) << 20),
        unprotected_(env_flag("TINYTORCH_SIM_UNPROTECTED")),
        used_(static_cast<size_t>(devices_), 0) {}

  static size_t page_size() {
    static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return p;
  }

  int current_prot() const { return (unprotected_ || scopes_ > 0) ? PROT_READ | PROT_WRITE : PROT_NONE; }

  // Called with mu_ held. mprotect on a region we mapped cannot fail short of the kernel running out
  // of memory for its page tables; a scope destructor cannot throw, so that ends the program.
  void protect_all(int prot) {
    for (const auto& r : regions_) {
      if (mprotect(reinterpret_cast<void*>(r.first), r.second.mapped, prot) != 0) {
        std::fprintf(stderr, "tinytorch simulator: mprotect of device memory failed: %s\n", std::strerror(errno));
        std::abort();
      }
    }
  }

  const int devices_;
  const size_t capacity_;
  const bool unprotected_;
  std::mutex mu_;
  std::map<uintptr_t, Region> regions_;  // by start address: device_of() finds the region holding a pointer
  std::vector<size_t> used_;             // per device
  int scopes_ = 0;
};

}  // namespace detail

/// While alive (anywhere in the process), simulated device memory is readable and writable by host
/// code: the launcher opens one around each simulated kernel, the memcpy_* functions around each copy.
/// Scopes nest and may be open on several threads at once; the memory is protected again when the
/// last one closes. Outside every scope a host access to device memory gets SIGSEGV (unless
/// TINYTORCH_SIM_UNPROTECTED=1). Not copyable.
class DeviceAccessScope {
 public:
  DeviceAccessScope() { detail::Memory::get().open_scope(); }
  ~DeviceAccessScope() { detail::Memory::get().close_scope(); }
  DeviceAccessScope(const DeviceAccessScope&) = delete;
  DeviceAccessScope& operator=(const DeviceAccessScope&) = delete;
};

/// False under TINYTORCH_SIM_UNPROTECTED=1: device memory is then always accessible from the host.
inline bool memory_protected() { return detail::Memory::get().protected_mode(); }

/// Capacity of each simulated device in bytes (TINYTORCH_SIM_MEMORY_MB x 2^20).
inline size_t device_capacity_bytes() { return detail::Memory::get().capacity_bytes(); }

/// The simulated device whose memory holds all of [p, p + bytes), or -1 when that range is not (all)
/// inside one live device block. Used by the copies to reject host pointers and overruns.
inline int device_of(const void* p, size_t bytes) { return detail::Memory::get().device_of(p, bytes); }

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cuda::sim

#endif  // TINYTORCH_CUDA_SIM

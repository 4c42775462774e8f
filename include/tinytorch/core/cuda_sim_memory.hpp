// tinytorch/core/cuda_sim_memory.hpp — the kernel simulator's device memory: protected host pages.
//
// In the simulator (TINYTORCH_CUDA_SIM, backend/cuda/sim.hpp) a "GPU" is host memory, mapped
// PROT_NONE except while a kernel or a copy runs, so that a host read of a CUDA tensor's data
// faults as it would on a GPU:
//   * each raw allocation (core/cuda_runtime.hpp raw_malloc) is its own anonymous mmap region
//     (MAP_NORESERVE), whole pages, recorded in a registry (one mutex) with its simulated device,
//     with a PROT_NONE guard page on each side;
//   * a DeviceAccessScope (RAII) makes every region readable and writable while at least one scope
//     is open anywhere in the process (a counter, so DataParallel threads may launch at once); the
//     launcher (launch.hpp) opens one around every launch, memcpy_h2d/d2h/d2d around each copy;
//   * outside any scope a host access gets SIGSEGV; the simulator's fault handler (sim.hpp,
//     section 6) names the allocation. Protection is process-wide: while thread A runs a kernel,
//     thread B's host read goes unnoticed (a false negative, never a false alarm).
// TINYTORCH_SIM_CHECK (comma-separated) adds: memcheck (each block ends flush with its upper guard
// page, 16-byte rounded, with 0xFD canaries checked after every launch; freed blocks stay PROT_NONE,
// up to 4096; the caching allocator stops caching), racecheck (each launch runs twice, the second
// time in reverse order, memory saved and restored between: launch.hpp), initcheck (fresh blocks
// hold 0xFF bytes and a table of the bytes written; every launch runs again with the unwritten
// bytes changed, and a byte written differently is reported). docs/architecture.md and chapter
// 10.7 say what each finds and what it cannot.
// Environment (read once; a malformed value throws tinytorch::Error): TINYTORCH_SIM_DEVICES
// (simulated GPUs, 0..64, default 4), TINYTORCH_SIM_MEMORY_MB (each one's capacity, 1..1048576,
// default 1024; pages count against it, and beyond it raw_malloc fails as cudaMalloc does),
// TINYTORCH_SIM_UNPROTECTED=1 (regions stay open: print device data from gdb), TINYTORCH_SIM_CHECK.
// Memory is never shared between simulated devices; copies between them are memcpy.
// Chapter: chapters/10-gpu-kernels.md. Reference: numba's CUDA simulator; mmap(2), mprotect(2).
#pragma once

#include "tinytorch/core/config.hpp"

#if TINYTORCH_CUDA_SIM

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tinytorch/core/check.hpp"

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

/// The checks TINYTORCH_SIM_CHECK turns on (read once; an unknown name throws tinytorch::Error).
/// synccheck is always on (it is the simulator's barrier semantics). racecheck runs every launch
/// twice, in the documented order and in reverse, and compares (launch.hpp); in a ThreadSanitizer
/// build the fibers are also annotated for TSan, always (sim.hpp section 7).
struct Checks {
  bool memcheck = false;
  bool initcheck = false;
  bool racecheck = false;
};
inline Checks parse_checks(const char* env) {
  Checks c;
  const std::string v = env == nullptr ? "" : env;
  size_t start = 0;
  while (start <= v.size()) {
    size_t end = v.find(',', start);
    if (end == std::string::npos) end = v.size();
    const std::string name = v.substr(start, end - start);
    if (name == "memcheck") {
      c.memcheck = true;
    } else if (name == "initcheck") {
      c.initcheck = true;
    } else if (name == "racecheck") {
      c.racecheck = true;
    } else if (name != "synccheck" && !name.empty()) {
      TT_CHECK(false, "TINYTORCH_SIM_CHECK: unknown check \"", name,
               "\" (expected a comma-separated list of memcheck, initcheck, racecheck, synccheck)");
    }
    start = end + 1;
  }
  return c;
}
inline const Checks& checks() {
  static const Checks c = parse_checks(std::getenv("TINYTORCH_SIM_CHECK"));
  return c;
}

/// The process-wide registry of simulated device memory. Never destroyed (as the allocators), so
/// storage freed by a static destructor after main() returns still finds it.
class Memory {
 public:
  static Memory& get() {
    static Memory* m = [] {  // a bad environment variable throws here, and again next time
      Memory* created = new Memory();
      instance().store(created);
      return created;
    }();
    return *m;
  }
  /// The registry if it exists, else nullptr (the fault handler must not create it).
  static Memory* peek() { return instance().load(); }

  int devices() const { return devices_; }
  size_t capacity_bytes() const { return capacity_; }
  bool protected_mode() const { return !unprotected_; }

  /// `bytes` (> 0) of fresh memory on `device` (valid): zeroed, or 0xFF bytes under initcheck; nullptr
  /// when the device's capacity (or the host) has no room for it.
  void* allocate(int device, size_t bytes) {
    const size_t page = page_size();
    if (bytes > SIZE_MAX - 3 * page) return nullptr;
    const size_t data = (bytes + page - 1) / page * page;
    std::lock_guard<std::mutex> lock(mu_);
    if (data > capacity_ - used_[device]) return nullptr;
    // [guard page][data pages][guard page]: the guards stay PROT_NONE for the region's life.
    char* base = static_cast<char*>(
        mmap(nullptr, data + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (base == MAP_FAILED) return nullptr;
    char* first = base + page;
    const size_t used16 = (bytes + 15) / 16 * 16;
    char* p = memcheck_ ? first + data - used16 : first;
    Region r{bytes, data, device, base, first, {}};
    if (initcheck_) r.written.assign(bytes, 0);
    if (memcheck_ || initcheck_) {  // write the pattern with the pages open, then set their protection
      mprotect(first, data, PROT_READ | PROT_WRITE);
      if (initcheck_) std::memset(p, 0xFF, bytes);
      if (memcheck_) {
        std::memset(p + bytes, kCanary, used16 - bytes);
        std::memset(p - head_bytes(p, first), kCanary, head_bytes(p, first));
      }
    }
    mprotect(first, data, current_prot());
    regions_[reinterpret_cast<uintptr_t>(p)] = r;
    used_[device] += data;
    return p;
  }

  /// Unmaps a block from allocate(device, ...) (memcheck: protects and quarantines it). Throws
  /// tinytorch::Error ("invalid argument", as cudaFree says) for a pointer that is not the start of a
  /// live region of that device, and under memcheck for a block whose bytes past the end were written.
  void release(int device, void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = regions_.find(reinterpret_cast<uintptr_t>(p));
    const bool was_freed = it == regions_.end() && freed_.count(reinterpret_cast<uintptr_t>(p)) != 0;
    TT_CHECK(it != regions_.end() && it->second.device == device, "cudaFree(", p, ") on cuda:", device,
             " failed: invalid argument (", was_freed ? "already freed: a double free" : "not a live block of that simulated device", ")");
    const Region r = it->second;
    const std::string overrun = memcheck_ ? canary_damage_locked(it->first, r) : std::string();
    used_[device] -= r.data;
    regions_.erase(it);
    if (!memcheck_) {
      munmap(r.base, r.data + 2 * page_size());
    } else {  // quarantine: keep the pages, inaccessible, so that a later access is named
      mprotect(r.first, r.data, PROT_NONE);
      freed_[reinterpret_cast<uintptr_t>(p)] = r;
      freed_order_.push_back(reinterpret_cast<uintptr_t>(p));
      if (freed_order_.size() > kQuarantine) {
        const auto old = freed_.find(freed_order_.front());
        munmap(old->second.base, old->second.data + 2 * page_size());
        freed_.erase(old);
        freed_order_.erase(freed_order_.begin());
      }
    }
    TT_CHECK(overrun.empty(), "memcheck: cudaFree(", p, "): ", overrun);
  }

  /// memcheck: "" when no block's bytes between its end and its guard page were written, else a
  /// description of the first damaged one (the launcher reports it with the kernel's name).
  std::string check_canaries() {
    if (!memcheck_) return std::string();
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [start, r] : regions_) {
      std::string d = canary_damage_locked(start, r);
      if (!d.empty()) return d;
    }
    return std::string();
  }

  /// A description of address `a` for a fault report: which block it is in or next to, on which
  /// device, at what offset; whether that block was freed; "" when it is near no block. Called from
  /// the fault handler, so it only tries the lock.
  std::string describe(uintptr_t a) {
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    for (int tries = 0; !lock.owns_lock() && tries < 200; ++tries) {  // another thread may hold it briefly
      const timespec ms{0, 1000000};
      nanosleep(&ms, nullptr);
      lock.try_lock();
    }
    if (!lock.owns_lock()) return "not looked up (another thread held the allocation table for 0.2 s)";
    const size_t page = page_size();
    const auto near = [&](const std::map<uintptr_t, Region>& m, const char* what) -> std::string {
      for (const auto& [start, r] : m) {
        const uintptr_t lo = reinterpret_cast<uintptr_t>(r.base), hi = lo + r.data + 2 * page;
        if (a < lo || a >= hi) continue;
        const std::string block = ::tinytorch::detail::str_cat(what, r.bytes, "-byte allocation at 0x", std::hex,
                                                               start, std::dec, " on cuda:", r.device);
        if (a < start) return ::tinytorch::detail::str_cat(start - a, " bytes before the start of a ", block);
        if (a >= start + r.bytes)
          return ::tinytorch::detail::str_cat(a - start - r.bytes, " bytes past the end of a ", block);
        return ::tinytorch::detail::str_cat("at offset ", a - start, " of a ", block);
      }
      return std::string();
    };
    std::string d = near(regions_, "live ");
    if (d.empty()) d = near(freed_, "freed ");
    return d;
  }

  /// One live allocation as racecheck and initcheck see it.
  struct LiveBlock {
    unsigned char* start;
    size_t bytes;
    std::vector<unsigned char>* written;  ///< initcheck: 1 per byte a copy or a kernel wrote; else null
  };
  /// Every live allocation (racecheck and initcheck save and restore them around a launch; `written`
  /// stays valid while a ReplayLock is held, which keeps allocations and frees out).
  std::vector<LiveBlock> live() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<LiveBlock> out;
    out.reserve(regions_.size());
    for (auto& [start, r] : regions_)
      out.push_back(LiveBlock{reinterpret_cast<unsigned char*>(start), r.bytes, initcheck_ ? &r.written : nullptr});
    return out;
  }

  /// initcheck: [p, p + bytes) of a live block has been written (a copy from the host).
  void mark_written(const void* p, size_t bytes) {
    if (!initcheck_) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (unsigned char* w = written_at_locked(p, bytes)) std::memset(w, 1, bytes);
  }
  /// initcheck: a device-to-device copy carries what was written with the bytes.
  void copy_written(void* dst, const void* src, size_t bytes) {
    if (!initcheck_) return;
    std::lock_guard<std::mutex> lock(mu_);
    unsigned char* d = written_at_locked(dst, bytes);
    const unsigned char* s = written_at_locked(src, bytes);
    if (d && s) std::memmove(d, s, bytes);
  }

  /// The device whose live block holds all of [p, p + bytes), or -1.
  int device_of(const void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = region_holding_locked(p, bytes);
    return it == regions_.end() ? -1 : it->second.device;
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
    size_t bytes;  ///< as asked
    size_t data;   ///< whole pages between the two guard pages
    int device;
    char* base;    ///< the mapping: the lower guard page
    char* first;   ///< the first data page
    std::vector<unsigned char> written;  ///< initcheck: 1 per byte a copy or a kernel wrote
  };
  static constexpr unsigned char kCanary = 0xFD;
  static constexpr size_t kQuarantine = 4096;

  // memcheck: up to 16 canary bytes before a block (when its page has room) and the bytes between
  // its end and its 16-byte rounding.
  static size_t head_bytes(const char* p, const char* first) {
    return static_cast<size_t>(p - first) < 16 ? static_cast<size_t>(p - first) : 16;
  }
  // memcheck: "" when a block's canaries are intact; else what was written, and the canaries are
  // set again (so that the next launch does not report the same bytes under its own name).
  std::string canary_damage_locked(uintptr_t start, const Region& r) {
    const size_t used16 = (r.bytes + 15) / 16 * 16;
    unsigned char* p = reinterpret_cast<unsigned char*>(start);
    const size_t head = head_bytes(reinterpret_cast<char*>(p), r.first);
    if (used16 == r.bytes && head == 0) return std::string();
    const bool closed = !unprotected_ && scopes_ == 0;
    if (closed) mprotect(r.first, r.data, PROT_READ | PROT_WRITE);
    std::string what;
    size_t first = used16, last = r.bytes;
    for (size_t i = r.bytes; i < used16; ++i) {
      if (p[i] == kCanary) continue;
      if (first == used16) first = i;
      last = i;
    }
    if (first != used16) {
      what = ::tinytorch::detail::str_cat("invalid global write past the end of a ", r.bytes,
                                          "-byte allocation at 0x", std::hex, start, std::dec, " on cuda:", r.device,
                                          ": bytes ", first - r.bytes, "..", last - r.bytes, " past its end were changed");
      std::memset(p + r.bytes, kCanary, used16 - r.bytes);
    }
    size_t low = 0;
    while (low < head && p[-static_cast<ptrdiff_t>(head - low)] == kCanary) ++low;
    if (low < head && what.empty()) {
      what = ::tinytorch::detail::str_cat("invalid global write before the start of a ", r.bytes,
                                          "-byte allocation at 0x", std::hex, start, std::dec, " on cuda:", r.device,
                                          ": byte ", head - low, " before it was changed");
      std::memset(p - head, kCanary, head);
    }
    if (closed) mprotect(r.first, r.data, PROT_NONE);
    if (what.empty()) return what;
    return what + " (memcheck's canary bytes 0xFD; a byte written with that value is not seen)";
  }

  Memory()
      : devices_(static_cast<int>(env_int("TINYTORCH_SIM_DEVICES", 4, 0, 64))),
        capacity_(static_cast<size_t>(env_int("TINYTORCH_SIM_MEMORY_MB", 1024, 1, 1L << 20)) << 20),
        unprotected_(env_flag("TINYTORCH_SIM_UNPROTECTED")),
        memcheck_(checks().memcheck),
        initcheck_(checks().initcheck),
        used_(static_cast<size_t>(devices_), 0) {}

  static size_t page_size() {
    static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return p;
  }

  // The live region holding all of [p, p + bytes) (p may be its end when bytes is 0), or end().
  std::map<uintptr_t, Region>::iterator region_holding_locked(const void* p, size_t bytes) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    auto it = regions_.upper_bound(a);
    if (it == regions_.begin()) return regions_.end();
    --it;
    const size_t offset = a - it->first;
    return offset > it->second.bytes || bytes > it->second.bytes - offset ? regions_.end() : it;
  }
  // initcheck: the written-bytes table's entry for p, when [p, p + bytes) is inside one live region.
  unsigned char* written_at_locked(const void* p, size_t bytes) {
    const auto it = region_holding_locked(p, bytes);
    if (it == regions_.end() || it->second.written.empty()) return nullptr;
    return it->second.written.data() + (reinterpret_cast<uintptr_t>(p) - it->first);
  }

  int current_prot() const { return (unprotected_ || scopes_ > 0) ? PROT_READ | PROT_WRITE : PROT_NONE; }

  // Called with mu_ held. mprotect on a region we mapped cannot fail short of the kernel running out
  // of memory for its page tables; a scope destructor cannot throw, so that ends the program.
  void protect_all(int prot) {
    for (const auto& r : regions_) {
      if (mprotect(r.second.first, r.second.data, prot) != 0) {
        std::fprintf(stderr, "tinytorch simulator: mprotect of device memory failed: %s\n", std::strerror(errno));
        std::abort();
      }
    }
  }

  static std::atomic<Memory*>& instance() {
    static std::atomic<Memory*> m{nullptr};
    return m;
  }

  const int devices_;
  const size_t capacity_;
  const bool unprotected_;
  const bool memcheck_;
  const bool initcheck_;
  std::mutex mu_;
  std::map<uintptr_t, Region> regions_;  // by start address: device_of() finds the region holding a pointer
  std::map<uintptr_t, Region> freed_;    // memcheck's quarantine, by start address
  std::vector<uintptr_t> freed_order_;   // oldest first
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

/// Under racecheck and initcheck a launch runs more than once and saves, restores and compares all
/// device memory, so allocations, frees, copies and other launches wait for it (they take this lock;
/// without those checks nobody does).
class ReplayLock {
 public:
  ReplayLock() : on_(detail::checks().racecheck || detail::checks().initcheck) {
    if (on_) mutex().lock();
  }
  ~ReplayLock() {
    if (on_) mutex().unlock();
  }
  ReplayLock(const ReplayLock&) = delete;
  ReplayLock& operator=(const ReplayLock&) = delete;

 private:
  static std::recursive_mutex& mutex() {
    static std::recursive_mutex m;
    return m;
  }
  bool on_;
};

/// initcheck's second value for a byte never written, at `address`, whose first value is `first`
/// (0xFF in a fresh block or dynamic shared memory): it varies with the address, so that a kernel
/// copying unwritten bytes to unwritten bytes still changes them, and it is never `first`.
inline unsigned char initcheck_second_byte(uintptr_t address, unsigned char first) {
  uint64_t h = static_cast<uint64_t>(address) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  const auto b = static_cast<unsigned char>(h >> 24);
  return b == first ? static_cast<unsigned char>(b ^ 0x5A) : b;
}

/// False under TINYTORCH_SIM_UNPROTECTED=1: device memory is then always accessible from the host.
inline bool memory_protected() { return detail::Memory::get().protected_mode(); }

/// Capacity of each simulated device in bytes (TINYTORCH_SIM_MEMORY_MB x 2^20).
inline size_t device_capacity_bytes() { return detail::Memory::get().capacity_bytes(); }

/// The simulated device whose memory holds all of [p, p + bytes), or -1 when that range is not (all)
/// inside one live device block. Used by the copies to reject host pointers and overruns.
inline int device_of(const void* p, size_t bytes) { return detail::Memory::get().device_of(p, bytes); }

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cuda::sim

#endif  // TINYTORCH_CUDA_SIM

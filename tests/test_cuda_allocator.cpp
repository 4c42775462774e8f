// tests/test_cuda_allocator.cpp — the CUDA caching allocator's policy (core/cuda_allocator.hpp), in a
// plain CPU build: driven by a fake raw allocator with a capacity per device, it must reuse freed
// blocks by size class, keep per-device statistics as torch.cuda.memory_* reports them, give the cache
// back on empty_cache(), release the cache and retry once when the device is full before throwing
// PyTorch's "CUDA out of memory" message, and reach a steady state with no raw allocations.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <tinytorch/core/allocator.hpp>
#include <tinytorch/core/cuda.hpp>
#include <tinytorch/core/cuda_allocator.hpp>

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using tinytorch::backend::cuda::OutOfMemoryError;

namespace {

// A fake device: host memory, a byte budget per device, and counters of every call.
struct FakeRaw {
  int devices = 2;
  size_t capacity = size_t{1} << 20;  // 1 MiB per device
  std::vector<size_t> used = std::vector<size_t>(2, 0);
  size_t mallocs = 0, frees = 0, failed = 0;
  std::set<void*> live;

  int device_count() { return devices; }
  void* raw_malloc(int device, size_t bytes) {
    if (bytes > capacity - used[static_cast<size_t>(device)]) {
      ++failed;
      throw OutOfMemoryError("fake cudaMalloc: out of memory");
    }
    void* p = std::malloc(bytes);
    REQUIRE(p != nullptr);
    used[static_cast<size_t>(device)] += bytes;
    sizes[p] = bytes;
    live.insert(p);
    ++mallocs;
    return p;
  }
  void raw_free(int device, void* p) {
    REQUIRE(live.count(p) == 1);
    used[static_cast<size_t>(device)] -= sizes[p];
    live.erase(p);
    std::free(p);
    ++frees;
  }
  void mem_get_info(int device, size_t* free_bytes, size_t* total_bytes) {
    *total_bytes = capacity;
    *free_bytes = capacity - used[static_cast<size_t>(device)];
  }
  std::map<void*, size_t> sizes;
};

using Policy = tinytorch::detail::CachingDeviceAllocator<FakeRaw>;

}  // namespace

TEST_CASE("cuda allocator size classes: 512 bytes minimum, four per power of two", "[cuda_allocator]") {
  CHECK(Policy::round_size(1) == 512);
  CHECK(Policy::round_size(512) == 512);
  CHECK(Policy::round_size(513) == 640);
  CHECK(Policy::round_size(700) == 768);
  CHECK(Policy::round_size(1000) == 1024);
  CHECK(Policy::round_size(1025) == 1280);
  CHECK(Policy::round_size(6000) == 6144);
  CHECK(Policy::round_size(784 * 256 * 4) == 917504);  // 0.77 MiB -> 7 x 2^17
  // From 4 KiB up: exactly the CPU allocator's classes; under 25% waste everywhere above 512.
  for (size_t n = 513; n < (size_t{1} << 34); n = n * 5 / 3 + 1) {
    INFO("n = " << n);
    const size_t c = Policy::round_size(n);
    CHECK(c >= n);
    CHECK(c % 128 == 0);
    CHECK(static_cast<double>(c) < 1.25 * static_cast<double>(n));
    if (n >= 4096) CHECK(c == tinytorch::detail::CpuCachingAllocator::round_size(n));
  }
}

TEST_CASE("cuda allocator reuses a freed block of the same class, per device", "[cuda_allocator]") {
  Policy a(FakeRaw{}, /*caching=*/true);
  CHECK(a.allocate(0, 0) == nullptr);
  void* p = a.allocate(0, 1000);  // class 1024
  REQUIRE(p != nullptr);
  CHECK(a.raw().mallocs == 1);
  a.deallocate(0, p, 1000);
  CHECK(a.raw().frees == 0);  // cached, not freed
  CHECK(a.allocate(0, 900) == p);  // 900 -> 1024 as well: the same block, no raw malloc
  CHECK(a.raw().mallocs == 1);
  void* q = a.allocate(0, 1100);  // class 1280: a new block
  CHECK(q != p);
  CHECK(a.raw().mallocs == 2);
  a.deallocate(0, p, 900);
  void* r = a.allocate(1, 1000);  // the same class on device 1: device 0's cached block is not used
  CHECK(r != p);
  CHECK(a.raw().mallocs == 3);
  CHECK(a.raw().used[1] == 1024);
  a.deallocate(0, q, 1100);
  a.deallocate(1, r, 1000);
  CHECK(a.raw().frees == 0);
}

TEST_CASE("cuda allocator statistics: allocated, reserved and their peaks per device", "[cuda_allocator]") {
  Policy a(FakeRaw{}, true);
  void* p = a.allocate(0, 3000);  // 3072
  void* q = a.allocate(0, 10);    // 512
  tinytorch::CudaMemoryStats s = a.stats(0);
  CHECK(s.allocated_bytes == 3584);
  CHECK(s.reserved_bytes == 3584);
  CHECK(s.max_allocated_bytes == 3584);
  CHECK(s.num_device_alloc == 2);
  CHECK(a.stats(1).allocated_bytes == 0);
  a.deallocate(0, p, 3000);
  s = a.stats(0);
  CHECK(s.allocated_bytes == 512);
  CHECK(s.reserved_bytes == 3584);  // the freed block is cached: still reserved
  CHECK(s.max_allocated_bytes == 3584);
  CHECK(a.cached_bytes(0) == 3072);
  a.reset_peak_memory_stats(0);
  CHECK(a.stats(0).max_allocated_bytes == 512);
  CHECK(a.stats(0).max_reserved_bytes == 3584);
  a.deallocate(0, q, 10);
  CHECK(a.stats(0).allocated_bytes == 0);
  CHECK(a.stats(0).max_allocated_bytes == 512);
  CHECK_THROWS_WITH(a.stats(2), StartsWith("CUDA error: invalid device ordinal"));
  CHECK_THROWS_WITH(a.allocate(-1, 8), StartsWith("CUDA error: invalid device ordinal"));
  CHECK_THROWS_WITH(a.allocate(2, 8), Contains("cuda:2; this program sees 2 CUDA devices"));
}

TEST_CASE("cuda allocator empty_cache gives cached blocks back; live blocks stay", "[cuda_allocator]") {
  Policy a(FakeRaw{}, true);
  void* p = a.allocate(0, 5000);
  void* q = a.allocate(1, 5000);
  void* keep = a.allocate(0, 600);
  a.deallocate(0, p, 5000);
  a.deallocate(1, q, 5000);
  CHECK(a.raw().frees == 0);
  a.empty_cache();
  CHECK(a.raw().frees == 2);
  CHECK(a.raw().live.size() == 1);
  CHECK(a.stats(0).reserved_bytes == 640);
  CHECK(a.stats(0).num_device_free == 1);
  CHECK(a.stats(1).reserved_bytes == 0);
  CHECK(a.cached_bytes(0) == 0);
  a.deallocate(0, keep, 600);
}

TEST_CASE("cuda allocator without caching frees every block at once", "[cuda_allocator]") {
  Policy a(FakeRaw{}, /*caching=*/false);
  CHECK_FALSE(a.caching());
  void* p = a.allocate(0, 1000);
  CHECK(a.stats(0).reserved_bytes == 1024);
  a.deallocate(0, p, 1000);
  CHECK(a.raw().frees == 1);
  CHECK(a.stats(0).reserved_bytes == 0);
  CHECK(a.stats(0).max_allocated_bytes == 1024);
}

TEST_CASE("cuda allocator on a full device frees its cache, retries once, then throws PyTorch's message",
          "[cuda_allocator]") {
  Policy a(FakeRaw{}, true);  // 1 MiB per device
  // 600 KiB cached: the next 600 KiB-class request needs another 600 KiB block, which only fits once
  // the cached one is freed.
  void* big = a.allocate(0, 600 * 1024);  // 614400 -> class 655360 (5 x 2^17)
  a.deallocate(0, big, 600 * 1024);
  void* other = a.allocate(1, 700 * 1024);  // device 1's cache must survive device 0's retry
  a.deallocate(1, other, 700 * 1024);
  void* p = a.allocate(0, 700 * 1024);  // class 786432: 655360 + 786432 > 1 MiB -> retry
  CHECK(a.raw().failed == 1);
  CHECK(a.stats(0).num_alloc_retries == 1);
  CHECK(a.stats(0).num_device_free == 1);
  CHECK(a.stats(0).reserved_bytes == 786432);
  CHECK(a.cached_bytes(1) == 786432);  // untouched

  // Now a request that cannot fit even with nothing cached: 512 KiB on top of 768 KiB live.
  void* small = a.allocate(0, 100000);  // class 114688, fits (786432 + 114688 <= 1048576)
  a.deallocate(0, small, 100000);       // cached: freed by the retry below
  try {
    a.allocate(0, 512 * 1024);
    FAIL("expected OutOfMemoryError");
  } catch (const OutOfMemoryError& e) {
    // 1 MiB - 768 KiB = 256 KiB free after the retry released the cached 100 KiB block.
    CHECK(std::string(e.what()) ==
          "CUDA out of memory. Tried to allocate 512.00 KiB. GPU 0 has a total capacity of 1024.00 KiB of which "
          "256.00 KiB is free. Of the allocated memory 768.00 KiB is allocated by tinytorch, and 0 bytes is "
          "reserved by tinytorch but unallocated.");
  }
  CHECK(a.stats(0).num_alloc_retries == 2);
  CHECK(a.stats(0).num_ooms == 1);
  CHECK(a.stats(0).allocated_bytes == 786432);  // nothing counted for the failed request
  CHECK(a.stats(0).reserved_bytes == 786432);
  // An OutOfMemoryError is a tinytorch::Error, and the allocator still works afterwards.
  CHECK_THROWS_AS(a.allocate(0, 512 * 1024), tinytorch::Error);
  a.deallocate(0, p, 700 * 1024);
  void* again = a.allocate(0, 512 * 1024);
  CHECK(again != nullptr);
  a.deallocate(0, again, 512 * 1024);
}

TEST_CASE("cuda allocator error sizes are printed as PyTorch's format_size does (also the CPU limit's: core/allocator.hpp)", "[cuda_allocator]") {
  using tinytorch::detail::format_size;
  CHECK(format_size(0) == "0 bytes");
  CHECK(format_size(1024) == "1024 bytes");
  CHECK(format_size(1536) == "1.50 KiB");
  CHECK(format_size(1048576) == "1024.00 KiB");
  CHECK(format_size(20 * 1048576) == "20.00 MiB");
  CHECK(format_size(size_t{3} << 30) == "3.00 GiB");
}

TEST_CASE("cuda allocator: a steady-state training loop makes no raw allocations after warm-up",
          "[cuda_allocator]") {
  FakeRaw raw;
  raw.capacity = size_t{64} << 20;
  Policy a(raw, true);
  // One "step" of an MLP 784-256-10 at batch 64, with some sizes varying a little (the last batch).
  auto step = [&](size_t batch) {
    std::vector<std::pair<void*, size_t>> live;
    const std::vector<size_t> sizes = {batch * 784 * 4, batch * 256 * 4, batch * 10 * 4, 4, batch * 256 * 4,
                                       256 * 784 * 4, 256 * 4, 10 * 256 * 4, 10 * 4};
    for (size_t n : sizes) {
      live.emplace_back(a.allocate(0, n), n);
    }
    for (auto it = live.rbegin(); it != live.rend(); ++it) a.deallocate(0, it->first, it->second);
  };
  step(64);
  step(60);  // a smaller last batch: some other size classes, cached from now on as well
  const size_t warm = a.raw().mallocs;
  const size_t peak = a.stats(0).reserved_bytes;
  for (int i = 0; i < 100; ++i) step(i % 2 ? 64 : 60);
  CHECK(a.raw().mallocs == warm);
  CHECK(a.raw().frees == 0);
  CHECK(a.stats(0).reserved_bytes == peak);
  CHECK(a.stats(0).allocated_bytes == 0);
}

TEST_CASE("tinytorch::cuda in a CPU build: no devices, zero statistics, synchronize throws", "[cuda_allocator]") {
#if TINYTORCH_WITH_CUDA
  SUCCEED("built with the CUDA backend: tests/cuda/test_cuda_memory.cpp covers tinytorch::cuda");
#else
  CHECK_FALSE(tinytorch::cuda::is_available());
  CHECK(tinytorch::cuda::device_count() == 0);
  CHECK(tinytorch::cuda::memory_allocated() == 0);
  CHECK(tinytorch::cuda::max_memory_allocated(1) == 0);
  CHECK(tinytorch::cuda::memory_reserved() == 0);
  tinytorch::cuda::empty_cache();              // harmless
  tinytorch::cuda::reset_peak_memory_stats();  // harmless
  CHECK_THROWS_WITH(tinytorch::cuda::synchronize(), Contains("Torch not compiled with CUDA enabled"));
#endif
}

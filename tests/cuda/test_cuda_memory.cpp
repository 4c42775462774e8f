// tests/cuda/test_cuda_memory.cpp — CUDA device memory: Storage on cuda:i, copies, the caching
// allocator's statistics and OOM message through tinytorch::cuda, and (simulator only) that host code
// cannot read device memory outside a kernel or a copy.
//
// Compiled twice (tests/cuda/tests.cmake): as test_cuda_memory_sim by g++ with -DTINYTORCH_CUDA_SIM=1
// (the simulator: 4 devices of 1024 MiB unless TINYTORCH_SIM_DEVICES / TINYTORCH_SIM_MEMORY_MB say
// otherwise), and by nvcc as test_cuda_memory (skipped without a GPU). Tests that need several devices
// use as many as there are, up to 4. Covers core/storage.hpp, core/cuda.hpp, core/cuda_allocator.hpp,
// core/cuda_runtime.hpp and core/cuda_sim_memory.hpp. Chapter: chapters/10-gpu-kernels.md.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <tinytorch/core/cuda_runtime.hpp>
#include <tinytorch/core/cuda.hpp>
#include <tinytorch/core/storage.hpp>

#include "cuda_test_util.hpp"

#if TINYTORCH_CUDA_SIM
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using tinytorch::Device;
using tinytorch::Storage;
namespace rt = tinytorch::backend::cuda;

namespace {

int devices_under_test() { return std::min(tinytorch::cuda::device_count(), 4); }

std::vector<float> iota_floats(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

std::vector<float> download(const Storage& s, size_t n) {
  std::vector<float> host(n);
  rt::memcpy_d2h(host.data(), s.data(), n * sizeof(float));
  return host;
}

}  // namespace

TEST_CASE("tinytorch::cuda sees the devices", "[cuda][cuda_memory]") {
  CHECK(tinytorch::cuda::is_available());
  CHECK(tinytorch::cuda::device_count() == rt::device_count());
#if TINYTORCH_CUDA_SIM
  if (std::getenv("TINYTORCH_SIM_DEVICES") == nullptr) CHECK(tinytorch::cuda::device_count() == 4);
#endif
  for (int d = 0; d < devices_under_test(); ++d) tinytorch::cuda::synchronize(d);
  tinytorch::cuda::synchronize();  // -1: device 0
}

TEST_CASE("Storage on each cuda:i holds what is copied in; copies run host->device->device->host",
          "[cuda][cuda_memory]") {
  const int n_dev = devices_under_test();
  const size_t n = 1000;  // 4000 bytes -> class 4096
  std::vector<Storage*> s;
  for (int d = 0; d < n_dev; ++d) {
    s.push_back(new Storage(n * sizeof(float), Device::cuda(d)));
    CHECK(s.back()->device() == Device::cuda(d));
    CHECK(s.back()->data() != nullptr);
    CHECK(s.back()->nbytes() == n * sizeof(float));
  }
  const std::vector<float> x = iota_floats(n, -3.5f);
  rt::memcpy_h2d(s[0]->data(), x.data(), n * sizeof(float));
  CHECK(download(*s[0], n) == x);
  // Along the chain cuda:0 -> cuda:1 -> ... -> cuda:(n_dev-1): each copy crosses devices.
  for (int d = 1; d < n_dev; ++d) {
    rt::memcpy_d2d(s[static_cast<size_t>(d)]->data(), s[static_cast<size_t>(d) - 1]->data(), n * sizeof(float));
    CHECK(download(*s[static_cast<size_t>(d)], n) == x);
  }
  // A copy within one block (overlapping ranges are not promised by cudaMemcpy; disjoint halves are).
  rt::memcpy_d2d(s[0]->data(), static_cast<const float*>(s[0]->data()) + n / 2, n / 2 * sizeof(float));
  const std::vector<float> y = download(*s[0], n);
  CHECK(std::equal(y.begin(), y.begin() + n / 2, x.begin() + n / 2));
  for (Storage* p : s) delete p;

  // Zero bytes: a null pointer, as on the CPU, and copies of nothing do nothing.
  Storage empty(0, Device::cuda(0));
  CHECK(empty.data() == nullptr);
  rt::memcpy_h2d(empty.data(), x.data(), 0);
}

TEST_CASE("CUDA storage is never kept inline and never counted as CPU memory", "[cuda][cuda_memory]") {
  const size_t cpu_before = tinytorch::memory_allocated();
  Storage tiny(4, Device::cuda(0));  // a CPU Storage of 4 bytes lives inside the object
  CHECK(tinytorch::memory_allocated() == cpu_before);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(&tiny), end = begin + sizeof(Storage);
  const uintptr_t data = reinterpret_cast<uintptr_t>(tiny.data());
  CHECK((data < begin || data >= end));
  const float one = 1.0f;
  rt::memcpy_h2d(tiny.data(), &one, sizeof one);
  CHECK(download(tiny, 1) == std::vector<float>{1.0f});
}

TEST_CASE("a bad device ordinal is CUDA's 'invalid device ordinal'", "[cuda][cuda_memory]") {
  const int n = tinytorch::cuda::device_count();
  CHECK_THROWS_WITH(Storage(16, Device::cuda(n)), StartsWith("CUDA error: invalid device ordinal"));
  CHECK_THROWS_WITH(Storage(16, Device::cuda(-1)), StartsWith("CUDA error: invalid device ordinal"));
  CHECK_THROWS_WITH(tinytorch::cuda::synchronize(n), Contains("invalid device ordinal"));
  CHECK_THROWS_WITH(tinytorch::cuda::memory_allocated(n), StartsWith("CUDA error: invalid device ordinal"));
  CHECK_THROWS_WITH(rt::raw_malloc(n, 16), Contains("invalid device ordinal"));
}

TEST_CASE("tinytorch::cuda memory statistics follow Storage", "[cuda][cuda_memory]") {
  const int d = devices_under_test() - 1;
  tinytorch::cuda::empty_cache();
  const size_t allocated0 = tinytorch::cuda::memory_allocated(d);
  tinytorch::cuda::reset_peak_memory_stats(d);
  CHECK(tinytorch::cuda::max_memory_allocated(d) == allocated0);
  {
    Storage a(3000, Device::cuda(d));  // class 3072
    Storage b(1, Device::cuda(d));     // class 512
    CHECK(tinytorch::cuda::memory_allocated(d) == allocated0 + 3584);
    CHECK(tinytorch::cuda::memory_reserved(d) >= allocated0 + 3584);
  }
  CHECK(tinytorch::cuda::memory_allocated(d) == allocated0);
  CHECK(tinytorch::cuda::max_memory_allocated(d) == allocated0 + 3584);
  const size_t reserved = tinytorch::cuda::memory_reserved(d);
  const tinytorch::CudaMemoryStats s = tinytorch::cuda::memory_stats(d);
  CHECK(s.reserved_bytes == reserved);
  CHECK(s.max_reserved_bytes >= allocated0 + 3584);
  if (tinytorch::detail::cuda_caching_allocator().caching()) {
    CHECK(reserved >= allocated0 + 3584);  // both blocks are cached
    tinytorch::cuda::empty_cache();
    CHECK(tinytorch::cuda::memory_reserved(d) == tinytorch::cuda::memory_allocated(d));
  }
  tinytorch::cuda::reset_peak_memory_stats(d);
  CHECK(tinytorch::cuda::max_memory_allocated(d) == allocated0);
}

TEST_CASE("a steady loop of CUDA storages makes no raw allocations after the first pass", "[cuda][cuda_memory]") {
  if (!tinytorch::detail::cuda_caching_allocator().caching()) {
    WARN("TINYTORCH_NO_MEMORY_CACHING is set: nothing is cached");
    return;
  }
  auto pass = [] {
    Storage a(256 * 784 * 4, Device::cuda(0));
    Storage b(256 * 256 * 4, Device::cuda(0));
    Storage c(10 * 4, Device::cuda(0));
    Storage d(256 * 784 * 4, Device::cuda(0));
  };
  pass();
  const size_t after_first = rt::raw_malloc_count();
  for (int i = 0; i < 20; ++i) pass();
  CHECK(rt::raw_malloc_count() == after_first);
}

TEST_CASE("a full device throws PyTorch's 'CUDA out of memory' and leaves the statistics as they were",
          "[cuda][cuda_memory]") {
  const int d = devices_under_test() > 1 ? 1 : 0;
  size_t free_bytes = 0, total = 0;
  rt::mem_get_info(d, &free_bytes, &total);
  const size_t allocated = tinytorch::cuda::memory_allocated(d);
  const size_t too_much = total + total / 2;
  try {
    Storage s(too_much, Device::cuda(d));
    FAIL("expected OutOfMemoryError");
  } catch (const tinytorch::cuda::OutOfMemoryError& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, StartsWith("CUDA out of memory. Tried to allocate "));
    CHECK_THAT(msg, Contains(". GPU " + std::to_string(d) + " has a total capacity of "));
    CHECK_THAT(msg, Contains(" is reserved by tinytorch but unallocated."));
#if TINYTORCH_CUDA_SIM
    if (std::getenv("TINYTORCH_SIM_MEMORY_MB") == nullptr && allocated == 0) {
      // 1536 MiB is a size class (6 x 2^28); the failed retry released the device's cache.
      CHECK(msg == "CUDA out of memory. Tried to allocate 1.50 GiB. GPU " + std::to_string(d) +
                       " has a total capacity of 1024.00 MiB of which 1024.00 MiB is free. Of the allocated memory "
                       "0 bytes is allocated by tinytorch, and 0 bytes is reserved by tinytorch but unallocated.");
    }
#endif
  }
  CHECK(tinytorch::cuda::memory_allocated(d) == allocated);
  CHECK(tinytorch::cuda::memory_stats(d).num_ooms >= 1);
  Storage ok(1024, Device::cuda(d));  // the device still works
  CHECK(tinytorch::cuda::memory_allocated(d) == allocated + 1024);
}

TEST_CASE("cuda_test_util DeviceArray round-trips through device memory", "[cuda][cuda_memory]") {
  const std::vector<float> x = iota_floats(129, 0.25f);
  cuda_test::DeviceArray<float> a(x, devices_under_test() - 1);
  CHECK(a.download() == x);
}

TEST_CASE("copies from several threads at once, one device each", "[cuda][cuda_memory]") {
  const int n_dev = devices_under_test();
  std::vector<int> ok(static_cast<size_t>(n_dev), 0);
  std::vector<std::thread> threads;
  for (int d = 0; d < n_dev; ++d) {
    threads.emplace_back([d, &ok] {
      const std::vector<float> x = iota_floats(777, static_cast<float>(d));
      for (int i = 0; i < 50; ++i) {
        Storage s(x.size() * sizeof(float), Device::cuda(d));
        rt::memcpy_h2d(s.data(), x.data(), x.size() * sizeof(float));
        std::vector<float> y(x.size());
        rt::memcpy_d2h(y.data(), s.data(), y.size() * sizeof(float));
        if (y == x) ++ok[static_cast<size_t>(d)];
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int d = 0; d < n_dev; ++d) CHECK(ok[static_cast<size_t>(d)] == 50);
}

#if TINYTORCH_CUDA_SIM

namespace {
// True when reading *p in a child process kills the child with SIGSEGV. The child restores the
// default SIGSEGV action first, so that a handler installed by Catch2 or a sanitizer
// (AddressSanitizer installs one) reports nothing and the kernel's signal reaches the parent; it
// also turns core dumps off for this expected crash.
bool host_read_dies_of_sigsegv(const volatile float* p) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGSEGV, &dfl, nullptr);
    const float v = *p;  // faults here when protected
    (void)v;
    _exit(10);  // reached only if the read did not fault
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO("child status " << status);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}
}  // namespace

TEST_CASE("simulator: host code reading device memory outside a kernel or copy dies of SIGSEGV",
          "[cuda][cuda_memory][sim]") {
  if (!rt::sim::memory_protected()) {
    WARN("TINYTORCH_SIM_UNPROTECTED is set: device memory is readable from the host");
    return;
  }
  Storage s(sizeof(float) * 4, Device::cuda(0));
  const std::vector<float> x = {1.5f, 2.5f, 3.5f, 4.5f};
  rt::memcpy_h2d(s.data(), x.data(), sizeof(float) * 4);
  const volatile float* p = static_cast<const volatile float*>(s.data());

  // Inside a scope (what the launcher opens around a kernel) the host may read it.
  {
    rt::sim::DeviceAccessScope scope;
    CHECK(p[2] == 3.5f);
    {
      rt::sim::DeviceAccessScope nested;  // scopes nest
      CHECK(p[3] == 4.5f);
    }
    CHECK(p[0] == 1.5f);  // still open after the inner one closed
  }

  // Outside every scope a host read must fault, as a host read of a GPU pointer does.
  CHECK(host_read_dies_of_sigsegv(p + 1));

  // A block allocated while a scope is open is accessible then, and protected once the scope closes.
  const int other = 1 % rt::device_count();
  void* before = rt::raw_malloc(0, 64);
  void* inside = nullptr;
  {
    rt::sim::DeviceAccessScope scope;
    inside = rt::raw_malloc(other, 64);
    static_cast<volatile float*>(inside)[0] = 7.0f;
    static_cast<volatile float*>(before)[0] = 8.0f;
    CHECK(static_cast<volatile float*>(inside)[0] == 7.0f);
    CHECK_FALSE(host_read_dies_of_sigsegv(static_cast<const volatile float*>(inside)));  // the scope is open
  }
  CHECK(host_read_dies_of_sigsegv(static_cast<const volatile float*>(inside)));
  CHECK(host_read_dies_of_sigsegv(static_cast<const volatile float*>(before)));
  float back[2] = {0.0f, 0.0f};
  rt::memcpy_d2h(&back[0], inside, sizeof(float));
  rt::memcpy_d2h(&back[1], before, sizeof(float));
  CHECK(back[0] == 7.0f);
  CHECK(back[1] == 8.0f);
  rt::raw_free(other, inside);
  rt::raw_free(0, before);

  // A copy still reads the storage.
  std::vector<float> y(4);
  rt::memcpy_d2h(y.data(), s.data(), sizeof(float) * 4);
  CHECK(y == x);
}

TEST_CASE("simulator: copies check that the device side is device memory, in bounds", "[cuda][cuda_memory][sim]") {
  std::vector<float> host(8, 0.0f), other(8, 0.0f);
  Storage s(8 * sizeof(float), Device::cuda(0));
  CHECK(rt::sim::device_of(s.data(), 8 * sizeof(float)) == 0);
  CHECK(rt::sim::device_of(host.data(), 4) == -1);
  CHECK_THROWS_WITH(rt::memcpy_h2d(host.data(), other.data(), 32), Contains("cudaMemcpy(HostToDevice) failed: invalid argument"));
  CHECK_THROWS_WITH(rt::memcpy_d2h(host.data(), other.data(), 32), Contains("cudaMemcpy(DeviceToHost) failed: invalid argument"));
  CHECK_THROWS_WITH(rt::memcpy_d2d(s.data(), host.data(), 32), Contains("cudaMemcpy(DeviceToDevice) failed: invalid argument"));
  // One float past the end of a raw block (the rest of its page would not fault). Bounds are those of
  // the raw block: a Storage's block is its size class (512 bytes at least), so Storage overruns
  // within the class go unnoticed.
  void* raw = rt::raw_malloc(0, 32);
  CHECK_NOTHROW(rt::memcpy_d2h(host.data(), raw, 32));
  CHECK_THROWS_WITH(rt::memcpy_d2h(host.data(), static_cast<float*>(raw) + 1, 32), Contains("src"));
  rt::raw_free(0, raw);
  CHECK_THROWS_WITH(rt::raw_free(1, s.data()), Contains("cudaFree"));  // s lives on cuda:0
}

TEST_CASE("simulator: raw allocations beyond a device's capacity fail with CUDA's 'out of memory'",
          "[cuda][cuda_memory][sim]") {
  const size_t cap = rt::sim::device_capacity_bytes();
  CHECK_THROWS_AS(rt::raw_malloc(0, cap + 1), rt::OutOfMemoryError);
  CHECK_THROWS_WITH(rt::raw_malloc(0, cap + 1), Contains("failed: out of memory"));
  CHECK_THROWS_WITH(rt::raw_malloc(0, SIZE_MAX), Contains("out of memory"));
  const size_t count = rt::raw_malloc_count();
  const int d = devices_under_test() - 1;
  void* p = rt::raw_malloc(d, 100);
  CHECK(rt::raw_malloc_count() == count + 1);
  rt::raw_free(d, p);
  size_t free_bytes = 0, total = 0;
  rt::mem_get_info(0, &free_bytes, &total);
  CHECK(total == cap);
  CHECK(free_bytes <= total);
}

TEST_CASE("simulator: environment variables are validated", "[cuda][cuda_memory][sim]") {
  using rt::sim::detail::env_int;
  setenv("TT_TEST_SIM_ENV", "12", 1);
  CHECK(env_int("TT_TEST_SIM_ENV", 4, 0, 64) == 12);
  setenv("TT_TEST_SIM_ENV", "many", 1);
  CHECK_THROWS_WITH(env_int("TT_TEST_SIM_ENV", 4, 0, 64),
                    "TT_TEST_SIM_ENV must be an integer in [0, 64], got \"many\"");
  setenv("TT_TEST_SIM_ENV", "65", 1);
  CHECK_THROWS_WITH(env_int("TT_TEST_SIM_ENV", 4, 0, 64), Contains("got \"65\""));
  setenv("TT_TEST_SIM_ENV", "3x", 1);
  CHECK_THROWS(env_int("TT_TEST_SIM_ENV", 4, 0, 64));
  unsetenv("TT_TEST_SIM_ENV");
  CHECK(env_int("TT_TEST_SIM_ENV", 4, 0, 64) == 4);
}

#endif  // TINYTORCH_CUDA_SIM

// tinytorch/backend/cuda/launch.hpp — the one kernel launcher, for nvcc and for the simulator.
//
// Every kernel in backend/cuda/*.cuh is launched through
//     launch_kernel("saxpy", saxpy_kernel<float>, grid_1d(n), dim3(256), /*dynamic_smem_bytes=*/0, n, a, x, y);
// so the launch syntax, the error check and the simulator hook live in one place:
//   nvcc (TINYTORCH_WITH_CUDA && !TINYTORCH_CUDA_SIM): `kernel<<<grid, block, smem>>>(args...)` (the only
//     chevrons in tinytorch), then cudaGetLastError() is checked (a bad configuration is reported
//     here); with the environment variable TINYTORCH_CUDA_LAUNCH_BLOCKING=1 the launch also waits for
//     the kernel and checks it, so an error inside a kernel names that kernel instead of surfacing at
//     a later call (PyTorch's CUDA_LAUNCH_BLOCKING).
//   simulator (TINYTORCH_CUDA_SIM): the grid runs on the calling thread, one block at a time, the
//     threads of a block as fibers (sim.hpp), inside a sim::DeviceAccessScope (device memory is
//     readable only while a kernel or a copy runs, as on a GPU).
// Errors: tinytorch::Error("kernel '<name>' <<<(grid), (block), smem>>>: <CUDA's error string>"), in both
// modes with CUDA's wording ("invalid configuration argument" for a block of 1025 threads or a grid
// of 0 blocks).
// Kernel arguments are copied once at the launch, converted to the kernel's parameter types (as
// cudaLaunchKernel does); each thread gets its own copy. They must be trivially copyable values:
// device pointers, sizes, scalars, TT_HOST_DEVICE functor structs (no std::vector, no references).
//
// TT_DYNAMIC_SHARED(T, name): declares `T* const name`, the launch's dynamic shared memory (16-byte
// aligned). Under nvcc it is an `extern __shared__` byte array cast to T*: a typed
// `extern __shared__ T name[]` would clash between two instantiations of a template kernel with
// different T ("declaration is incompatible"), so kernels never write extern __shared__ directly.
//
// grid_1d(n, threads): the grid of a 1-D grid-stride loop over n elements: ceil(n / threads) blocks,
// at least 1 and at most kGrid1dMaxBlocks (4096 on a GPU, enough to fill any current GPU; 64 in the
// simulator, where every extra block costs fibers and a small grid makes the stride loop do real
// work in the tests). Kernels launched with it must loop:
//     for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
//
// Chapter: chapters/10-gpu-kernels.md. Reference: CUDA C++ Programming Guide, "Execution
// Configuration" and "Error Checking"; CUDA Runtime API cudaGetLastError; PyTorch's
// CUDA_LAUNCH_BLOCKING (docs: "CUDA semantics", "Asynchronous execution").
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../core/check.hpp"
#include "../../core/config.hpp"

#if TINYTORCH_CUDA_SIM
#include "sim.hpp"
#include "../../core/cuda_sim_memory.hpp"
#elif TINYTORCH_WITH_CUDA
#include <cuda_runtime.h>
#define TT_DYNAMIC_SHARED(T, name)                                  \
  extern __shared__ __align__(16) unsigned char tt_dynamic_smem_[]; \
  T* const name = reinterpret_cast<T*>(tt_dynamic_smem_)
#endif

// A CPU build (TINYTORCH_WITH_CUDA == 0) sees an empty header: there is nothing to launch, and the
// header_compiles check compiles every public header on its own.
#if TINYTORCH_WITH_CUDA
TT_NAMESPACE_BEGIN namespace backend::cuda {

#if TINYTORCH_CUDA_SIM
inline constexpr int64_t kGrid1dMaxBlocks = 64;
#else
inline constexpr int64_t kGrid1dMaxBlocks = 4096;
#endif

/// The grid for a 1-D grid-stride loop over n elements with `threads` threads per block:
/// min(max(ceil(n / threads), 1), kGrid1dMaxBlocks) blocks. Throws if threads is not in [1, 1024].
inline dim3 grid_1d(int64_t n, int threads = 256) {
  TT_CHECK(threads >= 1 && threads <= 1024, "grid_1d: threads per block must be in [1, 1024], got ", threads);
  int64_t blocks = n > 0 ? (n + threads - 1) / threads : 1;
  if (blocks > kGrid1dMaxBlocks) blocks = kGrid1dMaxBlocks;
  return dim3(static_cast<unsigned int>(blocks));
}

namespace detail {

inline std::string launch_config(const char* name, dim3 grid, dim3 block, size_t smem) {
  return ::tinytorch::detail::str_cat("kernel '", name, "' <<<(", grid.x, ",", grid.y, ",", grid.z, "), (", block.x,
                                      ",", block.y, ",", block.z, "), ", smem, ">>>: ");
}

/// TINYTORCH_CUDA_LAUNCH_BLOCKING=1: every launch waits for its kernel (read once).
inline bool launch_blocking() {
  static const bool on = [] {
    const char* env = std::getenv("TINYTORCH_CUDA_LAUNCH_BLOCKING");
    return env != nullptr && std::strcmp(env, "1") == 0;
  }();
  return on;
}

#if TINYTORCH_CUDA_SIM
/// True for a pointer to an object (not to a function): the pointer arguments the checks look at.
template <class T>
inline constexpr bool is_data_pointer_v = std::is_pointer_v<T> && !std::is_function_v<std::remove_pointer_t<T>>;
/// Whether T is a complete type (alignof needs one; a kernel may take a pointer to an opaque struct).
template <class T, class = void>
struct is_complete : std::false_type {};
template <class T>
struct is_complete<T, std::void_t<decltype(sizeof(T))>> : std::true_type {};

/// racecheck's copy of one device allocation.
struct SavedBlock {
  unsigned char* start;
  std::vector<unsigned char> bytes;
  void refresh() { std::memcpy(bytes.data(), start, bytes.size()); }
  void restore() const { std::memcpy(start, bytes.data(), bytes.size()); }
};
inline std::vector<SavedBlock> save_device_memory() {
  std::vector<SavedBlock> out;
  for (const auto& [start, bytes] : sim::detail::Memory::get().live()) {
    SavedBlock b{reinterpret_cast<unsigned char*>(start), std::vector<unsigned char>(bytes)};
    b.refresh();
    out.push_back(std::move(b));
  }
  return out;
}
/// Calls f(index, address, alignment) for every non-null pointer-to-object argument (index from 1;
/// alignment 1 for void* and pointers to incomplete types): the walk both launch-time checks share.
template <class F, class... P>
void for_each_pointer_argument(F&& f, const P&... params) {
  int index = 0;
  const auto one = [&](const auto& v) {
    ++index;
    using T = std::decay_t<decltype(v)>;
    if constexpr (is_data_pointer_v<T>) {
      if (v == nullptr) return;
      using Pointee = std::remove_cv_t<std::remove_pointer_t<T>>;
      size_t align = 1;
      if constexpr (!std::is_void_v<Pointee> && is_complete<Pointee>::value) align = alignof(Pointee);
      f(index, const_cast<const void*>(static_cast<const volatile void*>(v)), align);
    }
  };
  (one(params), ...);
}
template <class... P>
void refuse_host_pointers(const char* name, dim3 grid, dim3 block, size_t smem, const P&... params) {
  for_each_pointer_argument(
      [&](int index, const void* addr, size_t) {
        TT_CHECK(sim::device_of(addr, 0) >= 0, launch_config(name, grid, block, smem), "racecheck: argument ", index,
                 " = ", addr, " is not simulated device memory (a host pointer?): racecheck runs the launch twice ",
                 "and can restore only device memory in between");
      },
      params...);
}
/// "" when every block holds what `expected` (the documented order's result) holds, else the first
/// differing byte, its block and both values.
inline std::string first_difference(const std::vector<SavedBlock>& expected) {
  for (const SavedBlock& b : expected) {
    for (size_t i = 0; i < b.bytes.size(); ++i) {
      if (b.start[i] == b.bytes[i]) continue;
      std::string word;
      const size_t w = i / 4 * 4;  // the aligned 4-byte word holding it, read as float32 and as int32
      if (w + 4 <= b.bytes.size()) {
        float f_usual, f_rev;
        int32_t i_usual, i_rev;
        std::memcpy(&f_usual, &b.bytes[w], 4);
        std::memcpy(&f_rev, b.start + w, 4);
        std::memcpy(&i_usual, &b.bytes[w], 4);
        std::memcpy(&i_rev, b.start + w, 4);
        word = ::tinytorch::detail::str_cat(" (the 4 bytes at offset ", w, ": ", f_usual, " and ", f_rev,
                                            " as float32, ", i_usual, " and ", i_rev, " as int32)");
      }
      return ::tinytorch::detail::str_cat(
          "the result depends on the order the threads run in: byte ", i, " of the ", b.bytes.size(),
          "-byte allocation at ", static_cast<const void*>(b.start), " is 0x", std::hex, int{b.bytes[i]},
          " in the usual order (blocks and threads from 0 up) and 0x", int{b.start[i]}, std::dec,
          " in reverse order", word,
          ". Two threads (or blocks) reach that location without a __syncthreads() or a warp operation "
          "between them; on a GPU either may come first.");
    }
  }
  return std::string();
}

/// The simulator's launch-time memcheck (TINYTORCH_SIM_CHECK=memcheck): every pointer argument must be null or point into
/// (or one past the end of) a live block of simulated device memory, all of them on one device, and
/// be aligned for its type (a float4* to 16 bytes). A GPU would fault on such a pointer only when a
/// thread dereferences it (cudaErrorIllegalAddress, cudaErrorMisalignedAddress); host memory does not
/// fault in the simulator, so the launch checks it. Pointers inside struct arguments are not seen.
template <class... P>
void check_pointer_arguments(const char* name, dim3 grid, dim3 block, size_t smem, const P&... params) {
  int first_device = -1, first_index = -1;
  for_each_pointer_argument(
      [&](int index, const void* addr, size_t align) {
        TT_CHECK(reinterpret_cast<uintptr_t>(addr) % align == 0, launch_config(name, grid, block, smem),
                 "memcheck: argument ", index, " = ", addr, " is not aligned to ", align,
                 " bytes for its type (a misaligned access: cudaErrorMisalignedAddress on a GPU)");
        const int d = sim::device_of(addr, 0);
        if (d < 0) {
          const std::string near = sim::detail::Memory::get().describe(reinterpret_cast<uintptr_t>(addr));
          TT_CHECK(false, launch_config(name, grid, block, smem), "memcheck: argument ", index, " = ", addr,
                   " is not simulated device memory: ",
                   near.empty() ? std::string("a host pointer or a wild one") : near,
                   near.find("freed ") != std::string::npos ? " (use after free)" : "",
                   " (on a GPU the kernel faults with an illegal memory access)");
        }
        if (first_device < 0) {
          first_device = d;
          first_index = index;
        }
        TT_CHECK(d == first_device, launch_config(name, grid, block, smem), "memcheck: argument ", index,
                 " is memory of cuda:", d, " but argument ", first_index, " of cuda:", first_device,
                 " (a kernel runs on one device and cannot reach another's memory without peer access)");
      },
      params...);
}
#endif

}  // namespace detail

/// Launches `kernel` over `grid` x `block` threads with `dynamic_smem_bytes` of dynamic shared
/// memory; `name` appears in every error. args are converted to the kernel's parameter types.
/// Throws tinytorch::Error with CUDA's error string on a bad configuration (both modes), on an error
/// in the kernel (simulator; nvcc with TINYTORCH_CUDA_LAUNCH_BLOCKING=1), and in the simulator on a
/// barrier not every thread reaches.
template <class... KArgs, class... Args>
void launch_kernel(const char* name, void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t dynamic_smem_bytes,
                   Args&&... args) {
  static_assert(sizeof...(KArgs) == sizeof...(Args), "launch_kernel: wrong number of kernel arguments");
  static_assert(((std::is_trivially_copyable_v<KArgs> && !std::is_reference_v<KArgs>)&&...),
                "launch_kernel: kernel parameters must be trivially copyable values (pointers, scalars, structs)");
#if TINYTORCH_CUDA_SIM
  // The parameters, converted once as cudaLaunchKernel does; every thread calls the kernel with a copy.
  struct Call {
    void (*kernel)(KArgs...);
    std::tuple<KArgs...> params;
  } call{kernel, std::tuple<KArgs...>(std::forward<Args>(args)...)};
  void (*body)(void*) = [](void* p) {
    Call* c = static_cast<Call*>(p);
    std::apply(c->kernel, c->params);
  };
  const bool memcheck = sim::detail::checks().memcheck;
  if (memcheck) {
    std::apply([&](const auto&... p) { detail::check_pointer_arguments(name, grid, block, dynamic_smem_bytes, p...); },
               call.params);
  }
  [[maybe_unused]] sim::DeviceAccessScope device_memory_readable;
  if (sim::detail::checks().racecheck) {
    // Run, save the result, restore the memory as it was, run in reverse order, compare. All device
    // memory is saved (a pointer inside a struct argument reaches it too); host memory cannot be,
    // so a host pointer argument is refused (the second run would apply the kernel twice).
    [[maybe_unused]] sim::RacecheckLock racecheck_lock;
    std::apply([&](const auto&... p) { detail::refuse_host_pointers(name, grid, block, dynamic_smem_bytes, p...); },
               call.params);
    std::vector<detail::SavedBlock> before = detail::save_device_memory();
    const uint64_t atomics = sim::scheduler().atomics();
    sim::run_grid(name, grid, block, dynamic_smem_bytes, body, &call);
    if (sim::scheduler().atomics() == atomics) {  // with atomics the order may rightly change the result
      std::vector<detail::SavedBlock> forward = before;
      for (detail::SavedBlock& b : forward) b.refresh();
      for (const detail::SavedBlock& b : before) b.restore();
      try {
        sim::run_grid(name, grid, block, dynamic_smem_bytes, body, &call, /*reverse=*/true);
      } catch (const Error& e) {
        throw Error(::tinytorch::detail::str_cat(e.what(), " (in racecheck's second run, blocks and threads in ",
                                                 "reverse order: the first run, in the usual order, passed)"));
      }
      const std::string diff = detail::first_difference(forward);
      TT_CHECK(diff.empty(), detail::launch_config(name, grid, block, dynamic_smem_bytes), "racecheck: ", diff);
    }
  } else {
    sim::run_grid(name, grid, block, dynamic_smem_bytes, body, &call);
  }
  if (memcheck) {
    const std::string damage = sim::detail::Memory::get().check_canaries();
    TT_CHECK(damage.empty(), detail::launch_config(name, grid, block, dynamic_smem_bytes), "memcheck: ", damage);
  }
#else
  kernel<<<grid, block, dynamic_smem_bytes>>>(std::forward<Args>(args)...);
  cudaError_t err = cudaGetLastError();
  TT_CHECK(err == cudaSuccess, detail::launch_config(name, grid, block, dynamic_smem_bytes), cudaGetErrorString(err));
  if (detail::launch_blocking()) {
    err = cudaDeviceSynchronize();
    TT_CHECK(err == cudaSuccess, detail::launch_config(name, grid, block, dynamic_smem_bytes),
             cudaGetErrorString(err), " (while running the kernel; TINYTORCH_CUDA_LAUNCH_BLOCKING=1)");
  }
#endif
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cuda
#endif  // TINYTORCH_WITH_CUDA

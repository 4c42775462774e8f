// tinytorch/backend/cuda/launch.hpp — the one kernel launcher, for nvcc and for the simulator.
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
// TT_DYNAMIC_SHARED(T, name): declares `T* const name`, the launch's dynamic shared memory (16-byte
// aligned). Under nvcc it is an `extern __shared__` byte array cast to T*: a typed
// `extern __shared__ T name[]` would clash between two instantiations of a template kernel with
// different T ("declaration is incompatible"), so kernels never write extern __shared__ directly.
// grid_1d(n, threads): the grid of a 1-D grid-stride loop over n elements: ceil(n / threads) blocks,
// at least 1 and at most kGrid1dMaxBlocks (4096 on a GPU, enough to fill any current GPU; 64 in the
// simulator, where every extra block costs fibers and a small grid makes the stride loop do real
// work in the tests). Kernels launched with it must loop:
//     for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
// Chapter: chapters/10-gpu-kernels.md. Reference: CUDA C++ Programming Guide, "Execution
// Configuration" and "Error Checking"; CUDA Runtime API cudaGetLastError; PyTorch's
// CUDA_LAUNCH_BLOCKING (docs: "CUDA semantics", "Asynchronous execution").
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"

#if TINYTORCH_CUDA_SIM
#include "tinytorch/backend/cuda/sim.hpp"
#include "tinytorch/backend/cuda/sim_shared_size.hpp"
#include "tinytorch/core/cuda_sim_memory.hpp"
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

/// The saved bytes of one device allocation (racecheck and initcheck run a launch more than once).
struct SavedBlock {
  unsigned char* start;
  std::vector<unsigned char> bytes;
  std::vector<unsigned char>* written;  // initcheck's table (1: a copy or a kernel wrote the byte), else null
  void refresh() { std::memcpy(bytes.data(), start, bytes.size()); }
  void restore() const { std::memcpy(start, bytes.data(), bytes.size()); }
};
inline std::vector<SavedBlock> save_device_memory() {
  std::vector<SavedBlock> out;
  for (const sim::detail::Memory::LiveBlock& live : sim::detail::Memory::get().live()) {
    SavedBlock b{live.start, std::vector<unsigned char>(live.bytes), live.written};
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
        TT_CHECK(sim::device_of(addr, 0) >= 0, launch_config(name, grid, block, smem),
                 sim::detail::checks().racecheck ? "racecheck" : "initcheck", ": argument ", index, " = ", addr,
                 " is not simulated device memory (a host pointer?): racecheck and initcheck run the launch more ",
                 "than once and can restore only device memory in between");
      },
      params...);
}
/// "byte i of the N-byte allocation at P is 0xAA <a_label> and 0xBB <b_label> (the 4 bytes at offset w:
/// ... as float32, ... as int32)": `a` and `b` are two versions of the allocation's bytes.
inline std::string describe_difference(const SavedBlock& blk, size_t i, const unsigned char* a, const char* a_label,
                                       const unsigned char* b, const char* b_label) {
  std::string word;
  const size_t w = i / 4 * 4;  // the aligned 4-byte word holding it, read as float32 and as int32
  if (w + 4 <= blk.bytes.size()) {
    float fa, fb;
    int32_t ia, ib;
    std::memcpy(&fa, a + w, 4);
    std::memcpy(&fb, b + w, 4);
    std::memcpy(&ia, a + w, 4);
    std::memcpy(&ib, b + w, 4);
    word = ::tinytorch::detail::str_cat(" (the 4 bytes at offset ", w, ": ", fa, " and ", fb, " as float32, ", ia,
                                        " and ", ib, " as int32)");
  }
  return ::tinytorch::detail::str_cat("byte ", i, " of the ", blk.bytes.size(), "-byte allocation at ",
                                      static_cast<const void*>(blk.start), " is 0x", std::hex, int{a[i]}, " ",
                                      a_label, " and 0x", int{b[i]}, std::dec, " ", b_label, word);
}
/// racecheck: "" when every block holds what `expected` (the documented order's result) holds, else
/// the first differing byte and both values.
inline std::string first_difference(const std::vector<SavedBlock>& expected) {
  for (const SavedBlock& b : expected)
    for (size_t i = 0; i < b.bytes.size(); ++i)
      if (b.start[i] != b.bytes[i])
        return ::tinytorch::detail::str_cat(
            "the result depends on the order the threads run in: ",
            describe_difference(b, i, b.bytes.data(), "in the usual order (blocks and threads from 0 up)", b.start,
                                "in reverse order"),
            ". Two threads (or blocks) touch the same memory without a __syncthreads() or a warp operation "
            "between them: this byte, or memory it was computed from (shared memory, say); on a GPU either may "
            "come first.");
  return std::string();
}

/// initcheck: gives every allocation its saved bytes back, then overwrites each byte never written
/// (by a copy or a kernel) with its second value: in every allocation (`only` == kAll), in
/// allocation `only`, or nowhere (kNone).
inline constexpr int kAll = -1, kNone = -2;
inline void restore_with_second_fill(const std::vector<SavedBlock>& before, int only) {
  for (size_t k = 0; k < before.size(); ++k) {
    const SavedBlock& b = before[k];
    b.restore();
    if (only != kAll && static_cast<size_t>(only) != k) continue;
    for (size_t i = 0; i < b.bytes.size(); ++i)
      if (!(*b.written)[i])
        b.start[i] = sim::initcheck_second_byte(reinterpret_cast<uintptr_t>(b.start + i), b.bytes[i]);
  }
}
/// initcheck: compares the first run's result (`first`) with device memory now, after a run in which
/// the unwritten bytes of allocation `only` (all: kAll) held their second value. A byte never
/// written that holds its first value in the first run and its second value now is still unwritten;
/// any other byte must be equal in both runs. Returns "" or the first byte whose value depends on
/// memory never written (its address in *where); with `mark`, every byte a run wrote becomes
/// written.
inline std::string initcheck_difference(const std::vector<SavedBlock>& before, const std::vector<SavedBlock>& first,
                                        int only, bool mark, const unsigned char** where = nullptr) {
  std::string found;
  for (size_t k = 0; k < before.size(); ++k) {
    const SavedBlock &b0 = before[k], &r1 = first[k];
    std::vector<unsigned char>& written = *b0.written;
    const bool filled = only == kAll || static_cast<size_t>(only) == k;
    for (size_t i = 0; i < b0.bytes.size(); ++i) {
      const unsigned char now = b0.start[i];
      if (filled && !written[i] && r1.bytes[i] == b0.bytes[i] &&
          now == sim::initcheck_second_byte(reinterpret_cast<uintptr_t>(b0.start + i), b0.bytes[i]))
        continue;  // neither run wrote it
      if (r1.bytes[i] != now && found.empty()) {
        if (where) *where = b0.start + i;
        found = describe_difference(b0, i, r1.bytes.data(), "when memory never written holds its fill (0xFF bytes)",
                                    b0.start, "when it holds other bytes");
        if (!mark) return found;
      }
      // Written by the kernel (a byte depending on unwritten memory too: it is reported once, not
      // again by every later kernel that reads it).
      if (mark) written[i] = 1;
    }
  }
  return found;
}
/// How run_checked runs the grid once: sim::run_grid with these options.
using RunGrid = std::function<void(const sim::RunOptions&)>;

/// initcheck, after a result that depends on memory never written: runs the launch again with the
/// unwritten bytes of one allocation at a time changed (at most 32 allocations), then with only
/// shared memory changed, and names those that change the result ("" when none does).
inline std::string initcheck_sources(const std::vector<SavedBlock>& before, const std::vector<SavedBlock>& first,
                                     bool has_shared, const sim::RunOptions& options, const RunGrid& run) {
  const auto changes = [&](int only, bool shared_second) {
    restore_with_second_fill(before, only);
    sim::RunOptions o = options;
    o.second_fill = shared_second;
    try {
      run(o);
    } catch (const Error&) {
      return true;
    }
    return !initcheck_difference(before, first, only, false).empty();
  };
  std::string found;
  int tried = 0;
  for (size_t k = 0; k < before.size(); ++k) {
    const std::vector<unsigned char>& w = *before[k].written;
    size_t n = 0, lo = w.size(), hi = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      if (w[i]) continue;
      ++n;
      lo = std::min(lo, i);
      hi = i;
    }
    if (n == 0) continue;
    if (++tried > 32) {
      found += "; further allocations with unwritten bytes were not tried";
      break;
    }
    if (changes(static_cast<int>(k), false))
      found += ::tinytorch::detail::str_cat(found.empty() ? "" : "; ", "the ", n, " unwritten bytes (offsets ", lo,
                                            "..", hi, ") of the ", w.size(), "-byte allocation at ",
                                            static_cast<const void*>(before[k].start));
  }
  if (has_shared && changes(kNone, true))
    found += ::tinytorch::detail::str_cat(found.empty() ? "" : "; ",
                                          "shared memory (its __shared__ arrays or TT_DYNAMIC_SHARED), which starts "
                                          "undefined in every block");
  return found;
}

/// Runs a launch under racecheck and/or initcheck; `run(o)` runs the grid once with `options`
/// changed as each run needs (RunOptions, sim.hpp).
///   1. The usual order: its result is what the launch leaves in device memory.
///   2. initcheck: again from the same memory, every byte never written (and shared memory) holding
///      another value: a byte written differently depends on memory never written (a fresh
///      cudaMalloc block, shared memory), and the launch throws, naming which and who wrote it.
///   3. racecheck, unless the first run used atomics: again in reverse order (blocks and threads):
///      a byte that differs depends on the order of two unsynchronised threads.
/// The later runs may make at most 4x the first run's thread switches (+100000): a loop bound read
/// from memory never written could otherwise make initcheck's second run endless.
inline void run_checked(const char* name, dim3 grid, dim3 block, size_t smem, bool has_shared,
                        const sim::RunOptions& options, const RunGrid& run) {
  const sim::detail::Checks& checks = sim::detail::checks();
  const std::vector<SavedBlock> before = save_device_memory();
  const uint64_t atomics = sim::scheduler().atomics();
  run(options);
  const bool used_atomics = sim::scheduler().atomics() != atomics;
  sim::RunOptions again = options;
  again.max_switches = 4 * sim::scheduler().switches() + 100000;
  // A later run that fails where the first passed: its error says which run and what that means.
  const auto run_later = [&](const sim::RunOptions& o, const char* meaning) {
    try {
      run(o);
    } catch (const Error& e) {
      throw Error(::tinytorch::detail::str_cat(e.what(), " (in ", o.phase, ": ", meaning, ")"));
    }
  };
  std::vector<SavedBlock> first = before;
  for (SavedBlock& b : first) b.refresh();
  if (checks.initcheck) {
    restore_with_second_fill(before, kAll);
    sim::RunOptions second = again;
    second.second_fill = true;
    second.phase = "initcheck's second run, where memory never written holds other bytes than 0xFF";
    run_later(second, "the first run passed, so what the kernel does depends on memory never written");
    const unsigned char* bad = nullptr;
    const std::string diff = initcheck_difference(before, first, kAll, true, &bad);
    if (!diff.empty()) {
      const std::string sources = initcheck_sources(before, first, has_shared, again, run);
      // Which thread writes that byte: run again watching it (a write of the value it already
      // holds is not seen, so with the second fill first, then the first).
      std::string writer;
      for (int fill = 2; fill >= 1 && writer.empty(); --fill) {
        restore_with_second_fill(before, fill == 2 ? kAll : kNone);
        sim::RunOptions watch = again;
        watch.second_fill = fill == 2;
        watch.watch = bad;
        try {
          run(watch);
          writer = sim::scheduler().writer();
        } catch (const Error&) {
        }
      }
      for (const SavedBlock& b : first) b.restore();
      TT_CHECK(false, launch_config(name, grid, block, smem),
               "initcheck: the kernel read memory never written: ",
               sources.empty() ? std::string("which was not found (the runs with one allocation changed at a time "
                                             "all gave the first result; a __device__ variable the kernel updates "
                                             "also looks like this)")
                               : sources,
               "; what it wrote depends on it: ", diff,
               writer.empty() ? std::string() : ", written by " + writer,
               ". On a GPU such memory holds whatever was there before (compute-sanitizer --tool initcheck reports "
               "it for global memory: \"Uninitialized __global__ memory read\").");
    }
    for (const SavedBlock& b : first) b.restore();
  }
  if (checks.racecheck && !used_atomics) {  // with atomics the order may rightly change the result
    for (const SavedBlock& b : before) b.restore();
    sim::RunOptions reverse = again;
    reverse.reverse = true;
    reverse.phase = "racecheck's second run, blocks and threads in reverse order";
    run_later(reverse, "the first run, in the usual order, passed");
    const std::string diff = first_difference(first);
    TT_CHECK(diff.empty(), launch_config(name, grid, block, smem), "racecheck: ", diff);
  }
}

/// The shared-memory limits nvcc and the CUDA runtime impose: at most 48 KiB of static __shared__
/// arrays per kernel (nvcc refuses to build more: ptxas "uses too much shared data"), and static
/// plus dynamic at most 48 KiB without cudaFuncSetAttribute's opt-in (the launch fails with "invalid
/// argument": cudaFuncAttributeMaxDynamicSharedMemorySize is 48 KiB less the static part by
/// default). The static size is read from the program's symbol table (sim_shared_size.hpp); when
/// it cannot be (a stripped program) only the dynamic part is checked, by sim::run_grid.
inline void check_shared_memory(const char* name, dim3 grid, dim3 block, size_t smem, long long static_bytes) {
  if (static_bytes < 0) return;
  const long long limit = static_cast<long long>(sim::kMaxDynamicSharedBytes);
  TT_CHECK(static_bytes <= limit, launch_config(name, grid, block, smem), "its static __shared__ arrays take ",
           static_bytes, " bytes, more than the ", limit, " a kernel may declare: nvcc refuses to build it (ptxas ",
           "error: Entry function uses too much shared data (0x", std::hex, static_bytes, " bytes, 0x", limit,
           " max)); use dynamic shared memory with cudaFuncSetAttribute's opt-in for more");
  TT_CHECK(static_bytes + static_cast<long long>(smem) <= limit, launch_config(name, grid, block, smem),
           "invalid argument (", static_bytes, " bytes of static __shared__ arrays plus ", smem,
           " of dynamic shared memory is above the ", limit, " a block may use without cudaFuncSetAttribute's opt-in)");
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
  // The kernel's static __shared__ arrays: their size is checked, and they are filled for every block.
  const sim::detail::StaticShared shared = sim::detail::static_shared_of(reinterpret_cast<const void*>(kernel));
  detail::check_shared_memory(name, grid, block, dynamic_smem_bytes, shared.bytes);
  sim::RunOptions options;
  options.static_shared = sim::detail::shared_var_addresses(shared);
  const bool memcheck = sim::detail::checks().memcheck;
  if (memcheck) {
    std::apply([&](const auto&... p) { detail::check_pointer_arguments(name, grid, block, dynamic_smem_bytes, p...); },
               call.params);
  }
  [[maybe_unused]] sim::DeviceAccessScope device_memory_readable;
  if (sim::detail::checks().racecheck || sim::detail::checks().initcheck) {
    // Run more than once (run_checked). All device memory is saved (a pointer inside a struct
    // argument reaches it too); host memory cannot be, so a host pointer argument is refused.
    [[maybe_unused]] sim::ReplayLock replay_lock;
    std::apply([&](const auto&... p) { detail::refuse_host_pointers(name, grid, block, dynamic_smem_bytes, p...); },
               call.params);
    const bool has_shared = dynamic_smem_bytes > 0 || !options.static_shared.empty();
    detail::run_checked(name, grid, block, dynamic_smem_bytes, has_shared, options, [&](const sim::RunOptions& o) {
      sim::run_grid(name, grid, block, dynamic_smem_bytes, body, &call, o);
    });
  } else {
    sim::run_grid(name, grid, block, dynamic_smem_bytes, body, &call, options);
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

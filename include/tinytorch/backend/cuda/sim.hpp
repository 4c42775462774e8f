// tinytorch/backend/cuda/sim.hpp — the kernel simulator: CUDA kernels run on the CPU, one block at a
// time, the threads of a block as cooperative fibers.
//
// With TINYTORCH_CUDA_SIM=1 (g++/clang++) the backend/cuda/*.cuh sources that nvcc compiles for a
// GPU compile as host code against this header, which defines what CUDA C++ adds to C++: the
// keywords (__global__, __shared__, ...), the built-ins threadIdx/blockIdx/blockDim/gridDim and
// warpSize (thread_local variables: gdb prints them and conditions on them), the vector types,
// __syncthreads() (and _count/_and/_or), the warp functions (__syncwarp, __shfl*_sync, votes,
// __activemask), atomics, __ldg, bit casts and the fast-math intrinsics. Kernels are launched only
// through launch_kernel (launch.hpp), which calls sim::run_grid below.
//
// Scheduling (fixed, so a kernel's output never depends on timing; tests/test_cuda_sim.cpp checks
// it): blocks run one after another on the calling host thread, blockIdx.x fastest; each CUDA
// thread is a fiber (its own stack and registers, switched by a few lines of x86-64 assembly or
// swapcontext elsewhere); passes over the threads in linear order run each ready thread until it
// ends or waits at __syncthreads() or a warp operation. Nothing else switches threads. A barrier
// opens when every thread that has not returned waits at the same one (synccheck: two different
// __syncthreads() calls are an error naming both lines); what can never complete is an error naming
// the kernel, block and thread, never a hang. __shared__ is static thread_local, refilled with 0xFF
// bytes for every block.
//
// Sections: 1 keywords, 2 built-ins, 3 the context switch, 4 the scheduler (run_grid, run_block),
// 5 device functions (warp operations, atomics), 6 the watchdog and the fault handler, 7 sanitizer
// reports that name the CUDA thread. Limits are
// CUDA's defaults (block <= 1024 threads, grid, 48 KiB of shared memory), and a launch beyond them
// throws with CUDA's wording. The checks (memcheck, racecheck, synccheck, initcheck), what is not
// simulated (timing, coalescing, bank conflicts, streams, spin-waiting) and the cost of a switch:
// chapter 10.5 and 10.7, and docs/architecture.md. Reference: numba's CUDA simulator; the CUDA C++
// Programming Guide (built-ins, synchronization, warp vote and shuffle, atomics); PTX's shfl.sync.
// Chapter: chapters/10-gpu-kernels.md.
#pragma once

#include "tinytorch/core/config.hpp"

#if defined(__CUDACC__)
#error "backend/cuda/sim.hpp is the kernel simulator for g++/clang++ (TINYTORCH_CUDA_SIM=1); nvcc has the real CUDA"
#endif
// In a CPU build (no TINYTORCH_CUDA_SIM) this header is empty, so that the header_compiles check,
// which compiles every public header on its own, passes; kernels include it through launch.hpp.
#if TINYTORCH_CUDA_SIM

#include <dlfcn.h>
#include <math.h>  // the C names (expf, fmaxf, ...) in the global namespace, as CUDA has them
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/cuda_sim_memory.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define TT_SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TT_SIM_ASAN 1
#endif
#endif
#ifndef TT_SIM_ASAN
#define TT_SIM_ASAN 0
#endif
#if TT_SIM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#define TT_SIM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TT_SIM_TSAN 1
#endif
#endif
#ifndef TT_SIM_TSAN
#define TT_SIM_TSAN 0
#endif
#if TT_SIM_TSAN
#include <sanitizer/tsan_interface.h>
extern "C" void __tsan_ignore_thread_begin();  // exported by the runtime, not declared in its header
extern "C" void __tsan_ignore_thread_end();
#endif

// ============================================================================================
// 1. CUDA's keywords. Function qualifiers vanish (everything is host code); __shared__ variables are
//    per host thread and shared by the block's fibers.
// ============================================================================================
#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline
#define __shared__ static thread_local
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

/// TT_DYNAMIC_SHARED(T, name): `T* const name` points at the launch's dynamic shared memory
/// (launch_kernel's dynamic_smem_bytes, 16-byte aligned, fresh per block; nullptr when the launch
/// asked for 0 bytes). Under nvcc launch.hpp defines it as an `extern __shared__` byte array.
#define TT_DYNAMIC_SHARED(T, name) \
  T* const name = reinterpret_cast<T*>(::tinytorch::backend::cuda::sim::dynamic_shared_memory())

// ============================================================================================
// 2. Vector types, built-in variables, warpSize (global namespace, as in CUDA).
// ============================================================================================
struct uint3 {
  unsigned int x, y, z;
};
/// dim3: unspecified components are 1, as in CUDA.
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};
struct alignas(8) float2 {
  float x, y;
};
struct float3 {
  float x, y, z;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float2 make_float2(float x, float y) { return float2{x, y}; }
inline float3 make_float3(float x, float y, float z) { return float3{x, y, z}; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }

inline constexpr int warpSize = 32;

// The built-in variables: real variables (gdb can print them), set by the scheduler before it
// switches into a thread. thread_local: each host thread runs its own launches. Device code must
// only read them.
inline thread_local uint3 threadIdx{0, 0, 0};
inline thread_local uint3 blockIdx{0, 0, 0};
inline thread_local dim3 blockDim{1, 1, 1};
inline thread_local dim3 gridDim{1, 1, 1};

// ============================================================================================
// 3. The context switch: leave one stack, continue on another where it left off.
//    On x86-64 a few lines of assembly: push the six registers a called function must preserve
//    (System V ABI: rbp, rbx, r12-r15) and the SSE/x87 control words on the old stack, store the
//    stack pointer, load the other one, pop the same things, `ret` into where the other side
//    called the switch (or, the first time, into the fiber's entry function). Everywhere else, and
//    with -fcf-protection (whose shadow stacks forbid a `ret` to somewhere that was not called),
//    POSIX swapcontext does the same job, plus a sigprocmask system call per switch (~10x slower).
//    Define TT_SIM_UCONTEXT=1 to force the portable path.
// ============================================================================================
#if defined(__x86_64__) && !defined(__CET__) && !(defined(TT_SIM_UCONTEXT) && TT_SIM_UCONTEXT)
#define TT_SIM_ASM_SWITCH 1
// void tt_sim_switch_stack(void** save_sp /* rdi */, void* load_sp /* rsi */). A weak symbol: every
// translation unit that includes this header defines it, the linker keeps one.
__asm__(
    ".pushsection .text\n"
    ".weak tt_sim_switch_stack\n"
    ".type tt_sim_switch_stack, @function\n"
    "tt_sim_switch_stack:\n"
    "  pushq %rbp\n"
    "  pushq %rbx\n"
    "  pushq %r12\n"
    "  pushq %r13\n"
    "  pushq %r14\n"
    "  pushq %r15\n"
    "  subq $8, %rsp\n"
    "  stmxcsr (%rsp)\n"     // SSE rounding mode and exception masks
    "  fnstcw 4(%rsp)\n"     // x87 control word
    "  movq %rsp, (%rdi)\n"  // *save_sp = rsp: this side can be resumed later
    "  movq %rsi, %rsp\n"    // rsp = load_sp: from here on we are on the other stack
    "  ldmxcsr (%rsp)\n"
    "  fldcw 4(%rsp)\n"
    "  addq $8, %rsp\n"
    "  popq %r15\n"
    "  popq %r14\n"
    "  popq %r13\n"
    "  popq %r12\n"
    "  popq %rbx\n"
    "  popq %rbp\n"
    "  ret\n"
    ".size tt_sim_switch_stack, .-tt_sim_switch_stack\n"
    ".popsection\n");
extern "C" void tt_sim_switch_stack(void** save_sp, void* load_sp);
#else
#define TT_SIM_ASM_SWITCH 0
#endif

TT_NAMESPACE_BEGIN namespace backend::cuda::sim {

using ::tinytorch::detail::str_cat;

#if TT_SIM_ASM_SWITCH
/// A suspended execution: its stack pointer (the registers are saved on that stack).
struct Context {
  void* sp = nullptr;
};
/// Prepares `c` so that switching to it calls entry() on [stack, stack + bytes); entry never returns.
inline void make_context(Context& c, char* stack, size_t bytes, void (*entry)()) {
  // What tt_sim_switch_stack pops, from the lowest address: the control words, r15..rbx, rbp, the
  // address `ret` jumps to; above it a 0 "return address" where gdb's backtrace stops. entry()
  // starts with rsp = top - 8, i.e. 8 mod 16, as after a call.
  uint64_t* top = reinterpret_cast<uint64_t*>(stack + bytes);  // 16-byte aligned
  top[-1] = 0;
  top[-2] = reinterpret_cast<uint64_t>(entry);
  for (int r = 3; r <= 8; ++r) top[-r] = 0;  // rbp, rbx, r12, r13, r14, r15
  uint32_t mxcsr;
  uint16_t fpcw;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));  // the fiber starts with this thread's settings
  __asm__ volatile("fnstcw %0" : "=m"(fpcw));
  unsigned char* words = reinterpret_cast<unsigned char*>(&top[-9]);
  std::memcpy(words, &mxcsr, 4);
  std::memcpy(words + 4, &fpcw, 2);
  c.sp = &top[-9];
}
/// Saves the running execution in `from` and resumes `to`; returns when someone resumes `from`.
inline void switch_context(Context& from, Context& to) { tt_sim_switch_stack(&from.sp, to.sp); }
#else
struct Context {
  ucontext_t uc;
  bool initialised = false;
};
inline void make_context(Context& c, char* stack, size_t bytes, void (*entry)()) {
  if (!c.initialised) {  // getcontext once per slot; makecontext may then reuse the context
    getcontext(&c.uc);
    c.initialised = true;
  }
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = bytes;
  c.uc.uc_link = nullptr;  // entry never returns
  makecontext(&c.uc, entry, 0);
#if TT_SIM_ASAN
  // ASan's swapcontext interceptor clears the shadow of ucp->uc_stack on every switch (16 KiB of
  // shadow, twice per switch). swapcontext itself does not read uc_stack once makecontext has run,
  // and the annotations in run_fiber/yield tell ASan about the stacks, so hide it; fail_block
  // unpoisons the stacks of abandoned threads.
  c.uc.uc_stack.ss_sp = nullptr;
  c.uc.uc_stack.ss_size = 0;
#endif
}
inline void switch_context(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

// ============================================================================================
// 4. The scheduler (namespace tinytorch::backend::cuda::sim).
// ============================================================================================

inline constexpr int kMaxThreadsPerBlock = 1024;
inline constexpr size_t kMaxDynamicSharedBytes = 48 * 1024;  // CUDA's default without opt-in
/// Each CUDA thread's stack ("local memory"): TINYTORCH_SIM_STACK_KB KiB (default 128, 16..8192), read
/// once. Below it lie kStackGuardBytes of PROT_NONE address space (no memory): a frame too large for
/// the stack touches the guard first (a kernel's frame is at most 512 KiB, CUDA's local-memory limit,
/// so it cannot jump over it), and the fault handler (section 6) reports a stack overflow.
inline constexpr size_t kStackGuardBytes = size_t{1} << 20;
inline size_t fiber_stack_bytes() {
  static const size_t bytes = static_cast<size_t>(detail::env_int("TINYTORCH_SIM_STACK_KB", 128, 16, 8192)) * 1024;
  return bytes;
}

enum class State : uint8_t { kReady, kAtBarrier, kAtWarpOp, kFinished };
enum class WarpOp : uint8_t { kSyncwarp, kShfl, kShflUp, kShflDown, kShflXor, kBallot, kAny, kAll };

inline const char* warp_op_name(WarpOp op) {
  switch (op) {
    case WarpOp::kSyncwarp: return "__syncwarp";
    case WarpOp::kShfl: return "__shfl_sync";
    case WarpOp::kShflUp: return "__shfl_up_sync";
    case WarpOp::kShflDown: return "__shfl_down_sync";
    case WarpOp::kShflXor: return "__shfl_xor_sync";
    case WarpOp::kBallot: return "__ballot_sync";
    case WarpOp::kAny: return "__any_sync";
    case WarpOp::kAll: return "__all_sync";
  }
  return "?";
}

/// One CUDA thread: its saved registers, its stack, where it waits, and what it posted to a warp op.
struct Fiber {
  Context ctx;
  char* stack = nullptr;       // fiber_stack_bytes(), kStackGuardBytes of PROT_NONE below it
  uint3 tid{0, 0, 0};
  State state = State::kFinished;
  // The warp operation this thread waits at (valid while state == kAtWarpOp) and its result;
  // `value` and `result` also carry __syncthreads_count's predicate and count.
  WarpOp op = WarpOp::kSyncwarp;
  unsigned mask = 0;
  int arg = 0;          // srcLane / delta / laneMask
  int width = 32;
  uint64_t value = 0;   // the bits of `var` (shuffles) or the predicate (votes, barriers)
  uint64_t result = 0;
  bool result_missing = false;  // a shuffle read a lane that does not take part
  std::exception_ptr error;
  void* asan_fake_stack = nullptr;
  const char* barrier_file = "";  // the __syncthreads() it waits at (synccheck)
  int barrier_line = 0;
#if TT_SIM_TSAN
  void* tsan_fiber = nullptr;         // this slot's ThreadSanitizer fiber (section 7)
  unsigned tsan_masks[8] = {};        // per warp-op mask, how many such operations it has passed
  uint32_t tsan_mask_counts[8] = {};
#endif
};

/// What the hang watchdog (section 6) reads of one host thread's running kernel: atomics, written by
/// the scheduler at every switch, read by the watchdog thread.
struct Progress {
  std::atomic<bool> claimed{false};
  std::atomic<const char*> kernel{nullptr};
  std::atomic<const char*> phase{nullptr};  // RunOptions::phase of the running launch
  std::atomic<bool> in_thread{false};  // a CUDA thread (fiber) is running
  std::atomic<uint64_t> switches{0};
  std::atomic<uint32_t> block[3] = {};
  std::atomic<uint32_t> thread[3] = {};
};
inline constexpr int kMaxWatchedHostThreads = 256;
inline Progress* progress_slots() {
  static Progress slots[kMaxWatchedHostThreads];
  return slots;
}

/// How run_grid runs a launch (launch.hpp sets them).
struct RunOptions {
  /// Blocks and the passes over a block's threads in the opposite order (racecheck's second run).
  bool reverse = false;
  /// Shared memory starts as initcheck_second_byte() instead of 0xFF bytes (initcheck's second run).
  bool second_fill = false;
  /// This host thread's instances of the kernel's static __shared__ arrays {address, bytes}
  /// (sim_shared_size.hpp), filled like the dynamic shared memory at the start of every block.
  std::vector<std::pair<unsigned char*, size_t>> static_shared;
  /// A byte of device memory to watch: after every stretch a thread runs, the scheduler notes the
  /// thread if the byte changed (initcheck names the thread that wrote a bad byte: Scheduler::writer).
  const unsigned char* watch = nullptr;
  /// More thread switches than this (0: no limit) stops the launch with an error (racecheck's and
  /// initcheck's later runs: a loop bound read from memory never written must not run forever).
  uint64_t max_switches = 0;
  /// Which run this is, for the hang report ("" or nullptr: the launch itself).
  const char* phase = nullptr;
};

/// Per host thread: the fibers (allocated once, reused by every block and launch) and the block
/// being run.
class Scheduler {
 public:
  Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  ~Scheduler() {
    if (progress_) progress_->claimed.store(false);
    if (altstack_) {  // ours: stop using it before it goes
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      sigaltstack(&off, nullptr);
      std::free(altstack_);
    }
    if (!fibers_) return;
#if TT_SIM_TSAN
    __tsan_ignore_thread_begin();  // the fibers' last writes to their slots are not ordered before this
#endif
    for (int i = 0; i < kMaxThreadsPerBlock; ++i) {
      if (fibers_[i].stack) munmap(fibers_[i].stack - kStackGuardBytes, fiber_stack_bytes() + kStackGuardBytes);
#if TT_SIM_TSAN
      if (fibers_[i].tsan_fiber) __tsan_destroy_fiber(fibers_[i].tsan_fiber);
#endif
    }
    fibers_.reset();
#if TT_SIM_TSAN
    delete[] tsan_arena_;
    __tsan_ignore_thread_end();
#endif
  }

  bool in_kernel() const { return running_; }
  int current() const { return current_; }
  Fiber& fiber(int i) { return fibers_[i]; }
  int nthreads() const { return nthreads_; }
  void* dynamic_smem() const { return smem_; }
  const char* kernel_name() const { return name_; }
  /// Atomic operations device code on this host thread has made so far (racecheck skips the order
  /// comparison of a launch that made any: their results may rightly depend on the order).
  uint64_t atomics() const { return __atomic_load_n(&atomics_, __ATOMIC_RELAXED); }
  /// "block (x,y,z), thread (x,y,z)" of the last thread that changed RunOptions::watch in the last
  /// launch, or "" (none did).
  const std::string& writer() const { return writer_; }
  /// Times a thread was resumed in the last (or running) launch.
  uint64_t switches() const { return switches_; }
  void count_atomic() { __atomic_fetch_add(&atomics_, 1, __ATOMIC_RELAXED); }
  /// The fiber whose stack's guard page holds `a`, or -1 (the fault handler's stack-overflow test).
  int stack_guard_owner(uintptr_t a) const {
    if (!fibers_) return -1;
    for (int i = 0; i < kMaxThreadsPerBlock; ++i) {
      const uintptr_t lo = reinterpret_cast<uintptr_t>(fibers_[i].stack) - kStackGuardBytes;
      if (fibers_[i].stack && a >= lo && a < lo + kStackGuardBytes) return i;
    }
    return -1;
  }
  /// "kernel 'k', block (x,y,z), thread (x,y,z)" of the running CUDA thread, or "" outside one.
  std::string where() const {
    if (!running_ || current_ < 0) return std::string();
    return str_cat("kernel '", name_, "', block ", thread_str(blockIdx), ", thread ", thread_str(fibers_[current_].tid));
  }
#if TT_SIM_TSAN
  /// The ThreadSanitizer synchronisation object of `key` in this block (section 7).
  void* tsan_sync(uint64_t key) {
    key ^= key >> 31;
    key *= 0x9e3779b97f4a7c15ull;
    key ^= key >> 29;
    return tsan_arena_ + key % kTsanArenaBytes;
  }
  uint64_t barrier_generation() const { return barrier_gen_; }
#endif

  /// Runs every block of the grid; throws tinytorch::Error on a failed block.
  void run_grid(const char* name, dim3 grid, dim3 block, size_t smem_bytes, void (*body)(void*), void* arg,
                const RunOptions& options = RunOptions());

  /// Device side: the current thread leaves its fiber for the scheduler (after setting its state).
  void yield();

  /// The fiber's entry point; runs the kernel body on the fiber's stack.
  static void fiber_main();

  /// The fault handler (section 6) records why the running thread faulted, then makes it continue in
  /// fault_exit, which ends the thread with that error (the launch throws it).
  void set_fault(std::string what) { fault_what_ = std::move(what); }
  [[noreturn]] static void fault_exit();

 private:
  void prepare_fiber(int i);
  void run_fiber(int i);
  void run_block(const char* name);
  void resolve_warp(int warp);
  [[noreturn]] void fail_block(const std::string& prefix, const std::string& what);
  std::string block_prefix(const char* name) const;
  static std::string thread_str(uint3 t);
  void start_watch();

  std::unique_ptr<Fiber[]> fibers_;
  int nthreads_ = 0;
  int current_ = -1;
  bool running_ = false;
  void (*body_)(void*) = nullptr;
  void* body_arg_ = nullptr;
  void* smem_ = nullptr;
  size_t smem_bytes_ = 0;
  Context sched_ctx_;
  const void* sched_stack_bottom_ = nullptr;  // for ASan's fiber annotations
  size_t sched_stack_size_ = 0;
  void* sched_fake_stack_ = nullptr;
  const char* name_ = "";
  std::string fault_what_;
  const RunOptions* options_ = nullptr;  // the running launch's
  std::string writer_;                   // see writer()
  uint64_t switches_ = 0;                // see switches()
  uint64_t atomics_ = 0;          // atomic operations so far (an atomic counter: fibers add to it)
  Progress* progress_ = nullptr;  // this host thread's slot for the watchdog (null: none free)
  void* altstack_ = nullptr;      // the signal stack this scheduler installed, if any
  bool watched_ = false;
#if TT_SIM_TSAN
  static constexpr size_t kTsanArenaBytes = 1 << 16;
  char* tsan_arena_ = nullptr;  // fresh for every block: its addresses are the sync objects
  void* tsan_host_ = nullptr;
  uint64_t barrier_gen_ = 0;
  // Addresses used as sync objects: the launch -> threads edge, and each block's threads -> (host,
  // next block) edge, alternating between two so that a block's threads are not ordered by their own.
  char tsan_launch_ = 0, tsan_end_[2] = {0, 0};
  uint64_t tsan_block_ = 0;  // blocks run so far on this host thread
#endif
};

/// The running scheduler of this host thread, for the fault handler (a plain pointer: safe to read
/// in a signal handler).
inline thread_local Scheduler* t_running = nullptr;

inline Scheduler& scheduler() {
  static thread_local Scheduler s;
  return s;
}

inline void* dynamic_shared_memory() { return scheduler().dynamic_smem(); }

inline std::string Scheduler::thread_str(uint3 t) {
  return str_cat("(", t.x, ",", t.y, ",", t.z, ")");
}
inline std::string Scheduler::block_prefix(const char* name) const {
  return str_cat("kernel '", name, "': block ", thread_str(blockIdx));
}

inline void Scheduler::prepare_fiber(int i) {
  Fiber& f = fibers_[i];
  if (!f.stack) {  // first use of this slot: its stack, with the guard below
    void* mem = mmap(nullptr, fiber_stack_bytes() + kStackGuardBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    TT_CHECK(mem != MAP_FAILED, "CUDA simulator: cannot map a ", fiber_stack_bytes(), "-byte thread stack");
    mprotect(mem, kStackGuardBytes, PROT_NONE);
    f.stack = static_cast<char*>(mem) + kStackGuardBytes;
  }
#if TT_SIM_ASAN
  // The previous thread on this stack never returned from fiber_main (it switched away for good), so
  // the redzones of its last frames are still poisoned where make_context writes: clear them.
  ASAN_UNPOISON_MEMORY_REGION(f.stack, fiber_stack_bytes());
#endif
  make_context(f.ctx, f.stack, fiber_stack_bytes(), &Scheduler::fiber_main);
  f.state = State::kReady;
  f.error = nullptr;
  f.asan_fake_stack = nullptr;
#if TT_SIM_TSAN
  if (!f.tsan_fiber) f.tsan_fiber = __tsan_create_fiber(0);
  for (int k = 0; k < 8; ++k) f.tsan_masks[k] = f.tsan_mask_counts[k] = 0;
#endif
}

inline void Scheduler::fiber_main() {
  Scheduler& s = scheduler();
  Fiber& f = s.fibers_[s.current_];
#if TT_SIM_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &s.sched_stack_bottom_, &s.sched_stack_size_);
#endif
#if TT_SIM_TSAN
  __tsan_acquire(&s.tsan_launch_);  // what the host did before the launch happens before the kernel
  __tsan_acquire(&s.tsan_end_[(s.tsan_block_ + 1) & 1]);  // and the previous block (same shared memory)
#endif
  try {
    s.body_(s.body_arg_);  // the kernel, with this thread's copy of its arguments
  } catch (...) {
    f.error = std::current_exception();
  }
  f.state = State::kFinished;
#if TT_SIM_TSAN
  __tsan_release(&s.tsan_end_[s.tsan_block_ & 1]);  // ... and the kernel before the host and the next block
#endif
#if TT_SIM_ASAN
  __sanitizer_start_switch_fiber(nullptr, s.sched_stack_bottom_, s.sched_stack_size_);  // fiber ends
#endif
#if TT_SIM_TSAN
  __tsan_switch_to_fiber(s.tsan_host_, __tsan_switch_to_fiber_no_sync);
#endif
  switch_context(f.ctx, s.sched_ctx_);  // never resumed
  std::abort();
}

inline void Scheduler::fault_exit() {
  Scheduler& s = scheduler();
  Fiber& f = s.fibers_[s.current_];
  f.error = std::make_exception_ptr(Error(std::move(s.fault_what_)));
  s.fault_what_.clear();
  f.state = State::kFinished;
  switch_context(f.ctx, s.sched_ctx_);  // never resumed
  std::abort();
}

inline void Scheduler::run_fiber(int i) {
  current_ = i;
  threadIdx = fibers_[i].tid;
  if (progress_) {
    for (int k = 0; k < 3; ++k) progress_->thread[k].store((&fibers_[i].tid.x)[k], std::memory_order_relaxed);
    progress_->switches.fetch_add(1, std::memory_order_relaxed);
    progress_->in_thread.store(true, std::memory_order_release);
  }
#if TT_SIM_ASAN
  __sanitizer_start_switch_fiber(&sched_fake_stack_, fibers_[i].stack, fiber_stack_bytes());
#endif
#if TT_SIM_TSAN
  // No happens-before from the switch itself: CUDA threads are ordered only by barriers, warp
  // operations and atomics (section 7).
  __tsan_switch_to_fiber(fibers_[i].tsan_fiber, __tsan_switch_to_fiber_no_sync);
#endif
  switch_context(sched_ctx_, fibers_[i].ctx);
#if TT_SIM_ASAN
  __sanitizer_finish_switch_fiber(sched_fake_stack_, nullptr, nullptr);
#endif
  if (progress_) {
    progress_->in_thread.store(false, std::memory_order_release);
    progress_->switches.fetch_add(1, std::memory_order_relaxed);
  }
  current_ = -1;
}

inline void Scheduler::yield() {
  Fiber& f = fibers_[current_];
#if TT_SIM_ASAN
  __sanitizer_start_switch_fiber(&f.asan_fake_stack, sched_stack_bottom_, sched_stack_size_);
#endif
#if TT_SIM_TSAN
  __tsan_switch_to_fiber(tsan_host_, __tsan_switch_to_fiber_no_sync);
#endif
  switch_context(f.ctx, sched_ctx_);
#if TT_SIM_ASAN
  __sanitizer_finish_switch_fiber(f.asan_fake_stack, &sched_stack_bottom_, &sched_stack_size_);
#endif
}

// Stops the block: its unfinished fibers are abandoned (their stacks are reused by the next block).
inline void Scheduler::fail_block(const std::string& prefix, const std::string& what) {
#if TT_SIM_ASAN
  for (int i = 0; i < nthreads_; ++i)  // abandoned frames leave poisoned redzones on the stacks
    if (fibers_[i].state != State::kFinished) ASAN_UNPOISON_MEMORY_REGION(fibers_[i].stack, fiber_stack_bytes());
#endif
#if TT_SIM_TSAN
  // The abandoned threads never reach their end's release: make it for them, so that what they did
  // happens before the host's next use of that memory (the launch's arguments on its stack).
  for (int i = 0; i < nthreads_; ++i) {
    if (fibers_[i].state == State::kFinished) continue;
    __tsan_switch_to_fiber(fibers_[i].tsan_fiber, __tsan_switch_to_fiber_no_sync);
    __tsan_release(&tsan_end_[tsan_block_ & 1]);
    __tsan_switch_to_fiber(tsan_host_, __tsan_switch_to_fiber_no_sync);
  }
#endif
  for (int i = 0; i < nthreads_; ++i) fibers_[i].state = State::kFinished;
  throw Error(prefix + ": " + what);
}

// Completes every warp operation of warp `warp` whose lanes have all arrived.
inline void Scheduler::resolve_warp(int warp) {
  const int base = warp * 32;
  const int lanes = nthreads_ - base < 32 ? nthreads_ - base : 32;
  for (int l = 0; l < lanes; ++l) {
    const Fiber& f = fibers_[base + l];
    if (f.state != State::kAtWarpOp) continue;
    // The lanes taking part: named in the mask, existing, not returned. All must wait at the same op.
    unsigned members = 0;
    bool complete = true;
    for (int k = 0; k < lanes && complete; ++k) {
      if (!((f.mask >> k) & 1u)) continue;
      const Fiber& g = fibers_[base + k];
      if (g.state == State::kFinished) continue;
      if (g.state != State::kAtWarpOp || g.op != f.op || g.mask != f.mask) complete = false;
      members |= 1u << k;
    }
    if (!complete) continue;
    unsigned ballot = 0;
    for (int k = 0; k < lanes; ++k)
      if (((members >> k) & 1u) && fibers_[base + k].value != 0) ballot |= 1u << k;
    for (int k = 0; k < lanes; ++k) {
      if (!((members >> k) & 1u)) continue;
      Fiber& g = fibers_[base + k];
      g.result_missing = false;
      // Shuffle source lane j, as PTX's shfl.sync computes it (segments of `width` lanes).
      const int seg_first = k & ~(g.width - 1), seg_last = seg_first + g.width - 1;
      const int b = g.arg & 31;
      int j = k;
      switch (g.op) {
        case WarpOp::kSyncwarp: break;
        case WarpOp::kBallot: g.result = ballot; break;
        case WarpOp::kAny: g.result = ballot != 0; break;
        case WarpOp::kAll: g.result = ballot == members; break;
        case WarpOp::kShfl: j = seg_first | (b & (g.width - 1)); break;
        case WarpOp::kShflUp: j = k - b >= seg_first ? k - b : k; break;
        case WarpOp::kShflDown: j = k + b <= seg_last ? k + b : k; break;
        case WarpOp::kShflXor: j = (k ^ b) <= seg_last ? (k ^ b) : k; break;
      }
      if (g.op == WarpOp::kShfl || g.op == WarpOp::kShflUp || g.op == WarpOp::kShflDown ||
          g.op == WarpOp::kShflXor) {
        if ((members >> j) & 1u) {
          g.result = fibers_[base + j].value;
        } else {  // undefined on a GPU: the lane is not in the mask, has returned or does not exist
          g.result = g.value;
          g.result_missing = true;
        }
      }
    }
    for (int k = 0; k < lanes; ++k)
      if ((members >> k) & 1u) fibers_[base + k].state = State::kReady;
  }
}

inline void Scheduler::run_block(const char* name) {
#if TT_SIM_TSAN
  // Fresh sync objects for every block, so that blocks are not ordered by them. Freeing the last
  // block's (which resets them) must be seen by TSan and come after that block's threads: the host
  // acquires their ends first.
  __tsan_acquire(&tsan_end_[0]);
  __tsan_acquire(&tsan_end_[1]);
  __tsan_ignore_thread_end();
  char* fresh = new char[kTsanArenaBytes];
  delete[] tsan_arena_;
  __tsan_ignore_thread_begin();
  tsan_arena_ = fresh;  // (the pointer itself is bookkeeping, written ignored)
  barrier_gen_ = 0;
  ++tsan_block_;
#endif
  for (int i = 0; i < nthreads_; ++i) {
    prepare_fiber(i);
    const unsigned bx = blockDim.x, by = blockDim.y, ui = static_cast<unsigned>(i);
    fibers_[i].tid = uint3{ui % bx, (ui / bx) % by, ui / (bx * by)};
#if TT_SIM_TSAN
    char fiber_name[64];  // ThreadSanitizer keeps 63 characters: the kernel's name goes last
    std::snprintf(fiber_name, sizeof fiber_name, "block (%u,%u,%u) thread (%u,%u,%u) of %s", blockIdx.x, blockIdx.y,
                  blockIdx.z, fibers_[i].tid.x, fibers_[i].tid.y, fibers_[i].tid.z, name);
    __tsan_set_fiber_name(fibers_[i].tsan_fiber, fiber_name);
#endif
  }
  if (progress_)
    for (int k = 0; k < 3; ++k) progress_->block[k].store((&blockIdx.x)[k], std::memory_order_relaxed);
  // Shared memory starts undefined on a GPU; here 0xFF bytes in every block (NaN floats, -1 integers),
  // or initcheck's second values.
  const auto fill_shared = [&](unsigned char* p, size_t bytes) {
    if (!options_->second_fill) std::memset(p, 0xFF, bytes);
    else
      for (size_t i = 0; i < bytes; ++i) p[i] = initcheck_second_byte(reinterpret_cast<uintptr_t>(p + i), 0xFF);
  };
  if (smem_bytes_) fill_shared(static_cast<unsigned char*>(smem_), smem_bytes_);
  for (const auto& [p, bytes] : options_->static_shared) fill_shared(p, bytes);
  for (;;) {
    bool ran = false;
    for (int n = 0; n < nthreads_; ++n) {  // one pass: each ready thread runs until it blocks or ends
      const int i = options_->reverse ? nthreads_ - 1 - n : n;
      Fiber& f = fibers_[i];
      if (f.state != State::kReady) continue;
      ran = true;
      const unsigned char watched = options_->watch ? *options_->watch : 0;
      if (options_->max_switches && switches_ >= options_->max_switches)
        fail_block(block_prefix(name) + ", thread " + thread_str(f.tid),
                   str_cat("stopped after ", switches_,
                           " thread switches, far more than the first run of this launch needed"));
      ++switches_;
      run_fiber(i);
      if (options_->watch && *options_->watch != watched)
        writer_ = str_cat("block ", thread_str(blockIdx), ", thread ", thread_str(f.tid));
      if (f.error) {
        std::string what;
        try {
          std::rethrow_exception(f.error);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
          what = "unknown exception";
        }
        fail_block(block_prefix(name) + ", thread " + thread_str(f.tid), what);
      }
      if (f.state == State::kAtWarpOp || f.state == State::kFinished) resolve_warp(i / 32);
    }
    if (ran) continue;
    // Nobody is ready: done, a barrier to open, or a wait that can never end.
    int finished = 0, at_barrier = 0, first_barrier = -1, first_warp = -1;
    for (int i = 0; i < nthreads_; ++i) {
      const State st = fibers_[i].state;
      if (st == State::kFinished) {
        ++finished;
      } else if (st == State::kAtBarrier) {
        ++at_barrier;
        if (first_barrier < 0) first_barrier = i;
      } else if (first_warp < 0) {
        first_warp = i;
      }
    }
    if (finished == nthreads_) return;
    if (first_warp < 0) {  // every thread that has not exited waits at a __syncthreads(): open it
      // Exited threads count as arrived, as on the GPU (the common `if (i >= n) return;` before a
      // barrier). synccheck: all must wait at the same __syncthreads() call.
      const Fiber& b0 = fibers_[first_barrier];
      for (int i = first_barrier + 1; i < nthreads_; ++i) {
        const Fiber& b = fibers_[i];
        if (b.state == State::kAtBarrier && (b.barrier_line != b0.barrier_line ||
                                             std::strcmp(b.barrier_file, b0.barrier_file) != 0)) {
          fail_block(block_prefix(name),
                     str_cat("synccheck: divergent __syncthreads(): thread ", thread_str(b0.tid), " waits at ",
                             b0.barrier_file, ":", b0.barrier_line, " but thread ", thread_str(b.tid), " at ",
                             b.barrier_file, ":", b.barrier_line,
                             "; a barrier in conditional code is allowed only if the condition is the same for ",
                             "every thread of the block (CUDA C++ Programming Guide, __syncthreads)"));
        }
      }
      uint64_t count = 0;  // for __syncthreads_count/_and/_or: threads whose predicate is true
      for (int i = 0; i < nthreads_; ++i) count += fibers_[i].state == State::kAtBarrier && fibers_[i].value != 0;
      for (int i = 0; i < nthreads_; ++i) {
        if (fibers_[i].state != State::kAtBarrier) continue;
        fibers_[i].result = count;
        fibers_[i].arg = at_barrier;  // how many arrived (__syncthreads_and)
        fibers_[i].state = State::kReady;
      }
#if TT_SIM_TSAN
      ++barrier_gen_;
#endif
      continue;
    }
    // A warp operation waits for a lane that is elsewhere.
    const Fiber& w = fibers_[first_warp];
    const int base = first_warp / 32 * 32;
    int missing = -1;
    for (int k = 0; k < 32 && base + k < nthreads_; ++k) {
      const Fiber& g = fibers_[base + k];
      if (((w.mask >> k) & 1u) && g.state != State::kFinished &&
          (g.state != State::kAtWarpOp || g.op != w.op || g.mask != w.mask)) {
        missing = base + k;
        break;
      }
    }
    std::string where = "?";
    if (missing >= 0) {
      const Fiber& g = fibers_[missing];
      where = g.state == State::kAtBarrier
                  ? std::string("__syncthreads()")
                  : str_cat(warp_op_name(g.op), " with mask 0x", std::hex, g.mask);
    }
    fail_block(block_prefix(name),
               str_cat("thread ", thread_str(w.tid), " waits at ", warp_op_name(w.op), " with mask 0x", std::hex,
                       w.mask, std::dec, " for thread ",
                       missing >= 0 ? thread_str(fibers_[missing].tid) : std::string("?"), " (lane ", missing - base,
                       "), which waits at ", where,
                       "; every non-exited lane named in the mask must reach the same warp operation"));
  }
}

inline void Scheduler::run_grid(const char* name, dim3 grid, dim3 block, size_t smem_bytes, void (*body)(void*),
                                void* arg, const RunOptions& options) {
  const auto config = [&] {
    return str_cat("kernel '", name, "' <<<(", grid.x, ",", grid.y, ",", grid.z, "), (", block.x, ",", block.y, ",",
                   block.z, "), ", smem_bytes, ">>>: ");
  };
  TT_CHECK(!running_, config(), "launching a kernel from inside a kernel (dynamic parallelism) is not simulated");
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  TT_CHECK(block.x >= 1 && block.y >= 1 && block.z >= 1 && block.x <= 1024 && block.y <= 1024 && block.z <= 64 &&
               threads <= kMaxThreadsPerBlock,
           config(), "invalid configuration argument (a block has at most 1024 threads, blockDim.x and .y <= 1024,",
           " blockDim.z <= 64, none 0)");
  TT_CHECK(grid.x >= 1 && grid.y >= 1 && grid.z >= 1 && grid.x <= 2147483647u && grid.y <= 65535 &&
               grid.z <= 65535,
           config(), "invalid configuration argument (gridDim.x <= 2^31-1, gridDim.y and .z <= 65535, none 0)");
  TT_CHECK(smem_bytes <= kMaxDynamicSharedBytes, config(), "invalid argument (dynamic shared memory above ",
           kMaxDynamicSharedBytes, " bytes, CUDA's limit without cudaFuncSetAttribute's opt-in)");

#if TT_SIM_TSAN
  __tsan_ignore_thread_begin();  // the scheduler's own bookkeeping is not the kernel's memory traffic
#endif
  if (!fibers_) fibers_.reset(new Fiber[kMaxThreadsPerBlock]);
  // Dynamic shared memory: one exact-size 16-byte-aligned buffer for the launch.
  std::unique_ptr<float4[]> smem(smem_bytes ? new float4[(smem_bytes + 15) / 16] : nullptr);
  smem_ = smem.get();
  smem_bytes_ = smem_bytes;
  body_ = body;
  body_arg_ = arg;
  nthreads_ = static_cast<int>(threads);
  start_watch();  // may throw (a bad TINYTORCH_SIM_HANG_SECONDS): before any state is set
  name_ = name;
  running_ = true;
  if (progress_) progress_->kernel.store(name, std::memory_order_release);
  t_running = this;
#if TT_SIM_TSAN
  tsan_host_ = __tsan_get_current_fiber();
  __tsan_release(&tsan_launch_);  // (a synchronisation: not ignored)
#endif
  struct Reset {  // leave the host thread's built-ins and state as before, also on error
    Scheduler& s;
    ~Reset() {
      s.running_ = false;
      s.smem_ = nullptr;
      s.smem_bytes_ = 0;
      s.name_ = "";
      s.options_ = nullptr;
      threadIdx = uint3{0, 0, 0};
      blockIdx = uint3{0, 0, 0};
      blockDim = dim3();
      gridDim = dim3();
      if (s.progress_) {
        s.progress_->kernel.store(nullptr, std::memory_order_release);
        s.progress_->phase.store(nullptr, std::memory_order_release);
      }
      t_running = nullptr;
#if TT_SIM_TSAN
      __tsan_ignore_thread_end();
      __tsan_acquire(&s.tsan_end_[0]);
      __tsan_acquire(&s.tsan_end_[1]);
#endif
    }
  } reset{*this};
  gridDim = grid;
  blockDim = block;
  options_ = &options;
  writer_.clear();
  switches_ = 0;
  if (progress_) progress_->phase.store(options.phase, std::memory_order_release);
  for (unsigned zz = 0; zz < grid.z; ++zz)
    for (unsigned yy = 0; yy < grid.y; ++yy)
      for (unsigned xx = 0; xx < grid.x; ++xx) {
        blockIdx = options.reverse ? uint3{grid.x - 1 - xx, grid.y - 1 - yy, grid.z - 1 - zz} : uint3{xx, yy, zz};
        run_block(name);
      }
}

/// Runs a kernel body over a grid (launch.hpp's launch_kernel calls this). `body(arg)` is the kernel
/// call one thread makes.
inline void run_grid(const char* name, dim3 grid, dim3 block, size_t smem_bytes, void (*body)(void*), void* arg,
                     const RunOptions& options = RunOptions()) {
  scheduler().run_grid(name, grid, block, smem_bytes, body, arg, options);
}

// ============================================================================================
// 6. The watchdog and the fault handler: a kernel that hangs or faults says where.
//    Hang: blocks run one at a time and the threads of a block take turns only at barriers, warp
//    operations and their end, so a thread spinning on a flag another thread or block sets never
//    finishes here. A watchdog thread (one per process, started at the first launch) checks every
//    0.1 s whether a host thread's running CUDA thread has switched since; after
//    TINYTORCH_SIM_HANG_SECONDS (default 10; 0 turns it off) of ticks without a switch it prints the
//    kernel, block and thread and aborts the program. It counts its own ticks, not wall time, and
//    is not started under a debugger (TracerPid in /proc/self/status): a breakpoint is not a hang.
//    Fault: SIGSEGV/SIGBUS while a kernel runs on this host thread is described with the kernel, block,
//    thread, read or write, the address and what it is near (core/cuda_sim_memory.hpp describe: an
//    allocation's end, a freed block, a thread's stack guard = stack overflow). On x86-64 without a
//    sanitizer the launch then throws that as tinytorch::Error, the faulting thread abandoned like
//    one that threw (its block's other threads too); a program may catch it and go on, where a GPU's
//    illegal address is a sticky error that ends the CUDA context. (A thread abandoned inside a
//    library call that holds a lock, printf with a wild %s, leaves the lock held.) In a sanitizer
//    build the description is printed and the sanitizer's handler takes the fault. A fault on the
//    host inside simulated device memory is named as such, then the previous handler (gdb's, or the
//    default: the program dies) takes it. The handler formats with std::string: not
//    async-signal-safe, acceptable for a fault the program cannot otherwise survive.
// ============================================================================================
namespace detail {

inline long hang_seconds() {
  static const long s = env_int("TINYTORCH_SIM_HANG_SECONDS", 10, 0, 86400);
  return s;
}

[[noreturn]] inline void report_hang(const Progress& p, long seconds) {
  const char* k = p.kernel.load();
  const char* phase = p.phase.load();
  if (phase != nullptr)  // the first run of a checked launch ended: what differs now is the cause
    std::fprintf(stderr,
                 "========= tinytorch CUDA simulator: hang in %s (TINYTORCH_SIM_CHECK): the first run of this launch "
                 "ended, so this one loops on what that run changes: most likely a loop bound or index read from "
                 "memory never written (initcheck) or from another thread without a barrier (racecheck).\n",
                 phase);
  std::fprintf(stderr,
               "========= tinytorch CUDA simulator: hang: kernel '%s', block (%u,%u,%u), thread (%u,%u,%u) has run "
               "for %ld s without reaching a __syncthreads(), a warp operation or its end.\n"
               "=========     Blocks run one at a time and a block's threads take turns only at those points, so a "
               "thread that waits for a value another thread or another block writes (a spin-wait on a flag or "
               "a lock) never ends here; on a GPU it deadlocks too unless that block happens to be resident "
               "(CUDA promises no order between blocks). A thread that really computes that long (a huge loop in one "
               "thread) is reported too: raise TINYTORCH_SIM_HANG_SECONDS (0: off).\n",
               k ? k : "?", p.block[0].load(), p.block[1].load(), p.block[2].load(), p.thread[0].load(),
               p.thread[1].load(), p.thread[2].load(), seconds);
  std::fflush(stderr);
  std::abort();
}

inline void watchdog_main(long seconds) {
  uint64_t last[kMaxWatchedHostThreads] = {};
  long still[kMaxWatchedHostThreads] = {};
  Progress* slots = progress_slots();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (int i = 0; i < kMaxWatchedHostThreads; ++i) {
      const Progress& p = slots[i];
      const uint64_t sw = p.switches.load(std::memory_order_relaxed);
      if (!p.claimed.load() || !p.in_thread.load(std::memory_order_acquire) || sw != last[i]) {
        last[i] = sw;
        still[i] = 0;
        continue;
      }
      if (++still[i] >= seconds * 10) report_hang(p, seconds);
    }
  }
}

/// True when a debugger (gdb, strace: any ptrace tracer) is attached: then there is no watchdog (time
/// stopped at a breakpoint is not a hang, and the thread would show in every gdb session; interrupt
/// with Ctrl-C and `bt` to see where a thread spins).
inline bool being_debugged() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return false;
  char line[256];
  long tracer = 0;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::strncmp(line, "TracerPid:", 10) == 0) tracer = std::strtol(line + 10, nullptr, 10);
  std::fclose(f);
  return tracer != 0;
}

/// "at pc 0x... in <symbol>; its source line (in a -g build): addr2line -Cfie <file> 0x<offset>", or "".
inline std::string fault_where_pc(void* uctx) {
#if defined(__x86_64__) && defined(REG_RIP)
  void* pc = reinterpret_cast<void*>(static_cast<ucontext_t*>(uctx)->uc_mcontext.gregs[REG_RIP]);
  Dl_info info{};
  if (dladdr(pc, &info) != 0 && info.dli_fname != nullptr) {
    const uintptr_t off = reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(info.dli_fbase);
    return str_cat("at pc ", pc, info.dli_sname ? str_cat(" in ", info.dli_sname) : std::string(),
                   "; its source line (in a -g build): addr2line -Cfie ", info.dli_fname, " 0x", std::hex, off);
  }
  return str_cat("at pc ", pc);
#else
  (void)uctx;
  return std::string();
#endif
}

inline struct sigaction& previous_action(int sig) {
  static struct sigaction segv{}, bus{};
  return sig == SIGBUS ? bus : segv;
}

// A fault in a CUDA thread becomes a tinytorch::Error from the launch, as an exception thrown by
// device code does (x86-64, no sanitizer: a sanitizer's own report is what its user wants). The
// handler rewrites the saved registers so that, when it returns, the faulting thread continues in
// Scheduler::fault_exit on the top of its own stack (its frames are dead: the thread is abandoned),
// which hands the report to the scheduler; returning normally also restores the signal mask and
// leaves the signal stack, which a longjmp out of the handler would not.
#if defined(__x86_64__) && defined(REG_RIP) && defined(REG_RSP) && !TT_SIM_ASAN && !TT_SIM_TSAN
#define TT_SIM_FAULT_TO_ERROR 1
#else
#define TT_SIM_FAULT_TO_ERROR 0
#endif

inline void on_fault(int sig, siginfo_t* info, void* uctx) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
  const char* access = "access";
#if defined(__x86_64__) && defined(REG_ERR)
  const auto err = static_cast<ucontext_t*>(uctx)->uc_mcontext.gregs[REG_ERR];  // the page-fault error code
  access = (err & 0x10) ? "instruction fetch (a call through a null or wild function pointer)"
           : (err & 2)  ? "write"
                        : "read";
#endif
  // A general-protection fault (x86-64: a non-canonical address, far outside any mapping) reports no
  // address and no direction.
  if (info->si_code == SI_KERNEL) access = "access (a general-protection fault: the address is far outside any mapping)";
  std::string msg;
  Scheduler* s = t_running;
  Memory* mem = Memory::peek();
  const std::string near = mem ? mem->describe(a) : std::string();
  if (s && s->current() >= 0) {
    std::string what;
    if (s->stack_guard_owner(a) >= 0) {
      what = str_cat("stack overflow: the thread's stack (local memory) of ", fiber_stack_bytes() / 1024,
                     " KiB is exhausted: a local array or a recursion too large (TINYTORCH_SIM_STACK_KB sets it)");
    } else {
      what = str_cat(checks().memcheck ? "memcheck: " : "", "invalid ", access, " at address 0x", std::hex, a,
                     std::dec, ": the address is ",
                     near.empty() ? std::string("in no simulated device allocation (a host pointer, a stale or "
                                                "wild pointer)")
                                  : near,
                     near.find("freed ") != std::string::npos ? " (use after free)" : "",
                     "; on a GPU: an illegal memory access (cudaErrorIllegalAddress). ", fault_where_pc(uctx));
    }
#if TT_SIM_FAULT_TO_ERROR
    ucontext_t* uc = static_cast<ucontext_t*>(uctx);
    const uintptr_t top = reinterpret_cast<uintptr_t>(s->fiber(s->current()).stack) + fiber_stack_bytes();
    s->set_fault(std::move(what));
    uc->uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(((top - 256) & ~uintptr_t{15}) - 8);  // as after a call
    uc->uc_mcontext.gregs[REG_RIP] = reinterpret_cast<greg_t>(&Scheduler::fault_exit);
    return;
#else
    msg = str_cat("========= tinytorch CUDA simulator: ", s->where(), ": ", what, "\n");
#endif
  } else if (!near.empty() && near.rfind("not looked up", 0) != 0) {
    msg = str_cat("========= tinytorch CUDA simulator: host ", access, " of simulated device memory at 0x", std::hex, a,
                  std::dec, ": ", near,
                  "\n=========     host code can reach device memory only through a copy (cudaMemcpy, .cpu()), "
                  "as on a GPU\n=========     ",
                  fault_where_pc(uctx), "\n");
  }
  if (!msg.empty()) {
    const ssize_t ignored = write(2, msg.data(), msg.size());
    (void)ignored;
  }
  sigaction(sig, &previous_action(sig), nullptr);  // returning re-runs the access: the old handler takes it
}

inline void install_fault_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa{};
    sa.sa_sigaction = &on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &previous_action(SIGSEGV));
    sigaction(SIGBUS, &sa, &previous_action(SIGBUS));
  });
}

// Installed when the program starts, so that a host read of simulated device memory before any
// launch is named too.
inline const bool fault_handler_installed = (install_fault_handler(), true);

}  // namespace detail

/// At the first launch on a host thread: a watchdog slot, a signal stack (a stack overflow's handler
/// cannot run on the overflowed stack), the process's fault handler and watchdog thread.
inline void Scheduler::start_watch() {
  if (watched_) return;
  (void)detail::hang_seconds();  // throws for a bad value, at every launch until it is fixed
  watched_ = true;
  Progress* slots = progress_slots();
  for (int i = 0; i < kMaxWatchedHostThreads && !progress_; ++i) {
    bool expected = false;
    if (slots[i].claimed.compare_exchange_strong(expected, true)) progress_ = &slots[i];
  }
  stack_t cur{};
  if (sigaltstack(nullptr, &cur) == 0 && (cur.ss_flags & SS_DISABLE)) {
    const size_t bytes = 64 * 1024;
    altstack_ = std::malloc(bytes);
    stack_t ss{};
    ss.ss_sp = altstack_;
    ss.ss_size = bytes;
    if (altstack_ == nullptr || sigaltstack(&ss, nullptr) != 0) {
      std::free(altstack_);
      altstack_ = nullptr;
    }
  }
  detail::install_fault_handler();
  static std::once_flag once;
  std::call_once(once, [] {
    const long seconds = detail::hang_seconds();
    if (seconds > 0 && !detail::being_debugged()) std::thread(detail::watchdog_main, seconds).detach();
  });
}

namespace detail {

inline Scheduler& device_scheduler(const char* what) {
  Scheduler& s = scheduler();
  TT_CHECK(s.in_kernel() && s.current() >= 0, what, "() called outside a kernel");
  return s;
}

/// __syncthreads(): waits until every thread of the block is here; returns how many threads passed
/// a non-zero predicate.
inline int barrier(int predicate, const char* file, int line, int* arrived = nullptr) {
  Scheduler& s = device_scheduler("__syncthreads");
  Fiber& f = s.fiber(s.current());
  f.value = predicate != 0;
  f.barrier_file = file;
  f.barrier_line = line;
  f.state = State::kAtBarrier;
#if TT_SIM_TSAN
  void* sync = s.tsan_sync(~s.barrier_generation());
  __tsan_release(sync);  // everything before the barrier, in every thread ...
  s.yield();
  __tsan_acquire(sync);  // ... happens before everything after it
#else
  s.yield();
#endif
  if (arrived) *arrived = f.arg;
  return static_cast<int>(f.result);
}

/// Posts this lane's part of a warp operation, waits for the other lanes, returns the result bits.
inline uint64_t warp_op(WarpOp op, unsigned mask, uint64_t value, int arg, int width, bool* missing = nullptr) {
  Scheduler& s = device_scheduler(warp_op_name(op));
  Fiber& f = s.fiber(s.current());
  const int lane = s.current() % 32;
  TT_CHECK((mask >> lane) & 1u, warp_op_name(op), ": mask 0x", std::hex, mask, std::dec,
           " does not include the calling lane ", lane, " (undefined in CUDA)");
  TT_CHECK(width >= 1 && width <= 32 && (width & (width - 1)) == 0, warp_op_name(op), ": width ", width,
           " is not a power of 2 in [1, 32]");
  f.op = op;
  f.mask = mask;
  f.value = value;
  f.arg = arg;
  f.width = width;
  f.state = State::kAtWarpOp;
#if TT_SIM_TSAN
  // Every operation with mask M involves every lane of M that has not exited, so the lanes of one
  // operation agree on how many M-operations each has passed: (warp, M, that count) names it.
  int k = 0;
  while (k < 8 && f.tsan_masks[k] != mask && f.tsan_mask_counts[k] != 0) ++k;
  uint64_t key = (uint64_t{static_cast<uint32_t>(s.current() / 32)} << 32) ^ mask;
  if (k < 8) {
    f.tsan_masks[k] = mask;
    key = key * 0x100000001b3ull + ++f.tsan_mask_counts[k];
  }  // more than 8 masks in one thread: the key repeats, which can only hide a race, never invent one
  void* sync = s.tsan_sync(key);
  __tsan_release(sync);
  s.yield();
  __tsan_acquire(sync);
#else
  s.yield();
#endif
  if (missing) *missing = f.result_missing;
  return f.result;
}

template <class T>
T shuffle(WarpOp op, unsigned mask, T var, int arg, int width) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "warp shuffles move values of at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &var, sizeof(T));
  bool missing = false;
  bits = warp_op(op, mask, bits, arg, width, &missing);
  if constexpr (std::numeric_limits<T>::has_quiet_NaN) {
    if (missing) return std::numeric_limits<T>::quiet_NaN();  // make the undefined value visible
  }
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}

/// An atomic read-modify-write (relaxed, as CUDA's atomics): a compare-and-swap loop on the bits. The
/// fibers are cooperative, so nothing runs between the load and the store anyway; the atomic
/// instructions are for ThreadSanitizer (racecheck), which must see atomics, not plain accesses.
template <class T, class F>
T read_modify_write(T* address, F f) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomics on 4- and 8-byte values");
  scheduler().count_atomic();
  T old;
  __atomic_load(address, &old, __ATOMIC_RELAXED);
  T desired = f(old);
  while (!__atomic_compare_exchange(address, &old, &desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    desired = f(old);
  return old;
}

template <class To, class From>
To bit_cast(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  std::memcpy(&out, &v, sizeof(To));
  return out;
}

}  // namespace detail
}  TT_NAMESPACE_END  // namespace tinytorch::backend::cuda::sim

// ============================================================================================
// 5. Device functions (global namespace, CUDA's names and signatures).
// ============================================================================================
namespace tt_sim_ = ::tinytorch::backend::cuda::sim;

// The call site (for synccheck's divergent-barrier report) comes in through default arguments.
inline void __syncthreads(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  tt_sim_::detail::barrier(0, file, line);
}
inline int __syncthreads_count(int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return tt_sim_::detail::barrier(predicate, file, line);
}
inline int __syncthreads_and(int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  int arrived = 0;
  const int count = tt_sim_::detail::barrier(predicate, file, line, &arrived);
  return count == arrived;
}
inline int __syncthreads_or(int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return tt_sim_::detail::barrier(predicate, file, line) != 0;
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  tt_sim_::detail::warp_op(tt_sim_::WarpOp::kSyncwarp, mask, 0, 0, 32);
}
inline void __threadfence() {}
inline void __threadfence_block() {}

template <class T>
T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize) {
  return tt_sim_::detail::shuffle(tt_sim_::WarpOp::kShfl, mask, var, srcLane, width);
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned int delta, int width = warpSize) {
  return tt_sim_::detail::shuffle(tt_sim_::WarpOp::kShflUp, mask, var, static_cast<int>(delta), width);
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned int delta, int width = warpSize) {
  return tt_sim_::detail::shuffle(tt_sim_::WarpOp::kShflDown, mask, var, static_cast<int>(delta), width);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize) {
  return tt_sim_::detail::shuffle(tt_sim_::WarpOp::kShflXor, mask, var, laneMask, width);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return static_cast<unsigned>(tt_sim_::detail::warp_op(tt_sim_::WarpOp::kBallot, mask, predicate != 0, 0, 32));
}
inline int __any_sync(unsigned mask, int predicate) {
  return static_cast<int>(tt_sim_::detail::warp_op(tt_sim_::WarpOp::kAny, mask, predicate != 0, 0, 32));
}
inline int __all_sync(unsigned mask, int predicate) {
  return static_cast<int>(tt_sim_::detail::warp_op(tt_sim_::WarpOp::kAll, mask, predicate != 0, 0, 32));
}
/// The lanes of the caller's warp that exist and have not returned.
inline unsigned __activemask() {
  tt_sim_::Scheduler& s = tt_sim_::detail::device_scheduler("__activemask");
  const int base = s.current() / 32 * 32;
  unsigned m = 0;
#if TT_SIM_TSAN
  __tsan_ignore_thread_begin();  // the other lanes' states are the scheduler's, not kernel memory
#endif
  for (int k = 0; k < 32 && base + k < s.nthreads(); ++k)
    if (s.fiber(base + k).state != tt_sim_::State::kFinished) m |= 1u << k;
#if TT_SIM_TSAN
  __tsan_ignore_thread_end();
#endif
  return m;
}

// Atomics: the old value is returned, as in CUDA.
#define TT_SIM_ATOMIC(NAME, T, EXPR)                                                \
  inline T NAME(T* address, T val) {                                                \
    return tt_sim_::detail::read_modify_write(address, [&](T old) { (void)old; return EXPR; }); \
  }
TT_SIM_ATOMIC(atomicAdd, int, old + val)
TT_SIM_ATOMIC(atomicAdd, unsigned int, old + val)
TT_SIM_ATOMIC(atomicAdd, unsigned long long, old + val)
TT_SIM_ATOMIC(atomicAdd, float, old + val)
TT_SIM_ATOMIC(atomicAdd, double, old + val)
TT_SIM_ATOMIC(atomicSub, int, old - val)
TT_SIM_ATOMIC(atomicSub, unsigned int, old - val)
TT_SIM_ATOMIC(atomicExch, int, val)
TT_SIM_ATOMIC(atomicExch, unsigned int, val)
TT_SIM_ATOMIC(atomicExch, unsigned long long, val)
TT_SIM_ATOMIC(atomicExch, float, val)
TT_SIM_ATOMIC(atomicMax, int, old > val ? old : val)
TT_SIM_ATOMIC(atomicMax, unsigned int, old > val ? old : val)
TT_SIM_ATOMIC(atomicMax, long long, old > val ? old : val)
TT_SIM_ATOMIC(atomicMax, unsigned long long, old > val ? old : val)
TT_SIM_ATOMIC(atomicMin, int, old < val ? old : val)
TT_SIM_ATOMIC(atomicMin, unsigned int, old < val ? old : val)
TT_SIM_ATOMIC(atomicMin, long long, old < val ? old : val)
TT_SIM_ATOMIC(atomicMin, unsigned long long, old < val ? old : val)
TT_SIM_ATOMIC(atomicAnd, int, old & val)
TT_SIM_ATOMIC(atomicAnd, unsigned int, old & val)
TT_SIM_ATOMIC(atomicAnd, unsigned long long, old & val)
TT_SIM_ATOMIC(atomicOr, int, old | val)
TT_SIM_ATOMIC(atomicOr, unsigned int, old | val)
TT_SIM_ATOMIC(atomicOr, unsigned long long, old | val)
TT_SIM_ATOMIC(atomicXor, int, old ^ val)
TT_SIM_ATOMIC(atomicXor, unsigned int, old ^ val)
TT_SIM_ATOMIC(atomicXor, unsigned long long, old ^ val)
TT_SIM_ATOMIC(atomicInc, unsigned int, old >= val ? 0u : old + 1u)  // ((old >= val) ? 0 : old+1)
TT_SIM_ATOMIC(atomicDec, unsigned int, (old == 0u || old > val) ? val : old - 1u)
#undef TT_SIM_ATOMIC
inline int atomicCAS(int* address, int compare, int val) {
  return tt_sim_::detail::read_modify_write(address, [&](int old) { return old == compare ? val : old; });
}
inline unsigned int atomicCAS(unsigned int* address, unsigned int compare, unsigned int val) {
  return tt_sim_::detail::read_modify_write(address, [&](unsigned int old) { return old == compare ? val : old; });
}
inline unsigned long long atomicCAS(unsigned long long* address, unsigned long long compare, unsigned long long val) {
  return tt_sim_::detail::read_modify_write(address,
                                            [&](unsigned long long old) { return old == compare ? val : old; });
}

// CUDA's global min/max overloads (device code may call them unqualified).
inline int min(int a, int b) { return a < b ? a : b; }
inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline float min(float a, float b) { return ::fminf(a, b); }
inline double min(double a, double b) { return ::fmin(a, b); }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float max(float a, float b) { return ::fmaxf(a, b); }
inline double max(double a, double b) { return ::fmax(a, b); }

/// __ldg: a load through the read-only cache; here a plain load.
template <class T>
T __ldg(const T* p) {
  return *p;
}

// Bit casts and bit counts.
inline int __float_as_int(float x) { return tt_sim_::detail::bit_cast<int>(x); }
inline float __int_as_float(int x) { return tt_sim_::detail::bit_cast<float>(x); }
inline unsigned int __float_as_uint(float x) { return tt_sim_::detail::bit_cast<unsigned int>(x); }
inline float __uint_as_float(unsigned int x) { return tt_sim_::detail::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return tt_sim_::detail::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return tt_sim_::detail::bit_cast<double>(x); }
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }

// Fast-math intrinsics: on a GPU approximate (a few ulp), here the exact libm functions. glibc's
// <math.h> already declares __expf, __logf, ... (without defining them for programs), so these are
// definitions of those extern "C" declarations.
extern "C" inline float __expf(float x) noexcept { return ::expf(x); }
extern "C" inline float __logf(float x) noexcept { return ::logf(x); }
extern "C" inline float __log2f(float x) noexcept { return ::log2f(x); }
extern "C" inline float __log10f(float x) noexcept { return ::log10f(x); }
extern "C" inline float __powf(float x, float y) noexcept { return ::powf(x, y); }
extern "C" inline float __sinf(float x) noexcept { return ::sinf(x); }
extern "C" inline float __cosf(float x) noexcept { return ::cosf(x); }
extern "C" inline float __tanf(float x) noexcept { return ::tanf(x); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return ::sqrtf(x); }
inline float __fmaf_rn(float x, float y, float z) { return ::fmaf(x, y, z); }
inline float __fadd_rn(float x, float y) { return x + y; }
inline float __fmul_rn(float x, float y) { return x * y; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : (x == x ? x : 0.0f)); }
inline float rsqrtf(float x) { return 1.0f / ::sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / ::sqrt(x); }

// ============================================================================================
// 7. Sanitizer reports name the CUDA thread. Every sanitizer (ASan, UBSan, TSan, MSan) ends its report
//    with __sanitizer_report_error_summary(), a weak hook: this one prints the summary as the runtime
//    would, then which kernel, block and thread was running. Under ThreadSanitizer (racecheck) each
//    CUDA thread is a TSan fiber named "block (x,y,z) thread (x,y,z) of <kernel>", switches between
//    them carry no happens-before, and only these do: the launch (host before kernel), a kernel
//    thread's end (kernel before host), __syncthreads() (every thread's accesses before it, before
//    every thread's after it, per block), a completed warp operation (the same among its lanes), and
//    atomics (real atomic instructions, relaxed: they never race with each other). So a plain `+=`
//    from many threads of a block, a shared-memory read a barrier does not separate from another
//    thread's write (in either order), and warp-synchronous code without __syncwarp are reported as
//    data races, with both stacks and source lines. Not found: a race between two blocks. Blocks run
//    one after another and each thread slot is one fiber for every block, so TSan sees a block after
//    the previous one (compute-sanitizer's racecheck, too, checks hazards within a block).
// ============================================================================================
extern "C" void __sanitizer_report_error_summary(const char* error_summary);
extern "C" __attribute__((weak)) void __sanitizer_report_error_summary(const char* error_summary) {
  std::fprintf(stderr, "%s\n", error_summary);
  tt_sim_::Scheduler* s = tt_sim_::t_running;
  if (s != nullptr && s->current() >= 0)
    std::fprintf(stderr, "========= tinytorch CUDA simulator: reported in %s\n", s->where().c_str());
}

#endif  // TINYTORCH_CUDA_SIM

// tinytorch/backend/cuda/sim.hpp — the kernel simulator: CUDA kernels run on the CPU, one block at a
// time, the threads of a block as cooperative fibers.
//
// What it implements. With TINYTORCH_CUDA_SIM=1 (g++/clang++ only) the same backend/cuda/*.cuh sources
// that nvcc compiles for a GPU compile as host code against this header, which defines what CUDA C++
// adds to C++: the keywords (__global__, __device__, __host__, __forceinline__, __shared__, ...), the
// built-in variables threadIdx/blockIdx/blockDim/gridDim and warpSize, the vector types (dim3, uint3,
// float2, float3, float4), __syncthreads() (and _count/_and/_or), the warp functions (__syncwarp,
// __shfl*_sync, __ballot_sync, __any_sync, __all_sync, __activemask), atomics, __ldg, bit casts and
// the fast-math intrinsics.
// Kernels are launched only through launch_kernel (launch.hpp), which calls sim::run_grid below.
//
// How the scheduling works.
//   * Blocks run one after another on the calling host thread, blockIdx.x fastest, then y, then z.
//   * Within a block every CUDA thread is a fiber: its own stack and saved registers, resumed by a
//     context switch (section 3: a few lines of x86-64 assembly, or POSIX swapcontext elsewhere). A scheduler loop makes passes over the threads in linear order
//     tid = x + y*blockDim.x + z*blockDim.x*blockDim.y; each ready thread runs until it finishes or
//     blocks: at __syncthreads(), or at a warp operation (__syncwarp, shuffle, vote). Nothing else
//     switches threads, so between two such points a thread runs alone and plain loads and stores
//     (atomics included) need no locks.
//   * A warp operation completes as soon as every lane named in its mask that exists and has not
//     returned has arrived at a warp operation of the same kind with the same mask; its lanes become
//     ready and run, in lane order, in the scheduler's next pass over them.
//   * When no thread is ready: if all have finished the block is done; if all wait at __syncthreads()
//     (any call of it: like the hardware's barrier 0, the simulator does not tell call sites apart)
//     the barrier opens and the next pass begins; anything else can never complete (a thread returned
//     before a __syncthreads() others wait at, or a warp operation waits for a lane that waits
//     elsewhere) and the launch throws tinytorch::Error naming the kernel, the block and a thread
//     that did not arrive, never a hang.
//   So a kernel's output never depends on timing: the order is fixed and documented above, and a
//   test can log it (tests/test_cuda_sim.cpp, "execution order is the documented one").
//   * An exception thrown by device code (e.g. a TT_CHECK) is caught in its fiber; the launch stops
//     the block and rethrows it on the host as tinytorch::Error("kernel '<name>': block (x,y,z),
//     thread (x,y,z): <what>").
//   * __shared__ is `static thread_local`: one block runs at a time per host thread, and two host
//     threads launching at once (DataParallel replicas) each get their own copy. The dynamic shared
//     buffer (TT_DYNAMIC_SHARED) is 16-byte aligned and refilled with 0xFF bytes for every block, so
//     reading it before writing gives NaN floats and -1 integers rather than the last block's values.
//
// Debugging with gdb (chapter 10 quotes this). The built-ins are ordinary thread_local variables, set
// by the scheduler before it switches into a thread, so gdb can condition on them and print them:
//     g++ -std=c++17 -g -O0 -DTINYTORCH_CUDA_SIM=1 -Iinclude my_test.cpp -o my_test
//     gdb -batch -ex 'break my_kernel<float> if threadIdx.x == 3 && blockIdx.x == 1' -ex run
//         -ex 'print threadIdx' -ex 'print blockIdx' -ex bt ./my_test
// (a template kernel is named with its arguments, as in `break saxpy_kernel<float>`; gdb finds it in
// any namespace). `bt` shows the thread's own stack, from the kernel down to the fiber's entry
// (sim::Scheduler::fiber_main). Checked on tests/test_cuda_sim.cpp with gdb 13: at the breakpoint
// `print threadIdx` gives {x = 3, y = 0, z = 0} and `print blockIdx` {x = 1, y = 0, z = 0}.
//
// Limits (CUDA's defaults; a launch beyond them throws with CUDA's wording):
//   block: x, y <= 1024, z <= 64, x*y*z <= 1024 ("invalid configuration argument");
//   grid:  x <= 2^31-1, y, z <= 65535, none 0 ("invalid configuration argument");
//   dynamic shared memory <= 48 KiB, CUDA's limit without cudaFuncSetAttribute's opt-in ("invalid
//   argument"). Each thread has a 128 KiB stack (plus a guard page: overflowing it is a SIGSEGV).
//   Not simulated: timing, memory coalescing and bank conflicts, warp divergence cost, dynamic
//   parallelism (a launch inside a kernel throws), cooperative groups, streams (every launch is
//   synchronous), spin-waiting (a thread looping until another thread sets a flag or frees an
//   atomicCAS lock never ends: threads switch only at barriers and warp operations).
//   Values a GPU leaves undefined are given fixed ones: a shuffle reading a lane that does not take
//   part returns NaN for floating types and the caller's own value otherwise; static __shared__
//   arrays keep the previous block's contents (a GPU gives garbage); __activemask() is the warp's
//   lanes that exist and have not returned. After a failed launch the block's other threads are
//   abandoned mid-kernel (their locals are not destroyed).
//   Device code may call CUDA's global min/max overloads or std::min/std::max (nvcc needs
//   --expt-relaxed-constexpr for the latter).
//   Speed (2-core VM, -O2): a switch and the scheduler's bookkeeping cost ~80 ns with the assembly
//   switch, ~420 ns with swapcontext (glibc's makes a sigprocmask system call per switch). A thread
//   that meets no barrier costs one switch in and one out; each __syncthreads() two more per thread.
//   A 64 x 256 elementwise launch takes a few ms (~50 ms under ASan at -O0).
//   Under AddressSanitizer every switch is announced with __sanitizer_start/finish_switch_fiber.
//
// Reference: numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1: "execution of kernels is performed by
// the simulator one block at a time", numba/cuda/simulator/); CUDA C++ Programming Guide, sections "Built-in
// Variables", "Synchronization Functions" (__syncthreads), "Warp Vote Functions", "Warp Shuffle
// Functions" (and the PTX ISA's `shfl.sync` pseudocode, which fixes the out-of-range cases), "Atomic
// Functions", "Compute Capabilities" (the limits). Chapter: chapters/10-gpu-kernels.md.
#pragma once

#include "../../core/config.hpp"

#if defined(__CUDACC__)
#error "backend/cuda/sim.hpp is the kernel simulator for g++/clang++ (TINYTORCH_CUDA_SIM=1); nvcc has the real CUDA"
#endif
// In a CPU build (no TINYTORCH_CUDA_SIM) this header is empty, so that the header_compiles check,
// which compiles every public header on its own, passes; kernels include it through launch.hpp.
#if TINYTORCH_CUDA_SIM

#include <math.h>  // the C names (expf, fmaxf, ...) in the global namespace, as CUDA has them
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>

#include "../../core/check.hpp"

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
inline constexpr size_t kFiberStackBytes = 128 * 1024;

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
  char* stack = nullptr;       // kFiberStackBytes, a PROT_NONE guard page below it
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
};

/// Per host thread: the fibers (allocated once, reused by every block and launch) and the block
/// being run.
class Scheduler {
 public:
  Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  ~Scheduler() {
    if (!fibers_) return;
    for (int i = 0; i < kMaxThreadsPerBlock; ++i)
      if (fibers_[i].stack) munmap(fibers_[i].stack - page_size(), kFiberStackBytes + page_size());
  }

  bool in_kernel() const { return running_; }
  int current() const { return current_; }
  Fiber& fiber(int i) { return fibers_[i]; }
  int nthreads() const { return nthreads_; }
  void* dynamic_smem() const { return smem_; }

  /// Runs every block of the grid; throws tinytorch::Error on a failed block.
  void run_grid(const char* name, dim3 grid, dim3 block, size_t smem_bytes, void (*body)(void*), void* arg);

  /// Device side: the current thread leaves its fiber for the scheduler (after setting its state).
  void yield();

  /// The fiber's entry point; runs the kernel body on the fiber's stack.
  static void fiber_main();

 private:
  static size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
  void prepare_fiber(int i);
  void run_fiber(int i);
  void run_block(const char* name);
  void resolve_warp(int warp);
  [[noreturn]] void fail_block(const std::string& prefix, const std::string& what);
  std::string block_prefix(const char* name) const;
  static std::string thread_str(uint3 t);

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
};

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
  if (!f.stack) {  // first use of this slot: its stack, with a guard page below
    const size_t page = page_size();
    void* mem = mmap(nullptr, kFiberStackBytes + page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    TT_CHECK(mem != MAP_FAILED, "CUDA simulator: cannot map a ", kFiberStackBytes, "-byte thread stack");
    mprotect(mem, page, PROT_NONE);
    f.stack = static_cast<char*>(mem) + page;
  }
  make_context(f.ctx, f.stack, kFiberStackBytes, &Scheduler::fiber_main);
  f.state = State::kReady;
  f.error = nullptr;
  f.asan_fake_stack = nullptr;
}

inline void Scheduler::fiber_main() {
  Scheduler& s = scheduler();
  Fiber& f = s.fibers_[s.current_];
#if TT_SIM_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &s.sched_stack_bottom_, &s.sched_stack_size_);
#endif
  try {
    s.body_(s.body_arg_);  // the kernel, with this thread's copy of its arguments
  } catch (...) {
    f.error = std::current_exception();
  }
  f.state = State::kFinished;
#if TT_SIM_ASAN
  __sanitizer_start_switch_fiber(nullptr, s.sched_stack_bottom_, s.sched_stack_size_);  // fiber ends
#endif
  switch_context(f.ctx, s.sched_ctx_);  // never resumed
  std::abort();
}

inline void Scheduler::run_fiber(int i) {
  current_ = i;
  threadIdx = fibers_[i].tid;
#if TT_SIM_ASAN
  __sanitizer_start_switch_fiber(&sched_fake_stack_, fibers_[i].stack, kFiberStackBytes);
#endif
  switch_context(sched_ctx_, fibers_[i].ctx);
#if TT_SIM_ASAN
  __sanitizer_finish_switch_fiber(sched_fake_stack_, nullptr, nullptr);
#endif
  current_ = -1;
}

inline void Scheduler::yield() {
  Fiber& f = fibers_[current_];
#if TT_SIM_ASAN
  __sanitizer_start_switch_fiber(&f.asan_fake_stack, sched_stack_bottom_, sched_stack_size_);
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
    if (fibers_[i].state != State::kFinished) ASAN_UNPOISON_MEMORY_REGION(fibers_[i].stack, kFiberStackBytes);
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
  for (int i = 0; i < nthreads_; ++i) {
    prepare_fiber(i);
    const unsigned bx = blockDim.x, by = blockDim.y, ui = static_cast<unsigned>(i);
    fibers_[i].tid = uint3{ui % bx, (ui / bx) % by, ui / (bx * by)};
  }
  if (smem_bytes_) std::memset(smem_, 0xFF, smem_bytes_);
  for (;;) {
    bool ran = false;
    for (int i = 0; i < nthreads_; ++i) {  // one pass: each ready thread runs until it blocks or ends
      Fiber& f = fibers_[i];
      if (f.state != State::kReady) continue;
      ran = true;
      run_fiber(i);
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
    int finished = 0, at_barrier = 0, first_finished = -1, first_barrier = -1, first_warp = -1;
    for (int i = 0; i < nthreads_; ++i) {
      const State st = fibers_[i].state;
      if (st == State::kFinished) {
        ++finished;
        if (first_finished < 0) first_finished = i;
      } else if (st == State::kAtBarrier) {
        ++at_barrier;
        if (first_barrier < 0) first_barrier = i;
      } else if (first_warp < 0) {
        first_warp = i;
      }
    }
    if (finished == nthreads_) return;
    if (at_barrier == nthreads_) {  // every thread reached __syncthreads(): open the barrier
      uint64_t count = 0;           // for __syncthreads_count/_and/_or: threads whose predicate is true
      for (int i = 0; i < nthreads_; ++i) count += fibers_[i].value != 0;
      for (int i = 0; i < nthreads_; ++i) {
        fibers_[i].result = count;
        fibers_[i].state = State::kReady;
      }
      continue;
    }
    if (first_warp < 0) {  // some wait at __syncthreads(), the others have returned
      fail_block(block_prefix(name),
                 str_cat("thread ", thread_str(fibers_[first_barrier].tid),
                                 " waits at __syncthreads() but thread ", thread_str(fibers_[first_finished].tid),
                                 " returned without reaching it (", at_barrier, " of ", nthreads_,
                                 " threads wait); every thread of a block must reach each __syncthreads()"));
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
                                void* arg) {
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

  if (!fibers_) fibers_.reset(new Fiber[kMaxThreadsPerBlock]);
  // Dynamic shared memory: one exact-size 16-byte-aligned buffer for the launch.
  std::unique_ptr<float4[]> smem(smem_bytes ? new float4[(smem_bytes + 15) / 16] : nullptr);
  smem_ = smem.get();
  smem_bytes_ = smem_bytes;
  body_ = body;
  body_arg_ = arg;
  nthreads_ = static_cast<int>(threads);
  running_ = true;
  struct Reset {  // leave the host thread's built-ins and state as before, also on error
    Scheduler& s;
    ~Reset() {
      s.running_ = false;
      s.smem_ = nullptr;
      s.smem_bytes_ = 0;
      threadIdx = uint3{0, 0, 0};
      blockIdx = uint3{0, 0, 0};
      blockDim = dim3();
      gridDim = dim3();
    }
  } reset{*this};
  gridDim = grid;
  blockDim = block;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        blockIdx = uint3{x, y, z};
        run_block(name);
      }
}

/// Runs a kernel body over a grid (launch.hpp's launch_kernel calls this). `body(arg)` is the kernel
/// call one thread makes.
inline void run_grid(const char* name, dim3 grid, dim3 block, size_t smem_bytes, void (*body)(void*), void* arg) {
  scheduler().run_grid(name, grid, block, smem_bytes, body, arg);
}

namespace detail {

inline Scheduler& device_scheduler(const char* what) {
  Scheduler& s = scheduler();
  TT_CHECK(s.in_kernel() && s.current() >= 0, what, "() called outside a kernel");
  return s;
}

/// __syncthreads(): waits until every thread of the block is here; returns how many threads passed
/// a non-zero predicate.
inline int barrier(int predicate = 0) {
  Scheduler& s = device_scheduler("__syncthreads");
  Fiber& f = s.fiber(s.current());
  f.value = predicate != 0;
  f.state = State::kAtBarrier;
  s.yield();
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
  s.yield();
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

template <class T, class F>
T read_modify_write(T* address, F f) {  // fibers are cooperative: nobody runs between load and store
  const T old = *address;
  *address = f(old);
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

inline void __syncthreads() { tt_sim_::detail::barrier(); }
inline int __syncthreads_count(int predicate) { return tt_sim_::detail::barrier(predicate); }
inline int __syncthreads_and(int predicate) {
  return tt_sim_::detail::barrier(predicate) == static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
}
inline int __syncthreads_or(int predicate) { return tt_sim_::detail::barrier(predicate) != 0; }
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
  for (int k = 0; k < 32 && base + k < s.nthreads(); ++k)
    if (s.fiber(base + k).state != tt_sim_::State::kFinished) m |= 1u << k;
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

#endif  // TINYTORCH_CUDA_SIM

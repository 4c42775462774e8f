// ch10 exercise 7 (new bugs, and 10.7's exercise): a copy of tests/sim_check/planted_bugs.cpp with the ans_* cases added.
// tests/sim_check/planted_bugs.cpp — the kernel simulator's checks (memcheck, racecheck, synccheck,
// initcheck, the hang report, the stack limit) against the bugs students write, each beside its fix.
//
// `planted_bugs <case>` runs one case: a kernel written as a student would, launched on simulated
// device memory. "<bug>" cases must be reported (the program fails, and the report names the kernel
// and the kind of error; a bug case that runs to the end unreported exits 3 saying which check it
// needs); "<bug>_fixed" cases are the corrected kernel and must pass and print
// "ok <case>". tests/sim_check/tests.cmake builds this file in the modes the checks need and runs
// each case through expect.sh:
//   plain build         memcheck, racecheck's order comparison, initcheck (TINYTORCH_SIM_CHECK=...),
//                       synccheck, the hang report, the stack and shared-memory limits
//   -fsanitize=thread   (build-tsan, scripts/test.sh's TSan stage): racecheck through ThreadSanitizer
// Chapter: chapters/10-gpu-kernels.md, "The simulator's sanitizers" (the table of bug, GPU behaviour,
// compute-sanitizer's report and the simulator's comes from these cases).
#define TINYTORCH_CUDA_SIM 1

#include <tinytorch/backend/cuda/launch.hpp>
#include <tinytorch/core/cuda_runtime.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ttc = tinytorch::backend::cuda;

namespace {

// ---- device memory helpers ------------------------------------------------------------------
template <class T>
T* device_alloc(size_t n, int device = 0) {
  return static_cast<T*>(ttc::raw_malloc(device, n * sizeof(T)));
}
template <class T>
std::vector<T> to_host(const T* d, size_t n) {
  std::vector<T> h(n);
  ttc::memcpy_d2h(h.data(), d, n * sizeof(T));
  return h;
}
template <class T>
T* to_device(const std::vector<T>& h) {
  T* d = device_alloc<T>(h.size());
  ttc::memcpy_h2d(d, h.data(), h.size() * sizeof(T));
  return d;
}

// ---- memcheck -----------------------------------------------------------------------------------
// One thread too many writes one element past the end (the missing `if (i < n)`).
__global__ void fill_kernel(float* y, int n, bool guarded) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (guarded && i >= n) return;
  y[i] = 1.0f;
}
__global__ void copy_kernel(const float* x, float* y, int n, bool guarded) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (guarded && i >= n) return;
  y[i % n] = x[i];  // reads x[n] when unguarded
}
__global__ void scale_kernel(float* y, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] *= 2.0f;
}
__global__ void far_kernel(float* y, long long offset) { y[offset] = 1.0f; }
__global__ void before_kernel(float* y) { y[static_cast<int>(threadIdx.x) - 1] = 1.0f; }  // thread 0: y[-1]
struct Opaque;  // only declared: a kernel may pass such pointers through
__global__ void opaque_kernel(void* raw, Opaque* handle, int* out) {
  if (threadIdx.x == 0) out[0] = (raw != nullptr) + (handle == nullptr);
}
__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) c[i] = a[i] + b[i];
}
__global__ void vec4_kernel(const float4* x, float* y, int n4) {
  for (int i = threadIdx.x; i < n4; i += blockDim.x) {
    const float4 v = x[i];
    y[i] = v.x + v.y + v.z + v.w;
  }
}


// ---- ANSWERS (chapter 10): new ways to break fixed kernels --------------------------------------
// (a) an off-by-one in the grid-stride loop of the fixed (atomic) histogram: i <= n reads x[n]
__global__ void histogram_obo_kernel(const int* x, int* bins, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i <= n; i += gridDim.x * blockDim.x) atomicAdd(&bins[x[i]], 1);
}
// (b) the fixed warp reduction with only the __syncwarp() between the read and the write removed
__global__ void warp_sum_one_removed_kernel(const float* x, float* out) {
  __shared__ float s[64];
  const unsigned t = threadIdx.x;
  s[t] = x[t] + x[t + 32];
  __syncwarp();
  volatile float* v = s;
  for (int offset = 16; offset > 0; offset /= 2) {
    const float mine = v[t] + v[t + offset];
    v[t] = mine;  // no __syncwarp() before this write: a lane may overwrite what another still reads
    __syncwarp();
  }
  if (t == 0) out[0] = v[0];
}
// (c) 10.7's exercise: a per-block histogram in shared memory, merged with one atomicAdd per bin
__global__ void histogram_shared_kernel(const int* x, int* bins, int n, bool sync_before_merge) {
  __shared__ int local[4];
  if (threadIdx.x < 4) local[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(&local[x[i]], 1);
  if (sync_before_merge) __syncthreads();
  if (threadIdx.x < 4) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

// ---- racecheck ----------------------------------------------------------------------------------
// A histogram: a plain += from many threads loses updates on a GPU.
__global__ void histogram_kernel(const int* x, int* bins, int n, bool atomic) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    if (atomic)
      atomicAdd(&bins[x[i]], 1);
    else
      bins[x[i]] += 1;
  }
}
// A block reduction in shared memory; `synced` false drops the __syncthreads() between the writes
// of the first step and the reads of the tree (a race in both orders across warps).
__global__ void block_sum_kernel(const float* x, float* out, bool synced) {
  __shared__ float s[128];
  const unsigned t = threadIdx.x;
  s[t] = x[blockIdx.x * blockDim.x + t];
  if (synced) __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    if (synced) __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
// The last-warp unrolled reduction of old CUDA samples: warp-synchronous code through volatile shared
// memory. Since Volta the lanes of a warp are not in lockstep; without __syncwarp it races.
__global__ void warp_sum_kernel(const float* x, float* out, bool syncwarp) {
  __shared__ float s[64];
  const unsigned t = threadIdx.x;
  s[t] = x[t] + x[t + 32];
  if (syncwarp) __syncwarp();
  volatile float* v = s;
  for (int offset = 16; offset > 0; offset /= 2) {
    const float mine = v[t] + v[t + offset];
    if (syncwarp) __syncwarp();
    v[t] = mine;
    if (syncwarp) __syncwarp();
  }
  if (t == 0) out[0] = v[0];
}

// Each block scales its part, then reads its left neighbour's result: blocks are not ordered on a GPU
// (the fix: a second kernel launch for the second step).
// step: 0 both steps in one launch (the bug), 1 the first only, 2 the second only.
__global__ void neighbour_kernel(const float* x, float* y, float* z, int step) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (step != 2) y[i] = 2.0f * x[i];
  if (step != 1 && blockIdx.x > 0) z[i] = y[i - blockDim.x];
}

// Stream compaction: each positive element takes the next slot with atomicAdd. Correct, and its
// output order rightly depends on which thread comes first: racecheck's order comparison must not
// call it a race (a launch that uses atomics is not compared).
__global__ void compact_kernel(const float* x, float* out, int* count, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && x[i] > 0) out[atomicAdd(count, 1)] = x[i];
}

// ---- synccheck ----------------------------------------------------------------------------------
__global__ void divergent_kernel(float* y, bool fixed) {
  const unsigned t = threadIdx.x;
  if (fixed) {
    __syncthreads();
    y[t] = t < 32 ? 1.0f : 2.0f;
  } else if (t < 32) {
    __syncthreads();
    y[t] = 1.0f;
  } else {
    __syncthreads();
    y[t] = 2.0f;
  }
}
// The early return before a barrier: fine on a GPU (exited threads do not hold the barrier).
__global__ void early_exit_kernel(const float* x, float* y, int n) {
  __shared__ float s[64];
  const int i = threadIdx.x;
  if (i >= n) return;
  s[i] = x[i];
  __syncthreads();
  y[i] = s[n - 1 - i];
}

// ---- initcheck ----------------------------------------------------------------------------------
__global__ void sum_kernel(const float* x, float* out, int n) {
  if (threadIdx.x != 0) return;
  float acc = 0;
  for (int i = 0; i < n; ++i) acc += x[i];
  out[0] = acc;
}
__global__ void dyn_shared_kernel(float* out, bool written) {
  TT_DYNAMIC_SHARED(float, s);
  if (written) s[threadIdx.x] = 1.0f;
  __syncthreads();
  if (threadIdx.x == 0) out[0] = s[0] + s[blockDim.x - 1];
}

// ---- hang and stack ------------------------------------------------------------------------------
// Block 0 waits for a flag block 1 sets: blocks run one at a time here, so block 0 spins forever.
__global__ void spin_kernel(volatile int* flag, bool fixed) {
  if (fixed) {  // the fix: no inter-block waiting inside one kernel (split it into two launches)
    if (blockIdx.x == 1 && threadIdx.x == 0) *flag = 1;
    return;
  }
  if (blockIdx.x == 0) {
    while (*flag == 0) {
    }
  } else if (threadIdx.x == 0) {
    *flag = 1;
  }
}
__global__ void big_local_kernel(float* y, int n) {
  float local[48 * 1024];  // 192 KiB of local memory per thread
  for (int i = 0; i < n; ++i) local[i] = static_cast<float>(i);
  y[threadIdx.x] = local[n - 1];
}

// N floats of static shared memory: 16384 (64 KiB) is more than a kernel may declare.
template <int N>
__global__ void big_shared_kernel(float* y) {
  __shared__ float s[N];
  for (int i = threadIdx.x; i < N; i += blockDim.x) s[i] = static_cast<float>(i);
  __syncthreads();
  y[threadIdx.x] = s[N - 1 - threadIdx.x];
}

void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "planted_bugs: wrong result: %s\n", what);
    std::exit(1);
  }
}

const std::map<std::string, std::function<void()>>& cases() {
  static const std::map<std::string, std::function<void()>> c = {
      // memcheck
      {"oob_write", [] {  // 32 floats = 128 bytes: the write at y[32] meets the guard page
         float* y = device_alloc<float>(32);
         ttc::launch_kernel("fill", fill_kernel, dim3(1), dim3(64), 0, y, 32, false);
       }},
      {"oob_write_fixed", [] {
         float* y = device_alloc<float>(32);
         ttc::launch_kernel("fill", fill_kernel, dim3(1), dim3(64), 0, y, 32, true);
         expect(to_host(y, 32)[31] == 1.0f, "fill");
       }},
      {"oob_write_short", [] {  // 31 floats: y[31] is in the 16-byte rounding, found by the canary
         float* y = device_alloc<float>(31);
         ttc::launch_kernel("fill", fill_kernel, dim3(1), dim3(32), 0, y, 31, false);
       }},
      {"oob_read", [] {
         float* x = to_device(std::vector<float>(64, 1.0f));
         float* y = device_alloc<float>(64);
         ttc::launch_kernel("copy", copy_kernel, dim3(2), dim3(64), 0, static_cast<const float*>(x), y, 64, false);
       }},
      {"oob_read_fixed", [] {
         float* x = to_device(std::vector<float>(64, 1.0f));
         float* y = device_alloc<float>(64);
         ttc::launch_kernel("copy", copy_kernel, dim3(2), dim3(64), 0, static_cast<const float*>(x), y, 64, true);
         expect(to_host(y, 64)[63] == 1.0f, "copy");
       }},
      {"use_after_free", [] {
         float* y = device_alloc<float>(64);
         ttc::raw_free(0, y);
         ttc::launch_kernel("scale", scale_kernel, dim3(1), dim3(32), 0, y, 64);
       }},
      {"use_after_free_fixed", [] {
         float* y = device_alloc<float>(64);
         ttc::launch_kernel("scale", scale_kernel, dim3(1), dim3(32), 0, y, 64);
         ttc::raw_free(0, y);
       }},
      {"host_pointer", [] {
         std::vector<float> host(64, 1.0f);
         ttc::launch_kernel("scale", scale_kernel, dim3(1), dim3(32), 0, host.data(), 64);
       }},
      {"host_pointer_fixed", [] {
         float* y = to_device(std::vector<float>(64, 1.0f));
         ttc::launch_kernel("scale", scale_kernel, dim3(1), dim3(32), 0, y, 64);
         expect(to_host(y, 64)[5] == 2.0f, "scale");
       }},
      {"other_device", [] {
         float* a = device_alloc<float>(16, 0);
         float* b = device_alloc<float>(16, 1);
         float* c = device_alloc<float>(16, 0);
         ttc::launch_kernel("add", add_kernel, dim3(1), dim3(16), 0, static_cast<const float*>(a),
                            static_cast<const float*>(b), c, 16);
       }},
      {"other_device_fixed", [] {
         float* a = device_alloc<float>(16, 0);
         float* b1 = device_alloc<float>(16, 1);
         float* b = device_alloc<float>(16, 0);
         ttc::memcpy_d2d(b, b1, 16 * sizeof(float));  // copy to the kernel's device first
         float* c = device_alloc<float>(16, 0);
         ttc::launch_kernel("add", add_kernel, dim3(1), dim3(16), 0, static_cast<const float*>(a),
                            static_cast<const float*>(b), c, 16);
       }},
      {"misaligned", [] {
         float* x = to_device(std::vector<float>(68, 1.0f));
         float* y = device_alloc<float>(16);
         ttc::launch_kernel("vec4", vec4_kernel, dim3(1), dim3(16), 0,
                            reinterpret_cast<const float4*>(x + 1), y, 16);  // 4 bytes past a 16-byte boundary
       }},
      {"misaligned_fixed", [] {
         float* x = to_device(std::vector<float>(68, 1.0f));
         float* y = device_alloc<float>(16);
         ttc::launch_kernel("vec4", vec4_kernel, dim3(1), dim3(16), 0, reinterpret_cast<const float4*>(x + 4), y,
                            16);
         expect(to_host(y, 16)[15] == 4.0f, "vec4");
       }},
      {"oob_write_before", [] {
         float* y = device_alloc<float>(31);
         ttc::launch_kernel("before", before_kernel, dim3(1), dim3(31), 0, y);
       }},
      {"opaque_pointers_fixed", [] {  // void* and pointers to incomplete types are valid arguments
         int* out = device_alloc<int>(1);
         ttc::launch_kernel("opaque", opaque_kernel, dim3(1), dim3(32), 0, static_cast<void*>(out),
                            static_cast<Opaque*>(nullptr), out);
         expect(to_host(out, 1)[0] == 2, "opaque");
       }},
      {"far_access", [] {
         float* y = device_alloc<float>(16);
         ttc::launch_kernel("far", far_kernel, dim3(1), dim3(1), 0, y, 1LL << 36);
       }},
      // racecheck
      {"ans_histogram_obo", [] {
         std::vector<int> h(1024);
         for (int i = 0; i < 1024; ++i) h[i] = i % 4;
         const int* x = to_device(h);
         int* bins = to_device(std::vector<int>(4, 0));
         ttc::launch_kernel("histogram_obo", histogram_obo_kernel, dim3(2), dim3(128), 0, x, bins, 1024);
         expect(to_host(bins, 4) == std::vector<int>(4, 256), "histogram_obo");
       }},
      {"ans_warp_sync_one_removed", [] {
         const float* x = to_device(std::vector<float>(64, 1.0f));
         float* out = device_alloc<float>(1);
         ttc::launch_kernel("warp_sum_one_removed", warp_sum_one_removed_kernel, dim3(1), dim3(32), 0, x, out);
         const float got = to_host(out, 1)[0];
         std::printf("warp_sum_one_removed: %g (want 64)\n", got);
         expect(got == 64.0f, "warp_sum_one_removed");
       }},
      {"ans_histogram_shared", [] {
         std::vector<int> h(1024);
         for (int i = 0; i < 1024; ++i) h[i] = i % 4;
         const int* x = to_device(h);
         int* bins = to_device(std::vector<int>(4, 0));
         ttc::launch_kernel("histogram_shared", histogram_shared_kernel, dim3(2), dim3(128), 0, x, bins, 1024, false);
         const auto got = to_host(bins, 4);
         std::printf("histogram_shared (no barrier before the merge): %d %d %d %d (want 256 each)\n", got[0], got[1], got[2], got[3]);
         expect(got == std::vector<int>(4, 256), "histogram_shared");
       }},
      {"ans_histogram_shared_fixed", [] {
         std::vector<int> h(1024);
         for (int i = 0; i < 1024; ++i) h[i] = i % 4;
         const int* x = to_device(h);
         int* bins = to_device(std::vector<int>(4, 0));
         ttc::launch_kernel("histogram_shared", histogram_shared_kernel, dim3(2), dim3(128), 0, x, bins, 1024, true);
         const auto got = to_host(bins, 4);
         std::printf("histogram_shared (with the barrier): %d %d %d %d (want 256 each)\n", got[0], got[1], got[2], got[3]);
         expect(got == std::vector<int>(4, 256), "histogram_shared_fixed");
       }},
      {"histogram", [] {
         std::vector<int> h(1024);
         for (int i = 0; i < 1024; ++i) h[i] = i % 4;
         const int* x = to_device(h);
         int* bins = to_device(std::vector<int>(4, 0));
         ttc::launch_kernel("histogram", histogram_kernel, dim3(2), dim3(128), 0, x, bins, 1024, false);
       }},
      {"histogram_fixed", [] {
         std::vector<int> h(1024);
         for (int i = 0; i < 1024; ++i) h[i] = i % 4;
         const int* x = to_device(h);
         int* bins = to_device(std::vector<int>(4, 0));
         ttc::launch_kernel("histogram", histogram_kernel, dim3(2), dim3(128), 0, x, bins, 1024, true);
         expect(to_host(bins, 4) == std::vector<int>(4, 256), "histogram");
       }},
      {"shared_race", [] {
         const float* x = to_device(std::vector<float>(256, 1.0f));
         float* out = device_alloc<float>(2);
         ttc::launch_kernel("block_sum", block_sum_kernel, dim3(2), dim3(128), 0, x, out, false);
       }},
      {"shared_race_fixed", [] {
         const float* x = to_device(std::vector<float>(256, 1.0f));
         float* out = device_alloc<float>(2);
         ttc::launch_kernel("block_sum", block_sum_kernel, dim3(2), dim3(128), 0, x, out, true);
         expect(to_host(out, 2)[1] == 128.0f, "block_sum");
       }},
      {"warp_sync", [] {
         const float* x = to_device(std::vector<float>(64, 1.0f));
         float* out = device_alloc<float>(1);
         ttc::launch_kernel("warp_sum", warp_sum_kernel, dim3(1), dim3(32), 0, x, out, false);
       }},
      {"shared_race_order", [] { cases().at("shared_race")(); }},  // the same bugs, for the order check
      {"shared_race_initcheck", [] { cases().at("shared_race")(); }},  // and for initcheck
      {"warp_sync_initcheck", [] { cases().at("warp_sync")(); }},
      {"order_initcheck_fixed", [] { cases().at("order_fixed")(); }},
      {"order_fixed", [] {
         cases().at("shared_race_fixed")();
         cases().at("warp_sync_fixed")();
       }},
      {"warp_sync_fixed", [] {
         const float* x = to_device(std::vector<float>(64, 1.0f));
         float* out = device_alloc<float>(1);
         ttc::launch_kernel("warp_sum", warp_sum_kernel, dim3(1), dim3(32), 0, x, out, true);
         expect(to_host(out, 1)[0] == 64.0f, "warp_sum");
       }},
      {"inter_block", [] {  // racecheck by order: blocks 1.. read what block 0.. wrote in the same launch
         const float* x = to_device(std::vector<float>(128, 1.0f));
         float* y = to_device(std::vector<float>(128, 0.0f));
         float* z = to_device(std::vector<float>(128, 0.0f));
         ttc::launch_kernel("neighbour", neighbour_kernel, dim3(4), dim3(32), 0, x, y, z, 0);
       }},
      {"inter_block_fixed", [] {
         const float* x = to_device(std::vector<float>(128, 1.0f));
         float* y = to_device(std::vector<float>(128, 0.0f));
         float* z = to_device(std::vector<float>(128, 0.0f));
         ttc::launch_kernel("neighbour_step1", neighbour_kernel, dim3(4), dim3(32), 0, x, y, z, 1);
         ttc::launch_kernel("neighbour_step2", neighbour_kernel, dim3(4), dim3(32), 0, x, y, z, 2);
         expect(to_host(z, 128)[127] == 2.0f, "neighbour");
       }},
      {"compact_fixed", [] {  // not a bug: atomics make the order legitimately visible
         std::vector<float> h(64);
         for (int i = 0; i < 64; ++i) h[i] = (i % 3 == 0) ? static_cast<float>(i) : -1.0f;
         const float* x = to_device(h);
         float* out = to_device(std::vector<float>(64, 0.0f));
         int* count = to_device(std::vector<int>(1, 0));
         ttc::launch_kernel("compact", compact_kernel, dim3(2), dim3(32), 0, x, out, count, 64);
         expect(to_host(count, 1)[0] == 21, "compact");  // 3, 6, ..., 63
       }},
      {"racecheck_host_pointer", [] {  // racecheck runs a launch twice: host memory cannot be restored
         std::vector<float> host(64, 1.0f);
         ttc::launch_kernel("scale", scale_kernel, dim3(1), dim3(32), 0, host.data(), 64);
       }},
      // synccheck
      {"divergent_barrier", [] {
         float* y = device_alloc<float>(64);
         ttc::launch_kernel("divergent", divergent_kernel, dim3(1), dim3(64), 0, y, false);
       }},
      {"divergent_barrier_fixed", [] {
         float* y = device_alloc<float>(64);
         ttc::launch_kernel("divergent", divergent_kernel, dim3(1), dim3(64), 0, y, true);
         expect(to_host(y, 64)[40] == 2.0f, "divergent");
       }},
      {"early_exit_fixed", [] {  // not a bug on a GPU, and not reported here
         std::vector<float> h(40);
         for (int i = 0; i < 40; ++i) h[i] = static_cast<float>(i);
         const float* x = to_device(h);
         float* y = device_alloc<float>(40);
         ttc::launch_kernel("early_exit", early_exit_kernel, dim3(1), dim3(64), 0, x, y, 40);
         expect(to_host(y, 40)[0] == 39.0f, "early_exit");
       }},
      // initcheck
      {"uninitialized", [] {
         float* x = device_alloc<float>(16);  // never written
         float* out = device_alloc<float>(1);
         ttc::launch_kernel("sum", sum_kernel, dim3(1), dim3(32), 0, static_cast<const float*>(x), out, 16);
       }},
      {"uninitialized_partial", [] {  // 12 of 16 floats copied in: the last 4 were never written
         float* x = device_alloc<float>(16);
         ttc::memcpy_h2d(x, std::vector<float>(12, 0.5f).data(), 12 * sizeof(float));
         float* out = device_alloc<float>(1);
         ttc::launch_kernel("sum", sum_kernel, dim3(1), dim3(32), 0, static_cast<const float*>(x), out, 16);
       }},
      {"uninitialized_fixed", [] {  // written by a copy from the host, by a kernel, by a device-to-device copy
         float* x = to_device(std::vector<float>(16, 0.5f));
         float* out = device_alloc<float>(1);
         ttc::launch_kernel("sum", sum_kernel, dim3(1), dim3(32), 0, static_cast<const float*>(x), out, 16);
         expect(to_host(out, 1)[0] == 8.0f, "sum");
         float* y = device_alloc<float>(16);
         ttc::launch_kernel("fill", fill_kernel, dim3(1), dim3(16), 0, y, 16, true);
         ttc::launch_kernel("sum", sum_kernel, dim3(1), dim3(32), 0, static_cast<const float*>(y), out, 16);
         expect(to_host(out, 1)[0] == 16.0f, "sum of a kernel's output");
         float* z = device_alloc<float>(16);
         ttc::memcpy_d2d(z, x, 16 * sizeof(float));
         ttc::launch_kernel("sum", sum_kernel, dim3(1), dim3(32), 0, static_cast<const float*>(z), out, 16);
         expect(to_host(out, 1)[0] == 8.0f, "sum of a copy");
       }},
      {"uninitialized_shared", [] {
         float* out = device_alloc<float>(1);
         ttc::launch_kernel("dyn_shared", dyn_shared_kernel, dim3(1), dim3(32), 32 * sizeof(float), out, false);
       }},
      {"uninitialized_shared_fixed", [] {
         float* out = device_alloc<float>(1);
         ttc::launch_kernel("dyn_shared", dyn_shared_kernel, dim3(1), dim3(32), 32 * sizeof(float), out, true);
         expect(to_host(out, 1)[0] == 2.0f, "dyn_shared");
       }},
      // hang and stack
      {"spin_wait", [] {
         int* flag = to_device(std::vector<int>(1, 0));
         ttc::launch_kernel("spin", spin_kernel, dim3(2), dim3(32), 0, static_cast<volatile int*>(flag), false);
       }},
      {"spin_wait_fixed", [] {
         int* flag = to_device(std::vector<int>(1, 0));
         ttc::launch_kernel("spin", spin_kernel, dim3(2), dim3(32), 0, static_cast<volatile int*>(flag), true);
         expect(to_host(flag, 1)[0] == 1, "spin");
       }},
      {"stack_overflow", [] {
         float* y = device_alloc<float>(32);
         ttc::launch_kernel("big_local", big_local_kernel, dim3(1), dim3(2), 0, y, 48 * 1024);
       }},
      {"fault_recovers_fixed", [] {  // a fault is a tinytorch::Error: the program catches it and goes on
         float* y = device_alloc<float>(32);
         for (const char* k : {"fill", "big_local"}) {
           std::string what;
           try {
             if (k[0] == 'f') ttc::launch_kernel("fill", fill_kernel, dim3(1), dim3(64), 0, y, 32, false);
             else ttc::launch_kernel("big_local", big_local_kernel, dim3(1), dim3(2), 0, y, 48 * 1024);
           } catch (const tinytorch::Error& e) {
             what = e.what();
           }
           expect(what.find(k[0] == 'f' ? "memcheck: invalid write" : "stack overflow") != std::string::npos,
                  "the fault's error");
         }
         ttc::launch_kernel("fill", fill_kernel, dim3(1), dim3(64), 0, y, 32, true);
         expect(to_host(y, 32)[31] == 1.0f, "fill after the faults");
       }},
      {"static_shared", [] {  // 64 KiB of __shared__ arrays: nvcc refuses the kernel
         float* y = device_alloc<float>(32);
         ttc::launch_kernel("big_shared", big_shared_kernel<16384>, dim3(1), dim3(32), 0, y);
       }},
      {"static_shared_dynamic", [] {  // 32 KiB static + 32 KiB dynamic: above 48 KiB without the opt-in
         float* y = device_alloc<float>(32);
         ttc::launch_kernel("big_shared", big_shared_kernel<8192>, dim3(1), dim3(32), 32 * 1024, y);
       }},
      {"static_shared_fixed", [] {  // 32 KiB static + 16 KiB dynamic: exactly the limit
         float* y = device_alloc<float>(32);
         ttc::launch_kernel("big_shared", big_shared_kernel<8192>, dim3(1), dim3(32), 16 * 1024, y);
         expect(to_host(y, 32)[0] == 8191.0f, "big_shared");
       }},
      {"stack_overflow_fixed", [] {  // the same kernel with TINYTORCH_SIM_STACK_KB=256 (expect.sh sets it)
         float* y = device_alloc<float>(32);
         ttc::launch_kernel("big_local", big_local_kernel, dim3(1), dim3(2), 0, y, 48 * 1024);
         expect(to_host(y, 2)[1] == 48.0f * 1024 - 1, "big_local");
       }},
  };
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || cases().count(argv[1]) == 0) {
    std::fprintf(stderr, "usage: planted_bugs <case>; cases:");
    for (const auto& [name, f] : cases()) std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  try {
    cases().at(argv[1])();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "planted_bugs: %s\n", e.what());
    return 1;
  }
  const std::string name = argv[1];
  if (name.size() < 6 || name.compare(name.size() - 6, 6, "_fixed") != 0) {  // a planted bug ran to the end
    std::fprintf(stderr,
                 "planted_bugs: '%s' is a planted bug and nothing reported it: run it with the check it needs "
                 "(TINYTORCH_SIM_CHECK=memcheck, racecheck or initcheck, or a -fsanitize=thread build for "
                 "histogram, shared_race and warp_sync; ctest sim_check_%s sets it: "
                 "tests/sim_check/tests.cmake)\n",
                 argv[1], argv[1]);
    return 3;  // a ThreadSanitizer report comes before this and keeps its own exit code
  }
  std::printf("ok %s\n", argv[1]);
  return 0;
}

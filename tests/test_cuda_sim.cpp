// tests/test_cuda_sim.cpp — the kernel simulator (backend/cuda/sim.hpp) and the launcher (launch.hpp).
//
// Small CUDA kernels written as for nvcc, run by the simulator: grid-stride loops, shared-memory
// block reductions with __syncthreads (1-D, 2-D and 3-D blocks), dynamic shared memory, warp
// shuffles and votes (full and partial masks, `width`), atomics from many blocks, the documented
// execution order, and the errors: a __syncthreads() some threads never reach, a warp operation
// waiting for a lane at a barrier, an exception in device code, bad launch configurations (CUDA's
// wording). Expected values are exact sums / orders computed here (no PyTorch involved).
// Chapter: chapters/10-gpu-kernels.md. Tag [cuda_sim] only, not the threads tag (tests/CMakeLists.txt
// greps for it, bracketed): the ThreadSanitizer stage runs the simulator through the simulator suite
// (tests/cuda) and tests/sim_check, where the fibers are annotated for TSan (sim.hpp section 7).

// This file is always the simulator build, whatever the build flags: the define must come before
// the first tinytorch include (core/config.hpp reads it).
#define TINYTORCH_CUDA_SIM 1

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <tinytorch/backend/cuda/launch.hpp>

namespace ttc = tinytorch::backend::cuda;

namespace {

// ---------------------------------------------------------------------------------------------
// Kernels (templates, as every kernel in backend/cuda must be).
// ---------------------------------------------------------------------------------------------

template <class T>
__global__ void saxpy_kernel(int64_t n, T a, const T* x, T* y) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}

// One partial sum per block: a tree reduction in static shared memory, linear thread index.
template <class T>
__global__ void block_sum_kernel(int64_t n, const T* x, T* partial) {
  __shared__ T smem[1024];
  const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned tid = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
  const int64_t block = blockIdx.x + (int64_t)blockIdx.y * gridDim.x;
  const int64_t nblocks = (int64_t)gridDim.x * gridDim.y;
  T acc = 0;
  for (int64_t i = block * nthreads + tid; i < n; i += nblocks * nthreads) acc += x[i];
  smem[tid] = acc;
  __syncthreads();
  for (unsigned stride = 1; stride < nthreads; stride *= 2) {  // works for any nthreads
    if (tid % (2 * stride) == 0 && tid + stride < nthreads) smem[tid] += smem[tid + stride];
    __syncthreads();
  }
  if (tid == 0) partial[block] = smem[0];
}

// Each thread writes its coordinates at its linear index: checks the (x, y, z) decomposition.
template <class T>
__global__ void coords_kernel(T* out) {
  const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned tid = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
  T* o = out + 3 * ((int64_t)blockIdx.x * nthreads + tid);
  o[0] = threadIdx.x;
  o[1] = threadIdx.y;
  o[2] = threadIdx.z;
}

// Reverses each block's slice through dynamic shared memory; records what it read before writing.
template <class T>
__global__ void reverse_kernel(const T* x, T* y, unsigned* first_word, int* aligned) {
  TT_DYNAMIC_SHARED(T, buf);
  const int64_t base = (int64_t)blockIdx.x * blockDim.x;
  if (threadIdx.x == 0) {
    unsigned w;
    std::memcpy(&w, buf, sizeof w);
    first_word[blockIdx.x] = w;  // before any write: the simulator's fresh 0xFF fill
    aligned[blockIdx.x] = reinterpret_cast<uintptr_t>(buf) % 16 == 0;
  }
  __syncthreads();
  buf[threadIdx.x] = x[base + threadIdx.x];
  __syncthreads();
  y[base + threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}

// Warp sums: down-tree (lane 0 has the total) and xor butterfly (every lane has it).
template <class T>
__global__ void warp_sum_kernel(const T* x, T* down, T* xor_all) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  T v = x[i], w = x[i];
  for (int offset = 16; offset > 0; offset /= 2) {
    v += __shfl_down_sync(0xffffffffu, v, offset);
    w += __shfl_xor_sync(0xffffffffu, w, offset);
  }
  if (threadIdx.x % 32 == 0) down[i / 32] = v;
  xor_all[i] = w;
}

// Every shuffle flavour on lane values v = 100 + lane.
template <class T>
__global__ void shuffle_kernel(int* idx, int* up, int* down, int* xr, int* idx8, int* up8, int* down8, int* xr8) {
  const int lane = threadIdx.x % 32;
  const int v = 100 + lane;
  idx[lane] = __shfl_sync(0xffffffffu, v, 5);               // broadcast of lane 5
  up[lane] = __shfl_up_sync(0xffffffffu, v, 3);             // lanes 0..2 keep their own
  down[lane] = __shfl_down_sync(0xffffffffu, v, 3);         // lanes 29..31 keep their own
  xr[lane] = __shfl_xor_sync(0xffffffffu, v, 1);            // pairs swap
  idx8[lane] = __shfl_sync(0xffffffffu, v, 9, 8);           // srcLane 9 mod 8 = 1 within each 8-lane segment
  up8[lane] = __shfl_up_sync(0xffffffffu, v, 2, 8);         // within segments of 8
  down8[lane] = __shfl_down_sync(0xffffffffu, v, 2, 8);
  xr8[lane] = __shfl_xor_sync(0xffffffffu, v, 8, 8);        // later segment: own value; earlier: partner
  (void)sizeof(T);
}

// Inclusive prefix sum within a warp with __shfl_up_sync.
template <class T>
__global__ void warp_scan_kernel(const T* x, T* y) {
  const int lane = threadIdx.x % 32;
  T v = x[threadIdx.x];
  for (int d = 1; d < 32; d *= 2) {
    const T u = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += u;
  }
  y[threadIdx.x] = v;
}

// Votes over full and partial masks (lanes 0..15 only take part in the second set).
template <class T>
__global__ void vote_kernel(unsigned* ballot, int* any, int* all, unsigned* ballot16, int* any16, int* all16,
                            unsigned* active) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  active[threadIdx.x] = __activemask();  // every lane of the warp exists and has not returned
  ballot[threadIdx.x] = __ballot_sync(0xffffffffu, lane % 3 == 0);
  any[threadIdx.x] = __any_sync(0xffffffffu, lane == 7 && warp == 1);
  all[threadIdx.x] = __all_sync(0xffffffffu, lane < 32);
  if (lane < 16) {
    ballot16[threadIdx.x] = __ballot_sync(0x0000ffffu, lane >= 10);
    any16[threadIdx.x] = __any_sync(0x0000ffffu, lane == 20);  // lane 20 does not take part
    all16[threadIdx.x] = __all_sync(0x0000ffffu, lane < 16);
    __syncwarp(0x0000ffffu);
  }
  (void)sizeof(T);
}

// A shuffle that reads a lane outside the mask: undefined on a GPU, NaN in the simulator.
template <class T>
__global__ void shuffle_outside_mask_kernel(T* y) {
  if (threadIdx.x < 16) y[threadIdx.x] = __shfl_down_sync(0x0000ffffu, T(1), 8);
}

// The warp reduction of a 48-thread block, whose second warp has 16 lanes.
template <class T>
__global__ void partial_warp_kernel(T* y) {
  T v = 1;
  v += __shfl_down_sync(0xffffffffu, v, 1);  // lane 15 of warp 1 reads lane 16, which does not exist
  y[threadIdx.x] = v;
}

template <class T>
__global__ void atomics_kernel(float* fsum, int* icount, unsigned long long* usum, int* imax, double* dsum,
                               unsigned* cas_count) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  atomicAdd(fsum, 1.0f);
  atomicAdd(icount, 1);
  atomicAdd(usum, (unsigned long long)i);
  atomicMax(imax, (int)i);
  atomicAdd(dsum, 0.5);
  unsigned old = *cas_count, assumed;  // the CAS loop idiom
  do {
    assumed = old;
    old = atomicCAS(cas_count, assumed, assumed + 2u);
  } while (old != assumed);
  (void)sizeof(T);
}

// Logs the order in which threads pass two points, separated by a barrier.
template <class T>
__global__ void order_kernel(int* counter, T* before, T* after, T* block_order) {
  const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned tid = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
  const int64_t block = blockIdx.x + (int64_t)blockIdx.y * gridDim.x;
  const int64_t i = block * nthreads + tid;
  if (tid == 0) block_order[block] = atomicAdd(counter, 1);
  before[i] = atomicAdd(counter, 1);
  __syncthreads();
  after[i] = atomicAdd(counter, 1);
}

// Barriers that also count: __syncthreads_count / _and / _or; CUDA's unqualified min/max.
template <class T>
__global__ void sync_count_kernel(T* out) {
  const int count = __syncthreads_count(threadIdx.x % 3 == 0);
  const int all = __syncthreads_and(threadIdx.x < 1000);
  const int any = __syncthreads_or(threadIdx.x == 7);
  const int none = __syncthreads_or(0);
  if (threadIdx.x == 0) {
    out[0] = count;
    out[1] = all;
    out[2] = any;
    out[3] = none;
    out[4] = max(static_cast<int64_t>(blockDim.x), int64_t{5}) + min(3, -2);
  }
}

template <class T>
__global__ void early_return_kernel(T* y) {
  if (threadIdx.x >= 5) return;  // exited threads count as arrived at the barrier, as on a GPU
  const int all = __syncthreads_and(1);  // ... and are not counted by the predicate barriers
  y[threadIdx.x] = __syncthreads_count(1) * 10 + all;
}

inline int divergent_line = 0;
template <class T>
__global__ void divergent_barrier_kernel(T* y) {
  if (threadIdx.x < 32) {
    __syncthreads();
    y[threadIdx.x] = 1;
  } else {
    divergent_line = __LINE__ + 1;
    __syncthreads();  // another barrier: undefined on a GPU (a hang or a wrong result)
    y[threadIdx.x] = 2;
  }
}

template <class T>
__global__ void warp_vs_barrier_kernel(T* y) {
  if (threadIdx.x < 16)
    y[threadIdx.x] = __shfl_down_sync(0xffffffffu, T(1), 1);  // waits for lanes 16..31 ...
  else
    __syncthreads();  // ... which wait here
}

template <class T>
__global__ void throwing_kernel(T* y) {
  TT_CHECK(!(blockIdx.x == 1 && threadIdx.x == 3), "device check failed: value ", 42);
  __syncthreads();
  y[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

template <class T>
__global__ void nested_launch_kernel(T* y) {
  ttc::launch_kernel("inner", saxpy_kernel<T>, dim3(1), dim3(1), 0, int64_t{0}, T(1), y, y);
}

// Each thread gets its own copy of the parameters.
template <class T>
__global__ void param_copy_kernel(int64_t n, T* y) {
  n += threadIdx.x;  // changes this thread's copy only
  y[threadIdx.x] = static_cast<T>(n);
}

std::string launch_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const tinytorch::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Reads its static __shared__ array before writing it, then leaves the block's index there: a
// later block must not see it (every block starts with 0xFF bytes).
__global__ void static_fresh_kernel(unsigned* first_word) {
  __shared__ unsigned s[64];
  if (threadIdx.x == 0) first_word[blockIdx.x] = s[5];
  __syncthreads();
  s[threadIdx.x] = blockIdx.x;
}

}  // namespace

TEST_CASE("sim: grid-stride SAXPY on 64 blocks x 256 threads", "[cuda_sim]") {
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{64 * 256}, int64_t{3 * 64 * 256 + 5}}) {
    std::vector<float> x(n), y(n), want(n);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i % 97) - 40.0f;
      y[i] = 0.25f * static_cast<float>(i % 13);
      want[i] = 3.0f * x[i] + y[i];
    }
    ttc::launch_kernel("saxpy", saxpy_kernel<float>, dim3(64), dim3(256), 0, n, 3.0f, x.data(), y.data());
    CHECK(y == want);
  }
  // grid_1d: at least one block, capped for the stride loop; bad thread counts throw.
  CHECK(ttc::grid_1d(0).x == 1);
  CHECK(ttc::grid_1d(1).x == 1);
  CHECK(ttc::grid_1d(257).x == 2);
  CHECK(ttc::grid_1d(int64_t{1} << 40).x == ttc::kGrid1dMaxBlocks);
  CHECK_THROWS_WITH(ttc::grid_1d(10, 1025),
                    Catch::Contains("grid_1d: threads per block must be in [1, 1024], got 1025"));
}

TEST_CASE("sim: shared-memory block reduction with __syncthreads", "[cuda_sim]") {
  const int64_t n = 100003;
  std::vector<int64_t> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = i + 1;
  const int64_t want = n * (n + 1) / 2;
  struct Config {
    dim3 grid, block;
  };
  for (const Config& c : {Config{dim3(1), dim3(256)}, Config{dim3(3), dim3(128)}, Config{dim3(7), dim3(1024)},
                          Config{dim3(5), dim3(33)}, Config{dim3(2, 3), dim3(16, 8)},
                          Config{dim3(4), dim3(8, 4, 2)}, Config{dim3(2), dim3(3, 5, 7)}, Config{dim3(1), dim3(1)}}) {
    const int64_t nblocks = (int64_t)c.grid.x * c.grid.y;
    std::vector<int64_t> partial(nblocks, -1);
    ttc::launch_kernel("block_sum", block_sum_kernel<int64_t>, c.grid, c.block, 0, n, x.data(), partial.data());
    int64_t total = 0;
    for (int64_t p : partial) total += p;
    INFO("grid (" << c.grid.x << "," << c.grid.y << "), block (" << c.block.x << "," << c.block.y << ","
                  << c.block.z << ")");
    CHECK(total == want);
  }
}

TEST_CASE("sim: threadIdx of 2-D and 3-D blocks follows the linear order x fastest", "[cuda_sim]") {
  for (dim3 block : {dim3(16, 8), dim3(8, 4, 2), dim3(3, 5, 7)}) {
    const int64_t nthreads = (int64_t)block.x * block.y * block.z;
    std::vector<int> out(3 * 2 * nthreads, -1);
    ttc::launch_kernel("coords", coords_kernel<int>, dim3(2), block, 0, out.data());
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t t = 0; t < nthreads; ++t) {
        const int* o = &out[3 * (b * nthreads + t)];
        CHECK(o[0] == t % block.x);
        CHECK(o[1] == (t / block.x) % block.y);
        CHECK(o[2] == t / (block.x * block.y));
      }
  }
}

TEST_CASE("sim: static __shared__ arrays are fresh for every block, and measured", "[cuda_sim]") {
  std::vector<unsigned> first_word(4, 0);
  ttc::launch_kernel("static_fresh", static_fresh_kernel, dim3(4), dim3(64), 0, first_word.data());
  for (unsigned b = 0; b < 4; ++b) CHECK(first_word[b] == 0xFFFFFFFFu);  // not the previous block's index
  CHECK(ttc::sim::detail::static_shared_bytes(reinterpret_cast<const void*>(&static_fresh_kernel)) == 64 * 4);
  CHECK(ttc::sim::detail::static_shared_bytes(reinterpret_cast<const void*>(&reverse_kernel<float>)) == 0);
  CHECK(ttc::sim::detail::static_shared_bytes(&first_word) == -1);  // not a function
}

TEST_CASE("sim: dynamic shared memory is aligned and fresh for every block", "[cuda_sim]") {
  const unsigned threads = 96, blocks = 5;
  std::vector<float> x(threads * blocks), y(threads * blocks);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  std::vector<unsigned> first_word(blocks, 0);
  std::vector<int> aligned(blocks, 0);
  ttc::launch_kernel("reverse", reverse_kernel<float>, dim3(blocks), dim3(threads), threads * sizeof(float),
                     x.data(), y.data(), first_word.data(), aligned.data());
  for (unsigned b = 0; b < blocks; ++b) {
    for (unsigned t = 0; t < threads; ++t) CHECK(y[b * threads + t] == x[b * threads + threads - 1 - t]);
    CHECK(first_word[b] == 0xFFFFFFFFu);  // not the previous block's data
    CHECK(aligned[b] == 1);
  }
  // double: 8-byte elements, 16-byte alignment
  std::vector<double> xd(64), yd(64);
  for (int i = 0; i < 64; ++i) xd[i] = i * 0.5;
  ttc::launch_kernel("reverse", reverse_kernel<double>, dim3(2), dim3(32), 32 * sizeof(double), xd.data(), yd.data(),
                     first_word.data(), aligned.data());
  CHECK(yd[0] == xd[31]);
  CHECK(yd[63] == xd[32]);
}

TEST_CASE("sim: warp shuffle reductions (down and xor)", "[cuda_sim]") {
  const int blocks = 3, threads = 128;
  std::vector<double> x(blocks * threads);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i + 1);
  std::vector<double> down(x.size() / 32, 0), xor_all(x.size(), 0);
  ttc::launch_kernel("warp_sum", warp_sum_kernel<double>, dim3(blocks), dim3(threads), 0, x.data(), down.data(),
                     xor_all.data());
  for (size_t w = 0; w < down.size(); ++w) {
    const double first = 32.0 * w + 1, last = 32.0 * w + 32;
    const double want = (first + last) * 16;
    CHECK(down[w] == want);
    for (int l = 0; l < 32; ++l) CHECK(xor_all[w * 32 + l] == want);
  }
}

TEST_CASE("sim: every shuffle flavour, out-of-range lanes and the width parameter", "[cuda_sim]") {
  std::vector<int> idx(32), up(32), down(32), xr(32), idx8(32), up8(32), down8(32), xr8(32);
  ttc::launch_kernel("shuffles", shuffle_kernel<int>, dim3(1), dim3(32), 0, idx.data(), up.data(), down.data(),
                     xr.data(), idx8.data(), up8.data(), down8.data(), xr8.data());
  for (int l = 0; l < 32; ++l) {
    INFO("lane " << l);
    const int seg = l / 8 * 8;
    CHECK(idx[l] == 105);
    CHECK(up[l] == 100 + (l >= 3 ? l - 3 : l));
    CHECK(down[l] == 100 + (l + 3 <= 31 ? l + 3 : l));
    CHECK(xr[l] == 100 + (l ^ 1));
    CHECK(idx8[l] == 100 + seg + 1);
    CHECK(up8[l] == 100 + (l - 2 >= seg ? l - 2 : l));
    CHECK(down8[l] == 100 + (l + 2 <= seg + 7 ? l + 2 : l));
    CHECK(xr8[l] == 100 + ((l ^ 8) <= seg + 7 ? (l ^ 8) : l));  // lanes 0-7, 16-23 keep their own
  }
  std::vector<int> x(64), y(64);
  for (int i = 0; i < 64; ++i) x[i] = i % 5 + 1;
  ttc::launch_kernel("warp_scan", warp_scan_kernel<int>, dim3(1), dim3(64), 0, x.data(), y.data());
  for (int w = 0; w < 2; ++w) {
    int acc = 0;
    for (int l = 0; l < 32; ++l) {
      acc += x[w * 32 + l];
      CHECK(y[w * 32 + l] == acc);
    }
  }
}

TEST_CASE("sim: ballot, any, all and activemask with full and partial masks", "[cuda_sim]") {
  const int n = 64;
  std::vector<unsigned> ballot(n), ballot16(n, 7), active(n);
  std::vector<int> any(n), all(n), any16(n, 7), all16(n, 7);
  ttc::launch_kernel("votes", vote_kernel<int>, dim3(1), dim3(n), 0, ballot.data(), any.data(), all.data(),
                     ballot16.data(), any16.data(), all16.data(), active.data());
  unsigned want_ballot = 0;
  for (int l = 0; l < 32; l += 3) want_ballot |= 1u << l;
  for (int t = 0; t < n; ++t) {
    INFO("thread " << t);
    const int lane = t % 32;
    CHECK(ballot[t] == want_ballot);
    CHECK(any[t] == (t >= 32 ? 1 : 0));  // only warp 1 has lane 7 voting true
    CHECK(all[t] == 1);
    if (lane < 16) {
      CHECK(ballot16[t] == 0x0000fc00u);  // lanes 10..15
      CHECK(any16[t] == 0);
      CHECK(all16[t] == 1);
    } else {
      CHECK(ballot16[t] == 7u);  // not written
    }
    CHECK(active[t] == 0xffffffffu);
  }
}

TEST_CASE("sim: a shuffle from a lane that does not take part gives NaN", "[cuda_sim]") {
  std::vector<float> y(48, 0.0f);
  ttc::launch_kernel("outside_mask", shuffle_outside_mask_kernel<float>, dim3(1), dim3(32), 0, y.data());
  for (int l = 0; l < 8; ++l) CHECK(y[l] == 1.0f);       // lanes 8..15 are in the mask
  for (int l = 8; l < 16; ++l) CHECK(std::isnan(y[l]));  // lanes 16..23 are not
  // A 48-thread block: warp 1 has lanes 0..15 only; lane 15 reads the missing lane 16.
  ttc::launch_kernel("partial_warp", partial_warp_kernel<float>, dim3(1), dim3(48), 0, y.data());
  for (int t = 0; t < 47; ++t) CHECK(y[t] == 2.0f);
  CHECK(std::isnan(y[47]));  // warp 1, lane 15
  // integers have no NaN: the caller's own value
  std::vector<int> yi(48, 0);
  ttc::launch_kernel("partial_warp", partial_warp_kernel<int>, dim3(1), dim3(48), 0, yi.data());
  CHECK(yi[46] == 2);
  CHECK(yi[47] == 2);  // 1 + its own 1
}

TEST_CASE("sim: atomics from every thread of many blocks", "[cuda_sim]") {
  float fsum = 0;
  int icount = 0, imax = -1;
  unsigned long long usum = 0;
  double dsum = 0;
  unsigned cas = 0;
  const int blocks = 50, threads = 200;
  const int64_t total = int64_t{blocks} * threads;
  ttc::launch_kernel("atomics", atomics_kernel<int>, dim3(blocks), dim3(threads), 0, &fsum, &icount, &usum, &imax,
                     &dsum, &cas);
  CHECK(fsum == static_cast<float>(total));
  CHECK(icount == total);
  CHECK(usum == static_cast<unsigned long long>(total * (total - 1) / 2));
  CHECK(imax == total - 1);
  CHECK(dsum == 0.5 * total);
  CHECK(cas == 2u * total);
  // the less common ones, on the host thread (they are plain functions in the simulator)
  unsigned u = 5;
  CHECK(atomicInc(&u, 5u) == 5u);
  CHECK(u == 0u);
  CHECK(atomicDec(&u, 9u) == 0u);
  CHECK(u == 9u);
  int v = 6;
  CHECK(atomicExch(&v, 11) == 6);
  CHECK(atomicMin(&v, 3) == 11);
  CHECK(atomicSub(&v, 1) == 3);
  CHECK(atomicOr(&v, 8) == 2);
  CHECK(v == 10);
}

TEST_CASE("sim: execution order is the documented one", "[cuda_sim]") {
  // Blocks in order x fastest, then y; within a block every thread in linear order
  // (x + y*blockDim.x + z*blockDim.x*blockDim.y) runs to the barrier, then every thread in linear
  // order runs to the end. The same for 1-D, 2-D and 3-D blocks of 40 threads.
  const dim3 grid(2, 2);
  const int threads = 40;
  const int nblocks = 4;
  for (dim3 block : {dim3(threads), dim3(8, 5), dim3(4, 5, 2)}) {
    INFO("block (" << block.x << "," << block.y << "," << block.z << ")");
    std::vector<int> before(nblocks * threads), after(nblocks * threads), block_order(nblocks);
    int counter = 0;
    ttc::launch_kernel("order", order_kernel<int>, grid, block, 0, &counter, before.data(), after.data(),
                       block_order.data());
    const int per_block = 2 * threads + 1;
    for (int b = 0; b < nblocks; ++b) {
      CHECK(block_order[b] == b * per_block);  // block (x, y) = (b % 2, b / 2) ran b-th
      for (int t = 0; t < threads; ++t) {
        CHECK(before[b * threads + t] == b * per_block + 1 + t);
        CHECK(after[b * threads + t] == b * per_block + 1 + threads + t);
      }
    }
    // and the same again: nothing depends on timing
    std::vector<int> before2(before.size()), after2(after.size()), block_order2(nblocks);
    counter = 0;
    ttc::launch_kernel("order", order_kernel<int>, grid, block, 0, &counter, before2.data(), after2.data(),
                       block_order2.data());
    CHECK(before2 == before);
    CHECK(after2 == after);
  }
}

TEST_CASE("sim: __syncthreads_count, _and and _or", "[cuda_sim]") {
  std::vector<int> out(5, -1);
  ttc::launch_kernel("sync_count", sync_count_kernel<int>, dim3(1), dim3(100), 0, out.data());
  CHECK(out == std::vector<int>{34, 1, 1, 0, 98});
}

TEST_CASE("sim: kernel parameters are per-thread copies", "[cuda_sim]") {
  std::vector<double> y(8);
  ttc::launch_kernel("param_copy", param_copy_kernel<double>, dim3(1), dim3(8), 0, int64_t{100}, y.data());
  for (int t = 0; t < 8; ++t) CHECK(y[t] == 100.0 + t);
}

TEST_CASE("sim: exited threads count as arrived; a divergent or unreachable barrier is an error, not a hang",
          "[cuda_sim]") {
  std::vector<int> y(64, 0);
  ttc::launch_kernel("early_return", early_return_kernel<int>, dim3(2), dim3(64), 0, y.data());
  CHECK(y[0] == 51);  // 5 threads arrived, all with a true predicate
  CHECK(y[4] == 51);
  CHECK(y[5] == 0);
  // synccheck: two different __syncthreads() calls in the branches of an if
  const std::string msg = launch_error(
      [&] { ttc::launch_kernel("divergent", divergent_barrier_kernel<int>, dim3(1), dim3(64), 0, y.data()); });
  CHECK_THAT(msg, Catch::Contains("kernel 'divergent': block (0,0,0): synccheck: divergent __syncthreads(): "
                                  "thread (0,0,0) waits at "));
  CHECK_THAT(msg, Catch::Contains("but thread (32,0,0) at "));
  CHECK_THAT(msg, Catch::Contains("test_cuda_sim.cpp:" + std::to_string(divergent_line) + ";"));
  // a warp operation waiting for lanes that wait at __syncthreads()
  const std::string msg2 = launch_error(
      [&] { ttc::launch_kernel("warp_vs_barrier", warp_vs_barrier_kernel<int>, dim3(1), dim3(32), 0, y.data()); });
  CHECK_THAT(msg2, Catch::Contains("kernel 'warp_vs_barrier': block (0,0,0): thread (0,0,0) waits at "
                                   "__shfl_down_sync with mask 0xffffffff for thread (16,0,0) (lane 16), which "
                                   "waits at __syncthreads()"));
  // the simulator is usable again afterwards
  std::vector<float> x(300, 1.0f), z(300, 1.0f);
  ttc::launch_kernel("saxpy", saxpy_kernel<float>, dim3(2), dim3(128), 0, int64_t{300}, 2.0f, x.data(), z.data());
  CHECK(z[299] == 3.0f);
}

TEST_CASE("sim: an exception in device code is rethrown with kernel, block and thread", "[cuda_sim]") {
  std::vector<float> y(4 * 8, 0.0f);
  const std::string msg =
      launch_error([&] { ttc::launch_kernel("throwing", throwing_kernel<float>, dim3(4), dim3(8), 0, y.data()); });
  CHECK(msg == "kernel 'throwing': block (1,0,0), thread (3,0,0): device check failed: value 42");
  CHECK(y[7] == 1.0f);   // block 0 completed
  CHECK(y[31] == 0.0f);  // blocks 2 and 3 never ran
  // a launch from device code, and device functions called from the host
  CHECK_THAT(launch_error([&] {
               ttc::launch_kernel("outer", nested_launch_kernel<float>, dim3(1), dim3(1), 0, y.data());
             }),
             Catch::Contains("kernel 'outer': block (0,0,0), thread (0,0,0): kernel 'inner' <<<(1,1,1), (1,1,1), 0>>>: "
                             "launching a kernel from inside a kernel (dynamic parallelism) is not simulated"));
  CHECK_THROWS_WITH(__syncthreads(), "__syncthreads() called outside a kernel");
  CHECK_THROWS_WITH(__ballot_sync(0xffffffffu, 1), "__ballot_sync() called outside a kernel");
}

TEST_CASE("sim: bad launch configurations fail with CUDA's wording", "[cuda_sim]") {
  std::vector<float> x(8), y(8);
  auto launch = [&](dim3 grid, dim3 block, size_t smem) {
    return launch_error([&] {
      ttc::launch_kernel("saxpy", saxpy_kernel<float>, grid, block, smem, int64_t{8}, 1.0f, x.data(), y.data());
    });
  };
  CHECK_THAT(launch(dim3(1), dim3(1025), 0),
             Catch::StartsWith("kernel 'saxpy' <<<(1,1,1), (1025,1,1), 0>>>: invalid configuration argument"));
  CHECK_THAT(launch(dim3(0), dim3(256), 0),
             Catch::StartsWith("kernel 'saxpy' <<<(0,1,1), (256,1,1), 0>>>: invalid configuration argument"));
  CHECK_THAT(launch(dim3(1), dim3(32, 32, 2), 0), Catch::Contains("invalid configuration argument"));
  CHECK_THAT(launch(dim3(1), dim3(1, 1, 65), 0), Catch::Contains("invalid configuration argument"));
  CHECK_THAT(launch(dim3(1), dim3(0), 0), Catch::Contains("invalid configuration argument"));
  CHECK_THAT(launch(dim3(1, 65536), dim3(1), 0), Catch::Contains("invalid configuration argument"));
  CHECK_THAT(launch(dim3(1), dim3(32), 48 * 1024 + 1),
             Catch::StartsWith("kernel 'saxpy' <<<(1,1,1), (32,1,1), 49153>>>: invalid argument"));
  CHECK(launch(dim3(1), dim3(32, 32), 48 * 1024) == "(no error)");  // the limits themselves are fine
}

TEST_CASE("sim: two host threads launch at once, each with its own shared memory", "[cuda_sim]") {
  // DataParallel runs one host thread per replica: __shared__ and the built-ins are thread_local.
  const int64_t n = 20000;
  std::vector<int64_t> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = i + 1;
  std::vector<int64_t> totals(2, 0);
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w)
    workers.emplace_back([&, w] {
      for (int rep = 0; rep < 5; ++rep) {
        std::vector<int64_t> partial(4);
        ttc::launch_kernel("block_sum", block_sum_kernel<int64_t>, dim3(4), dim3(128 + 64 * w), 0, n, x.data(),
                           partial.data());
        totals[w] = partial[0] + partial[1] + partial[2] + partial[3];
        if (totals[w] != n * (n + 1) / 2) return;
      }
    });
  for (auto& t : workers) t.join();
  CHECK(totals[0] == n * (n + 1) / 2);
  CHECK(totals[1] == n * (n + 1) / 2);
}

TEST_CASE("sim: a 64 x 256 elementwise launch is fast", "[cuda_sim]") {
  const int64_t n = 64 * 256;
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  const auto t0 = std::chrono::steady_clock::now();
  ttc::launch_kernel("saxpy", saxpy_kernel<float>, dim3(64), dim3(256), 0, n, 0.5f, x.data(), y.data());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("sim: 64 x 256 elementwise launch took %.1f ms\n", 1e3 * s);
  CHECK(y[n - 1] == 2.5f);
  CHECK(s < 5.0);  // a hang guard only; a few ms at -O2, ~50 ms under ASan at -O0
}

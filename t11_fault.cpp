#include "common.hpp"
#include <cstring>
__device__ int depth_sum(int d) { volatile char pad[512]; pad[0] = (char)d; return d == 0 ? 0 : pad[0] + depth_sum(d - 1); }
__global__ void recurse(int* out, int d) { out[threadIdx.x] = depth_sum(d); }
__global__ void write_at(float* y, long long i) { if (threadIdx.x == 3) y[i] = 1.0f; }
int main(int argc, char** argv) {
  std::string c = argv[1];
  float* y = dalloc<float>(1024);   // 4096 bytes
  if (c == "recurse") { int* o = dalloc<int>(32); ttc::launch_kernel("recurse", recurse, dim3(1), dim3(32), 0, o, 100000); }
  if (c == "host_read") { std::printf("%g\n", y[5]); }
  if (c == "host_uaf") { ttc::raw_free(0, y); std::printf("%g\n", y[5]); }
  if (c == "underflow_page") { ttc::launch_kernel("write_at", write_at, dim3(2), dim3(32), 0, y, -1LL); }
  if (c == "null") { ttc::launch_kernel("write_at", write_at, dim3(2), dim3(32), 0, (float*)nullptr, 0LL); }
  if (c == "far") { ttc::launch_kernel("write_at", write_at, dim3(2), dim3(32), 0, y, 2000LL); }
  if (c == "after_exc") {
    TRY(ttc::launch_kernel("write_at", write_at, dim3(1), dim3(1025), 0, y, 0LL));
    ttc::launch_kernel("write_at", write_at, dim3(1), dim3(32), 0, y, 1024LL);
  }
  std::printf("no fault\n");
}

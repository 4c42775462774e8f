// tests/cuda/test_cuda_smoke.cu — does the CUDA toolchain work end to end?
//
// Self-contained on purpose (its own main, no Catch2), so it builds and runs on any machine
// with nvcc, even one without Catch2 v2:
//   * no usable GPU (cudaGetDeviceCount fails or returns 0): prints why, exits 77, and ctest
//     (SKIP_RETURN_CODE 77) reports "Skipped";
//   * otherwise launches a tiny SAXPY kernel, y = a*x + y on n = 1000 floats, copies y back and
//     checks every element; exits 0 when all match, 1 otherwise.
// Also checks at compile time that tinytorch/core/config.hpp sees nvcc (TINYTORCH_WITH_CUDA == 1).
#include <cuda_runtime.h>

#include <tinytorch/core/config.hpp>

#include <cstdio>
#include <vector>

static_assert(TINYTORCH_WITH_CUDA == 1, "a .cu file compiled by nvcc must see TINYTORCH_WITH_CUDA == 1");

namespace {

// y[i] = a * x[i] + y[i],  x, y: (n,)
__global__ void saxpy_kernel(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

bool ok(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return true;
  std::printf("FAILED: %s: %s\n", what, cudaGetErrorString(err));
  return false;
}

}  // namespace

int main() {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device (%s)\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "cudaGetDeviceCount returned 0");
    return 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("device 0: %s (sm_%d%d), %d device(s)\n", prop.name, prop.major, prop.minor, devices);

  const int n = 1000;
  const float a = 2.0f;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  const size_t bytes = n * sizeof(float);
  float* dx = nullptr;
  float* dy = nullptr;
  if (!ok(cudaMalloc(&dx, bytes), "cudaMalloc x") || !ok(cudaMalloc(&dy, bytes), "cudaMalloc y")) return 1;
  if (!ok(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice), "copy x") ||
      !ok(cudaMemcpy(dy, y.data(), bytes, cudaMemcpyHostToDevice), "copy y"))
    return 1;

  const int block = 256;
  saxpy_kernel<<<(n + block - 1) / block, block>>>(n, a, dx, dy);
  if (!ok(cudaGetLastError(), "kernel launch")) return 1;
  if (!ok(cudaMemcpy(y.data(), dy, bytes, cudaMemcpyDeviceToHost), "copy y back")) return 1;
  cudaFree(dx);
  cudaFree(dy);

  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += (y[i] != a * static_cast<float>(i) + 1.0f);
  if (wrong != 0) {
    std::printf("FAILED: %d of %d elements differ from a*x + y (y[999] = %g, expected 1999)\n", wrong, n, y[999]);
    return 1;
  }
  std::printf("PASSED: saxpy on %d floats, y[999] = %g\n", n, y[999]);
  return 0;
}

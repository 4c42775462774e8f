// tests/cuda/cuda_main.cpp — the Catch2 main() shared by every tests/cuda/*.cu executable.
//
// Compiled by the host C++ compiler (not nvcc) into OBJECT library tt_catch_cuda_main, and a
// second time with TT_TEST_WITH_MPI=1 into tt_catch_nccl_main for tests/cuda/test_nccl_*.cu.
// Without a usable GPU it prints why and exits with 77 before running any test: ctest's
// SKIP_RETURN_CODE 77 then reports the test as "Skipped" instead of "Passed" (Debian's Catch2
// 2.13 has no SKIP macro). With TT_TEST_WITH_MPI it brackets the tests with MPI_Init_thread /
// MPI_Finalize, as tests/mpi/mpi_main.cpp does (NCCL communicators are bootstrapped over MPI).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>

#if defined(TT_TEST_WITH_MPI) && TT_TEST_WITH_MPI
#include <mpi.h>
#endif

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device (%s)\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "cudaGetDeviceCount returned 0");
    return 77;
  }

#if defined(TT_TEST_WITH_MPI) && TT_TEST_WITH_MPI
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
#endif

  const int failed = Catch::Session().run(argc, argv);

#if defined(TT_TEST_WITH_MPI) && TT_TEST_WITH_MPI
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
#endif
  return failed;
}

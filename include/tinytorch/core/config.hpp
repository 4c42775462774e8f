// tinytorch/core/config.hpp — the one place that looks at the compiler and the build.
// Defines:
//   TINYTORCH_CUDA_SIM   1 when the build defines it (g++/clang++ only, never with nvcc): the
//                        kernel simulator (backend/cuda/sim.hpp) runs the CUDA kernels on the CPU.
//   TINYTORCH_WITH_CUDA  1 when this translation unit has the CUDA backend: compiled by nvcc
//                        (__CUDACC__), or by g++/clang++ with TINYTORCH_CUDA_SIM=1; else 0.
//   TINYTORCH_WITH_MPI   1 when <mpi.h> is reachable (mpicxx, or the CMake target tinytorch::mpi).
//   TINYTORCH_WITH_NCCL  1 when nvcc compiles, MPI is on and <nccl.h> is reachable (never in the simulator).
//   TT_HOST_DEVICE       __host__ __device__ under nvcc, nothing otherwise: functors and index
//                        math are written once and used by the CPU loop and the CUDA kernel.
//   EIGEN_NO_CUDA        under nvcc (unless defined): Eigen stays host-only code. It must come
//                        before the first Eigen include: every tinytorch header that includes
//                        Eigen includes this one first, and the CMake target defines it for .cu files.
//   TT_NAMESPACE_BEGIN   `namespace tinytorch { inline namespace <mode>_abi {` and TT_NAMESPACE_END
//   TT_NAMESPACE_END     `} }`, with <mode>_abi = TT_ABI_NAMESPACE: cpu_abi (g++/clang++), cuda_abi
//                        (nvcc), sim_abi (the simulator). Names stay tinytorch::Tensor in code, but
//                        each mode's symbols differ: a program that mixes TUs of two modes fails
//                        to link instead of running one mode's inline functions in the other
//                        (tests/abi; scripts/abi_namespace.py converts new headers).
//   TT_DECL              on the functions the library compiles once: `inline` when header-only
//                        (the default), nothing with -DTINYTORCH_SEPARATE_COMPILATION. Then the
//                        public headers only declare them, and their bodies (the .ipp file beside
//                        each header: functional.ipp beside functional.hpp) are compiled by the
//                        one TU that includes <tinytorch/src.hpp> (CMake: tinytorch::compiled), as
//                        Asio's ASIO_SEPARATE_COMPILATION / ASIO_DECL.
//   TT_HEADER_ONLY       1 without TINYTORCH_SEPARATE_COMPILATION (a header then includes its .ipp
//                        at its end), 0 with it.
// Any of the three feature macros may be predefined to 0 to switch a feature off.
// Chapter: chapters/01-training-loop.md ("How the headers are layered").
#pragma once

#if defined(TINYTORCH_CUDA_SIM) && TINYTORCH_CUDA_SIM && defined(__CUDACC__)
#error "TINYTORCH_CUDA_SIM is the kernel simulator for g++/clang++ builds; nvcc builds run the kernels on a GPU"
#endif

#if defined(__CUDACC__) && !defined(EIGEN_NO_CUDA)
#define EIGEN_NO_CUDA
#endif

#if defined(__CUDACC__)
#define TINYTORCH_WITH_CUDA 1
#define TT_HOST_DEVICE __host__ __device__
#elif defined(TINYTORCH_CUDA_SIM) && TINYTORCH_CUDA_SIM
#define TINYTORCH_WITH_CUDA 1  // the kernel simulator: backend/cuda kernels run on the CPU
#define TT_HOST_DEVICE
#else
#define TINYTORCH_WITH_CUDA 0
#define TT_HOST_DEVICE
#endif
#if !defined(TINYTORCH_CUDA_SIM) || !TINYTORCH_CUDA_SIM
#undef TINYTORCH_CUDA_SIM
#define TINYTORCH_CUDA_SIM 0
#endif

// The inline ABI namespace: one per build mode (never mix modes in one program).
#if defined(__CUDACC__)
#define TT_ABI_NAMESPACE cuda_abi
#elif TINYTORCH_CUDA_SIM
#define TT_ABI_NAMESPACE sim_abi
#else
#define TT_ABI_NAMESPACE cpu_abi
#endif
#define TT_NAMESPACE_BEGIN \
  namespace tinytorch {    \
  inline namespace TT_ABI_NAMESPACE {
#define TT_NAMESPACE_END \
  }                      \
  }

// Header-only (the default) or separate compilation (the .ipp bodies compiled once, by src.hpp).
#if defined(TINYTORCH_SEPARATE_COMPILATION)
#define TT_DECL
#define TT_HEADER_ONLY 0
#else
#define TT_DECL inline
#define TT_HEADER_ONLY 1
#endif

#ifndef TINYTORCH_WITH_MPI
#if defined(__has_include)
#if __has_include(<mpi.h>)
#define TINYTORCH_WITH_MPI 1
#endif
#endif
#endif
#ifndef TINYTORCH_WITH_MPI
#define TINYTORCH_WITH_MPI 0
#endif

#ifndef TINYTORCH_WITH_NCCL
#if defined(__CUDACC__) && TINYTORCH_WITH_MPI && defined(__has_include)
#if __has_include(<nccl.h>)
#define TINYTORCH_WITH_NCCL 1
#endif
#endif
#endif
#ifndef TINYTORCH_WITH_NCCL
#define TINYTORCH_WITH_NCCL 0
#endif

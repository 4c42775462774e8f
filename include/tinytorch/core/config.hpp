// tinytorch/core/config.hpp — the one place that looks at the compiler and the build.
//
// Defines:
//   TINYTORCH_WITH_CUDA  1 when this translation unit is compiled by nvcc (__CUDACC__), else 0.
//   TINYTORCH_WITH_MPI   1 when <mpi.h> is reachable (mpicxx, or the CMake target tinytorch::mpi).
//   TINYTORCH_WITH_NCCL  1 when CUDA and MPI are on and <nccl.h> is reachable.
//   TT_HOST_DEVICE       __host__ __device__ under nvcc, nothing otherwise: functors and index
//                        math are written once and used by the CPU loop and the CUDA kernel.
// Any of the three feature macros may be predefined to 0 to switch a feature off.
// Chapter: chapters/01-training-loop.md ("How the headers are layered").
#pragma once

#if defined(__CUDACC__)
#define TINYTORCH_WITH_CUDA 1
#define TT_HOST_DEVICE __host__ __device__
#else
#define TINYTORCH_WITH_CUDA 0
#define TT_HOST_DEVICE
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
#if TINYTORCH_WITH_CUDA && TINYTORCH_WITH_MPI && defined(__has_include)
#if __has_include(<nccl.h>)
#define TINYTORCH_WITH_NCCL 1
#endif
#endif
#endif
#ifndef TINYTORCH_WITH_NCCL
#define TINYTORCH_WITH_NCCL 0
#endif

// tinytorch/src.hpp — the library's bodies, for a build with -DTINYTORCH_SEPARATE_COMPILATION.
//
// Include this header in exactly one .cpp of a program (CMake's tinytorch::compiled does it in
// src/tinytorch.cpp) and define TINYTORCH_SEPARATE_COMPILATION for every TU of the program: the
// public headers then only declare the functions marked TT_DECL (core/config.hpp), and this TU
// compiles their bodies, the .ipp files beside the headers, once. As Asio's asio/impl/src.hpp.
//   g++ -std=c++17 -O2 -DTINYTORCH_SEPARATE_COMPILATION -Iinclude -I/usr/include/eigen3 -c src/tinytorch.cpp
//   g++ -std=c++17 -O2 -DTINYTORCH_SEPARATE_COMPILATION -Iinclude -c prog.cpp
//   g++ prog.o tinytorch.o -lz -o prog
// Without the macro this header is an error: a header-only program needs no library TU.
// Chapter: chapters/01-training-loop.md ("How the headers are layered").
#pragma once

#include "core/config.hpp"

#if TT_HEADER_ONLY
#error "tinytorch/src.hpp is for -DTINYTORCH_SEPARATE_COMPILATION builds; a header-only build needs no library TU"
#endif

#include "tinytorch.hpp"

#include "functional.ipp"
#include "ops/creation.ipp"
#include "ops/item.ipp"
#include "autograd/variable.ipp"
#include "nn/module.ipp"
#include "nn/activation.ipp"
#include "nn/utils/clip_grad.ipp"
#include "utils/checkpoint.ipp"
#include "serialization.ipp"
#include "optim/optimizer.ipp"
#include "optim/sgd.ipp"
#include "optim/adam.ipp"
#include "optim/lr_scheduler.ipp"
#include "data/dataset.ipp"
#include "data/dataloader.ipp"
#include "data/mnist.ipp"
#include "parallel/replicate.ipp"
#include "parallel/parallel_apply.ipp"

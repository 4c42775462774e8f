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

#include "tinytorch/core/config.hpp"

#if TT_HEADER_ONLY
#error "tinytorch/src.hpp is for -DTINYTORCH_SEPARATE_COMPILATION builds; a header-only build needs no library TU"
#endif

#include "tinytorch/tinytorch.hpp"

#include "tinytorch/functional.ipp"
#include "tinytorch/ops/creation.ipp"
#include "tinytorch/ops/item.ipp"
#include "tinytorch/autograd/variable.ipp"
#include "tinytorch/nn/module.ipp"
#include "tinytorch/nn/activation.ipp"
#include "tinytorch/nn/utils/clip_grad.ipp"
#include "tinytorch/utils/checkpoint.ipp"
#include "tinytorch/serialization.ipp"
#include "tinytorch/optim/optimizer.ipp"
#include "tinytorch/optim/sgd.ipp"
#include "tinytorch/optim/adam.ipp"
#include "tinytorch/optim/lr_scheduler.ipp"
#include "tinytorch/data/dataset.ipp"
#include "tinytorch/data/dataloader.ipp"
#include "tinytorch/data/mnist.ipp"
#include "tinytorch/parallel/replicate.ipp"
#include "tinytorch/parallel/parallel_apply.ipp"

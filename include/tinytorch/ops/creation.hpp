// tinytorch/ops/creation.hpp — making tensors: empty, zeros, ones, full, tensor, arange, rand,
// randn, randint, randperm, *_like.
//
// Defaults follow PyTorch: float32 unless a dtype is given (arange and randint default to int64,
// as torch.arange(5) and torch.randint do). Random tensors draw from a Generator (core/random.hpp)
// in row-major order: reproducible for a seed, not bit-equal to PyTorch's streams.
// A tensor created with TensorOptions().requires_grad(true) is a leaf that requires grad.
// TensorOptions().device(Device::cuda(i)) puts the result on a GPU: full/zeros/ones run the fill
// kernel there; tensor-from-data and the random factories make the values on the host and copy them
// (the same seed gives the same numbers on the CPU and on every GPU). *_like keep the input's device.
// arange and randperm have no device argument yet: use .to(device).
//
// The functions are declared, with their defaults and documentation, in tensor.hpp; their bodies
// are ops/creation.ipp (included here in a header-only build, compiled once by <tinytorch/src.hpp>
// with -DTINYTORCH_SEPARATE_COMPILATION).
// Chapter: chapters/01-training-loop.md.
#pragma once

#include "tinytorch/tensor.hpp"
#include "tinytorch/core/config.hpp"  // TT_HEADER_ONLY

#if TT_HEADER_ONLY
#include "tinytorch/ops/creation.ipp"
#endif

// src/tinytorch.cu — the one TU of CMake's tinytorch::compiled_cuda: src/tinytorch.cpp compiled by
// nvcc as CUDA source, so the library's bodies are compiled once for the CUDA build mode (device
// tensors run the backend/cuda kernels; the ABI namespace is tinytorch::cuda_abi). nvcc needs a .cu
// name to treat a file as CUDA without -x cu; everything else is in tinytorch.cpp.
#include "tinytorch.cpp"

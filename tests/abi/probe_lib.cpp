// tests/abi/probe_lib.cpp — one half of the mixed-link test (tests/abi/mixed_link.cmake).
//
// Defines abi_probe(const tinytorch::Tensor&). Compiled in one build mode (g++: CPU; g++ with
// -DTINYTORCH_CUDA_SIM=1: the kernel simulator; nvcc -x cu: CUDA), so the symbol's mangled name
// carries that mode's inline ABI namespace: abi_probe(tinytorch::cpu_abi::Tensor const&), ...
// (core/config.hpp, TT_NAMESPACE_BEGIN). Linked with probe_main.cpp compiled in ANOTHER mode the
// program must fail to link; in the same mode it links and runs. Reference: design/CUDA.md §2.
#include <tinytorch/tensor.hpp>

#include <cstdint>

int64_t abi_probe(const tinytorch::Tensor& t) { return t.defined() ? 1 : 0; }

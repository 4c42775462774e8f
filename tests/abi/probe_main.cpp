// tests/abi/probe_main.cpp — the other half of the mixed-link test (tests/abi/mixed_link.cmake).
//
// Calls abi_probe(const tinytorch::Tensor&), defined in probe_lib.cpp, with an undefined Tensor:
// prints "abi_probe: 0" and exits 0 when both files were compiled in the same build mode. In
// two different modes the call names this mode's tinytorch::<mode>_abi::Tensor and the link
// fails ("undefined reference to `abi_probe(tinytorch::cpu_abi::Tensor const&)'"): TUs of two
// modes cannot be mixed in one program by mistake.
#include <tinytorch/tensor.hpp>

#include <cstdint>
#include <cstdio>

int64_t abi_probe(const tinytorch::Tensor& t);

int main() {
  std::printf("abi_probe: %lld\n", static_cast<long long>(abi_probe(tinytorch::Tensor())));
  return 0;
}

// tests/oneline/prog.cpp — the coursework "one line" build, checked by ctest (oneline_build).
//
// Built from the source root with exactly the README's command, no CMake involved:
//   g++ -std=c++17 -O2 -I include -I /usr/include/eigen3 tests/oneline/prog.cpp -lz -o oneline_prog
// and run; the test passes when the output contains 6 (the sum of a 2x3 tensor of ones).
#include <tinytorch/tinytorch.hpp>

#include <iostream>

int main() {
  auto x = tinytorch::ones({2, 3});  // x: (2, 3), all 1
  std::cout << x.sum().item<float>() << "\n";
  return 0;
}

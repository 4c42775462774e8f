// tests/consumer/consumer.cpp — the smallest program a tinytorch user writes.
//
// Uses the umbrella header when it exists; until then it exercises core/shape.hpp only.
#include <iostream>

#if __has_include(<tinytorch/tinytorch.hpp>)
#include <tinytorch/tinytorch.hpp>

int main() {
  auto x = tinytorch::ones({2, 2});  // x: (2, 2), all 1
  std::cout << "consumer: sum = " << x.sum().item<float>() << "\n";  // 4
  return 0;
}
#else
#include <tinytorch/core/shape.hpp>

int main() {
  std::cout << "consumer: shape = " << tinytorch::shape_str({2, 3}) << "\n";  // [2, 3]
  return 0;
}
#endif

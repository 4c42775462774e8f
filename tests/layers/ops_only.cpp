// tests/layers/ops_only.cpp — the ops floor links alone: a program that includes only ops/
// headers (and so tensor.hpp, backend/ and core/) computes with tensors, without autograd.
//
//   a = arange(6., 12.).view(2, 3) = [[6, 7, 8], [9, 10, 11]],  b = ones(3)
//   c = a + b (broadcast) = [[7, 8, 9], [10, 11, 12]]:  c.at(1, 2) = 12,  sum(c) = 57
//   clamp(c, 8, 10).tolist() = [8, 8, 9, 10, 10, 10]
// Tensor methods defined on a higher floor (autograd/variable.hpp, functional) would be undefined
// references at link: ctest layers_ops_only builds and runs this file (tests/layers/CMakeLists.txt).
// Chapter: chapters/02-autograd.md (one op, top to bottom).
#include <tinytorch/ops/creation.hpp>
#include <tinytorch/ops/elementwise.hpp>
#include <tinytorch/ops/item.hpp>
#include <tinytorch/ops/reduce.hpp>
#include <tinytorch/ops/shape.hpp>

#include <cstdio>
#include <vector>

int main() {
  using namespace tinytorch;
  Tensor a = ops::view(arange(6.0, 12.0, 1.0), {2, 3});
  Tensor b = ones({3});
  Tensor c = ops::binary(a, b, backend::cpu::AddOp{}, "add");
  const double s = ops::sum_all(c).item<double>();
  const double c12 = c.at<double>({1, 2});
  const std::vector<double> clamped = ops::clamp_scalar(c, 8.0, 10.0).tolist<double>();
  std::printf("c.at(1, 2) %g, sum(c) %g, clamp(c, 8, 10) [", c12, s);
  for (double v : clamped) std::printf(" %g", v);
  std::printf(" ]\n");
  const bool ok = c12 == 12 && s == 57 && clamped == std::vector<double>{8, 8, 9, 10, 10, 10} &&
                  c.dtype() == kFloat32;
  std::printf(ok ? "layers ops_only: ok\n" : "layers ops_only: FAILED\n");
  return ok ? 0 : 1;
}

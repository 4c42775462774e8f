// tests/layers/autograd_only.cpp — the autograd floor links alone: a program that includes only
// autograd/ and ops/ headers records a graph through the nodes and runs backward, without the
// differentiable API of functional.hpp.
//
//   a = full((2, 3), 2) and b = full((3), 3), both requiring grad
//   y = Mul::forward(a, b) (broadcast),  loss = SumMean::forward(y) = sum(y) = 36
//   loss.backward():  a.grad = b = 3 everywhere,  b.grad = sum over rows of a = 4 everywhere
//   loss.grad_fn()->name() = "SumBackward0", y's = "MulBackward0"
// ctest layers_autograd_only builds and runs this file (tests/layers/CMakeLists.txt).
// Chapter: chapters/02-autograd.md.
#include <tinytorch/autograd/functions.hpp>
#include <tinytorch/autograd/variable.hpp>
#include <tinytorch/ops/creation.hpp>
#include <tinytorch/ops/item.hpp>

#include <cstdio>
#include <optional>
#include <vector>

int main() {
  using namespace tinytorch;
  Tensor a = full({2, 3}, 2.0).requires_grad_();
  Tensor b = full({3}, 3.0).requires_grad_();
  Tensor y = autograd::Mul::forward(a, b);
  Tensor loss = autograd::SumMean::forward(y, std::nullopt, false, false);
  loss.backward();
  const std::vector<double> ga = a.grad().tolist<double>(), gb = b.grad().tolist<double>();
  std::printf("loss %g (%s <- %s), a.grad[0] %g, b.grad[0] %g\n", loss.item<double>(),
              loss.grad_fn()->name().c_str(), y.grad_fn()->name().c_str(), ga[0], gb[0]);
  const bool ok = loss.item<double>() == 36 && loss.grad_fn()->name() == "SumBackward0" &&
                  y.grad_fn()->name() == "MulBackward0" && ga == std::vector<double>(6, 3.0) &&
                  gb == std::vector<double>(3, 4.0) && a.is_leaf() && !y.is_leaf();
  std::printf(ok ? "layers autograd_only: ok\n" : "layers autograd_only: FAILED\n");
  return ok ? 0 : 1;
}

// tests/gdb/gdb_demo.cpp — the program that ctest's gdb_pretty_printer drives through gdb.
//
// Built at -O0 -g whatever the build type (tests/gdb/CMakeLists.txt), so that every local is
// there for `print`. main() makes one tensor of each kind the pretty-printer
// (tools/gdb/tinytorch.py) must show — float32, float64, int64, a strided view with an offset, a
// tensor with more values than it prints, a 0-dim tensor, an undefined Tensor, results of ops
// whose grad_fn names come from a literal, a field or a condition — and calls stop_here(); then
// it runs chapter 01's two-sample loop (examples/single_loop.hpp) for one epoch, where the session
// stops at `loss.backward();` and steps into the engine. tests/gdb/check_session.py is the
// session and its expected output; chapters/01-training-loop.md ("Stepping through in gdb") shows
// the same loop in gdb.
#include <tinytorch/tinytorch.hpp>

#include <cstdio>
#include <vector>

#include "../../examples/single_loop.hpp"

namespace tt = tinytorch;

// The session's first breakpoint (`break stop_here`, then `up` to main's tensors).
__attribute__((noinline)) void stop_here() { std::fflush(stdout); }

int main() {
  tt::Tensor w = tt::tensor({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, {2, 3});     // float32 (2, 3)
  tt::Tensor x64 = tt::tensor({1.0 / 3, -2.5, 1e-10}, {3}, tt::kFloat64);  // float64 (3,)
  tt::Tensor labels = tt::tensor({3, 1, 4, 1, 5}, {5}, tt::kInt64);        // int64 (5,)
  tt::Tensor big = tt::arange(0, 24, 1, tt::kFloat64).view({2, 3, 4});     // 24 values
  tt::Tensor col = big.select(2, 1);            // a view: strides (12, 4), offset 1
  tt::Tensor scalar = tt::scalar_tensor(7.5);   // 0-dim
  tt::Tensor none;                              // undefined
  tt::Tensor a = tt::ones({2, 2}, tt::TensorOptions().requires_grad(true));
  tt::Tensor a_sum = a.sum(0);                  // SumBackward1: std::string(...) + (...)
  tt::Tensor a_max = a.max();                   // MaxBackward1: all ? "MaxBackward1" : ...
  tt::Tensor a_t = a.t();                       // TBackward0: the node_name field
  stop_here();
  std::vector<double> losses = examples::train_single(/*epochs=*/1);
  std::printf("loss %.4f\n", losses.at(0));
  return 0;
}

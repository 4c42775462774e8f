// ch01 exercise 4: examples::train_single(2) built at -O0 -g, to stop in gdb at the weight's AccumulateGrad in epoch 1.
#include <tinytorch/tinytorch.hpp>
#include <cstdio>
#include "../../../examples/single_loop.hpp"
int main() { auto l = examples::train_single(2); std::printf("loss %.4f %.4f\n", l[0], l[1]); }

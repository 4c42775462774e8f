// ch02 ex4: the test "optimizer.step() between forward and backward raises", with the version check commented out.
#include <tinytorch/tinytorch.hpp>
#include <cstdio>
using namespace tinytorch;
int main() {
  for (int adam = 0; adam < 2; ++adam) {
    Tensor x = tensor({1, 2}, {1, 2});
    x.requires_grad_();
    x.set_grad(ones({1, 2}));
    std::unique_ptr<optim::Optimizer> opt;
    if (adam) opt = std::make_unique<optim::Adam>(std::vector<Tensor>{x}, 0.1);
    else opt = std::make_unique<optim::SGD>(std::vector<Tensor>{x}, 0.1);
    Tensor y = (x * x).sum();
    opt->step();
    std::printf("%s: x after step = %s\n", adam ? "Adam" : "SGD", x.str().c_str());
    try { y.backward(); std::printf("  backward ran: x.grad = %s (it held ones before)\n", x.grad().str().c_str()); }
    catch (const std::exception& e) { std::printf("  backward raised: %s\n", e.what()); }
  }
}

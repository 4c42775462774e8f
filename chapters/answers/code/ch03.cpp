// ch03 ex4: Adam's first step moves every weight by +-lr, whatever the gradient's scale; a large eps breaks that.
#include <tinytorch/tinytorch.hpp>
#include <cstdio>
using namespace tinytorch;
int main() {
  for (double eps : {1e-8, 1e-1}) {
    Tensor p = tensor({1.0, 1.0, 1.0}); p.requires_grad_();           // the 3-parameter model
    Tensor c = tensor({1e-3, -1.0, 1e3});                               // gradients of very different scale
    optim::Adam opt({p}, /*lr=*/0.1, {0.9, 0.999}, eps);
    opt.zero_grad();
    (c * p).sum().backward();                                           // d/dp = c
    opt.step();
    const optim::ParamState* st = opt.state(p);
    std::printf("eps=%g  grad=%s\n  exp_avg=%s exp_avg_sq=%s step=%lld\n  p - p0 = %s\n", eps,
                p.grad().str().c_str(), st->exp_avg.str().c_str(), st->exp_avg_sq.str().c_str(),
                (long long)st->step, (p.detach() - 1.0).str().c_str());
  }
}

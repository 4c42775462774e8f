// labs/09-gradient-accumulation/accumulate.cpp — your gradient accumulation (lab 09; the tasks
// are in lab.hpp).
//
// Check your work:   scripts/lab.sh check 09, from the tinytorch clone (add the --dir you gave to start)
// Chapter: chapters/09-gradient-accumulation.md, sections 9.1-9.3.
// BEGIN REFERENCE ONLY
#ifndef TT_LAB_REFERENCE
#error "labs/09-gradient-accumulation/accumulate.cpp is the reference solution: a student build must compile the student's copy (scripts/lab.sh start 09)"
#endif
// END REFERENCE ONLY
#include "lab.hpp"

#include <vector>

namespace lab09 {

using tinytorch::Tensor;

double accumulate_step(tinytorch::nn::Module& model, tinytorch::optim::Optimizer& optimizer,
                       tinytorch::nn::Loss& loss_fn, const Tensor& x, const Tensor& y, int64_t k) {
  // BEGIN SOLUTION accumulate
  const std::vector<Tensor> xs = x.chunk(k, 0), ys = y.chunk(k, 0);
  const double B = static_cast<double>(x.size(0));
  optimizer.zero_grad();
  double total = 0;
  for (size_t j = 0; j < xs.size(); ++j) {
    const double share = static_cast<double>(xs[j].size(0)) / B;  // b_j / B
    Tensor loss = loss_fn(model.forward(xs[j]), ys[j]);
    (loss * share).backward();
    total += loss.item<double>() * share;
  }
  optimizer.step();
  return total;
  // END SOLUTION
}

double ddp_accumulate_step(tinytorch::distributed::DistributedDataParallel& ddp,
                           tinytorch::optim::Optimizer& optimizer, tinytorch::nn::Loss& loss_fn, const Tensor& x,
                           const Tensor& y, int64_t k) {
  // BEGIN SOLUTION no_sync
  const std::vector<Tensor> xs = x.chunk(k, 0), ys = y.chunk(k, 0);
  const double B = static_cast<double>(x.size(0));
  optimizer.zero_grad();
  double total = 0;
  for (size_t j = 0; j < xs.size(); ++j) {
    const double share = static_cast<double>(xs[j].size(0)) / B;
    auto micro = [&] {
      Tensor loss = loss_fn(ddp.forward(xs[j]), ys[j]);
      (loss * share).backward();
      total += loss.item<double>() * share;
    };
    if (j + 1 < xs.size()) {
      auto guard = ddp.no_sync();  // local accumulation, no all-reduce
      micro();
    } else {
      micro();  // synced: all-reduces the accumulated sum
    }
  }
  optimizer.step();
  return total;
  // END SOLUTION
}

}  // namespace lab09

// labs/01-training-loop/loop.cpp — your training loop (lab 01; the tasks are in lab.hpp).
//
// Check your work:   scripts/lab.sh check 01, from the tinytorch clone (add the --dir you gave to start)
// Chapter: chapters/01-training-loop.md.
// BEGIN REFERENCE ONLY
#ifndef TT_LAB_REFERENCE
#error "labs/01-training-loop/loop.cpp is the reference solution: a student build must compile the student's copy (scripts/lab.sh start 01)"
#endif
// END REFERENCE ONLY
#include "lab.hpp"

namespace lab01 {

using tinytorch::Tensor;

double train_step(tinytorch::nn::Module& model, tinytorch::optim::Optimizer& optimizer, tinytorch::nn::Loss& loss_fn,
                  const Tensor& x, const Tensor& y) {
  // BEGIN SOLUTION step
  optimizer.zero_grad();
  Tensor out = model.forward(x);
  Tensor loss = loss_fn(out, y);
  loss.backward();
  optimizer.step();
  return loss.item<double>();
  // END SOLUTION
}

double train_epoch(tinytorch::nn::Module& model, tinytorch::optim::Optimizer& optimizer, tinytorch::nn::Loss& loss_fn,
                   tinytorch::data::DataLoader& loader) {
  // BEGIN SOLUTION epoch
  model.train();
  double total = 0;
  int64_t samples = 0;
  for (auto& batch : loader) {
    const int64_t n = batch.data.size(0);
    total += train_step(model, optimizer, loss_fn, batch.data, batch.target) * static_cast<double>(n);
    samples += n;
  }
  return samples > 0 ? total / static_cast<double>(samples) : 0.0;
  // END SOLUTION
}

double accuracy(tinytorch::nn::Module& model, tinytorch::data::DataLoader& loader) {
  // BEGIN SOLUTION evaluate
  model.eval();
  tinytorch::NoGradGuard no_grad;
  int64_t correct = 0, samples = 0;
  for (auto& batch : loader) {
    Tensor predicted = model.forward(batch.data).argmax(1);  // (B,) class indices
    correct += predicted.eq(batch.target).sum().item<int64_t>();
    samples += batch.data.size(0);
  }
  return samples > 0 ? static_cast<double>(correct) / static_cast<double>(samples) : 0.0;
  // END SOLUTION
}

}  // namespace lab01

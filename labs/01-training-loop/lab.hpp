// labs/01-training-loop/lab.hpp — lab 01: the training loop. Your file is loop.cpp.
//
// The loop every chapter builds on (PyTorch's idiom, chapter 01):
//   for each batch (x, y):   optimizer.zero_grad()        forget the previous step's gradients
//                            out  = model.forward(x)       (B, ...) predictions
//                            loss = loss_fn(out, y)        a scalar (0-d tensor)
//                            loss.backward()               p.grad = d loss / d p for every parameter
//                            optimizer.step()              p = p - lr * p.grad (or momentum, Adam...)
// and, to measure it, evaluation: model.eval() (dropout off, batch norm uses its running
// statistics), no autograd (tinytorch::NoGradGuard: no graph is recorded), predictions = the
// argmax of the logits over the class dimension, compared with the labels.
// Useful: loss.item<double>(), x.size(0) (batch size), logits.argmax(1), a.eq(b) (int64 0/1),
// t.sum(), model.train() / model.eval(), `for (auto& batch : loader)` with batch.data (B, ...)
// and batch.target (B) (tinytorch/data/dataloader.hpp).
// Chapter: chapters/01-training-loop.md ("Step 1: two samples, five epochs", "Step 2:
// Fashion-MNIST"); the library's version of the loop, to compare with once you are done:
// examples/single_loop.hpp and examples/train_mnist.cpp.
#pragma once

#include <tinytorch/tinytorch.hpp>

namespace lab01 {

/// Task step. One training step on the batch (x, y): zero the gradients, forward, loss,
/// backward, optimizer step. Returns the loss of this batch (before the step) as a double.
double train_step(tinytorch::nn::Module& model, tinytorch::optim::Optimizer& optimizer, tinytorch::nn::Loss& loss_fn,
                  const tinytorch::Tensor& x, const tinytorch::Tensor& y);

/// Task epoch. One epoch: puts the model in training mode (model.train()), then train_step on
/// every batch of `loader`, in order. Returns the epoch's mean loss over the samples: each
/// batch's (mean) loss weighted by its number of samples, divided by the number of samples (the
/// last batch may be smaller), as train_mnist's "loss=" is.
double train_epoch(tinytorch::nn::Module& model, tinytorch::optim::Optimizer& optimizer, tinytorch::nn::Loss& loss_fn,
                   tinytorch::data::DataLoader& loader);

/// Task evaluate. The fraction of samples of `loader` whose predicted class (the argmax of the
/// model's logits (B, C) over dim 1) equals the label (B,), in [0, 1]. Puts the model in eval
/// mode (model.eval(), left so, as PyTorch's evaluation loops do) and records no autograd graph.
double accuracy(tinytorch::nn::Module& model, tinytorch::data::DataLoader& loader);

}  // namespace lab01

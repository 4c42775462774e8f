// tinytorch/tinytorch.hpp — the umbrella: everything a single-process program needs.
//
//   #include <tinytorch/tinytorch.hpp>
//   g++ -std=c++17 -O2 -I include -I /usr/include/eigen3 prog.cpp -lz
// It never includes <mpi.h> or <nccl.h>; distributed programs add <tinytorch/distributed.hpp>
// and build with mpicxx (or the CMake target tinytorch::mpi).
// Chapter: chapters/01-training-loop.md.
#pragma once

#include "tinytorch/tensor.hpp"
#include "tinytorch/core/parallel.hpp"  // get_num_threads, set_num_threads, parallel_for (torch.set_num_threads)
#include "tinytorch/core/cuda.hpp"  // tinytorch::cuda: is_available, device_count, memory statistics (torch.cuda)
#include "tinytorch/functional.hpp"
#include "tinytorch/autograd/gradcheck.hpp"
#include "tinytorch/autograd/dot.hpp"  // to_dot: the backward graph as Graphviz text (chapter 02)
#include "tinytorch/autograd/function.hpp"  // Function<T>: custom forward/backward (torch.autograd.Function)
#include "tinytorch/nn/module.hpp"
#include "tinytorch/nn/linear.hpp"
#include "tinytorch/nn/activation.hpp"
#include "tinytorch/nn/container.hpp"
#include "tinytorch/nn/conv.hpp"
#include "tinytorch/nn/pooling.hpp"
#include "tinytorch/nn/loss.hpp"
#include "tinytorch/nn/init.hpp"
#include "tinytorch/nn/batchnorm.hpp"      // BatchNorm1d
#include "tinytorch/nn/normalization.hpp"  // LayerNorm
#include "tinytorch/nn/embedding.hpp"      // Embedding
#include "tinytorch/nn/attention.hpp"      // MultiheadAttention
#include "tinytorch/nn/utils/clip_grad.hpp"
#include "tinytorch/utils/checkpoint.hpp"  // checkpoint, checkpoint_sequential (chapter 09)
#include "tinytorch/optim/optimizer.hpp"
#include "tinytorch/optim/sgd.hpp"
#include "tinytorch/optim/adam.hpp"
#include "tinytorch/optim/lr_scheduler.hpp"
#include "tinytorch/amp/autocast_mode.hpp"  // tt::autocast (torch.autocast), chapter 11
#include "tinytorch/amp/grad_scaler.hpp"    // amp::GradScaler (torch.amp.GradScaler), chapter 11
#include "tinytorch/data/dataset.hpp"
#include "tinytorch/data/sampler.hpp"
#include "tinytorch/data/dataloader.hpp"
#include "tinytorch/data/mnist.hpp"
#include "tinytorch/serialization.hpp"
#include "tinytorch/parallel/data_parallel.hpp"

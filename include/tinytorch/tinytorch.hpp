// tinytorch/tinytorch.hpp — the umbrella: everything a single-process program needs.
//
//   #include <tinytorch/tinytorch.hpp>
//   g++ -std=c++17 -O2 -I include -I /usr/include/eigen3 prog.cpp -lz
// It never includes <mpi.h> or <nccl.h>; distributed programs add <tinytorch/distributed.hpp>
// and build with mpicxx (or the CMake target tinytorch::mpi).
// Chapter: chapters/01-training-loop.md.
#pragma once

#include "tensor.hpp"
#include "core/parallel.hpp"  // get_num_threads, set_num_threads, parallel_for (torch.set_num_threads)
#include "core/cuda.hpp"  // tinytorch::cuda: is_available, device_count, memory statistics (torch.cuda)
#include "functional.hpp"
#include "autograd/gradcheck.hpp"
#include "autograd/dot.hpp"  // to_dot: the backward graph as Graphviz text (chapter 02)
#include "autograd/function.hpp"  // Function<T>: custom forward/backward (torch.autograd.Function)
#include "nn/module.hpp"
#include "nn/linear.hpp"
#include "nn/activation.hpp"
#include "nn/container.hpp"
#include "nn/conv.hpp"
#include "nn/pooling.hpp"
#include "nn/loss.hpp"
#include "nn/init.hpp"
#include "nn/batchnorm.hpp"      // BatchNorm1d
#include "nn/normalization.hpp"  // LayerNorm
#include "nn/embedding.hpp"      // Embedding
#include "nn/attention.hpp"      // MultiheadAttention
#include "nn/utils/clip_grad.hpp"
#include "utils/checkpoint.hpp"  // checkpoint, checkpoint_sequential (chapter 09)
#include "optim/optimizer.hpp"
#include "optim/sgd.hpp"
#include "optim/adam.hpp"
#include "optim/lr_scheduler.hpp"
#include "amp/autocast_mode.hpp"  // tt::autocast (torch.autocast), chapter 11
#include "amp/grad_scaler.hpp"    // amp::GradScaler (torch.amp.GradScaler), chapter 11
#include "data/dataset.hpp"
#include "data/sampler.hpp"
#include "data/dataloader.hpp"
#include "data/mnist.hpp"
#include "serialization.hpp"
#include "parallel/data_parallel.hpp"

// labs/05-data-parallel/lab.hpp — lab 05: the four steps of DataParallel's forward, written as
// functions (PyTorch's torch.nn.parallel.data_parallel). Your file is data_parallel.cpp.
//
//   scatter         x (B, ...) -> n chunks of rows, chunk i on devices[i] (torch.chunk's sizes:
//                   c = ceil(B / n) rows each, the last smaller; fewer than n chunks when c
//                   divides B early: 9 rows on 4 devices are 3, 3, 3)
//   replicate       a copy of the module per device, whose parameters stay in the autograd graph
//                   (gradients flow back to the original's .grad)   -- given: parallel::replicate
//   parallel_apply  replica i on chunk i, one thread each            -- given: parallel::parallel_apply
//   gather          the outputs (b_i, ...) concatenated along dim 0 on one device: (B, ...)
// The result, and after backward the gradients, equal the module run on the whole batch on one
// device. On this machine every device is the CPU (Device::cpu() n times: n threads).
// Useful: x.narrow(0, start, length), t.to(device), tinytorch::cat(tensors, 0), t.size(0).
// Chapter: chapters/05-data-parallel.md (5.2 the four steps, 5.3 scatter, 5.6 gather). The
// library's versions, to compare with once you are done: include/tinytorch/parallel/
// scatter_gather.hpp and data_parallel.hpp. Reference: PyTorch's torch/nn/parallel/
// scatter_gather.py and data_parallel.py.
#pragma once

#include <tinytorch/tinytorch.hpp>
#include <tinytorch/parallel/data_parallel.hpp>

#include <cstdint>
#include <vector>

namespace lab05 {

/// Task chunk_sizes. The row counts torch.chunk(n) gives a batch of B >= 1 rows (n >= 1):
/// ceil(B / n) per chunk while rows remain (10, 4 -> 3 3 3 1; 9, 4 -> 3 3 3; 2, 4 -> 1 1).
std::vector<int64_t> chunk_sizes(int64_t B, int64_t n);

/// Task scatter. x's rows cut by chunk_sizes(B, devices.size()), chunk i on devices[i]. Each
/// chunk must stay connected to x in the autograd graph (a view, or a copy to another device):
/// the gradient of chunk i lands in its rows of x. Throws tinytorch::Error (message starting
/// "scatter:") for no devices or a 0-d x.
std::vector<tinytorch::Tensor> scatter(const tinytorch::Tensor& x, const std::vector<tinytorch::Device>& devices);

/// Task gather. The outputs (b_i, ...) concatenated along dim 0 on `destination`: (sum b_i, ...),
/// differentiable. Throws tinytorch::Error (message starting "gather:") for an empty list.
tinytorch::Tensor gather(const std::vector<tinytorch::Tensor>& outputs, tinytorch::Device destination);

/// Task forward. DataParallel's forward: replicate `module` on the devices
/// (tinytorch::parallel::replicate), scatter x, run replica i on chunk i
/// (tinytorch::parallel::parallel_apply, with only as many replicas as there are chunks), gather
/// on devices[0]. Equal to module.forward(x), and its backward fills the module's .grad.
tinytorch::Tensor data_parallel(tinytorch::nn::Module& module, const tinytorch::Tensor& x,
                                const std::vector<tinytorch::Device>& devices);

}  // namespace lab05

// tinytorch/parallel/scatter_gather.hpp — scatter: split a batch over devices; gather: join the
// replicas' outputs on one device.
//
//   scatter(x, devices, dim):  x (B, ...) -> chunks x_0 .. x_{k-1}, chunk i on devices[i]
//       sizes as torch.chunk: c = ceil(B / n) rows each, the last one smaller; so k = ceil(B / c)
//       can be fewer than n (10 rows on 4 devices: 3,3,3,1; 9 on 4: 3,3,3, only 3 devices used;
//       B < n: B chunks of one row). Chunks on the input's device are views (no copy); on another
//       device they are differentiable copies (ToCopyBackward0).
//   gather(ys, device, dim):  ys_i (b_i, ...) -> y (sum b_i, ...) = cat(ys_i.to(device), dim)
//       shapes must agree except along dim ("Gather got an input of invalid size"). If every y_i is
//       0-d and dim == 0, each becomes a 1-element vector and the result has one entry per
//       replica (with PyTorch's warning, printed once per process on stderr).
// Backward: the gradient of gather is sliced back to each replica (CatBackward0); the gradient
// of scatter lands in the input's rows (SliceBackward0).
// Reference: torch/nn/parallel/scatter_gather.py, torch/nn/parallel/_functions.py (Scatter,
// Gather), torch/csrc/cuda/comm.cpp (scatter, gather). Chapter: chapters/05-data-parallel.md.
#pragma once

#include <atomic>
#include <cstdio>
#include <vector>

#include "tinytorch/functional.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace parallel {

/// Splits `input` along `dim` into at most devices.size() chunks (torch.chunk's sizes) and puts
/// chunk i on devices[i]. Returns the chunks; there may be fewer than devices (see above).
/// Throws tinytorch::Error for an empty device list, a 0-d input or a dim out of range.
inline std::vector<Tensor> scatter(const Tensor& input, const std::vector<Device>& devices, int64_t dim = 0) {
  TT_CHECK(!devices.empty(), "scatter: expected at least one device");
  TT_CHECK(input.defined() && input.dim() > 0, "scatter: expected a tensor with at least one dimension to split "
           "along dim ", dim, ", got ", input.defined() ? shape_str(input.sizes()) : std::string("an undefined tensor"));
  std::vector<Tensor> chunks = input.chunk(static_cast<int64_t>(devices.size()), dim);
  for (size_t i = 0; i < chunks.size(); ++i) chunks[i] = chunks[i].to(devices[i]);
  return chunks;
}

/// Concatenates `outputs` along `dim` on `destination` (see above). Throws tinytorch::Error for
/// an empty list, differing dims or shapes that differ outside `dim` (PyTorch's wording).
inline Tensor gather(const std::vector<Tensor>& outputs, Device destination, int64_t dim = 0) {
  TT_CHECK(!outputs.empty(), "gather: expected at least one tensor");
  bool all_scalars = true;
  for (const Tensor& y : outputs) {
    TT_CHECK(y.defined(), "gather: got an undefined tensor");
    all_scalars = all_scalars && y.dim() == 0;
  }
  std::vector<Tensor> parts;
  if (all_scalars && dim == 0) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      std::fprintf(stderr, "UserWarning: Was asked to gather along dimension 0, but all input tensors were scalars; "
                           "will instead unsqueeze and return a vector.\n");
    for (const Tensor& y : outputs) parts.push_back(y.unsqueeze(0).to(destination));
    return cat(parts, 0);
  }
  const Tensor& first = outputs[0];
  TT_CHECK(first.dim() > 0, "gather: cannot gather 0-d tensors along dim ", dim);
  dim = wrap_dim(dim, first.dim(), "gather");
  for (const Tensor& y : outputs) {
    Shape expected = first.sizes();
    if (y.dim() == first.dim()) expected[dim] = y.sizes()[dim];
    TT_CHECK(y.sizes() == expected, "Gather got an input of invalid size: got ", shape_str(y.sizes()),
             ", but expected ", shape_str(expected));
    parts.push_back(y.to(destination));
  }
  return cat(parts, dim);
}

}  TT_NAMESPACE_END  // namespace tinytorch::parallel

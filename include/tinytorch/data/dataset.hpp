// tinytorch/data/dataset.hpp — Example, Dataset, TensorDataset: where training samples come from.
//
// A Dataset is "something with a length that returns sample i" (PyTorch's map-style dataset:
// __len__ and __getitem__). Here a sample is an Example {data, target}, as in the PyTorch C++
// frontend (torch::data::Example).
//
//   TensorDataset(data, targets)     data: (N, ...)  targets: (N, ...)  (dims 0 must be equal)
//   get(i)                      ->   Example{data[i], targets[i]}      shapes (...) and (...)
//   get_batch({i0, ..., iB-1})  ->   Example{stack(data[i_b]), stack(targets[i_b])}
//                                    shapes (B, ...) and (B, ...)
//
// get_batch is the DataLoader's hot path: one epoch of (Fashion-)MNIST is 60000 rows of 784
// floats. The generic Dataset::get_batch calls get() B times and stacks the results;
// TensorDataset overrides it with a gather: it allocates the (B, ...) output once and memcpy's
// each row (row i of a contiguous (N, ...) tensor is one block of numel/N elements), which runs
// at memory bandwidth.
//
// Chapter: chapters/01-training-loop.md (loading MNIST), chapters/04-data-pipeline.md.
// Reference: PyTorch 2.x
// torch.utils.data.Dataset / TensorDataset, and torch::data::Example in the C++ frontend.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "tinytorch/functional.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace data {

/// One sample or one batch: an input and its target.
///   sample: data (...), target (...)        batch: data (B, ...), target (B, ...)
struct Example {
  Tensor data;
  Tensor target;
};

/// A map-style dataset (torch.utils.data.Dataset): size() samples, get(i) returns sample i.
/// Subclasses implement size() and get(); they may override get_batch() with something faster
/// than the default (which calls get() once per index and stacks).
class Dataset {
 public:
  virtual ~Dataset() = default;

  /// Number of samples (len(dataset)).
  virtual size_t size() const = 0;

  /// Sample `index`, 0 <= index < size() (implementations may also accept -size() <= index < 0,
  /// as Python indexing does). Throws tinytorch::Error for an index out of range.
  virtual Example get(int64_t index) = 0;

  /// The samples at `indices`, stacked along a new dim 0: data (B, ...), target (B, ...) with
  /// B = indices.size(). Throws tinytorch::Error for an empty list, an index out of range, or
  /// samples of different shapes (from stack).
  virtual Example get_batch(const std::vector<int64_t>& indices) {
    TT_CHECK(!indices.empty(), "Dataset::get_batch: expected at least one index");
    std::vector<Tensor> xs, ys;
    xs.reserve(indices.size());
    ys.reserve(indices.size());
    for (int64_t i : indices) {
      Example e = get(i);
      xs.push_back(e.data);
      ys.push_back(e.target);
    }
    return {stack(xs, 0), stack(ys, 0)};
  }
};

/// A dataset wrapping two tensors whose first dims index the samples (torch.utils.data.TensorDataset
/// with two tensors): sample i is (data[i], targets[i]).
///
///   data: (N, ...) any dtype; targets: (N, ...) any dtype (usually int64 (N) class labels).
/// Both are made contiguous once at construction (a no-op when they already are) and kept by
/// handle, so the dataset shares their memory. Throws tinytorch::Error when either tensor is
/// undefined or 0-d, not on the CPU, or when the first dims differ (the message names both sizes;
/// PyTorch's message is "Size mismatch between tensors").
class TensorDataset : public Dataset {
 public:
  TensorDataset(Tensor data, Tensor targets) {
    TT_CHECK(data.defined() && targets.defined(), "TensorDataset: got an undefined tensor");
    TT_CHECK(data.dim() >= 1 && targets.dim() >= 1, "TensorDataset: data and targets need at least one dim "
             "(the sample dim), got shapes ", shape_str(data.sizes()), " and ", shape_str(targets.sizes()));
    TT_CHECK(data.device().is_cpu() && targets.device().is_cpu(), "TensorDataset: data and targets must be "
             "CPU tensors, got ", data.device().str(), " and ", targets.device().str());
    TT_CHECK(data.size(0) == targets.size(0), "TensorDataset: size mismatch between tensors: data has ",
             data.size(0), " samples (shape ", shape_str(data.sizes()), ") but targets has ", targets.size(0),
             " (shape ", shape_str(targets.sizes()), "); their first dimensions must match");
    data_ = data.contiguous();
    targets_ = targets.contiguous();
  }

  size_t size() const override { return static_cast<size_t>(data_.size(0)); }

  /// Example{data[index], targets[index]}: views of shape data.shape[1:] and targets.shape[1:]
  /// (sharing memory with the dataset, like PyTorch). Negative indices count from the end.
  /// Throws tinytorch::Error when index is not in [-N, N).
  Example get(int64_t index) override {
    index = wrap_index(index);
    return {data_.select(0, index), targets_.select(0, index)};
  }

  /// Gather: data (B, ...) and targets (B, ...) with row b = row indices[b], copied with one
  /// memcpy per row into fresh contiguous tensors (no autograd history). Negative indices count
  /// from the end. Throws tinytorch::Error for an empty list or an index not in [-N, N).
  Example get_batch(const std::vector<int64_t>& indices) override {
    TT_CHECK(!indices.empty(), "TensorDataset::get_batch: expected at least one index");
    std::vector<int64_t> rows(indices.size());
    for (size_t b = 0; b < indices.size(); ++b) rows[b] = wrap_index(indices[b]);
    return {gather_rows(data_, rows), gather_rows(targets_, rows)};
  }

  /// The wrapped tensors: data (N, ...) and targets (N, ...), contiguous.
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  int64_t wrap_index(int64_t index) const {
    const int64_t n = data_.size(0);
    TT_CHECK(index >= -n && index < n, "TensorDataset: index ", index,
             " is out of bounds for dimension 0 with size ", n);
    return index < 0 ? index + n : index;
  }

  // out[b] = src[rows[b]] for a contiguous src of shape (N, ...): out has shape (B, ...).
  static Tensor gather_rows(const Tensor& src, const std::vector<int64_t>& rows);

  Tensor data_;     // (N, ...)
  Tensor targets_;  // (N, ...)
};

}  TT_NAMESPACE_END  // namespace tinytorch::data

#if TT_HEADER_ONLY
#include "tinytorch/data/dataset.ipp"
#endif

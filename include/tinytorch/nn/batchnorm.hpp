// tinytorch/nn/batchnorm.hpp — nn::BatchNorm1d: batch normalisation with running statistics.
//
//   y = (x - mean) / sqrt(var + eps) * weight + bias        per channel c
// Shapes: x (N, C) or (N, C, L); weight, bias, running_mean, running_var (C); y like x.
// Training: mean and biased var of this batch, over N (and L); the running statistics follow
//   running_mean = (1 - momentum) * running_mean + momentum * mean
//   running_var  = (1 - momentum) * running_var  + momentum * var * n / (n - 1)   (unbiased)
// with n = N*L, and num_batches_tracked += 1. momentum = std::nullopt (PyTorch's None) uses
// the cumulative average instead: momentum = 1 / num_batches_tracked.
// Evaluation (eval()): running_mean / running_var, so a single sample normalises the same way
// whatever batch it comes in. Without track_running_stats there are no running statistics and
// batch statistics are used in both modes.
// Parameters: weight (ones), bias (zeros) when affine. Buffers: running_mean (zeros), running_var
// (ones), num_batches_tracked (int64, 0-d) when track_running_stats; they are in state_dict() and
// DistributedDataParallel broadcasts them from rank 0 at construction and before every forward
// (distributed/ddp.hpp), as PyTorch's DDP with broadcast_buffers=True (this is not SyncBatchNorm:
// each rank normalises with its own batch's statistics).
// Backward: autograd::NativeBatchNorm (NativeBatchNormBackward0), autograd/functions/normalization.hpp.
// Reference: torch.nn.BatchNorm1d (torch/nn/modules/batchnorm.py), torch.nn.functional.batch_norm;
// Ioffe & Szegedy, "Batch Normalization", ICML 2015. Chapter: chapters/01-training-loop.md.
#pragma once

#include <optional>

#include "tinytorch/nn/module.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace nn {

class BatchNorm1d : public Module {
 public:
  int64_t num_features;
  double eps;
  std::optional<double> momentum;  ///< std::nullopt: cumulative moving average (PyTorch's None)
  bool affine, track_running_stats;
  Tensor weight, bias;                                      ///< (C) when affine
  Tensor running_mean, running_var, num_batches_tracked;   ///< when track_running_stats

  /// Throws tinytorch::Error for num_features <= 0.
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true)
      : num_features(num_features), eps(eps), momentum(momentum), affine(affine),
        track_running_stats(track_running_stats) {
    TT_CHECK(num_features > 0, "BatchNorm1d: num_features must be positive, got ", num_features);
    if (affine) {
      weight = register_parameter("weight", ones({num_features}));
      bias = register_parameter("bias", zeros({num_features}));
    }
    if (track_running_stats) {
      running_mean = register_buffer("running_mean", zeros({num_features}));
      running_var = register_buffer("running_var", ones({num_features}));
      num_batches_tracked = register_buffer("num_batches_tracked", scalar_tensor(0, kInt64));
    }
  }

  /// running_mean = 0, running_var = 1, num_batches_tracked = 0 (in place).
  void reset_running_stats() {
    if (!track_running_stats) return;
    NoGradGuard ng;
    running_mean.zero_();
    running_var.fill_(1);
    num_batches_tracked.zero_();
  }
  /// reset_running_stats(), then weight = 1 and bias = 0 (in place).
  void reset_parameters() {
    reset_running_stats();
    if (!affine) return;
    NoGradGuard ng;
    weight.fill_(1);
    bias.zero_();
  }

  /// x: (N, C) or (N, C, L) with C == num_features -> same shape. Throws tinytorch::Error for
  /// another number of dims ("expected 2D or 3D input (got 4D input)"), another C, and a single
  /// value per channel while training (see batch_norm in functional.hpp).
  Tensor forward(const Tensor& x) override {
    TT_CHECK(x.dim() == 2 || x.dim() == 3, "BatchNorm1d: expected 2D or 3D input (got ", x.dim(), "D input)");
    const bool update = is_training() && track_running_stats;
    double factor = momentum.value_or(0.0);  // PyTorch's exponential_average_factor
    if (update && !momentum) factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>() + 1);
    // batch statistics in training, and in evaluation when there are no running statistics
    const bool use_batch_stats = is_training() || !track_running_stats;
    const Tensor rm = !is_training() || track_running_stats ? running_mean : Tensor();
    const Tensor rv = !is_training() || track_running_stats ? running_var : Tensor();
    Tensor y = batch_norm(x, rm, rv, weight, bias, use_batch_stats, factor, eps);
    if (update) {  // after the call, so that an input it rejects leaves the count alone
      NoGradGuard ng;
      num_batches_tracked.add_(1);  // an int64 buffer: an integral Scalar (add_(1.0) throws, as PyTorch)
    }
    return y;
  }

  /// Throws tinytorch::Error when a parameter or buffer member was re-assigned after construction
  /// (see Module::check_member).
  std::shared_ptr<Module> clone() const override {
    for (const auto& [t, n] : {std::pair<const Tensor*, const char*>{&weight, "weight"}, {&bias, "bias"},
                               {&running_mean, "running_mean"}, {&running_var, "running_var"},
                               {&num_batches_tracked, "num_batches_tracked"}})
      check_member(*t, n);
    auto m = clone_as<BatchNorm1d>();
    if (affine) {
      m->weight = m->get_parameter("weight");
      m->bias = m->get_parameter("bias");
    }
    if (track_running_stats) {
      m->running_mean = m->get_buffer("running_mean");
      m->running_var = m->get_buffer("running_var");
      m->num_batches_tracked = m->get_buffer("num_batches_tracked");
    }
    return m;
  }
  std::string name() const override { return "BatchNorm1d"; }
  std::string extra_repr() const override {
    return detail::str_cat(num_features, ", eps=", eps, ", momentum=", momentum ? detail::str_cat(*momentum) : "None",
                           ", affine=", affine ? "True" : "False",
                           ", track_running_stats=", track_running_stats ? "True" : "False");
  }
};

}  TT_NAMESPACE_END  // namespace tinytorch::nn

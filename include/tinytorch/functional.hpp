// tinytorch/functional.hpp — the differentiable API, and the definitions of Tensor's methods.
//
// Free functions mirror torch.* and torch.nn.functional.*:
//   add, sub, mul, div, neg, exp, log, pow, sqrt, abs, relu, sigmoid, tanh,
//   sum, mean, max, argmax, matmul, mm, bmm, softmax, log_softmax, cat, stack,
//   linear, mse_loss, nll_loss, cross_entropy, batch_norm, layer_norm, conv2d, max_pool2d;
// and, in functional_more.hpp (included at the end): min, argmin, amax, amin, maximum, minimum,
//   pow of tensors, floor_divide, remainder, fmod, comparisons with numbers, clamp, where.
// Each records its autograd node (autograd/functions.hpp) when an input requires grad.
// Tensor's methods and operators (declared in tensor.hpp) are defined at the end of this file in
// terms of these functions, so `a * b`, `x.exp()` and `mul(a, b)` are the same op.
// In-place methods (add_, mul_, copy_, ...) follow PyTorch's autograd rules for in-place ops and
// views, implemented in autograd/inplace.hpp: version counter, recorded history, CopySlices.
// Chapter: chapters/01-training-loop.md. Reference: PyTorch 2.x documentation of each function.
#pragma once

#include <cmath>
#include <limits>
#include <sstream>

#include "autograd/conv.hpp"
#include "autograd/engine.hpp"
#include "autograd/functions.hpp"
#include "autograd/normalization.hpp"
#include "autograd/inplace.hpp"
#include "ops/creation.hpp"
#include "ops/print.hpp"
#include "core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN

using autograd::Reduction;

// ---- arithmetic -------------------------------------------------------------------------------
/// a + alpha * b with broadcasting (torch.add). For int64 a and b the sum is exact and wraps modulo
/// 2^64, and a floating alpha throws PyTorch's "For integral input tensors, argument alpha must not
/// be a floating point number."
inline Tensor add(const Tensor& a, const Tensor& b, Scalar alpha = 1);
inline Tensor sub(const Tensor& a, const Tensor& b) { return autograd::Sub::forward(a, b); }
inline Tensor mul(const Tensor& a, const Tensor& b) { return autograd::Mul::forward(a, b); }
/// True division (int64 / int64 gives float32, as torch.div).
inline Tensor div(const Tensor& a, const Tensor& b) { return autograd::Div::forward(a, b); }
inline Tensor neg(const Tensor& x) { return autograd::Neg::forward(x); }
inline Tensor exp(const Tensor& x) { return autograd::exp(x); }
inline Tensor log(const Tensor& x) { return autograd::log(x); }
/// x^exponent (torch.pow). int64 x: an integral exponent gives int64, exact and wrapping modulo 2^64
/// (3^41 -> -420491770248316829, as PyTorch), a negative one throws "Integers to negative integer
/// powers are not allowed."; a floating exponent computes in float32.
inline Tensor pow(const Tensor& x, Scalar exponent);
inline Tensor sqrt(const Tensor& x) { return autograd::sqrt(x); }
inline Tensor abs(const Tensor& x) { return autograd::abs(x); }
inline Tensor relu(const Tensor& x) { return autograd::relu(x); }
inline Tensor sigmoid(const Tensor& x) { return autograd::sigmoid(x); }
inline Tensor tanh(const Tensor& x) { return autograd::tanh(x); }
// clamp, clamp_min, clamp_max: functional_more.hpp

// ---- reductions -------------------------------------------------------------------------------
inline Tensor sum(const Tensor& x) { return autograd::SumMean::forward(x, std::nullopt, false, false); }
inline Tensor sum(const Tensor& x, int64_t dim, bool keepdim = false) {
  return autograd::SumMean::forward(x, dim, keepdim, false);
}
inline Tensor mean(const Tensor& x) { return autograd::SumMean::forward(x, std::nullopt, false, true); }
inline Tensor mean(const Tensor& x, int64_t dim, bool keepdim = false) {
  return autograd::SumMean::forward(x, dim, keepdim, true);
}
/// torch.sum(x, dim=(0, 2), keepdim): over every dim listed (an empty list: all of them, as
/// PyTorch), in one pass per output element. (A, B, C), {0, 2} -> (B); keepdim -> (1, B, 1).
/// Throws for a dim out of range or listed twice (PyTorch's messages). grad_fn SumBackward1.
inline Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false) {
  return autograd::SumMean::forward(x, dims, keepdim, false);
}
/// torch.mean(x, dim=(0, 2), keepdim): sum over the listed dims / the number of elements summed.
/// Floating dtypes only (PyTorch's "could not infer output dtype" otherwise). MeanBackward1.
inline Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false) {
  return autograd::SumMean::forward(x, dims, keepdim, true);
}
inline Tensor max(const Tensor& x) { return autograd::Max::forward_all(x); }
inline std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false) {
  return autograd::Max::forward_dim(x, dim, keepdim);
}
/// Index of the max in the flattened tensor (first on ties), int64 0-d.
inline Tensor argmax(const Tensor& x) {
  TT_CHECK(x.numel() > 0, "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  return std::get<1>(ops::max_dim(ops::reshape(x, {x.numel()}), 0, false, "argmax"));
}
inline Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false) {
  return std::get<1>(ops::max_dim(x, dim, keepdim, "argmax"));
}

// ---- shapes -----------------------------------------------------------------------------------
inline Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) { return autograd::cat(tensors, dim); }
/// Joins same-shape tensors along a new dim (torch.stack).
inline Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  TT_CHECK(!tensors.empty(), "stack: expects a non-empty TensorList");
  std::vector<Tensor> u;
  for (size_t i = 0; i < tensors.size(); ++i) {
    TT_CHECK(tensors[i].sizes() == tensors[0].sizes(), "stack: expects each tensor to be equal size, but got ",
             shape_str(tensors[0].sizes()), " at entry 0 and ", shape_str(tensors[i].sizes()), " at entry ", i);
    u.push_back(tensors[i].unsqueeze(dim));
  }
  return cat(u, wrap_dim(dim, tensors[0].dim() + 1, "stack"));
}

// ---- matrix products --------------------------------------------------------------------------
inline Tensor mm(const Tensor& a, const Tensor& b) { return autograd::Mm::forward(a, b); }
inline Tensor bmm(const Tensor& a, const Tensor& b) { return autograd::Bmm::forward(a, b); }

/// torch.matmul for operands of 1 to 3 dims:
///   (K)·(K) -> ()   (M,K)@(K) -> (M)   (K)@(K,N) -> (N)   (M,K)@(K,N) -> (M,N)
///   batched: (B,M,K)@(K,N), (M,K)@(B,K,N), (B|1,M,K)@(B|1,K,N) -> (B,M,N), batch dims broadcast.
/// Throws for more than 3 dims or mismatched inner sizes (naming both shapes).
inline Tensor matmul(const Tensor& a, const Tensor& b) {
  const int64_t da = a.dim(), db = b.dim();
  TT_CHECK(da >= 1 && db >= 1, "matmul: both arguments need at least 1 dimension, got shapes ",
           shape_str(a.sizes()), " and ", shape_str(b.sizes()));
  TT_CHECK(da <= 3 && db <= 3, "matmul: tinytorch supports operands of up to 3 dims, got shapes ",
           shape_str(a.sizes()), " and ", shape_str(b.sizes()));
  const int64_t ka = a.sizes()[da - 1], kb = b.sizes()[db == 1 ? 0 : db - 2];
  TT_CHECK(ka == kb, "matmul: shapes ", shape_str(a.sizes()), " and ", shape_str(b.sizes()),
           " cannot be multiplied (", ka, " vs ", kb, ")");
  if (da == 1 && db == 1) return sum(mul(a, b));
  if (da == 2 && db == 2) return mm(a, b);
  if (da == 2 && db == 1) return mm(a, b.unsqueeze(1)).squeeze(1);
  if (da == 1 && db == 2) return mm(a.unsqueeze(0), b).squeeze(0);
  if (da == 1) return matmul(a.unsqueeze(0), b).squeeze(-2);
  if (db == 1) return matmul(a, b.unsqueeze(1)).squeeze(-1);
  if (da == 3 && db == 2) {  // fold the batch into the rows: one big GEMM
    const int64_t B = a.sizes()[0], M = a.sizes()[1];
    return mm(a.reshape({B * M, ka}), b).view({B, M, b.sizes()[1]});
  }
  Tensor a3 = da == 3 ? a : a.unsqueeze(0);
  Tensor b3 = db == 3 ? b : b.unsqueeze(0);
  const int64_t B = a3.sizes()[0] == 1 ? b3.sizes()[0] : a3.sizes()[0];
  TT_CHECK(a3.sizes()[0] == b3.sizes()[0] || a3.sizes()[0] == 1 || b3.sizes()[0] == 1,
           "matmul: batch dims of shapes ", shape_str(a.sizes()), " and ", shape_str(b.sizes()),
           " cannot be broadcast");
  return bmm(a3.expand({B, a3.sizes()[1], a3.sizes()[2]}), b3.expand({B, b3.sizes()[1], b3.sizes()[2]}));
}

// ---- neural-network functions (torch.nn.functional) -------------------------------------------
/// y = x W^T + b. x: (N, in) or (*, in); weight: (out, in); bias: (out) or undefined.
inline Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor()) {
  if (x.dim() == 2) return autograd::Linear::forward(x, weight, bias);
  TT_CHECK(x.dim() >= 1, "linear: input must have at least 1 dim, got shape ", shape_str(x.sizes()));
  TT_CHECK(weight.dim() == 2, "linear: expected weight (out, in), got shape ", shape_str(weight.sizes()),
           " (input shape ", shape_str(x.sizes()), ")");
  Shape out_shape = x.sizes();
  out_shape.back() = weight.sizes()[0];
  Tensor y = autograd::Linear::forward(x.reshape({-1, x.sizes().back()}), weight, bias);
  return y.view(out_shape);
}
inline Tensor softmax(const Tensor& x, int64_t dim) { return autograd::Softmax::forward(x, dim, false); }
inline Tensor log_softmax(const Tensor& x, int64_t dim) { return autograd::Softmax::forward(x, dim, true); }

/// Mean squared error. input and target must have the same shape: PyTorch only warns and
/// broadcasts ((N,1) vs (N) -> (N,N)), tinytorch throws tinytorch::Error naming both shapes.
inline Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean) {
  return autograd::MseLoss::forward(input, target, reduction);
}
/// Negative log likelihood on log-probabilities (N, C) with int64 class indices (N) in [0, C)
/// (torch.nn.functional.nll_loss):
///   loss_i = -weight[t_i] * input[i, t_i],  0 where t_i == ignore_index
///   reduction Mean: sum_i loss_i / sum_i weight[t_i] over the samples not ignored (nan when all
///   are ignored, as PyTorch); Sum: sum_i loss_i; None: the (N) losses.
/// weight: per-class weights (C) of the input's dtype, or undefined (all 1); it gets no gradient.
/// Throws tinytorch::Error for a target outside [0, C) that is not ignore_index ("Target 3 is
/// out of bounds"), a weight not of C elements, a weight that requires grad, wrong shapes/dtypes.
inline Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index = -100,
                       Reduction reduction = Reduction::Mean) {
  return autograd::NllLoss::forward(input, target, reduction, weight, ignore_index);
}
inline Tensor nll_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean) {
  return nll_loss(input, target, Tensor(), -100, reduction);
}

namespace detail {
/// cross_entropy's label_smoothing argument check (PyTorch's wording). PyTorch silently treats a
/// negative value as 0; tinytorch throws for it too (a typo should not train something else).
inline void check_label_smoothing(double label_smoothing, const char* op) {
  TT_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0, op, ": label_smoothing must be between 0.0 and 1.0. Got: ",
           label_smoothing);
}
}  // namespace detail

/// Cross entropy on raw logits (N, C) and int64 class indices (N) (torch.nn.functional.cross_entropy):
///   label_smoothing = 0:  nll_loss(log_softmax(input, 1), target, weight, ignore_index, reduction)
///   label_smoothing = e:  (1 - e) * that  +  (e / C) * smooth, with
///       smooth_i = -sum_c weight[c] * log_softmax(input)[i, c]   (0 where t_i == ignore_index)
///       reduced like the nll part (Mean divides by the same sum of weight[t_i], or by the count of
///       samples not ignored when there is no weight), exactly as PyTorch's
///       cross_entropy_loss_label_smoothing (aten/src/ATen/native/LossNLL.cpp).
/// Stable for large logits (log_softmax subtracts the row max). weight: (C) or undefined.
/// Throws tinytorch::Error for label_smoothing outside [0, 1], and as nll_loss.
inline Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            int64_t ignore_index = -100, Reduction reduction = Reduction::Mean,
                            double label_smoothing = 0.0) {
  TT_CHECK(input.dim() == 2, "cross_entropy: expected input of shape (N, C), got ", shape_str(input.sizes()));
  detail::check_label_smoothing(label_smoothing, "cross_entropy");
  if (target.defined() && target.dtype() == kInt64 && target.dim() == 1)  // before any kernel runs
    autograd::checked_targets(target, input.sizes()[1], ignore_index, "cross_entropy");
  const Tensor logp = log_softmax(input, 1);  // (N, C)
  const Tensor nll = nll_loss(logp, target, weight, ignore_index, reduction);
  if (label_smoothing == 0.0) return nll;
  // smooth_i = -sum_c w_c logp[i, c], masked to 0 on ignored rows (a multiply by 0/1: an ignored
  // row whose log-probabilities are infinite would give nan where PyTorch's masked_fill gives 0)
  const int64_t C = input.sizes()[1];
  const Tensor keep = target.ne(full_like(target, static_cast<double>(ignore_index))).to(logp.dtype());  // (N)
  const Tensor smooth = neg(sum(weight.defined() ? mul(logp, weight) : logp, 1)) * keep;               // (N)
  Tensor s = smooth;
  if (reduction != Reduction::None) s = sum(smooth);
  if (reduction == Reduction::Mean) {  // the nll part's denominator: sum of w[t_i], or the count
    double denom = 0;
    const std::vector<int64_t> t = target.tolist<int64_t>();
    const std::vector<double> w = weight.defined() ? weight.tolist<double>() : std::vector<double>();
    for (int64_t ti : t)
      if (ti != ignore_index) denom += w.empty() ? 1.0 : w[static_cast<size_t>(ti)];
    s = s / denom;
  }
  return nll * (1.0 - label_smoothing) + s * (label_smoothing / static_cast<double>(C));
}
inline Tensor cross_entropy(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean) {
  return cross_entropy(input, target, Tensor(), -100, reduction, 0.0);
}

// ---- normalisation (torch.nn.functional.batch_norm / layer_norm; autograd/normalization.hpp) ----
/// Batch normalisation of input (N, C, *) per channel c (torch.nn.functional.batch_norm):
///   y = (x - mean_c) / sqrt(var_c + eps) * weight_c + bias_c
/// training: mean_c and the biased var_c of this batch (over N and *), and running_mean /
///   running_var (C), when given, are updated in place:
///     running_mean = (1 - momentum) * running_mean + momentum * mean_c
///     running_var  = (1 - momentum) * running_var  + momentum * var_c * n / (n - 1)  (unbiased)
/// otherwise: running_mean and running_var are used (both required).
/// weight, bias: (C) of the input's dtype, or undefined. Backward: NativeBatchNormBackward0.
/// Throws tinytorch::Error (PyTorch's wording) for input with fewer than 2 dims, a tensor not of C
/// elements ("running_mean should contain 3 elements not 4"), missing running stats in
/// evaluation, and a single value per channel in training ("Expected more than 1 value per
/// channel when training, got input size torch.Size([1, 3])").
inline Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                         const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = false,
                         double momentum = 0.1, double eps = 1e-5) {
  ops::check_device(input, "batch_norm");
  ops::check_cpu_only(input, "batch_norm");  // CPU loops only (so far)
  TT_CHECK(input.dim() >= 2, "batch_norm: expected input of shape (N, C, *), got ", shape_str(input.sizes()));
  TT_CHECK(input.is_floating_point(), "batch_norm: expected a floating point input, got ", dtype_name(input.dtype()));
  const int64_t C = input.sizes()[1];
  if (!training) {
    TT_CHECK(running_mean.defined(), "batch_norm: running_mean must be defined in evaluation mode");
    TT_CHECK(running_var.defined(), "batch_norm: running_var must be defined in evaluation mode");
  }
  const std::pair<const Tensor*, const char*> args[] = {
      {&running_mean, "running_mean"}, {&running_var, "running_var"}, {&weight, "weight"}, {&bias, "bias"}};
  for (const auto& [t, name] : args) {
    if (!t->defined()) continue;
    ops::check_device(*t, "batch_norm");
    TT_CHECK(t->numel() == C, "batch_norm: ", name, " should contain ", C, " elements not ", t->numel());
    TT_CHECK(t->is_floating_point(), "batch_norm: expected ", name, " of a floating point dtype, got ",
             dtype_name(t->dtype()));
  }
  for (const Tensor* t : {&weight, &bias})
    TT_CHECK(!t->defined() || t->dtype() == input.dtype(), "batch_norm: expected weight and bias of dtype ",
             dtype_name(input.dtype()), " (the input's), got ", dtype_name(t->dtype()));
  if (training)
    TT_CHECK(input.numel() / std::max<int64_t>(C, 1) != 1, "Expected more than 1 value per channel when training, "
             "got input size torch.Size(", shape_str(input.sizes()), ")");
  std::vector<double> batch_mean, batch_var;
  Tensor y = autograd::NativeBatchNorm::forward(input, weight, bias, running_mean, running_var, training, eps,
                                                &batch_mean, &batch_var);
  if (training && input.numel() > 0) {  // an empty batch leaves them alone (as PyTorch)
    NoGradGuard ng;
    for (auto [t, stat] : {std::pair<Tensor, const std::vector<double>*>{running_mean, &batch_mean},
                           std::pair<Tensor, const std::vector<double>*>{running_var, &batch_var}}) {
      if (!t.defined()) continue;
      // r = (1 - momentum) * r + momentum * stat, in r's own dtype
      Tensor st = ops::reshape(tensor(*stat, t.dtype()), t.sizes());
      if (!t.device().is_cpu()) st = ops::to_device(st, t.device());
      ops::binary_(t, st, backend::RunningStatOp{momentum}, "batch_norm");
    }
  }
  return y;
}

/// Layer normalisation over the last dims, which must equal normalized_shape
/// (torch.nn.functional.layer_norm): for every position of the leading dims,
///   y = (x - mean) / sqrt(var + eps) * weight + bias     (mean, biased var over normalized_shape)
/// weight, bias: of shape normalized_shape and the input's dtype, or undefined.
/// Backward: NativeLayerNormBackward0. Throws tinytorch::Error (PyTorch's wording) for an empty
/// normalized_shape, an input whose last dims differ ("Given normalized_shape=[3], expected input
/// with shape [*, 3], but got input of size[2, 4]"), or weight / bias of another shape.
inline Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                         const Tensor& bias = Tensor(), double eps = 1e-5) {
  ops::check_device(input, "layer_norm");
  ops::check_cpu_only(input, "layer_norm");  // CPU loops only (so far)
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  TT_CHECK(k >= 1, "layer_norm: Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
           "element, but got normalized_shape = ", shape_str(normalized_shape));
  const Shape& s = input.sizes();
  TT_CHECK(input.dim() >= k && Shape(s.end() - k, s.end()) == normalized_shape, "layer_norm: Given normalized_shape=",
           shape_str(normalized_shape), ", expected input with shape [*, ", shape_str(normalized_shape).substr(1),
           ", but got input of size", shape_str(s));
  TT_CHECK(input.is_floating_point(), "layer_norm: expected a floating point input, got ", dtype_name(input.dtype()));
  for (const auto& [t, name] : {std::pair<const Tensor*, const char*>{&weight, "weight"}, {&bias, "bias"}}) {
    if (!t->defined()) continue;
    ops::check_device(*t, "layer_norm");
    TT_CHECK(t->sizes() == normalized_shape, "layer_norm: Expected ", name, " to be of same shape as normalized_shape, "
             "but got ", name, " of shape ", shape_str(t->sizes()), " and normalized_shape = ", shape_str(normalized_shape));
    TT_CHECK(t->dtype() == input.dtype(), "layer_norm: expected ", name, " of dtype ", dtype_name(input.dtype()),
             " (the input's), got ", dtype_name(t->dtype()));
  }
  return autograd::NativeLayerNorm::forward(input, normalized_shape, weight, bias, eps);
}

// ---- convolution and pooling (autograd/conv.hpp, ops/conv.hpp) --------------------------------
/// 2-D convolution (cross-correlation) as torch.nn.functional.conv2d:
///   input (N, C_in, H, W) or unbatched (C_in, H, W); weight (C_out, C_in/groups, kH, kW);
///   bias (C_out) or undefined; output (N, C_out, H_out, W_out) (or (C_out, H_out, W_out)),
///   H_out = floor((H + 2 padding - dilation (kH - 1) - 1) / stride) + 1.
/// stride, padding, dilation: an int or {h, w}. PyTorch's padding="same"/"valid" strings and
/// padding_mode are not supported. Throws tinytorch::Error with PyTorch's messages for bad sizes
/// (channels that do not match, a kernel larger than the padded input, non-positive stride, ...),
/// and for int64 inputs. grad_fn: ConvolutionBackward0 (unbatched: SqueezeBackward1, as PyTorch).
inline Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), Size2 stride = 1,
                     Size2 padding = 0, Size2 dilation = 1, int64_t groups = 1) {
  TT_CHECK(input.dim() == 3 || input.dim() == 4, "conv2d: Expected 3D (unbatched) or 4D (batched) input to conv2d, "
           "but got input of size: ", shape_str(input.sizes()));
  if (input.dim() == 3)
    return conv2d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0);
  return autograd::Convolution::forward(input, weight, bias, stride, padding, dilation, groups);
}
/// 2-D max pooling as torch.nn.functional.max_pool2d: input (N, C, H, W) or (C, H, W); each window
/// of kernel_size (dilated by `dilation`, stepped by `stride`, which defaults to kernel_size) over
/// the input padded with -inf by `padding` gives its maximum; ceil_mode rounds the output size up.
/// The gradient goes to the first maximum of each window. kernel_size, padding, dilation: an int or
/// {h, w}; stride: an int, Size2{h, w} (std::optional needs the type named) or std::nullopt.
/// Throws tinytorch::Error with PyTorch's messages ("pad should be at most half of effective kernel
/// size", "Output size is too small"), and for int64 inputs. grad_fn: MaxPool2DWithIndicesBackward0.
inline Tensor max_pool2d(const Tensor& input, Size2 kernel_size, std::optional<Size2> stride = std::nullopt,
                         Size2 padding = 0, Size2 dilation = 1, bool ceil_mode = false) {
  return std::get<0>(autograd::MaxPool2dWithIndices::forward(input, kernel_size, stride, padding, dilation, ceil_mode));
}
/// max_pool2d and the int64 indices of each maximum, flat in its input plane (h * W + w), as
/// torch.nn.functional.max_pool2d(..., return_indices=True).
inline std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, Size2 kernel_size,
                                                          std::optional<Size2> stride = std::nullopt,
                                                          Size2 padding = 0, Size2 dilation = 1,
                                                          bool ceil_mode = false) {
  return autograd::MaxPool2dWithIndices::forward(input, kernel_size, stride, padding, dilation, ceil_mode);
}

// =============================================================================================
// Tensor's methods (declared in tensor.hpp)
// =============================================================================================

inline int64_t Tensor::size(int64_t d) const { return sizes()[wrap_dim(d, dim(), "size")]; }
inline int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }
inline bool Tensor::is_contiguous() const {
  const Shape& s = sizes();
  const Strides& st = strides();
  if (numel() == 0) return true;  // as PyTorch: an empty tensor is contiguous whatever its strides
  int64_t expected = 1;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != 1 && st[i] != expected) return false;
    expected *= s[i];
  }
  return true;
}

template <typename T> T Tensor::at(const std::vector<int64_t>& index) const {
  TT_CHECK(static_cast<int64_t>(index.size()) == dim(), "at: index ", shape_str(index), " has ", index.size(),
           " entries for a tensor of shape ", shape_str(sizes()));
  int64_t off = 0;
  for (int64_t d = 0; d < dim(); ++d) {
    TT_CHECK(index[d] >= 0 && index[d] < sizes()[d], "at: index ", shape_str(index),
             " is out of bounds for shape ", shape_str(sizes()));
    off += index[d] * strides()[d];
  }
  ops::check_device(*this, "at");
  return dispatch(dtype(), [&](auto tag) -> T {
    using S = typename decltype(tag)::type;
    if (device().is_cpu()) return static_cast<T>(data_ptr<S>()[off]);
    S v{};  // a GPU tensor: copy the one element to the host
    backend::dispatch::copy_bytes(Device::cpu(), &v, device(), data_ptr<S>() + off, sizeof(S));
    return static_cast<T>(v);
  });
}
template <typename T> T Tensor::item() const {
  TT_CHECK(numel() == 1, "item: a Tensor with ", numel(), " elements cannot be converted to Scalar");
  ops::check_device(*this, "item");
  return dispatch(dtype(), [&](auto tag) -> T {
    using S = typename decltype(tag)::type;
    if (device().is_cpu()) return static_cast<T>(*data_ptr<S>());
    S v{};  // a GPU tensor: copy the value to the host
    backend::dispatch::copy_bytes(Device::cpu(), &v, device(), data_ptr<S>(), sizeof(S));
    return static_cast<T>(v);
  });
}
template <typename T> std::vector<T> Tensor::tolist() const {
  const Tensor c = ops::contiguous(ops::to_host(*this));  // a GPU tensor is read through a host copy
  std::vector<T> out(static_cast<size_t>(numel()));
  dispatch(dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* p = c.data_ptr<S>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(p[i]);
  });
  return out;
}

// ---- autograd ---------------------------------------------------------------------------------
// A view's grad_fn is remade first when its base was changed by an in-place op since
// (autograd/inplace.hpp); a view requires grad when its base does (PyTorch's view semantics).
inline bool Tensor::requires_grad() const {
  TensorImpl* i = checked();
  if (i->view_base) autograd::refresh_view(i);
  if (i->requires_grad || i->grad_fn) return true;
  return i->view_base && (i->view_base->requires_grad || i->view_base->grad_fn);
}
inline const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  TensorImpl* i = checked();
  if (i->view_base) autograd::refresh_view(i);
  return i->grad_fn;
}
inline bool Tensor::is_leaf() const { return grad_fn() == nullptr; }
inline Tensor& Tensor::requires_grad_(bool r) {
  TT_CHECK(is_leaf() || r, "requires_grad_: you can only change requires_grad flags of leaf variables. "
           "If you want to use a computed variable in a subgraph that doesn't require differentiation "
           "use var_no_grad = var.detach().");
  TT_CHECK(!r || is_floating_point(), "requires_grad_: only Tensors of floating point dtype can require "
           "gradients (got ", dtype_name(dtype()), ")");
  impl_->requires_grad = r;
  return *this;
}
inline Tensor Tensor::grad() const { return Tensor(checked()->grad); }
inline void Tensor::set_grad(const Tensor& g) {
  if (g.defined()) {
    TT_CHECK(g.sizes() == sizes(), "set_grad: assigned grad has data of a different size (",
             shape_str(g.sizes()), " vs ", shape_str(sizes()), ")");
    TT_CHECK(g.device() == device(), "set_grad: assigned grad has data located on a different device (",
             g.device().str(), " vs ", device().str(), ")");
  }
  checked()->grad = g.impl_ptr();
}
inline void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::run_backward(*this, gradient, retain_graph);
}
inline Tensor Tensor::detach() const {
  return ops::make_view(*this, sizes(), strides(), storage_offset());
}
inline Tensor& Tensor::detach_() {
  TT_CHECK(defined(), "detach_: undefined tensor");
  TT_CHECK(!impl_->view_base, "detach_: Can't detach views in-place. Use detach() instead.");
  impl_->grad_fn.reset();
  impl_->requires_grad = false;
  return *this;
}
inline void Tensor::register_hook(TensorHook hook) const {
  TT_CHECK(requires_grad(), "register_hook: cannot register a hook on a tensor that doesn't require gradient");
  if (grad_fn()) grad_fn()->hooks.push_back(std::move(hook));
  else impl_->hooks.push_back(std::move(hook));
}
inline void Tensor::register_post_accumulate_grad_hook(PostAccumulateGradHook hook) const {
  TT_CHECK(is_leaf(), "register_post_accumulate_grad_hook: post accumulate grad hooks cannot be registered "
           "on non-leaf tensors");
  TT_CHECK(requires_grad(), "register_post_accumulate_grad_hook: cannot register a hook on a tensor that "
           "doesn't require gradient");
  impl_->post_accumulate_grad_hooks.push_back(std::move(hook));
}

// ---- views (differentiable) -------------------------------------------------------------------
// Each result is marked as a view of *this (autograd::as_view) for the in-place rules.
inline Tensor Tensor::view(const Shape& s) const {
  return autograd::as_view(*this, autograd::Reshape::forward(*this, s, true));
}
inline Tensor Tensor::reshape(const Shape& s) const {
  return autograd::as_view(*this, autograd::Reshape::forward(*this, s, false));
}
inline Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  return autograd::as_view(*this, autograd::Transpose::forward(*this, d0, d1, "TransposeBackward0"));
}
inline Tensor Tensor::t() const {
  TT_CHECK(dim() <= 2, "t: expects a tensor with <= 2 dimensions, but self is ", dim(), "D (shape ",
           shape_str(sizes()), ")");
  if (dim() < 2) return autograd::as_view(*this, autograd::Transpose::forward(*this, 0, 0, "TBackward0"));
  return autograd::as_view(*this, autograd::Transpose::forward(*this, 0, 1, "TBackward0"));
}
inline Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  return autograd::as_view(*this, autograd::Permute::forward(*this, dims));
}
inline Tensor Tensor::unsqueeze(int64_t d) const {
  return autograd::as_view(*this, autograd::ShapeOnly::wrap(*this, ops::unsqueeze(*this, d), "UnsqueezeBackward0"));
}
inline Tensor Tensor::squeeze() const {
  return autograd::as_view(*this, autograd::ShapeOnly::wrap(*this, ops::squeeze(*this, std::nullopt), "SqueezeBackward0"));
}
inline Tensor Tensor::squeeze(int64_t d) const {
  return autograd::as_view(*this, autograd::ShapeOnly::wrap(*this, ops::squeeze(*this, d), "SqueezeBackward1"));
}
inline Tensor Tensor::expand(const Shape& s) const {
  return autograd::as_view(*this, autograd::ShapeOnly::wrap(*this, ops::expand(*this, s), "ExpandBackward0"));
}
inline Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (dim() == 0) return reshape({1});
  start = wrap_dim(start, dim(), "flatten");
  end = wrap_dim(end, dim(), "flatten");
  TT_CHECK(start <= end, "flatten: start_dim (", start, ") cannot come after end_dim (", end, ")");
  if (start == end) return *this;
  Shape s(sizes().begin(), sizes().begin() + start);
  int64_t m = 1;
  for (int64_t i = start; i <= end; ++i) m *= sizes()[i];
  s.push_back(m);
  s.insert(s.end(), sizes().begin() + end + 1, sizes().end());
  return reshape(s);
}
inline Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  return autograd::as_view(*this, autograd::Slice::forward(*this, d, start, length, false));
}
inline Tensor Tensor::select(int64_t d, int64_t index) const {
  return autograd::as_view(*this, autograd::Slice::forward(*this, d, index, 1, true));
}
inline std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
  TT_CHECK(dim() > 0, "split: expected at least a 1-dimensional tensor");
  d = wrap_dim(d, dim(), "split");
  const int64_t n = sizes()[d];
  TT_CHECK(split_size > 0 || (split_size == 0 && n == 0), "split: split_size can only be 0 if dimension size is 0, "
           "but got split_size ", split_size, " for dimension of size ", n);
  std::vector<Tensor> out;
  if (n == 0) return {*this};
  for (int64_t start = 0; start < n; start += split_size) out.push_back(narrow(d, start, std::min(split_size, n - start)));
  return out;
}
inline std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  TT_CHECK(chunks > 0, "chunk: number of chunks must be greater than 0, got ", chunks);
  TT_CHECK(dim() > 0, "chunk: expected at least a 1-dimensional tensor");
  const int64_t n = sizes()[wrap_dim(d, dim(), "chunk")];
  if (n == 0) {  // torch.chunk: `chunks` empty pieces
    std::vector<Tensor> out;
    for (int64_t i = 0; i < chunks; ++i) out.push_back(narrow(d, 0, 0));
    return out;
  }
  return split((n + chunks - 1) / chunks, d);
}
inline Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return autograd::Copy::wrap(*this, ops::contiguous(*this), "CloneBackward0");
}
inline Tensor Tensor::clone() const { return autograd::Copy::wrap(*this, ops::clone(*this), "CloneBackward0"); }
inline Tensor Tensor::to(DType d) const {
  if (d == dtype()) return *this;
  TT_CHECK(!(requires_grad() && d == kInt64) || !GradMode::is_enabled(),
           "to: cannot convert a tensor that requires grad to int64 (not differentiable); detach() it first");
  return autograd::Copy::wrap(*this, ops::to_dtype(*this, d), "ToCopyBackward0");
}
inline Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  return autograd::Copy::wrap(*this, ops::to_device(*this, device), "ToCopyBackward0");
}
inline Tensor Tensor::to(Device device, DType d) const {
  if (d == dtype()) return to(device);
  if (device == this->device()) return to(d);
  TT_CHECK(!(requires_grad() && d == kInt64) || !GradMode::is_enabled(),
           "to: cannot convert a tensor that requires grad to int64 (not differentiable); detach() it first");
  // convert where the data is, then move it: one node whose backward converts and moves back
  return autograd::Copy::wrap(*this, ops::to_device(ops::to_dtype(*this, d), device), "ToCopyBackward0");
}
inline Tensor Tensor::cuda(int index) const { return to(Device::cuda(index)); }
inline Tensor Tensor::cpu() const { return to(Device::cpu()); }

// ---- elementwise ------------------------------------------------------------------------------
inline Tensor Tensor::operator-() const { return tinytorch::neg(*this); }
inline Tensor Tensor::neg() const { return tinytorch::neg(*this); }
inline Tensor Tensor::exp() const { return tinytorch::exp(*this); }
inline Tensor Tensor::log() const { return tinytorch::log(*this); }
inline Tensor Tensor::pow(Scalar e) const { return tinytorch::pow(*this, e); }
inline Tensor Tensor::sqrt() const { return tinytorch::sqrt(*this); }
inline Tensor Tensor::abs() const { return tinytorch::abs(*this); }
inline Tensor Tensor::relu() const { return tinytorch::relu(*this); }
inline Tensor Tensor::sigmoid() const { return tinytorch::sigmoid(*this); }
inline Tensor Tensor::tanh() const { return tinytorch::tanh(*this); }
inline Tensor Tensor::eq(const Tensor& o) const { return ops::binary(*this, o, backend::cpu::EqOp{}, "eq", true); }
inline Tensor Tensor::ne(const Tensor& o) const { return ops::binary(*this, o, backend::cpu::NeOp{}, "ne", true); }
inline Tensor Tensor::lt(const Tensor& o) const { return ops::binary(*this, o, backend::cpu::LtOp{}, "lt", true); }
inline Tensor Tensor::le(const Tensor& o) const { return ops::binary(*this, o, backend::cpu::LeOp{}, "le", true); }
inline Tensor Tensor::gt(const Tensor& o) const { return ops::binary(*this, o, backend::cpu::GtOp{}, "gt", true); }
inline Tensor Tensor::ge(const Tensor& o) const { return ops::binary(*this, o, backend::cpu::GeOp{}, "ge", true); }

// ---- reductions and products ------------------------------------------------------------------
inline Tensor Tensor::sum() const { return tinytorch::sum(*this); }
inline Tensor Tensor::sum(int64_t d, bool keepdim) const { return tinytorch::sum(*this, d, keepdim); }
inline Tensor Tensor::mean() const { return tinytorch::mean(*this); }
inline Tensor Tensor::mean(int64_t d, bool keepdim) const { return tinytorch::mean(*this, d, keepdim); }
inline Tensor Tensor::sum(const std::vector<int64_t>& dims, bool keepdim) const {
  return tinytorch::sum(*this, dims, keepdim);
}
inline Tensor Tensor::mean(const std::vector<int64_t>& dims, bool keepdim) const {
  return tinytorch::mean(*this, dims, keepdim);
}
inline Tensor Tensor::max() const { return tinytorch::max(*this); }
inline std::tuple<Tensor, Tensor> Tensor::max(int64_t d, bool keepdim) const { return tinytorch::max(*this, d, keepdim); }
inline Tensor Tensor::argmax() const { return tinytorch::argmax(*this); }
inline Tensor Tensor::argmax(int64_t d, bool keepdim) const { return tinytorch::argmax(*this, d, keepdim); }
inline Tensor Tensor::matmul(const Tensor& o) const { return tinytorch::matmul(*this, o); }
inline Tensor Tensor::mm(const Tensor& o) const { return tinytorch::mm(*this, o); }
inline Tensor Tensor::softmax(int64_t d) const { return tinytorch::softmax(*this, d); }
inline Tensor Tensor::log_softmax(int64_t d) const { return tinytorch::log_softmax(*this, d); }

// ---- in place ---------------------------------------------------------------------------------
// Every in-place method runs the same steps (autograd/inplace.hpp explains them):
//   record = autograd::check_inplace(...)     PyTorch's leaf / view errors; record in the graph?
//   check_inplace_result(...)                  PyTorch's casting rule (below)
//   overlap checks (ops/elementwise.hpp)       PyTorch's "unsupported operation" errors
//   node = record ? <Op>Inplace::make(...)     saves what backward needs, before the write
//   the kernel writes *this
//   autograd::finish_inplace(*this, node, ...) bumps _version(); rebases the history
// In-place arithmetic on an int64 tensor follows PyTorch's casting rule: the result type of
// (self, operand) must fit self, so a floating operand (a float tensor, or a floating Scalar as in
// add_(1.0)) throws "result type Float can't be cast to the desired output type Long"; integral
// operands compute exactly in int64, wrapping modulo 2^64 (never through a double). An int64
// tensor never requires grad, so its path records nothing.
namespace detail {
using InputList = std::initializer_list<const Tensor*>;
inline void check_write_overlap(const Tensor& self, InputList inputs, const char* op) {
  ops::assert_no_internal_overlap(self, op);
  for (const Tensor* t : inputs)
    if (t->defined() && !t->is_same(self)) ops::assert_no_partial_overlap(self, *t, op);
}
inline void check_inplace_result(const Tensor& self, bool floating_operand, DType result, const char* op) {
  TT_CHECK(self.is_floating_point() || !floating_operand, op, ": result type ", scalar_type_name(result),
           " can't be cast to the desired output type ", scalar_type_name(self.dtype()));
}
inline void check_inplace_result(const Tensor& self, const Tensor& o, const char* op) {
  ops::check_device(o, op);  // "<op>: got an undefined tensor"
  check_inplace_result(self, o.is_floating_point(), o.dtype(), op);
}
inline void check_inplace_result(const Tensor& self, const Scalar& s, const char* op) {
  check_inplace_result(self, s.is_floating_point(), kFloat32, op);
}
// The kernel of self += k * o: exact and wrapping for an int64 self (k must be integral).
inline void add_scaled_kernel(Tensor& self, const Tensor& o, const Scalar& k, const char* op) {
  if (self.dtype() == kInt64) {
    TT_CHECK(k.is_integral(), op, ": For integral input tensors, argument alpha must not be a floating point "
             "number.");
    const int64_t ki = k.to_int64();
    ops::binary_(self, o, backend::AddScaledInt64Op{ki}, op);
    return;
  }
  const double kd = k.to_double();
  if (kd == 1) ops::binary_(self, o, backend::cpu::AddOp{}, op);
  else ops::binary_(self, o, backend::AddScaledOp{kd}, op);
}
inline Scalar negated(const Scalar& s) {
  return s.is_integral() ? Scalar(Scalar::wrapping_neg(s.to_int64())) : Scalar(-s.to_double());
}
// self += alpha * o (add_, sub_: alpha already negated)
inline Tensor& add_inplace(Tensor& self, const Tensor& o, const Scalar& alpha, const char* op, const char* node_name) {
  const bool record = autograd::check_inplace(self, {&o}, op);
  check_inplace_result(self, o, op);
  check_write_overlap(self, {&o}, op);
  auto node = record ? autograd::AddInplace::make(o, alpha.to_double(), node_name) : nullptr;
  add_scaled_kernel(self, o, alpha, op);
  autograd::finish_inplace(self, std::move(node), {&o});
  return self;
}
// self = f(self, s) for a number: add_(v) (AddBackward1), sub_(v), mul_(v) (MulBackward1);
// int_op(a, s) (a functor of backend/functors.hpp, wrapping) for an int64 self, float_op(a, v)
// computed in double otherwise.
template <class IntOp, class FloatOp, class MakeNode>
Tensor& scalar_inplace(Tensor& self, const Scalar& s, IntOp int_op, FloatOp float_op, MakeNode make_node,
                       const char* op) {
  const bool record = autograd::check_inplace(self, {}, op);
  check_inplace_result(self, s, op);
  ops::assert_no_internal_overlap(self, op);
  if (self.dtype() == kInt64) {
    ops::scalar_int64_(self, s.to_int64(op), int_op, op);
    autograd::finish_inplace(self, nullptr, {});
    return self;
  }
  const double v = s.to_double();
  std::shared_ptr<autograd::Node> node;
  if (record) node = make_node(v);
  ops::unary_(self, backend::BindDouble<FloatOp>{float_op, v}, op);
  autograd::finish_inplace(self, std::move(node), {});
  return self;
}
// self = v everywhere (zero_, fill_): no overlap check, as PyTorch's fill_; exact for int64
// (a value beyond int64's range throws).
inline Tensor& fill_inplace(Tensor& self, const Scalar& s, const char* op, const char* node_name) {
  const bool record = autograd::check_inplace(self, {}, op);
  auto node = record ? autograd::OverwriteInplace::make(node_name) : nullptr;
  dispatch(self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = s.to<T>(op);
    ops::unary_(self, backend::FillOp<T>{v}, op);
  });
  autograd::finish_inplace(self, std::move(node), {});
  return self;
}
// self += value * (t1 op t2) (addcmul_, addcdiv_)
template <class Op>
Tensor& addc_inplace(Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value, Op op_fn, bool div,
                     const char* op) {
  const bool record = autograd::check_inplace(self, {&t1, &t2}, op);
  check_write_overlap(self, {&t1, &t2}, op);
  auto node = record ? autograd::AddcInplace::make(t1, t2, value.to_double(), div) : nullptr;
  const Tensor prod = ops::binary(t1, t2, op_fn, op);
  check_inplace_result(self, prod, op);
  add_scaled_kernel(self, prod, value, op);
  autograd::finish_inplace(self, std::move(node), {&t1, &t2});
  return self;
}
}  // namespace detail

inline Tensor& Tensor::add_(const Tensor& o, Scalar alpha) {
  return detail::add_inplace(*this, o, alpha, "add_", "AddBackward0");
}
inline Tensor& Tensor::sub_(const Tensor& o, Scalar alpha) {
  return detail::add_inplace(*this, o, detail::negated(alpha), "sub_", "SubBackward0");
}
inline Tensor& Tensor::add_(Scalar v) {
  return detail::scalar_inplace(*this, v, backend::AddOp{}, backend::AddOp{},
                                [](double) { return std::make_shared<autograd::AddScalar>(); }, "add_");
}
inline Tensor& Tensor::sub_(Scalar v) {
  return detail::scalar_inplace(*this, v, backend::SubOp{}, backend::SubOp{},
                                [](double) {
                                  auto n = std::make_shared<autograd::AddScalar>();
                                  n->node_name = "SubBackward1";
                                  return n;
                                }, "sub_");
}
inline Tensor& Tensor::mul_(const Tensor& o) {
  const bool record = autograd::check_inplace(*this, {&o}, "mul_");
  detail::check_inplace_result(*this, o, "mul_");
  detail::check_write_overlap(*this, {&o}, "mul_");
  auto node = record ? autograd::MulInplace::make(*this, o) : nullptr;
  ops::binary_(*this, o, backend::cpu::MulOp{}, "mul_");
  autograd::finish_inplace(*this, std::move(node), {&o});
  return *this;
}
inline Tensor& Tensor::mul_(Scalar v) {
  auto make_node = [](double s) {
    auto n = std::make_shared<autograd::MulScalar>();
    n->s = s;
    return n;
  };
  return detail::scalar_inplace(*this, v, backend::MulOp{}, backend::MulOp{}, make_node, "mul_");
}
// div_ is true division, as torch.div_: its result is floating point, which an int64 tensor cannot
// hold, so int64 div_ raises as in PyTorch (and never runs an integer division, which would trap
// on a zero divisor or INT64_MIN / -1).
inline Tensor& Tensor::div_(const Tensor& o) {
  const bool record = autograd::check_inplace(*this, {&o}, "div_");
  TT_CHECK(is_floating_point(), "div_: result type ", scalar_type_name(o.is_floating_point() ? o.dtype() : kFloat32),
           " can't be cast to the desired output type ", scalar_type_name(dtype()));
  detail::check_write_overlap(*this, {&o}, "div_");
  auto node = record ? autograd::DivInplace::make(*this, o) : nullptr;
  ops::binary_(*this, o, backend::cpu::DivOp{}, "div_");
  autograd::finish_inplace(*this, std::move(node), {&o});
  return *this;
}
inline Tensor& Tensor::div_(Scalar s) {
  TT_CHECK(defined(), "div_: called on an undefined tensor");
  TT_CHECK(is_floating_point(), "div_: result type Float can't be cast to the desired output type ",
           scalar_type_name(dtype()));
  auto make_node = [](double v) {
    auto n = std::make_shared<autograd::DivScalar>();
    n->s = v;
    return n;
  };
  return detail::scalar_inplace(*this, s, backend::MulOp{} /* not reached: self is floating */,
                                backend::DivOp{}, make_node, "div_");
}
inline Tensor& Tensor::addcmul_(const Tensor& t1, const Tensor& t2, Scalar value) {
  return detail::addc_inplace(*this, t1, t2, value, backend::cpu::MulOp{}, false, "addcmul_");
}
inline Tensor& Tensor::addcdiv_(const Tensor& t1, const Tensor& t2, Scalar value) {
  TT_CHECK(defined(), "addcdiv_: called on an undefined tensor");
  TT_CHECK(t1.is_floating_point() || t2.is_floating_point(), "addcdiv_: Integer division with addcdiv is no "
           "longer supported (got int64 tensor1 and tensor2); use (input + value * tensor1 / tensor2)");
  return detail::addc_inplace(*this, t1, t2, value, backend::cpu::DivOp{}, true, "addcdiv_");
}
inline Tensor& Tensor::zero_() { return detail::fill_inplace(*this, Scalar(int64_t{0}), "zero_", "ZeroBackward0"); }
inline Tensor& Tensor::fill_(Scalar v) { return detail::fill_inplace(*this, v, "fill_", "FillBackward2"); }
inline Tensor& Tensor::copy_(const Tensor& src) {
  const bool record = autograd::check_inplace(*this, {&src}, "copy_");
  // As PyTorch: copying a tensor onto itself (the same elements in the same layout) does nothing.
  const bool same = src.defined() && (is_same(src) || (impl()->storage == src.impl()->storage &&
                    storage_offset() == src.storage_offset() && strides() == src.strides() &&
                    sizes() == src.sizes() && dtype() == src.dtype()));
  if (!same) detail::check_write_overlap(*this, {&src}, "copy_");
  auto node = record ? autograd::CopyInplace::make(src) : nullptr;
  if (!same) {  // copy_ moves data across devices (as PyTorch's), then copies in place
    TT_CHECK(src.defined(), "copy_: got an undefined tensor");
    const Tensor s = src.device() == device() ? src : ops::to_device(src, device());
    ops::binary_(*this, s, backend::SecondOp{}, "copy_");
  }
  autograd::finish_inplace(*this, std::move(node), {&src});
  return *this;
}
// (The generator's lock is held once for the whole tensor: Generator::locked.)
inline Tensor& Tensor::uniform_(double from, double to, Generator* gen) {
  const bool record = autograd::check_inplace(*this, {}, "uniform_");
  ops::assert_no_internal_overlap(*this, "uniform_");
  Generator& g = gen ? *gen : default_generator();
  // a GPU tensor: the numbers are drawn on the host in the same order, then copied (CUDA.md section 5)
  Tensor host = device().is_cpu() ? *this : ops::make_tensor(sizes(), dtype());
  g.locked([&](Generator::Stream& s) { ops::unary_(host, [&](auto) { return s.uniform(from, to); }, "uniform_"); });
  if (!device().is_cpu()) ops::copy_into_strided(ops::to_device(host, device()), *this);
  autograd::finish_inplace(*this, record ? autograd::OverwriteInplace::make("UniformBackward0") : nullptr, {});
  return *this;
}
inline Tensor& Tensor::normal_(double mean, double std, Generator* gen) {
  const bool record = autograd::check_inplace(*this, {}, "normal_");
  ops::assert_no_internal_overlap(*this, "normal_");
  Generator& g = gen ? *gen : default_generator();
  Tensor host = device().is_cpu() ? *this : ops::make_tensor(sizes(), dtype());  // as uniform_
  g.locked([&](Generator::Stream& s) { ops::unary_(host, [&](auto) { return mean + std * s.normal(); }, "normal_"); });
  if (!device().is_cpu()) ops::copy_into_strided(ops::to_device(host, device()), *this);
  autograd::finish_inplace(*this, record ? autograd::OverwriteInplace::make("NormalBackward0") : nullptr, {});
  return *this;
}

// ---- comparison of whole tensors, printing ----------------------------------------------------
inline bool Tensor::allclose(const Tensor& o, double rtol, double atol) const {
  if (sizes() != o.sizes()) return false;
  std::vector<double> a = tolist<double>(), b = o.tolist<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return false;
    if (std::abs(a[i] - b[i]) > atol + rtol * std::abs(b[i])) return false;
  }
  return true;
}
inline bool Tensor::equal(const Tensor& o) const {
  if (sizes() != o.sizes()) return false;
  // two int64 tensors compare as int64 (as doubles, 2^53 + 1 would equal 2^53)
  if (dtype() == kInt64 && o.dtype() == kInt64) return tolist<int64_t>() == o.tolist<int64_t>();
  return tolist<double>() == o.tolist<double>();
}

inline std::string Tensor::str() const {
  if (!defined()) return "[ Tensor (undefined) ]";
  std::string suffix;
  if (grad_fn()) {  // as PyTorch's repr: <CopySlices> for the node named torch::autograd::CopySlices
    std::string name = grad_fn()->name();
    const std::string ns = "torch::autograd::";
    if (name.compare(0, ns.size(), ns) == 0) name = name.substr(ns.size());
    suffix = "grad_fn=<" + name + ">";
  }
  else if (requires_grad()) suffix = "requires_grad=True";
  // A GPU tensor: the values come through a host copy (tolist), the repr names the device first,
  // as PyTorch's: tensor([1., 2.], device='cuda:0').
  const std::string dev = device().is_cpu() ? std::string() : "device='" + device().str() + "'";
  if (dtype() == kInt64) return detail::format_tensor_int64(sizes(), tolist<int64_t>(), suffix, dev);  // exact
  return detail::format_tensor(sizes(), tolist<double>(), dtype(), suffix, dev);
}
inline std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

// ---- operators --------------------------------------------------------------------------------
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
// Tensor-Scalar arithmetic: an int64 tensor with an integral Scalar computes exactly in int64
// (wrapping modulo 2^64; int64 never requires grad, so there is no node to record); with a
// floating Scalar it computes in float32 (torch.result_type); float tensors use the double value.
namespace detail {
// (An undefined t passes through to the op, whose error names it.)
inline bool int64_exact(const Tensor& t, const Scalar& s) {
  return t.defined() && t.dtype() == kInt64 && s.is_integral();
}
inline Tensor promote_for(const Tensor& t, const Scalar& s) {
  return t.defined() && t.dtype() == kInt64 && s.is_floating_point() ? ops::to_dtype(t, kFloat32) : t;
}
}  // namespace detail
inline Tensor operator+(const Tensor& a, Scalar b) {
  if (detail::int64_exact(a, b)) return ops::scalar_int64(a, b.to_int64(), backend::AddOp{}, "add");
  return autograd::AddScalar::forward(detail::promote_for(a, b), b.to_double());
}
inline Tensor operator-(const Tensor& a, Scalar b) {
  if (detail::int64_exact(a, b)) return ops::scalar_int64(a, b.to_int64(), backend::SubOp{}, "sub");
  return autograd::AddScalar::forward(detail::promote_for(a, b), -b.to_double(), "SubBackward1");
}
inline Tensor operator*(const Tensor& a, Scalar b) {
  if (detail::int64_exact(a, b)) return ops::scalar_int64(a, b.to_int64(), backend::MulOp{}, "mul");
  return autograd::MulScalar::forward(detail::promote_for(a, b), b.to_double());
}
inline Tensor operator/(const Tensor& a, Scalar b) { return autograd::DivScalar::forward(a, b.to_double()); }
inline Tensor operator+(Scalar a, const Tensor& b) { return b + a; }
inline Tensor operator-(Scalar a, const Tensor& b) {
  if (detail::int64_exact(b, a))
    return ops::scalar_int64(b, a.to_int64(), backend::RsubOp{}, "rsub");
  return autograd::RsubScalar::forward(detail::promote_for(b, a), a.to_double());
}
inline Tensor operator*(Scalar a, const Tensor& b) { return b * a; }
inline Tensor operator/(Scalar a, const Tensor& b) { return pow(b, -1.0) * a; }

inline Tensor add(const Tensor& a, const Tensor& b, Scalar alpha) {
  const bool is_one = alpha.is_integral() ? alpha.to_int64() == 1 : alpha.to_double() == 1.0;
  if (a.defined() && b.defined() &&  // (Add::forward names an undefined input)
      ops::promote_types(a.dtype(), b.dtype()) == kInt64 && !(is_one && alpha.is_integral())) {
    TT_CHECK(alpha.is_integral(), "add: For integral input tensors, argument alpha must not be a floating point "
             "number.");
    const int64_t k = alpha.to_int64();
    return ops::binary(a, b, backend::AddScaledInt64Op{k}, "add");
  }
  return autograd::Add::forward(a, b, alpha.to_double());
}
inline Tensor pow(const Tensor& x, Scalar exponent) {
  if (x.dtype() == kInt64 && exponent.is_integral()) {
    const int64_t e = exponent.to_int64();
    TT_CHECK(e >= 0, "pow: Integers to negative integer powers are not allowed. (got exponent ", e,
             " for an int64 tensor; pass ", e, ".0 for a float32 result)");
    return ops::scalar_int64(x, e, backend::WrappingPowOp{}, "pow");
  }
  return autograd::pow(detail::promote_for(x, exponent), exponent.to_double());
}
inline Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
inline Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
inline Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
inline Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
inline Tensor& operator+=(Tensor& a, Scalar b) { return a.add_(b); }
inline Tensor& operator*=(Tensor& a, Scalar b) { return a.mul_(b); }

TT_NAMESPACE_END  // namespace tinytorch

// The second batch of ops (min/argmin/amin/amax, maximum/minimum, pow of tensors, floor_divide,
// remainder, fmod, comparisons with numbers, clamp, where) and their Tensor methods.
#include "functional_more.hpp"

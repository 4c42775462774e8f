// tinytorch/functional.hpp — the differentiable API: the functions users call (their bodies, and
// those of Tensor's views, math methods and operators, are functional.ipp).
// Free functions mirror torch.* and torch.nn.functional.*:
//   add, sub, mul, div, neg, exp, log, pow, sqrt, abs, relu, sigmoid, tanh,
//   sum, mean, max, argmax, matmul, mm, bmm, softmax, log_softmax, cat, stack,
//   linear, mse_loss, nll_loss, cross_entropy, batch_norm, layer_norm, conv2d, max_pool2d;
//   gelu, embedding, dropout, scaled_dot_product_attention (the transformer's parts, chapter 12);
//   min, argmin, amax, amin, maximum, minimum, pow of tensors, floor_divide, div with a rounding
//   mode, trunc, remainder, fmod, comparisons with tensors and numbers, clamp, where.
// Each records its autograd node (autograd/functions/<family>.hpp, indexed by
// autograd/functions.hpp) when an input requires grad, with PyTorch's grad_fn name. Tensor's
// math methods and operators (declared in tensor.hpp) are defined in terms of these functions, so
// `a * b`, `x.exp()` and `mul(a, b)` are the same op. In-place methods (add_, mul_, copy_, ...)
// follow PyTorch's autograd rules for in-place ops and views (autograd/inplace.hpp): version
// counter, recorded history, CopySlices.
// This header declares; functional.ipp defines (TT_DECL, core/config.hpp): a header-only
// build includes the bodies from the end of this file, -DTINYTORCH_SEPARATE_COMPILATION compiles
// them once in the library TU (<tinytorch/src.hpp>), so a program that includes this header
// parses no kernel, no autograd node and no Eigen.
// Shapes broadcast as PyTorch (core/shape.hpp); dtypes promote as PyTorch for tensor operands, and
// a number meets a tensor as in the rest of tinytorch (ops/elementwise.hpp: an int64 tensor
// stays int64 with an integral number, turns float32 with a fractional one).
// Differences from PyTorch, each for a reason given where it is declared:
//   - comparisons return int64 0/1 tensors (no bool dtype), and where() takes one as condition;
//   - INT64_MIN // -1 throws (PyTorch dies of SIGFPE).
// Chapter: chapters/01-training-loop.md, chapters/02-autograd.md, chapters/12-model-parallelism.md
// (the transformer parts). Reference: PyTorch 1.13 / 2.x
// documentation of each function; derivatives.yaml for gradients.
#pragma once

#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tinytorch/autograd/grad_mode.hpp"  // NoGradGuard, enable_grad (torch.no_grad)
#include "tinytorch/autograd/node.hpp"       // Node: what grad_fn() points to (name(), next_functions)
#include "tinytorch/autograd/reduction.hpp"  // Reduction (mse_loss, nll_loss, cross_entropy)
#include "tinytorch/autograd/variable.hpp"   // Tensor's autograd methods (requires_grad_, backward, ...)
#include "tinytorch/ops/item.hpp"            // Tensor::item / at / tolist
#include "tinytorch/tensor.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN

using autograd::Reduction;

// ---- arithmetic -------------------------------------------------------------------------------
/// a + alpha * b with broadcasting (torch.add). For int64 a and b the sum is exact and wraps modulo
/// 2^64, and a floating alpha throws PyTorch's "For integral input tensors, argument alpha must not
/// be a floating point number."
TT_DECL Tensor add(const Tensor& a, const Tensor& b, Scalar alpha = 1);
TT_DECL Tensor sub(const Tensor& a, const Tensor& b);
TT_DECL Tensor mul(const Tensor& a, const Tensor& b);
/// True division (int64 / int64 gives float32, as torch.div).
TT_DECL Tensor div(const Tensor& a, const Tensor& b);
TT_DECL Tensor neg(const Tensor& x);
TT_DECL Tensor exp(const Tensor& x);
TT_DECL Tensor log(const Tensor& x);
/// x^exponent (torch.pow). int64 x: an integral exponent gives int64, exact and wrapping modulo 2^64
/// (3^41 -> -420491770248316829, as PyTorch), a negative one throws "Integers to negative integer
/// powers are not allowed."; a floating exponent computes in float32.
TT_DECL Tensor pow(const Tensor& x, Scalar exponent);
TT_DECL Tensor sqrt(const Tensor& x);
TT_DECL Tensor abs(const Tensor& x);
TT_DECL Tensor relu(const Tensor& x);
TT_DECL Tensor sigmoid(const Tensor& x);
TT_DECL Tensor tanh(const Tensor& x);
// clamp, clamp_min, clamp_max: below, with maximum/minimum and pow

// ---- reductions -------------------------------------------------------------------------------
TT_DECL Tensor sum(const Tensor& x);
TT_DECL Tensor sum(const Tensor& x, int64_t dim, bool keepdim = false);
TT_DECL Tensor mean(const Tensor& x);
TT_DECL Tensor mean(const Tensor& x, int64_t dim, bool keepdim = false);
/// torch.sum(x, dim=(0, 2), keepdim): over every dim listed (an empty list: all of them, as
/// PyTorch), in one pass per output element. (A, B, C), {0, 2} -> (B); keepdim -> (1, B, 1).
/// Throws for a dim out of range or listed twice (PyTorch's messages). grad_fn SumBackward1.
TT_DECL Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);
/// torch.mean(x, dim=(0, 2), keepdim): sum over the listed dims / the number of elements summed.
/// Floating dtypes only (PyTorch's "could not infer output dtype" otherwise). MeanBackward1.
TT_DECL Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);
TT_DECL Tensor max(const Tensor& x);
TT_DECL std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
/// Index of the max in the flattened tensor (first on ties), int64 0-d.
TT_DECL Tensor argmax(const Tensor& x);
TT_DECL Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);

// ---- shapes -----------------------------------------------------------------------------------
TT_DECL Tensor cat(const std::vector<Tensor>& tensors, int64_t dim);
/// Joins same-shape tensors along a new dim (torch.stack).
TT_DECL Tensor stack(const std::vector<Tensor>& tensors, int64_t dim);

// ---- matrix products --------------------------------------------------------------------------
TT_DECL Tensor mm(const Tensor& a, const Tensor& b);
TT_DECL Tensor bmm(const Tensor& a, const Tensor& b);

/// torch.matmul for operands of any number of dims >= 1:
///   (K)·(K) -> ()   (M,K)@(K) -> (M)   (K)@(K,N) -> (N)   (M,K)@(K,N) -> (M,N)
///   batched: (*A,M,K)@(*B,K,N) -> (*broadcast(A, B),M,N), e.g. attention's (B,H,T,hd)@(B,H,hd,T);
///   (*,M,K)@(K,N) folds the batch into M (one GEMM); a 1-D operand gains and loses a dim as PyTorch.
/// Throws for a 0-d operand, mismatched inner sizes or batch dims that do not broadcast (naming
/// both shapes).
TT_DECL Tensor matmul(const Tensor& a, const Tensor& b);

// ---- neural-network functions (torch.nn.functional) -------------------------------------------
/// y = x W^T + b. x: (N, in) or (*, in); weight: (out, in); bias: (out) or undefined.
TT_DECL Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
TT_DECL Tensor softmax(const Tensor& x, int64_t dim);
TT_DECL Tensor log_softmax(const Tensor& x, int64_t dim);

/// Mean squared error. input and target must have the same shape: PyTorch only warns and
/// broadcasts ((N,1) vs (N) -> (N,N)), tinytorch throws tinytorch::Error naming both shapes.
TT_DECL Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
namespace detail {
/// The shapes PyTorch's losses take (nll_loss_nd, aten/src/ATen/native/LossNLL.cpp), as rows:
///   input (N, C), target (N)                          -> themselves
///   input (C) (unbatched), target 0-d                 -> (1, C), (1)
///   input (N, C, d1, ..., dk), target (N, d1, ..., dk) -> (N * d1 * ... * dk, C) (class dim moved
///                                                        last, a differentiable copy), flattened target
/// out_shape: the target's shape, reduction None's output. Throws PyTorch's messages for a 0-d
/// input, a batch size or target shape that does not match.
struct LossRows {
  Tensor input, target;
  Shape out_shape;
};
TT_DECL LossRows loss_rows(const Tensor& input, const Tensor& target, const char* op);
}  // namespace detail

/// Negative log likelihood on log-probabilities (N, C) with int64 class indices (N) in [0, C)
/// (torch.nn.functional.nll_loss). Also, as PyTorch: unbatched input (C) with a 0-d target (a
/// 0-d loss for every reduction), and (N, C, d1, ..., dk) with target (N, d1, ..., dk), each
/// position a sample (Mean divides by the summed weights of every position not ignored; None
/// gives the target's shape). grad_fn: NllLossBackward0 (None over d1...: a view of it, where
/// PyTorch shows NllLoss2dBackward0 for 4-d input).
///   loss_i = -weight[t_i] * input[i, t_i],  0 where t_i == ignore_index
///   reduction Mean: sum_i loss_i / sum_i weight[t_i] over the samples not ignored (nan when all
///   are ignored, as PyTorch); Sum: sum_i loss_i; None: the (N) losses.
/// weight: per-class weights (C) of the input's dtype, or undefined (all 1); it gets no gradient.
/// Throws tinytorch::Error for a target outside [0, C) that is not ignore_index ("Target 3 is
/// out of bounds"), a weight not of C elements, a weight that requires grad, wrong shapes/dtypes.
TT_DECL Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index = -100,
                       Reduction reduction = Reduction::Mean);
TT_DECL Tensor nll_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);


namespace detail {
/// cross_entropy's label_smoothing argument check (PyTorch's wording). PyTorch silently treats a
/// negative value as 0; tinytorch throws for it too (a typo should not train something else).
TT_DECL void check_label_smoothing(double label_smoothing, const char* op);
}  // namespace detail

/// Cross entropy on raw logits (N, C) and int64 class indices (N) (torch.nn.functional.cross_entropy);
/// unbatched (C) and (N, C, d1, ..., dk) inputs as nll_loss (the softmax over C at each position):
///   label_smoothing = 0:  nll_loss(log_softmax(input, 1), target, weight, ignore_index, reduction)
///   label_smoothing = e:  (1 - e) * that  +  (e / C) * smooth, with
///       smooth_i = -sum_c weight[c] * log_softmax(input)[i, c]   (0 where t_i == ignore_index)
///       reduced like the nll part (Mean divides by the same sum of weight[t_i], or by the count of
///       samples not ignored when there is no weight), exactly as PyTorch's
///       cross_entropy_loss_label_smoothing (aten/src/ATen/native/LossNLL.cpp).
/// Stable for large logits (log_softmax subtracts the row max). weight: (C) or undefined.
/// Throws tinytorch::Error for label_smoothing outside [0, 1], and as nll_loss.
TT_DECL Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            int64_t ignore_index = -100, Reduction reduction = Reduction::Mean,
                            double label_smoothing = 0.0);
TT_DECL Tensor cross_entropy(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

// ---- normalisation (torch.nn.functional.batch_norm / layer_norm; autograd/functions/normalization.hpp) ----
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
TT_DECL Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                         const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = false,
                         double momentum = 0.1, double eps = 1e-5);

/// Layer normalisation over the last dims, which must equal normalized_shape
/// (torch.nn.functional.layer_norm): for every position of the leading dims,
///   y = (x - mean) / sqrt(var + eps) * weight + bias     (mean, biased var over normalized_shape)
/// weight, bias: of shape normalized_shape and the input's dtype, or undefined.
/// Backward: NativeLayerNormBackward0. Throws tinytorch::Error (PyTorch's wording) for an empty
/// normalized_shape, an input whose last dims differ ("Given normalized_shape=[3], expected input
/// with shape [*, 3], but got input of size[2, 4]"), or weight / bias of another shape.
TT_DECL Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                         const Tensor& bias = Tensor(), double eps = 1e-5);

// ---- convolution and pooling (autograd/functions/conv.hpp, ops/conv.hpp) --------------------------------
/// 2-D convolution (cross-correlation) as torch.nn.functional.conv2d:
///   input (N, C_in, H, W) or unbatched (C_in, H, W); weight (C_out, C_in/groups, kH, kW);
///   bias (C_out) or undefined; output (N, C_out, H_out, W_out) (or (C_out, H_out, W_out)),
///   H_out = floor((H + 2 padding - dilation (kH - 1) - 1) / stride) + 1.
/// stride, padding, dilation: an int or {h, w}. PyTorch's padding="same"/"valid" strings and
/// padding_mode are not supported. Throws tinytorch::Error with PyTorch's messages for bad sizes
/// (channels that do not match, a kernel larger than the padded input, non-positive stride, ...),
/// and for int64 inputs. grad_fn: ConvolutionBackward0 (unbatched: SqueezeBackward1, as PyTorch).
TT_DECL Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), Size2 stride = 1,
                     Size2 padding = 0, Size2 dilation = 1, int64_t groups = 1);
/// 2-D max pooling as torch.nn.functional.max_pool2d: input (N, C, H, W) or (C, H, W); each window
/// of kernel_size (dilated by `dilation`, stepped by `stride`, which defaults to kernel_size) over
/// the input padded with -inf by `padding` gives its maximum; ceil_mode rounds the output size up.
/// The gradient goes to the first maximum of each window. kernel_size, padding, dilation: an int or
/// {h, w}; stride: an int, Size2{h, w} (std::optional needs the type named) or std::nullopt.
/// Throws tinytorch::Error with PyTorch's messages ("pad should be at most half of effective kernel
/// size", "Output size is too small"), and for int64 inputs. grad_fn: MaxPool2DWithIndicesBackward0.
TT_DECL Tensor max_pool2d(const Tensor& input, Size2 kernel_size, std::optional<Size2> stride = std::nullopt,
                         Size2 padding = 0, Size2 dilation = 1, bool ceil_mode = false);
/// max_pool2d and the int64 indices of each maximum, flat in its input plane (h * W + w), as
/// torch.nn.functional.max_pool2d(..., return_indices=True).
TT_DECL std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, Size2 kernel_size,
                                                          std::optional<Size2> stride = std::nullopt,
                                                          Size2 padding = 0, Size2 dilation = 1,
                                                          bool ceil_mode = false);

// ---- min / max family -------------------------------------------------------------------------
/// The smallest element, 0-d (NaN if any element is NaN). Backward shares the gradient evenly
/// among all minimal elements (torch.min(input), MinBackward1). Throws for an empty tensor.
TT_DECL Tensor min(const Tensor& x);
/// (values, indices) of the min along dim; indices int64, the first on ties (a NaN wins);
/// the gradient goes to the returned index (torch.min(input, dim), MinBackward0).
TT_DECL std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
/// Index of the min in the flattened tensor (first on ties, a NaN wins), int64 0-d. Not differentiable.
TT_DECL Tensor argmin(const Tensor& x);
TT_DECL Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
/// Max over the dims in `dim` (all dims when empty); (A, B, C).amax({0, 2}) -> (B), keepdim -> (1, B, 1).
/// Backward shares the gradient evenly among ties in each slice (torch.amax, AmaxBackward0).
/// Throws for a dim out of range, a dim listed twice, or an empty reduced dim.
TT_DECL Tensor amax(const Tensor& x, const std::vector<int64_t>& dim = {}, bool keepdim = false);
/// Min over the dims in `dim` (torch.amin, AminBackward0); as amax.
TT_DECL Tensor amin(const Tensor& x, const std::vector<int64_t>& dim = {}, bool keepdim = false);
/// Elementwise max of a and b with broadcasting; NaN if either is NaN. On equal elements each
/// input gets half the gradient (torch.maximum, MaximumBackward0).
TT_DECL Tensor maximum(const Tensor& a, const Tensor& b);
/// Elementwise min of a and b (torch.minimum, MinimumBackward0); as maximum.
TT_DECL Tensor minimum(const Tensor& a, const Tensor& b);
/// torch.max(input, other) = maximum; torch.min(input, other) = minimum.
TT_DECL Tensor max(const Tensor& a, const Tensor& b);
TT_DECL Tensor min(const Tensor& a, const Tensor& b);

// ---- pow --------------------------------------------------------------------------------------
/// a ** b elementwise with broadcasting; dtype = promote(a, b). int64 ** int64 is exact integer
/// power (wrapping on overflow as PyTorch); a negative int64 exponent gives 0 except for a base of
/// 1 or -1. Gradients (PowBackward1): d/da = b a^(b-1) (0 where b == 0), d/db = a^b ln a (0 where
/// a == 0 and b >= 0), so 0 ** 0 has zero gradients, as PyTorch. (torch.pow(Tensor, Tensor))
TT_DECL Tensor pow(const Tensor& a, const Tensor& b);
/// s ** b for a number s (torch.pow(Scalar, Tensor), PowBackward2): d/db = s^b ln s (0 where s == 0
/// and b >= 0). An int64 b stays int64 when s is integral, as `2 ** int_tensor` in PyTorch.
TT_DECL Tensor pow(double s, const Tensor& b);

// ---- floor_divide, remainder, fmod ------------------------------------------------------------
/// floor(a / b) elementwise with broadcasting (torch.floor_divide: floor rounding, as PyTorch
/// 1.13+). Float: b == 0 gives +-inf or NaN. int64: a zero divisor throws "ZeroDivisionError" (as
/// PyTorch); INT64_MIN // -1 throws (PyTorch crashes with SIGFPE; 2^63 does not fit in int64).
/// Not differentiable: as in PyTorch, the result of an input that requires grad has grad_fn
/// torch::autograd::NotImplemented and backward through it throws.
TT_DECL Tensor floor_divide(const Tensor& a, const Tensor& b);
TT_DECL Tensor floor_divide(const Tensor& a, double b);
/// torch.div(a, b, rounding_mode): std::nullopt is true division (div(a, b), a / b); "trunc"
/// rounds the quotient toward zero (C's integer division), "floor" toward -inf (floor_divide's
/// kernel). int64 / int64 stays int64 with a mode, exact; a zero divisor throws
/// "ZeroDivisionError" and INT64_MIN / -1 throws (PyTorch crashes with SIGFPE). Float: b == 0
/// gives +-inf or NaN, as PyTorch. Another mode throws PyTorch's "div expected rounding_mode to be
/// one of None, 'trunc', or 'floor' but found '<mode>'". With a mode the gradients are zero; the
/// grad_fn is DivBackward2 (with a number b, DivBackward3) with or without a mode, as PyTorch's.
TT_DECL Tensor div(const Tensor& a, const Tensor& b, const std::optional<std::string>& rounding_mode);
TT_DECL Tensor div(const Tensor& a, double b, const std::optional<std::string>& rounding_mode);
/// Rounds toward zero elementwise (torch.trunc); int64 is returned unchanged (a copy). NaN, +-inf
/// and -0.0 stay. Gradient zero (TruncBackward0).
TT_DECL Tensor trunc(const Tensor& x);
/// a - floor(a / b) * b: the result has the sign of b, as Python's % (torch.remainder). Float b == 0
/// gives NaN; int64 b == 0 throws "ZeroDivisionError". Gradients: d/da = 1, d/db = -floor(a / b)
/// (RemainderBackward1; with a number b, RemainderBackward0).
TT_DECL Tensor remainder(const Tensor& a, const Tensor& b);
TT_DECL Tensor remainder(const Tensor& a, double b);
/// a - trunc(a / b) * b: the result has the sign of a, as C's fmod (torch.fmod). Zero divisors as
/// remainder. Gradients: d/da = 1, d/db = -trunc(a / b) (FmodBackward1; with a number, FmodBackward0).
TT_DECL Tensor fmod(const Tensor& a, const Tensor& b);
TT_DECL Tensor fmod(const Tensor& a, double b);

// ---- comparisons ------------------------------------------------------------------------------
// torch.eq/ne/lt/le/gt/ge with broadcasting. PyTorch returns bool tensors; tinytorch, which has no
// bool dtype, returns int64 0/1 (x.gt(0.5).sum() counts, as in PyTorch). NaN compares unequal to
// everything. With a number: see the file comment for the dtype the comparison runs in.
TT_DECL Tensor eq(const Tensor& a, const Tensor& b);
TT_DECL Tensor ne(const Tensor& a, const Tensor& b);
TT_DECL Tensor lt(const Tensor& a, const Tensor& b);
TT_DECL Tensor le(const Tensor& a, const Tensor& b);
TT_DECL Tensor gt(const Tensor& a, const Tensor& b);
TT_DECL Tensor ge(const Tensor& a, const Tensor& b);
TT_DECL Tensor eq(const Tensor& a, double b);
TT_DECL Tensor ne(const Tensor& a, double b);
TT_DECL Tensor lt(const Tensor& a, double b);
TT_DECL Tensor le(const Tensor& a, double b);
TT_DECL Tensor gt(const Tensor& a, double b);
TT_DECL Tensor ge(const Tensor& a, double b);

// ---- clamp ------------------------------------------------------------------------------------
/// min(max(x, min), max) elementwise (torch.clamp). Either bound may be std::nullopt, not both
/// ("At least one of 'min' or 'max' must not be None"). As PyTorch: min > max sets every element to
/// max; a NaN x stays NaN; a NaN bound makes every element NaN when both bounds are given and is
/// ignored when it is the only one (PyTorch's kernels; clamp_min / clamp_max with NaN give NaN);
/// an int64 x with a fractional bound computes in float32. The gradient passes where
/// min <= x <= max, the bounds included, and is 0 everywhere for a NaN bound (ClampBackward1).
TT_DECL Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max = std::nullopt);
/// clamp with tensor bounds, broadcast with x (an undefined Tensor() is an absent bound; not both);
/// dtype = promote(x, min, max); a NaN anywhere gives NaN. Gradients (ClampBackward0): x where
/// min <= x <= max; min where x < min and min < max; max where x > max or max < min.
TT_DECL Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max = Tensor());
/// max(x, min) (torch.clamp_min, ClampMinBackward0; the gradient passes where x >= min).
TT_DECL Tensor clamp_min(const Tensor& x, double min);
/// max(x, min) with a tensor min (ClampMinBackward1): d/dx where x >= min, d/dmin where x < min.
TT_DECL Tensor clamp_min(const Tensor& x, const Tensor& min);
/// min(x, max) (torch.clamp_max, ClampMaxBackward0; the gradient passes where x <= max).
TT_DECL Tensor clamp_max(const Tensor& x, double max);
/// min(x, max) with a tensor max (ClampMaxBackward1): d/dx where x <= max, d/dmax where x > max.
TT_DECL Tensor clamp_max(const Tensor& x, const Tensor& max);

// ---- where ------------------------------------------------------------------------------------
/// a where condition is nonzero, else b; condition, a and b broadcast together, dtype = promote(a, b)
/// (torch.where). PyTorch requires a bool condition; tinytorch has no bool dtype and takes the
/// int64 0/1 tensors its comparisons return (any nonzero is true). A floating point condition
/// throws, as in PyTorch. Gradients (WhereBackward0): a gets dy where condition, b elsewhere.
TT_DECL Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
/// where with a number for `other` (or `input`); the number's dtype as in the file comment.
TT_DECL Tensor where(const Tensor& condition, const Tensor& a, double b);
TT_DECL Tensor where(const Tensor& condition, double a, const Tensor& b);

// ---- transformer parts (chapter 12) ------------------------------------------------------------
/// torch.nn.functional.gelu(x, approximate): "none" (the default) x/2 (1 + erf(x / sqrt 2)); "tanh"
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (backend/functors.hpp: GeluOp, PyTorch's
/// constants and order). Any shape; floating dtypes (int64 throws, as PyTorch's
/// "GeluKernelImpl" not implemented for 'Long'); another `approximate` throws PyTorch's
/// "approximate argument must be either none or tanh.". grad_fn GeluBackward0.
TT_DECL Tensor gelu(const Tensor& x, const std::string& approximate = "none");
/// torch.nn.functional.embedding(input, weight, padding_idx): rows `input` of `weight`.
/// input: int64 indices of any shape S, each in [0, V); weight (V, D) -> (*S, D). The gradient
/// reaches weight only: row v gets the sum of dy over the positions holding v (in index order, as
/// PyTorch's CPU kernel), the padding_idx row none (its value is not changed by the lookup; it is
/// just never trained). padding_idx may be negative (counted from the end, as PyTorch) and must
/// be in [-V, V). max_norm, scale_grad_by_freq and sparse are not implemented. Throws for
/// non-int64 indices, an index out of range (naming it, V and both shapes), weight not 2-D.
/// grad_fn EmbeddingBackward0.
TT_DECL Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt);
/// torch.nn.functional.dropout(x, p, training): in training, each element kept with probability
/// 1 - p and scaled by 1/(1 - p), else 0 (inverted dropout; the mask is drawn on the host from
/// `gen`, or the default generator, then moved to x's device); x itself when !training or p == 0.
/// Throws unless 0 <= p <= 1 (PyTorch's "dropout probability has to be between 0 and 1, but got p").
/// nn::Dropout calls this.
TT_DECL Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);
namespace nn::attention {
/// The kernels scaled_dot_product_attention may use (torch.nn.attention.SDPBackend; PyTorch also
/// has FLASH_ATTENTION and CUDNN_ATTENTION, tinytorch these two):
///   MATH                 the composite formula below (matmul, mask, softmax, dropout, matmul):
///                        every case; its softmax node keeps the (*, L, S) attention weights.
///   EFFICIENT_ATTENTION  the fused kernel (backend/cpu/attention.hpp, backend/cuda/attention.cuh):
///                        keeps q, k, v, the output and a float64 (*, L) log-sum-exp instead of
///                        the weights, and recomputes them in the backward. Applies when there
///                        is no attn_mask (is_causal is fine), dropout_p is 0, query, key and
///                        value have the same batch dims (no broadcasting), S >= 1, E >= 1, and, on CUDA,
///                        E and Ev are at most 256. The name is PyTorch's for its memory-efficient
///                        kernel (the same saved tensors, grad_fn name); the limits are those of
///                        PyTorch's FLASH_ATTENTION (no mask, no dropout here), which PyTorch's
///                        EFFICIENT_ATTENTION does not have.
enum class SDPBackend { MATH, EFFICIENT_ATTENTION };
/// While alive, scaled_dot_product_attention chooses only among `backends`
/// (torch.nn.attention.sdpa_kernel, a context manager in PyTorch; here RAII); the destructor
/// restores the previous choice, so guards nest. The choice is process-wide, as PyTorch's
/// backend flags are (every thread, DataParallel's replicas included), so two threads that set
/// guards at once overwrite each other's choice. Default (no guard): both, the fused kernel
/// wherever it applies, as PyTorch prefers its fused kernels to MATH. With EFFICIENT_ATTENTION
/// alone, a call it cannot run throws naming the reason (PyTorch: "No available kernel").
/// Throws for an empty list.
class sdpa_kernel {
 public:
  /// Which backends may run now.
  struct Enabled {
    bool math = true, efficient = true;
  };

  explicit sdpa_kernel(const std::vector<SDPBackend>& backends) : saved_(enabled()) {
    TT_CHECK(!backends.empty(), "sdpa_kernel: expected at least one SDPBackend");
    Enabled e{false, false};
    for (SDPBackend b : backends) (b == SDPBackend::MATH ? e.math : e.efficient) = true;
    set(e);
  }
  explicit sdpa_kernel(SDPBackend backend) : sdpa_kernel(std::vector<SDPBackend>{backend}) {}
  ~sdpa_kernel() { set(saved_); }
  sdpa_kernel(const sdpa_kernel&) = delete;
  sdpa_kernel& operator=(const sdpa_kernel&) = delete;

  static Enabled enabled() { return {flags().math.load(), flags().efficient.load()}; }

 private:
  struct Flags {
    std::atomic<bool> math{true}, efficient{true};
  };
  static Flags& flags() {
    static Flags f;
    return f;
  }
  static void set(Enabled e) {
    flags().math.store(e.math);
    flags().efficient.store(e.efficient);
  }
  Enabled saved_;
};
}  // namespace nn::attention

/// torch.nn.functional.scaled_dot_product_attention (PyTorch 2.x; 1.13 has no such function, and
/// the reference numbers come from the composite formula of its documentation):
///   attn = softmax(query @ key^T * scale + bias, dim=-1), dropout(attn, dropout_p), attn @ value
/// query (*, L, E), key (*, S, E), value (*, S, Ev) -> (*, L, Ev); the batch dims (*) broadcast as
/// matmul's (e.g. (B, H, T, hd) for multi-head attention). scale: 1/sqrt(E) when not given.
/// bias: is_causal masks the future, position i of the query attends to keys 0..i (a top-left
/// aligned lower triangle of the (L, S) scores, as PyTorch); attn_mask, broadcast to (*, L, S),
/// is either an int64 0/1 tensor standing for PyTorch's bool mask (1 = attend, 0 = masked to -inf;
/// tinytorch has no bool dtype) or a floating mask of query's dtype added to the scores.
/// A row with every key masked gives NaN, as the documented formula (PyTorch 2.5+ returns 0 there).
/// Two kernels (nn::attention::SDPBackend above, chosen per call, sdpa_kernel to force one): the
/// fused one (grad_fn ScaledDotProductEfficientAttentionBackward0) wherever it applies, else the
/// naive composite (matmul, the scale, where for a mask or an addition, softmax, matmul, recorded
/// as those nodes), which keeps the (*, L, S) attention matrix. Both agree to rounding (tests:
/// test_transformer, and tests/cuda/test_cuda_transformer.cpp for the CUDA kernels).
/// dropout_p > 0 applies dropout always, as PyTorch's (pass 0 in eval).
/// Throws for is_causal with an attn_mask (PyTorch's "Explicit attn_mask should not be set when
/// is_causal=True"), operands of fewer than 2 dims, key and query widths or key and value lengths
/// that differ, a mask of another floating dtype, dropout_p outside [0, 1], or operands on
/// different devices (PyTorch's "Expected all tensors to be on the same device"), naming the shapes;
/// and when the only backend allowed (sdpa_kernel) cannot run the call.
TT_DECL Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                            const Tensor& attn_mask = Tensor(), double dropout_p = 0.0,
                                            bool is_causal = false, std::optional<double> scale = std::nullopt);

TT_NAMESPACE_END  // namespace tinytorch

#if TT_HEADER_ONLY
#include "tinytorch/functional.ipp"
#endif

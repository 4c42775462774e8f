// tinytorch/functional.ipp — the bodies of functional.hpp: the differentiable functions and
// Tensor's methods and operators (declared in tensor.hpp and functional.hpp, documented there).
//
// Not a header to include: functional.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL is `inline`
// in the first case, nothing in the second; core/config.hpp).
// Each function forwards to its autograd node (autograd/functions/<family>.hpp, indexed by
// autograd/functions.hpp) or, where nothing is differentiable, to ops/.
// Chapter: chapters/01-training-loop.md, chapters/02-autograd.md.
#pragma once

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "tinytorch/functional.hpp"
#include "tinytorch/amp/autocast_mode.hpp"
#include "tinytorch/autograd/engine.hpp"
#include "tinytorch/autograd/functions.hpp"
#include "tinytorch/autograd/inplace.hpp"
#include "tinytorch/ops/creation.hpp"
#include "tinytorch/ops/print.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN

// The ops on autocast's lists (amp/autocast_mode.hpp) start with
//   if (Autocast ac(Fp32 or LowerPrecisionFp, {operands}); ac.active()) return op(ac.cast(operand), ...);
// which, inside a tt::autocast guard, calls the op again with its operands cast (and autocast off).
// (Spelt out in full, amp::detail::Autocast and amp::CastPolicy: a using-declaration here would put
// both names in namespace tinytorch for every header-only program.)

namespace detail {
/// t.to(kFloat32) (recorded by autograd), an undefined t (an absent weight or bias) unchanged.
inline Tensor to_float32(const Tensor& t) { return t.defined() ? t.to(kFloat32) : t; }
}  // namespace detail

// ---- arithmetic -------------------------------------------------------------------------------
TT_DECL Tensor sub(const Tensor& a, const Tensor& b) { return autograd::Sub::forward(a, b); }
TT_DECL Tensor mul(const Tensor& a, const Tensor& b) { return autograd::Mul::forward(a, b); }
TT_DECL Tensor div(const Tensor& a, const Tensor& b) { return autograd::Div::forward(a, b); }
TT_DECL Tensor neg(const Tensor& x) { return autograd::Neg::forward(x); }
TT_DECL Tensor exp(const Tensor& x) { return autograd::exp(x); }
TT_DECL Tensor log(const Tensor& x) { return autograd::log(x); }
TT_DECL Tensor sqrt(const Tensor& x) { return autograd::sqrt(x); }
TT_DECL Tensor abs(const Tensor& x) { return autograd::abs(x); }
TT_DECL Tensor relu(const Tensor& x) { return autograd::relu(x); }
TT_DECL Tensor sigmoid(const Tensor& x) { return autograd::sigmoid(x); }
TT_DECL Tensor tanh(const Tensor& x) { return autograd::tanh(x); }

// ---- reductions -------------------------------------------------------------------------------
TT_DECL Tensor sum(const Tensor& x) {
  if (amp::detail::Autocast ac(amp::CastPolicy::Fp32, {&x}); ac.active()) return sum(ac.cast(x));
  return autograd::SumMean::forward(x, std::nullopt, false, false);
}
TT_DECL Tensor sum(const Tensor& x, int64_t dim, bool keepdim) {
  if (amp::detail::Autocast ac(amp::CastPolicy::Fp32, {&x}); ac.active()) return sum(ac.cast(x), dim, keepdim);
  return autograd::SumMean::forward(x, dim, keepdim, false);
}
TT_DECL Tensor mean(const Tensor& x) {
  if (amp::detail::Autocast ac(amp::CastPolicy::Fp32, {&x}); ac.active()) return mean(ac.cast(x));
  return autograd::SumMean::forward(x, std::nullopt, false, true);
}
TT_DECL Tensor mean(const Tensor& x, int64_t dim, bool keepdim) {
  if (amp::detail::Autocast ac(amp::CastPolicy::Fp32, {&x}); ac.active()) return mean(ac.cast(x), dim, keepdim);
  return autograd::SumMean::forward(x, dim, keepdim, true);
}
TT_DECL Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  if (amp::detail::Autocast ac(amp::CastPolicy::Fp32, {&x}); ac.active()) return sum(ac.cast(x), dims, keepdim);
  return autograd::SumMean::forward(x, dims, keepdim, false);
}
TT_DECL Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  if (amp::detail::Autocast ac(amp::CastPolicy::Fp32, {&x}); ac.active()) return mean(ac.cast(x), dims, keepdim);
  return autograd::SumMean::forward(x, dims, keepdim, true);
}
TT_DECL Tensor max(const Tensor& x) { return autograd::Max::forward_all(x); }
TT_DECL std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return autograd::Max::forward_dim(x, dim, keepdim);
}
TT_DECL Tensor argmax(const Tensor& x) {
  TT_CHECK(x.numel() > 0, "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  return std::get<1>(ops::max_dim(ops::reshape(x, {x.numel()}), 0, false, "argmax"));
}
TT_DECL Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  return std::get<1>(ops::max_dim(x, dim, keepdim, "argmax"));
}

// ---- shapes -----------------------------------------------------------------------------------
TT_DECL Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) { return autograd::cat(tensors, dim); }
TT_DECL Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
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
TT_DECL Tensor mm(const Tensor& a, const Tensor& b) {
  if (amp::detail::Autocast ac(amp::CastPolicy::LowerPrecisionFp, {&a, &b}); ac.active()) return mm(ac.cast(a), ac.cast(b));
  return autograd::Mm::forward(a, b);
}
TT_DECL Tensor bmm(const Tensor& a, const Tensor& b) {
  if (amp::detail::Autocast ac(amp::CastPolicy::LowerPrecisionFp, {&a, &b}); ac.active()) return bmm(ac.cast(a), ac.cast(b));
  return autograd::Bmm::forward(a, b);
}
TT_DECL Tensor matmul(const Tensor& a, const Tensor& b) {
  if (amp::detail::Autocast ac(amp::CastPolicy::LowerPrecisionFp, {&a, &b}); ac.active()) return matmul(ac.cast(a), ac.cast(b));
  const int64_t da = a.dim(), db = b.dim();
  TT_CHECK(da >= 1 && db >= 1, "matmul: both arguments need at least 1 dimension, got shapes ",
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
  const int64_t M = a.sizes()[da - 2], N = b.sizes()[db - 1];
  if (db == 2) {  // (*, M, K) @ (K, N): fold the batch into the rows, one big GEMM
    Shape out_shape = a.sizes();
    out_shape.back() = N;
    int64_t rows = 1;  // counted, not inferred: reshape cannot infer -1 when K is 0
    for (int64_t d = 0; d + 1 < da; ++d) rows *= a.sizes()[d];
    return mm(a.reshape({rows, ka}), b).view(out_shape);
  }
  // Batch dims (all but the last two) broadcast as elementwise ops' shapes do; each operand is
  // expanded to them and flattened into one batch dim of B matrices for bmm.
  const Shape a_batch(a.sizes().begin(), a.sizes().end() - 2);
  const Shape b_batch(b.sizes().begin(), b.sizes().end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(a_batch, b_batch, "matmul");
  } catch (const Error&) {
    throw Error(detail::str_cat("matmul: batch dims of shapes ", shape_str(a.sizes()), " and ",
                                shape_str(b.sizes()), " cannot be broadcast"));
  }
  int64_t B = 1;
  for (int64_t s : batch) B *= s;
  auto batched = [&](const Tensor& t, int64_t rows, int64_t cols) {
    Shape full = batch;
    full.push_back(rows);
    full.push_back(cols);
    const Tensor e = t.expand(full);
    return batch.size() == 1 ? e : e.reshape({B, rows, cols});
  };
  if (batch.size() == 1) return bmm(batched(a, M, ka), batched(b, kb, N));  // 3-D: bmm's own (B, M, N)
  Shape out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  return bmm(batched(a, M, ka), batched(b, kb, N)).view(out_shape);
}

// ---- neural-network functions (torch.nn.functional) -------------------------------------------
TT_DECL Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (amp::detail::Autocast ac(amp::CastPolicy::LowerPrecisionFp, {&x, &weight, &bias}); ac.active())
    return linear(ac.cast(x), ac.cast(weight), ac.cast(bias));
  if (x.dim() == 2) return autograd::Linear::forward(x, weight, bias);
  TT_CHECK(x.dim() >= 1, "linear: input must have at least 1 dim, got shape ", shape_str(x.sizes()));
  TT_CHECK(weight.dim() == 2, "linear: expected weight (out, in), got shape ", shape_str(weight.sizes()),
           " (input shape ", shape_str(x.sizes()), ")");
  Shape out_shape = x.sizes();
  out_shape.back() = weight.sizes()[0];
  Tensor y = autograd::Linear::forward(x.reshape({-1, x.sizes().back()}), weight, bias);
  return y.view(out_shape);
}
TT_DECL Tensor softmax(const Tensor& x, int64_t dim) {
  if (amp::detail::Autocast ac(amp::CastPolicy::Fp32, {&x}); ac.active()) return softmax(ac.cast(x), dim);
  return autograd::Softmax::forward(x, dim, false);
}
TT_DECL Tensor log_softmax(const Tensor& x, int64_t dim) {
  if (amp::detail::Autocast ac(amp::CastPolicy::Fp32, {&x}); ac.active()) return log_softmax(ac.cast(x), dim);
  return autograd::Softmax::forward(x, dim, true);
}
TT_DECL Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (amp::detail::Autocast ac(amp::CastPolicy::Fp32, {&input, &target}); ac.active())
    return mse_loss(ac.cast(input), ac.cast(target), reduction);
  return autograd::MseLoss::forward(input, target, reduction);
}
namespace detail {
TT_DECL LossRows loss_rows(const Tensor& input, const Tensor& target, const char* op) {
  ops::check_device(input, op);
  ops::check_device(target, op);
  const int64_t d = input.dim();
  TT_CHECK(d >= 1, op, ": Expected 1 or more dimensions (got 0)");
  if (d == 2) return {input, target, target.sizes()};  // (N, C): the loss node checks the target
  if (d == 1) {                                        // unbatched (C) with a 0-d target
    TT_CHECK(target.dim() == 0, op, ": size mismatch (got input: ", shape_str(input.sizes()), ", target: ",
             shape_str(target.sizes()), ")");
    return {input.unsqueeze(0), target.unsqueeze(0), Shape{}};
  }
  TT_CHECK(target.dim() >= 1 && target.sizes()[0] == input.sizes()[0], op, ": Expected input batch_size (",
           input.sizes()[0], ") to match target batch_size (", target.dim() >= 1 ? target.sizes()[0] : 0, ").");
  const Shape spatial(input.sizes().begin() + 2, input.sizes().end());  // d1, ..., dk
  if (d == 4) {  // PyTorch's nll_loss2d and its two messages (the second without its closing bracket)
    TT_CHECK(target.dim() == 3, op, ": only batches of spatial targets supported (3D tensors) but got targets of "
             "dimension: ", target.dim());
    TT_CHECK(Shape(target.sizes().begin() + 1, target.sizes().end()) == spatial, op, ": size mismatch (got input: ",
             shape_str(input.sizes()), " , target: ", shape_str(target.sizes()));
  } else {
    Shape expected{input.sizes()[0]};
    for (int64_t s : spatial) expected.push_back(s);
    TT_CHECK(target.sizes() == expected, op, ": Expected target size ", shape_str(expected), ", got ",
             shape_str(target.sizes()));
  }
  std::vector<int64_t> perm{0};  // (N, C, d1, ..., dk) -> (N, d1, ..., dk, C): one row per position
  for (int64_t k = 2; k < d; ++k) perm.push_back(k);
  perm.push_back(1);
  const int64_t rows = target.numel();  // N * d1 * ... * dk (not -1: C may be 0)
  return {input.permute(perm).reshape({rows, input.sizes()[1]}), target.reshape({rows}), target.sizes()};
}
}  // namespace detail
TT_DECL Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                       Reduction reduction) {
  if (amp::detail::Autocast ac(amp::CastPolicy::Fp32, {&input, &target, &weight}); ac.active())
    return nll_loss(ac.cast(input), target, ac.cast(weight), ignore_index, reduction);
  const detail::LossRows r = detail::loss_rows(input, target, "nll_loss");
  Tensor out;
  if (is_reduced_floating_point(r.input.dtype())) {  // float16/bfloat16: computed in float32, rounded once
    TT_CHECK(!weight.defined() || weight.dtype() == input.dtype(), "nll_loss: expected weight of dtype ",
             dtype_name(input.dtype()), " (the input's), got ", dtype_name(weight.dtype()));
    const Tensor w32 = weight.defined() ? weight.to(kFloat32) : weight;
    out = autograd::NllLoss::forward(r.input.to(kFloat32), r.target, reduction, w32, ignore_index).to(input.dtype());
  } else {
    out = autograd::NllLoss::forward(r.input, r.target, reduction, weight, ignore_index);
  }
  return reduction == Reduction::None && input.dim() != 2 ? out.reshape(r.out_shape) : out;
}
TT_DECL Tensor nll_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  return nll_loss(input, target, Tensor(), -100, reduction);
}
namespace detail {
TT_DECL void check_label_smoothing(double label_smoothing, const char* op) {
  TT_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0, op, ": label_smoothing must be between 0.0 and 1.0. Got: ",
           label_smoothing);
}
}  // namespace detail
TT_DECL Tensor cross_entropy(const Tensor& input_nd, const Tensor& target_nd, const Tensor& weight,
                            int64_t ignore_index, Reduction reduction,
                            double label_smoothing) {
  if (amp::detail::Autocast ac(amp::CastPolicy::Fp32, {&input_nd, &target_nd, &weight}); ac.active())
    return cross_entropy(ac.cast(input_nd), target_nd, ac.cast(weight), ignore_index, reduction, label_smoothing);
  // (C), (N, C) or (N, C, d1, ..., dk) as rows (N, C) and targets (N); reduction None's output
  // gets the target's shape back (as nll_loss)
  const detail::LossRows r = detail::loss_rows(input_nd, target_nd, "cross_entropy");
  const Tensor& input = r.input;
  const Tensor& target = r.target;
  const auto shaped = [&](const Tensor& out) {
    return reduction == Reduction::None && input_nd.dim() != 2 ? out.reshape(r.out_shape) : out;
  };
  detail::check_label_smoothing(label_smoothing, "cross_entropy");
  if (target.defined() && target.dtype() == kInt64 && target.dim() == 1)  // before any kernel runs
    autograd::checked_targets(target, input.sizes()[1], ignore_index, "cross_entropy");
  const Tensor logp = log_softmax(input, 1);  // (N, C)
  const Tensor nll = nll_loss(logp, target, weight, ignore_index, reduction);
  if (label_smoothing == 0.0) return shaped(nll);
  // smooth_i = -sum_c w_c logp[i, c], 0 on ignored rows: where(), as PyTorch's masked_fill, so an
  // ignored row passes back exactly 0 (a multiply by 0 would give 0 * inf = nan for the mean over
  // all-ignored targets, whose 1/0 scale is inf, or for a row of infinite log-probabilities)
  const int64_t C = input.sizes()[1];
  const Tensor keep = target.ne(full_like(target, static_cast<double>(ignore_index)));                    // (N) 0/1
  const Tensor smooth = where(keep, neg(sum(weight.defined() ? mul(logp, weight) : logp, 1)), 0.0);     // (N)
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
  return shaped(nll * (1.0 - label_smoothing) + s * (label_smoothing / static_cast<double>(C)));
}
TT_DECL Tensor cross_entropy(const Tensor& input, const Tensor& target, Reduction reduction) {
  return cross_entropy(input, target, Tensor(), -100, reduction, 0.0);
}

// ---- normalisation (torch.nn.functional.batch_norm / layer_norm; autograd/functions/normalization.hpp) ----
TT_DECL Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                         const Tensor& weight, const Tensor& bias, bool training,
                         double momentum, double eps) {
  if (amp::detail::Autocast ac(amp::CastPolicy::Fp32, {&input, &weight, &bias}); ac.active())  // the running stats are
    return batch_norm(ac.cast(input), running_mean, running_var, ac.cast(weight), ac.cast(bias), training, momentum,
                      eps);                                                 // updated in place: never cast
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
  Tensor y;
  if (is_reduced_floating_point(input.dtype())) {  // float16/bfloat16: computed in float32, rounded once
    y = autograd::NativeBatchNorm::forward(input.to(kFloat32), detail::to_float32(weight), detail::to_float32(bias),
                                           running_mean, running_var,
                                           training, eps, &batch_mean, &batch_var)
            .to(input.dtype());
  } else {
    y = autograd::NativeBatchNorm::forward(input, weight, bias, running_mean, running_var, training, eps, &batch_mean,
                                           &batch_var);
  }
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
TT_DECL Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                         const Tensor& bias, double eps) {
  if (amp::detail::Autocast ac(amp::CastPolicy::Fp32, {&input, &weight, &bias}); ac.active())
    return layer_norm(ac.cast(input), normalized_shape, ac.cast(weight), ac.cast(bias), eps);
  ops::check_device(input, "layer_norm");
  ops::check_same_device("layer_norm", input, weight, bias);
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
  if (is_reduced_floating_point(input.dtype())) {  // float16/bfloat16: computed in float32, rounded once
    return autograd::NativeLayerNorm::forward(input.to(kFloat32), normalized_shape, detail::to_float32(weight),
                                              detail::to_float32(bias), eps)
        .to(input.dtype());
  }
  return autograd::NativeLayerNorm::forward(input, normalized_shape, weight, bias, eps);
}

// ---- convolution and pooling (autograd/functions/conv.hpp, ops/conv.hpp) --------------------------------
TT_DECL Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Size2 stride,
                     Size2 padding, Size2 dilation, int64_t groups) {
  if (amp::detail::Autocast ac(amp::CastPolicy::LowerPrecisionFp, {&input, &weight, &bias}); ac.active())
    return conv2d(ac.cast(input), ac.cast(weight), ac.cast(bias), stride, padding, dilation, groups);
  TT_CHECK(input.dim() == 3 || input.dim() == 4, "conv2d: Expected 3D (unbatched) or 4D (batched) input to conv2d, "
           "but got input of size: ", shape_str(input.sizes()));
  if (input.dim() == 3)
    return conv2d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0);
  return autograd::Convolution::forward(input, weight, bias, stride, padding, dilation, groups);
}
TT_DECL Tensor max_pool2d(const Tensor& input, Size2 kernel_size, std::optional<Size2> stride,
                         Size2 padding, Size2 dilation, bool ceil_mode) {
  return std::get<0>(autograd::MaxPool2dWithIndices::forward(input, kernel_size, stride, padding, dilation, ceil_mode));
}
TT_DECL std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, Size2 kernel_size,
                                                          std::optional<Size2> stride,
                                                          Size2 padding, Size2 dilation,
                                                          bool ceil_mode) {
  return autograd::MaxPool2dWithIndices::forward(input, kernel_size, stride, padding, dilation, ceil_mode);
}

// =============================================================================================

// =============================================================================================
// ---- views (differentiable) -------------------------------------------------------------------
// Each result is marked as a view of *this (autograd::as_view) for the in-place rules.
TT_DECL Tensor Tensor::view(const Shape& s) const {
  return autograd::as_view(*this, autograd::Reshape::forward(*this, s, true));
}
TT_DECL Tensor Tensor::reshape(const Shape& s) const {
  return autograd::as_view(*this, autograd::Reshape::forward(*this, s, false));
}
TT_DECL Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  return autograd::as_view(*this, autograd::Transpose::forward(*this, d0, d1, "TransposeBackward0"));
}
TT_DECL Tensor Tensor::t() const {
  TT_CHECK(dim() <= 2, "t: expects a tensor with <= 2 dimensions, but self is ", dim(), "D (shape ",
           shape_str(sizes()), ")");
  if (dim() < 2) return autograd::as_view(*this, autograd::Transpose::forward(*this, 0, 0, "TBackward0"));
  return autograd::as_view(*this, autograd::Transpose::forward(*this, 0, 1, "TBackward0"));
}
TT_DECL Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  return autograd::as_view(*this, autograd::Permute::forward(*this, dims));
}
TT_DECL Tensor Tensor::unsqueeze(int64_t d) const {
  return autograd::as_view(*this, autograd::ShapeOnly::wrap(*this, ops::unsqueeze(*this, d), "UnsqueezeBackward0"));
}
TT_DECL Tensor Tensor::squeeze() const {
  return autograd::as_view(*this, autograd::ShapeOnly::wrap(*this, ops::squeeze(*this, std::nullopt), "SqueezeBackward0"));
}
TT_DECL Tensor Tensor::squeeze(int64_t d) const {
  return autograd::as_view(*this, autograd::ShapeOnly::wrap(*this, ops::squeeze(*this, d), "SqueezeBackward1"));
}
TT_DECL Tensor Tensor::expand(const Shape& s) const {
  return autograd::as_view(*this, autograd::ShapeOnly::wrap(*this, ops::expand(*this, s), "ExpandBackward0"));
}
TT_DECL Tensor Tensor::flatten(int64_t start, int64_t end) const {
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
TT_DECL Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  return autograd::as_view(*this, autograd::Slice::forward(*this, d, start, length, false));
}
TT_DECL Tensor Tensor::select(int64_t d, int64_t index) const {
  return autograd::as_view(*this, autograd::Slice::forward(*this, d, index, 1, true));
}
TT_DECL std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
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
TT_DECL std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
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
TT_DECL Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return autograd::Copy::wrap(*this, ops::contiguous(*this), "CloneBackward0");
}
TT_DECL Tensor Tensor::clone() const { return autograd::Copy::wrap(*this, ops::clone(*this), "CloneBackward0"); }
TT_DECL Tensor Tensor::to(DType d) const {
  if (d == dtype()) return *this;
  TT_CHECK(!(requires_grad() && d == kInt64) || !GradMode::is_enabled(),
           "to: cannot convert a tensor that requires grad to int64 (not differentiable); detach() it first");
  return autograd::Copy::wrap(*this, ops::to_dtype(*this, d), "ToCopyBackward0");
}
TT_DECL Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  return autograd::Copy::wrap(*this, ops::to_device(*this, device), "ToCopyBackward0");
}
TT_DECL Tensor Tensor::to(Device device, DType d) const {
  if (d == dtype()) return to(device);
  if (device == this->device()) return to(d);
  TT_CHECK(!(requires_grad() && d == kInt64) || !GradMode::is_enabled(),
           "to: cannot convert a tensor that requires grad to int64 (not differentiable); detach() it first");
  // convert where the data is, then move it: one node whose backward converts and moves back
  return autograd::Copy::wrap(*this, ops::to_device(ops::to_dtype(*this, d), device), "ToCopyBackward0");
}
TT_DECL Tensor Tensor::cuda(int index) const { return to(Device::cuda(index)); }
TT_DECL Tensor Tensor::cpu() const { return to(Device::cpu()); }

// ---- elementwise ------------------------------------------------------------------------------
TT_DECL Tensor Tensor::operator-() const { return tinytorch::neg(*this); }
TT_DECL Tensor Tensor::neg() const { return tinytorch::neg(*this); }
TT_DECL Tensor Tensor::exp() const { return tinytorch::exp(*this); }
TT_DECL Tensor Tensor::log() const { return tinytorch::log(*this); }
TT_DECL Tensor Tensor::pow(Scalar e) const { return tinytorch::pow(*this, e); }
TT_DECL Tensor Tensor::sqrt() const { return tinytorch::sqrt(*this); }
TT_DECL Tensor Tensor::abs() const { return tinytorch::abs(*this); }
TT_DECL Tensor Tensor::relu() const { return tinytorch::relu(*this); }
TT_DECL Tensor Tensor::sigmoid() const { return tinytorch::sigmoid(*this); }
TT_DECL Tensor Tensor::tanh() const { return tinytorch::tanh(*this); }
TT_DECL Tensor Tensor::eq(const Tensor& o) const { return ops::binary(*this, o, backend::cpu::EqOp{}, "eq", true); }
TT_DECL Tensor Tensor::ne(const Tensor& o) const { return ops::binary(*this, o, backend::cpu::NeOp{}, "ne", true); }
TT_DECL Tensor Tensor::lt(const Tensor& o) const { return ops::binary(*this, o, backend::cpu::LtOp{}, "lt", true); }
TT_DECL Tensor Tensor::le(const Tensor& o) const { return ops::binary(*this, o, backend::cpu::LeOp{}, "le", true); }
TT_DECL Tensor Tensor::gt(const Tensor& o) const { return ops::binary(*this, o, backend::cpu::GtOp{}, "gt", true); }
TT_DECL Tensor Tensor::ge(const Tensor& o) const { return ops::binary(*this, o, backend::cpu::GeOp{}, "ge", true); }

// ---- reductions and products ------------------------------------------------------------------
TT_DECL Tensor Tensor::sum() const { return tinytorch::sum(*this); }
TT_DECL Tensor Tensor::sum(int64_t d, bool keepdim) const { return tinytorch::sum(*this, d, keepdim); }
TT_DECL Tensor Tensor::mean() const { return tinytorch::mean(*this); }
TT_DECL Tensor Tensor::mean(int64_t d, bool keepdim) const { return tinytorch::mean(*this, d, keepdim); }
TT_DECL Tensor Tensor::sum(const std::vector<int64_t>& dims, bool keepdim) const {
  return tinytorch::sum(*this, dims, keepdim);
}
TT_DECL Tensor Tensor::mean(const std::vector<int64_t>& dims, bool keepdim) const {
  return tinytorch::mean(*this, dims, keepdim);
}
TT_DECL Tensor Tensor::max() const { return tinytorch::max(*this); }
TT_DECL std::tuple<Tensor, Tensor> Tensor::max(int64_t d, bool keepdim) const { return tinytorch::max(*this, d, keepdim); }
TT_DECL Tensor Tensor::argmax() const { return tinytorch::argmax(*this); }
TT_DECL Tensor Tensor::argmax(int64_t d, bool keepdim) const { return tinytorch::argmax(*this, d, keepdim); }
TT_DECL Tensor Tensor::matmul(const Tensor& o) const { return tinytorch::matmul(*this, o); }
TT_DECL Tensor Tensor::mm(const Tensor& o) const { return tinytorch::mm(*this, o); }
TT_DECL Tensor Tensor::softmax(int64_t d) const { return tinytorch::softmax(*this, d); }
TT_DECL Tensor Tensor::log_softmax(int64_t d) const { return tinytorch::log_softmax(*this, d); }

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
  tinytorch::detail::check_fits(op, s.to_double(), self.dtype());
  auto node = record ? autograd::OverwriteInplace::make(node_name) : nullptr;
  if (is_reduced_floating_point(self.dtype())) {  // the value rounded once, copied everywhere (self is not read)
    const Tensor v = ops::scalar_as_tensor(s.to_double(), self.dtype(), self.device());
    ops::copy_into_strided(ops::expand(v, self.sizes()), self);
  } else {
    dispatch(self.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T v = s.to<T>(op);
      ops::unary_(self, backend::FillOp<T>{v}, op);
    });
  }
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
TT_DECL Tensor& Tensor::add_(const Tensor& o, Scalar alpha) {
  return detail::add_inplace(*this, o, alpha, "add_", "AddBackward0");
}
TT_DECL Tensor& Tensor::sub_(const Tensor& o, Scalar alpha) {
  return detail::add_inplace(*this, o, detail::negated(alpha), "sub_", "SubBackward0");
}
TT_DECL Tensor& Tensor::add_(Scalar v) {
  return detail::scalar_inplace(*this, v, backend::AddOp{}, backend::AddOp{},
                                [](double) { return std::make_shared<autograd::AddScalar>(); }, "add_");
}
TT_DECL Tensor& Tensor::sub_(Scalar v) {
  return detail::scalar_inplace(*this, v, backend::SubOp{}, backend::SubOp{},
                                [](double) {
                                  auto n = std::make_shared<autograd::AddScalar>();
                                  n->node_name = "SubBackward1";
                                  return n;
                                }, "sub_");
}
TT_DECL Tensor& Tensor::mul_(const Tensor& o) {
  const bool record = autograd::check_inplace(*this, {&o}, "mul_");
  detail::check_inplace_result(*this, o, "mul_");
  detail::check_write_overlap(*this, {&o}, "mul_");
  auto node = record ? autograd::MulInplace::make(*this, o) : nullptr;
  ops::binary_(*this, o, backend::cpu::MulOp{}, "mul_");
  autograd::finish_inplace(*this, std::move(node), {&o});
  return *this;
}
TT_DECL Tensor& Tensor::mul_(Scalar v) {
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
TT_DECL Tensor& Tensor::div_(const Tensor& o) {
  const bool record = autograd::check_inplace(*this, {&o}, "div_");
  TT_CHECK(is_floating_point(), "div_: result type ", scalar_type_name(o.is_floating_point() ? o.dtype() : kFloat32),
           " can't be cast to the desired output type ", scalar_type_name(dtype()));
  detail::check_write_overlap(*this, {&o}, "div_");
  auto node = record ? autograd::DivInplace::make(*this, o) : nullptr;
  ops::binary_(*this, o, backend::cpu::DivOp{}, "div_");
  autograd::finish_inplace(*this, std::move(node), {&o});
  return *this;
}
TT_DECL Tensor& Tensor::div_(Scalar s) {
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
TT_DECL Tensor& Tensor::addcmul_(const Tensor& t1, const Tensor& t2, Scalar value) {
  return detail::addc_inplace(*this, t1, t2, value, backend::cpu::MulOp{}, false, "addcmul_");
}
TT_DECL Tensor& Tensor::addcdiv_(const Tensor& t1, const Tensor& t2, Scalar value) {
  TT_CHECK(defined(), "addcdiv_: called on an undefined tensor");
  TT_CHECK(t1.is_floating_point() || t2.is_floating_point(), "addcdiv_: Integer division with addcdiv is no "
           "longer supported (got int64 tensor1 and tensor2); use (input + value * tensor1 / tensor2)");
  return detail::addc_inplace(*this, t1, t2, value, backend::cpu::DivOp{}, true, "addcdiv_");
}
TT_DECL Tensor& Tensor::zero_() { return detail::fill_inplace(*this, Scalar(int64_t{0}), "zero_", "ZeroBackward0"); }
TT_DECL Tensor& Tensor::fill_(Scalar v) { return detail::fill_inplace(*this, v, "fill_", "FillBackward2"); }
TT_DECL Tensor& Tensor::copy_(const Tensor& src) {
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
TT_DECL Tensor& Tensor::uniform_(double from, double to, Generator* gen) {
  const bool record = autograd::check_inplace(*this, {}, "uniform_");
  ops::assert_no_internal_overlap(*this, "uniform_");
  Generator& g = gen ? *gen : default_generator();
  // a GPU tensor: the numbers are drawn on the host in the same order, then copied
  Tensor host = device().is_cpu() ? *this : ops::make_tensor(sizes(), dtype());
  g.locked([&](Generator::Stream& s) { ops::unary_(host, [&](auto) { return s.uniform(from, to); }, "uniform_"); });
  if (!device().is_cpu()) ops::copy_into_strided(ops::to_device(host, device()), *this);
  autograd::finish_inplace(*this, record ? autograd::OverwriteInplace::make("UniformBackward0") : nullptr, {});
  return *this;
}
TT_DECL Tensor& Tensor::normal_(double mean, double std, Generator* gen) {
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
TT_DECL bool Tensor::allclose(const Tensor& o, double rtol, double atol) const {
  if (sizes() != o.sizes()) return false;
  std::vector<double> a = tolist<double>(), b = o.tolist<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return false;
    if (std::abs(a[i] - b[i]) > atol + rtol * std::abs(b[i])) return false;
  }
  return true;
}
TT_DECL bool Tensor::equal(const Tensor& o) const {
  if (sizes() != o.sizes()) return false;
  // two int64 tensors compare as int64 (as doubles, 2^53 + 1 would equal 2^53)
  if (dtype() == kInt64 && o.dtype() == kInt64) return tolist<int64_t>() == o.tolist<int64_t>();
  return tolist<double>() == o.tolist<double>();
}
TT_DECL std::string Tensor::str() const {
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
TT_DECL std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

// ---- operators --------------------------------------------------------------------------------
TT_DECL Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
TT_DECL Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
TT_DECL Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
TT_DECL Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
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
TT_DECL Tensor operator+(const Tensor& a, Scalar b) {
  if (detail::int64_exact(a, b)) return ops::scalar_int64(a, b.to_int64(), backend::AddOp{}, "add");
  return autograd::AddScalar::forward(detail::promote_for(a, b), b.to_double());
}
TT_DECL Tensor operator-(const Tensor& a, Scalar b) {
  if (detail::int64_exact(a, b)) return ops::scalar_int64(a, b.to_int64(), backend::SubOp{}, "sub");
  return autograd::AddScalar::forward(detail::promote_for(a, b), -b.to_double(), "SubBackward1");
}
TT_DECL Tensor operator*(const Tensor& a, Scalar b) {
  if (detail::int64_exact(a, b)) return ops::scalar_int64(a, b.to_int64(), backend::MulOp{}, "mul");
  return autograd::MulScalar::forward(detail::promote_for(a, b), b.to_double());
}
TT_DECL Tensor operator/(const Tensor& a, Scalar b) { return autograd::DivScalar::forward(a, b.to_double()); }
TT_DECL Tensor operator+(Scalar a, const Tensor& b) { return b + a; }
TT_DECL Tensor operator-(Scalar a, const Tensor& b) {
  if (detail::int64_exact(b, a))
    return ops::scalar_int64(b, a.to_int64(), backend::RsubOp{}, "rsub");
  return autograd::RsubScalar::forward(detail::promote_for(b, a), a.to_double());
}
TT_DECL Tensor operator*(Scalar a, const Tensor& b) { return b * a; }
TT_DECL Tensor operator/(Scalar a, const Tensor& b) { return pow(b, -1.0) * a; }
TT_DECL Tensor add(const Tensor& a, const Tensor& b, Scalar alpha) {
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
TT_DECL Tensor pow(const Tensor& x, Scalar exponent) {
  if (x.dtype() == kInt64 && exponent.is_integral()) {
    const int64_t e = exponent.to_int64();
    TT_CHECK(e >= 0, "pow: Integers to negative integer powers are not allowed. (got exponent ", e,
             " for an int64 tensor; pass ", e, ".0 for a float32 result)");
    return ops::scalar_int64(x, e, backend::WrappingPowOp{}, "pow");
  }
  return autograd::pow(detail::promote_for(x, exponent), exponent.to_double());
}
TT_DECL Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
TT_DECL Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
TT_DECL Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
TT_DECL Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
TT_DECL Tensor& operator+=(Tensor& a, Scalar b) { return a.add_(b); }
TT_DECL Tensor& operator*=(Tensor& a, Scalar b) { return a.mul_(b); }


// =============================================================================================
// binary ops beyond arithmetic: min/max of tensors, pow of tensors, floor_divide, remainder,
// fmod, comparisons, clamp, where
// =============================================================================================

// ---- min / max family -------------------------------------------------------------------------
TT_DECL Tensor min(const Tensor& x) { return autograd::Min::forward_all(x); }
TT_DECL std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return autograd::Min::forward_dim(x, dim, keepdim);
}
TT_DECL Tensor argmin(const Tensor& x) {
  TT_CHECK(x.numel() > 0, "argmin(): Expected reduction dim to be specified for input.numel() == 0.");
  return std::get<1>(ops::min_dim(ops::reshape(x, {x.numel()}), 0, false, "argmin"));
}
TT_DECL Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  return std::get<1>(ops::min_dim(x, dim, keepdim, "argmin"));
}
TT_DECL Tensor amax(const Tensor& x, const std::vector<int64_t>& dim, bool keepdim) {
  return autograd::AmaxAmin::forward(x, dim, keepdim, true);
}
TT_DECL Tensor amin(const Tensor& x, const std::vector<int64_t>& dim, bool keepdim) {
  return autograd::AmaxAmin::forward(x, dim, keepdim, false);
}
TT_DECL Tensor maximum(const Tensor& a, const Tensor& b) { return autograd::MaximumMinimum::forward(a, b, true); }
TT_DECL Tensor minimum(const Tensor& a, const Tensor& b) { return autograd::MaximumMinimum::forward(a, b, false); }
TT_DECL Tensor max(const Tensor& a, const Tensor& b) { return maximum(a, b); }
TT_DECL Tensor min(const Tensor& a, const Tensor& b) { return minimum(a, b); }

// ---- pow --------------------------------------------------------------------------------------
TT_DECL Tensor pow(const Tensor& a, const Tensor& b) { return autograd::PowTensor::forward(a, b); }
TT_DECL Tensor pow(double s, const Tensor& b) { return autograd::PowScalarBase::forward(s, b); }

// ---- floor_divide, remainder, fmod ------------------------------------------------------------
TT_DECL Tensor floor_divide(const Tensor& a, const Tensor& b) { return autograd::floor_divide(a, b); }
TT_DECL Tensor floor_divide(const Tensor& a, double b) { return autograd::floor_divide(a, b); }
TT_DECL Tensor div(const Tensor& a, const Tensor& b, const std::optional<std::string>& rounding_mode) {
  return rounding_mode ? autograd::DivRounding::forward(a, b, *rounding_mode)
                       : autograd::Div::forward(a, b, "DivBackward2");  // aten's div.Tensor_mode
}
TT_DECL Tensor div(const Tensor& a, double b, const std::optional<std::string>& rounding_mode) {
  return rounding_mode ? autograd::DivRounding::forward(a, b, *rounding_mode)
                       : autograd::DivScalar::forward(a, b, "DivBackward3");  // div.Scalar_mode
}
TT_DECL Tensor trunc(const Tensor& x) { return autograd::Trunc::forward(x); }
TT_DECL Tensor remainder(const Tensor& a, const Tensor& b) { return autograd::RemainderFmod::forward(a, b, false); }
TT_DECL Tensor remainder(const Tensor& a, double b) { return autograd::RemainderFmod::forward(a, b, false); }
TT_DECL Tensor fmod(const Tensor& a, const Tensor& b) { return autograd::RemainderFmod::forward(a, b, true); }
TT_DECL Tensor fmod(const Tensor& a, double b) { return autograd::RemainderFmod::forward(a, b, true); }

// ---- comparisons ------------------------------------------------------------------------------
TT_DECL Tensor eq(const Tensor& a, const Tensor& b) { return a.eq(b); }
TT_DECL Tensor ne(const Tensor& a, const Tensor& b) { return a.ne(b); }
TT_DECL Tensor lt(const Tensor& a, const Tensor& b) { return a.lt(b); }
TT_DECL Tensor le(const Tensor& a, const Tensor& b) { return a.le(b); }
TT_DECL Tensor gt(const Tensor& a, const Tensor& b) { return a.gt(b); }
TT_DECL Tensor ge(const Tensor& a, const Tensor& b) { return a.ge(b); }
TT_DECL Tensor eq(const Tensor& a, double b) { return ops::compare_scalar(a, b, backend::cpu::EqOp{}, "eq"); }
TT_DECL Tensor ne(const Tensor& a, double b) { return ops::compare_scalar(a, b, backend::cpu::NeOp{}, "ne"); }
TT_DECL Tensor lt(const Tensor& a, double b) { return ops::compare_scalar(a, b, backend::cpu::LtOp{}, "lt"); }
TT_DECL Tensor le(const Tensor& a, double b) { return ops::compare_scalar(a, b, backend::cpu::LeOp{}, "le"); }
TT_DECL Tensor gt(const Tensor& a, double b) { return ops::compare_scalar(a, b, backend::cpu::GtOp{}, "gt"); }
TT_DECL Tensor ge(const Tensor& a, double b) { return ops::compare_scalar(a, b, backend::cpu::GeOp{}, "ge"); }

// ---- clamp ------------------------------------------------------------------------------------
TT_DECL Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
  return autograd::ClampScalar::forward(x, min, max, "ClampBackward1");
}
TT_DECL Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max) {
  return autograd::ClampTensor::forward(x, min, max, "ClampBackward0");
}
TT_DECL Tensor clamp_min(const Tensor& x, double min) {
  return autograd::ClampScalar::forward(x, min, std::nullopt, "ClampMinBackward0", "clamp_min");
}
TT_DECL Tensor clamp_min(const Tensor& x, const Tensor& min) {
  TT_CHECK(min.defined(), "clamp_min: expected a defined min tensor");
  return autograd::ClampTensor::forward(x, min, Tensor(), "ClampMinBackward1");
}
TT_DECL Tensor clamp_max(const Tensor& x, double max) {
  return autograd::ClampScalar::forward(x, std::nullopt, max, "ClampMaxBackward0", "clamp_max");
}
TT_DECL Tensor clamp_max(const Tensor& x, const Tensor& max) {
  TT_CHECK(max.defined(), "clamp_max: expected a defined max tensor");
  return autograd::ClampTensor::forward(x, Tensor(), max, "ClampMaxBackward1");
}

// ---- where ------------------------------------------------------------------------------------
TT_DECL Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  return autograd::Where::forward(condition, a, b);
}
TT_DECL Tensor where(const Tensor& condition, const Tensor& a, double b) {
  ops::check_device(a, "where");
  return where(condition, a, ops::scalar_as_tensor(b, ops::scalar_result_type(a.dtype(), b), a.device()));
}
TT_DECL Tensor where(const Tensor& condition, double a, const Tensor& b) {
  ops::check_device(b, "where");
  return where(condition, ops::scalar_as_tensor(a, ops::scalar_result_type(b.dtype(), a), b.device()), b);
}


// ---- transformer parts ------------------------------------------------------------------------
TT_DECL Tensor gelu(const Tensor& x, const std::string& approximate) {
  TT_CHECK(approximate == "none" || approximate == "tanh",
           "gelu: approximate argument must be either none or tanh. (got '", approximate, "')");
  ops::check_device(x, "gelu");
  TT_CHECK(x.is_floating_point(), "gelu: \"GeluKernelImpl\" not implemented for '", dtype_name(x.dtype()),
           "' (a floating-point tensor is needed; got shape ", shape_str(x.sizes()), ")");
  return autograd::gelu(x, approximate == "tanh");
}

TT_DECL Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx) {
  ops::check_device(weight, "embedding");
  TT_CHECK(weight.dim() == 2, "embedding: 'weight' must be 2-D (num_embeddings, embedding_dim), got shape ",
           shape_str(weight.sizes()));
  const int64_t V = weight.sizes()[0];
  int64_t pad = -1;
  if (padding_idx) {
    TT_CHECK(*padding_idx >= -V && *padding_idx < V, "embedding: Padding_idx must be within num_embeddings (got ",
             *padding_idx, " for a weight of shape ", shape_str(weight.sizes()), ")");
    pad = *padding_idx < 0 ? *padding_idx + V : *padding_idx;
  }
  return autograd::Embedding::forward(weight, input, pad);
}

TT_DECL Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  TT_CHECK(p >= 0 && p <= 1, "dropout: dropout probability has to be between 0 and 1, but got ", p);
  ops::check_device(x, "dropout");
  if (!training || p == 0) return x;
  TT_CHECK(x.is_floating_point(), "dropout: expected a floating point tensor in training, got ", dtype_name(x.dtype()),
           " of shape ", shape_str(x.sizes()));
  if (p == 1) return x * 0.0;
  Tensor mask = rand(x.sizes(), x.dtype(), gen);
  {
    NoGradGuard ng;
    const double keep_scale = 1.0 / (1.0 - p);
    const double drop = p;
    ops::unary_(mask, [=](auto u) { return u < drop ? 0.0 : keep_scale; }, "dropout");
  }
  // The mask is drawn on the host (the same numbers on every device), then moved to x's device.
  return x * mask.to(x.device());
}

TT_DECL Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                            const Tensor& attn_mask, double dropout_p, bool is_causal,
                                            std::optional<double> scale) {
  if (amp::detail::Autocast ac(amp::CastPolicy::LowerPrecisionFp, {&q, &k, &v, &attn_mask}); ac.active())
    return scaled_dot_product_attention(ac.cast(q), ac.cast(k), ac.cast(v), ac.cast(attn_mask), dropout_p, is_causal,
                                        scale);
  const char* op = "scaled_dot_product_attention";
  ops::check_device(q, op);
  ops::check_device(k, op);
  ops::check_device(v, op);
  ops::check_same_device(op, q, k, v, attn_mask);
  auto shapes = [&] {
    return detail::str_cat("query ", shape_str(q.sizes()), ", key ", shape_str(k.sizes()), ", value ",
                           shape_str(v.sizes()));
  };
  TT_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, op, ": query, key and value need at least 2 dims (*, L, E), got ",
           shapes());
  TT_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), op,
           ": Expected query, key, and value to have the same dtype, but got query.dtype: ", dtype_name(q.dtype()),
           ", key.dtype: ", dtype_name(k.dtype()), " and value.dtype: ", dtype_name(v.dtype()), " instead (", shapes(), ")");
  TT_CHECK(q.is_floating_point(), op, ": query, key and value must be floating point, got ", dtype_name(q.dtype()));
  TT_CHECK(q.sizes().back() == k.sizes().back(), op, ": query and key must have the same last dim E, got ", shapes());
  TT_CHECK(k.sizes()[k.dim() - 2] == v.sizes()[v.dim() - 2], op,
           ": key and value must have the same length S (dim -2), got ", shapes());
  TT_CHECK(!(is_causal && attn_mask.defined()), op, ": Explicit attn_mask should not be set when is_causal=True");
  TT_CHECK(dropout_p >= 0 && dropout_p <= 1, op, ": dropout_p has to be between 0 and 1, but got ", dropout_p);
  if (attn_mask.defined())
    TT_CHECK(attn_mask.dtype() == kInt64 || attn_mask.dtype() == q.dtype(), op,
             ": Expected attn_mask dtype to be int64 (a 0/1 mask, PyTorch's bool) or to match query dtype, got ",
             dtype_name(attn_mask.dtype()), " for query of ", dtype_name(q.dtype()));
  const int64_t L = q.sizes()[q.dim() - 2], S = k.sizes()[k.dim() - 2];
  // The shapes the steps below need to agree, checked here so that the message names this op's
  // arguments, not an inner matmul's or where's: the batch dims of q, k, v broadcast, and the mask
  // broadcasts to the (*, L, S) scores.
  Shape scores;
  try {
    const Shape qb(q.sizes().begin(), q.sizes().end() - 2), kb(k.sizes().begin(), k.sizes().end() - 2),
        vb(v.sizes().begin(), v.sizes().end() - 2);
    scores = broadcast_shapes(broadcast_shapes(qb, kb), vb);
  } catch (const Error&) {
    throw Error(detail::str_cat(op, ": the batch dims of query, key and value cannot be broadcast together: ", shapes()));
  }
  scores.push_back(L);
  scores.push_back(S);
  if (attn_mask.defined()) {
    bool ok = true;
    try {
      ok = broadcast_shapes(attn_mask.sizes(), scores) == scores;
    } catch (const Error&) {
      ok = false;
    }
    TT_CHECK(ok, op, ": attn_mask of shape ", shape_str(attn_mask.sizes()),
             " cannot be broadcast to the attention scores' shape ", shape_str(scores), " (*, L, S) (", shapes(), ")");
  }
  const double sc = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(q.sizes().back()));
  // The fused kernel when it applies (nn::attention::SDPBackend, functional.hpp), else the composite.
  const auto enabled = nn::attention::sdpa_kernel::enabled();
  const char* not_fused = nullptr;  // why the fused kernel cannot run this call
  const Shape qb(q.sizes().begin(), q.sizes().end() - 2);
  if (attn_mask.defined()) not_fused = "an attn_mask is given (is_causal is supported)";
  else if (dropout_p > 0) not_fused = "dropout_p > 0";
  else if (Shape(k.sizes().begin(), k.sizes().end() - 2) != qb || Shape(v.sizes().begin(), v.sizes().end() - 2) != qb)
    not_fused = "query, key and value have different batch dims (broadcasting)";
  else if (S == 0) not_fused = "the key length S is 0";
  else if (q.sizes().back() == 0) not_fused = "the head dim E is 0";
  else if (q.device().is_cuda() && (q.sizes().back() > 256 || v.sizes().back() > 256))
    not_fused = "a head dim E or Ev above 256 on CUDA";
  if (enabled.efficient && !not_fused) return autograd::ScaledDotProductEfficientAttention::forward(q, k, v, sc, is_causal);
  TT_CHECK(enabled.math, op, ": No available kernel: sdpa_kernel allows only EFFICIENT_ATTENTION, which cannot run "
           "this call: ", not_fused, " (", shapes(), ")");
  Tensor attn = matmul(q, k.transpose(-2, -1)) * sc;  // (*, L, S)
  if (is_causal) {
    Tensor keep = zeros({L, S}, kInt64);  // 1 where key j <= query i: tril(ones(L, S))
    int64_t* p = keep.data_ptr<int64_t>();
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j <= i && j < S; ++j) p[i * S + j] = 1;
    attn = where(keep.to(q.device()), attn, -INFINITY);
  } else if (attn_mask.defined()) {
    attn = attn_mask.dtype() == kInt64 ? where(attn_mask, attn, -INFINITY) : attn + attn_mask;
  }
  attn = softmax(attn, -1);
  if (dropout_p > 0) attn = dropout(attn, dropout_p, true);
  return matmul(attn, v);
}

// =============================================================================================

// =============================================================================================
TT_DECL Tensor Tensor::min() const { return tinytorch::min(*this); }
TT_DECL std::tuple<Tensor, Tensor> Tensor::min(int64_t d, bool keepdim) const { return tinytorch::min(*this, d, keepdim); }
TT_DECL Tensor Tensor::argmin() const { return tinytorch::argmin(*this); }
TT_DECL Tensor Tensor::argmin(int64_t d, bool keepdim) const { return tinytorch::argmin(*this, d, keepdim); }
TT_DECL Tensor Tensor::amax(const std::vector<int64_t>& d, bool keepdim) const { return tinytorch::amax(*this, d, keepdim); }
TT_DECL Tensor Tensor::amin(const std::vector<int64_t>& d, bool keepdim) const { return tinytorch::amin(*this, d, keepdim); }
TT_DECL Tensor Tensor::maximum(const Tensor& o) const { return tinytorch::maximum(*this, o); }
TT_DECL Tensor Tensor::minimum(const Tensor& o) const { return tinytorch::minimum(*this, o); }
TT_DECL Tensor Tensor::max(const Tensor& o) const { return tinytorch::maximum(*this, o); }
TT_DECL Tensor Tensor::min(const Tensor& o) const { return tinytorch::minimum(*this, o); }
TT_DECL Tensor Tensor::pow(const Tensor& e) const { return tinytorch::pow(*this, e); }
TT_DECL Tensor Tensor::floor_divide(const Tensor& o) const { return tinytorch::floor_divide(*this, o); }
TT_DECL Tensor Tensor::floor_divide(double o) const { return tinytorch::floor_divide(*this, o); }
TT_DECL Tensor Tensor::remainder(const Tensor& o) const { return tinytorch::remainder(*this, o); }
TT_DECL Tensor Tensor::remainder(double o) const { return tinytorch::remainder(*this, o); }
TT_DECL Tensor Tensor::fmod(const Tensor& o) const { return tinytorch::fmod(*this, o); }
TT_DECL Tensor Tensor::fmod(double o) const { return tinytorch::fmod(*this, o); }
TT_DECL Tensor Tensor::div(const Tensor& o) const { return tinytorch::div(*this, o); }
TT_DECL Tensor Tensor::div(double o) const { return *this / o; }
TT_DECL Tensor Tensor::div(const Tensor& o, const std::optional<std::string>& rounding_mode) const {
  return tinytorch::div(*this, o, rounding_mode);
}
TT_DECL Tensor Tensor::div(double o, const std::optional<std::string>& rounding_mode) const {
  return tinytorch::div(*this, o, rounding_mode);
}
TT_DECL Tensor Tensor::trunc() const { return tinytorch::trunc(*this); }
TT_DECL Tensor Tensor::eq(double o) const { return tinytorch::eq(*this, o); }
TT_DECL Tensor Tensor::ne(double o) const { return tinytorch::ne(*this, o); }
TT_DECL Tensor Tensor::lt(double o) const { return tinytorch::lt(*this, o); }
TT_DECL Tensor Tensor::le(double o) const { return tinytorch::le(*this, o); }
TT_DECL Tensor Tensor::gt(double o) const { return tinytorch::gt(*this, o); }
TT_DECL Tensor Tensor::ge(double o) const { return tinytorch::ge(*this, o); }
TT_DECL Tensor Tensor::clamp(std::optional<double> lo, std::optional<double> hi) const {
  return tinytorch::clamp(*this, lo, hi);
}
TT_DECL Tensor Tensor::clamp(const Tensor& lo, const Tensor& hi) const { return tinytorch::clamp(*this, lo, hi); }
TT_DECL Tensor Tensor::clamp_min(double lo) const { return tinytorch::clamp_min(*this, lo); }
TT_DECL Tensor Tensor::clamp_min(const Tensor& lo) const { return tinytorch::clamp_min(*this, lo); }
TT_DECL Tensor Tensor::clamp_max(double hi) const { return tinytorch::clamp_max(*this, hi); }
TT_DECL Tensor Tensor::clamp_max(const Tensor& hi) const { return tinytorch::clamp_max(*this, hi); }
TT_DECL Tensor Tensor::where(const Tensor& c, const Tensor& o) const { return tinytorch::where(c, *this, o); }
TT_DECL Tensor Tensor::where(const Tensor& c, double o) const { return tinytorch::where(c, *this, o); }

// ---- operators --------------------------------------------------------------------------------
TT_DECL Tensor operator%(const Tensor& a, const Tensor& b) { return remainder(a, b); }
TT_DECL Tensor operator%(const Tensor& a, double b) { return remainder(a, b); }
TT_DECL Tensor operator==(const Tensor& a, const Tensor& b) { return a.eq(b); }
TT_DECL Tensor operator!=(const Tensor& a, const Tensor& b) { return a.ne(b); }
TT_DECL Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
TT_DECL Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
TT_DECL Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
TT_DECL Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
TT_DECL Tensor operator==(const Tensor& a, double b) { return a.eq(b); }
TT_DECL Tensor operator!=(const Tensor& a, double b) { return a.ne(b); }
TT_DECL Tensor operator<(const Tensor& a, double b) { return a.lt(b); }
TT_DECL Tensor operator<=(const Tensor& a, double b) { return a.le(b); }
TT_DECL Tensor operator>(const Tensor& a, double b) { return a.gt(b); }
TT_DECL Tensor operator>=(const Tensor& a, double b) { return a.ge(b); }
TT_DECL Tensor operator==(double a, const Tensor& b) { return b.eq(a); }
TT_DECL Tensor operator!=(double a, const Tensor& b) { return b.ne(a); }
TT_DECL Tensor operator<(double a, const Tensor& b) { return b.gt(a); }
TT_DECL Tensor operator<=(double a, const Tensor& b) { return b.ge(a); }
TT_DECL Tensor operator>(double a, const Tensor& b) { return b.lt(a); }
TT_DECL Tensor operator>=(double a, const Tensor& b) { return b.le(a); }

TT_NAMESPACE_END  // namespace tinytorch

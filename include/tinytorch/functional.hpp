// tinytorch/functional.hpp — the differentiable API, and the definitions of Tensor's methods.
//
// Free functions mirror torch.* and torch.nn.functional.*:
//   add, sub, mul, div, neg, exp, log, pow, sqrt, abs, relu, sigmoid, tanh, clamp,
//   sum, mean, max, argmax, matmul, mm, bmm, softmax, log_softmax, cat, stack,
//   linear, mse_loss, nll_loss, cross_entropy, conv2d, max_pool2d.
// Each records its autograd node (autograd/functions.hpp) when an input requires grad.
// Tensor's methods and operators (declared in tensor.hpp) are defined at the end of this file in
// terms of these functions, so `a * b`, `x.exp()` and `mul(a, b)` are the same op.
// Chapter: chapters/01-training-loop.md. Reference: PyTorch 2.x documentation of each function.
#pragma once

#include <cmath>
#include <limits>
#include <sstream>

#include "autograd/conv.hpp"
#include "autograd/engine.hpp"
#include "autograd/functions.hpp"
#include "ops/creation.hpp"
#include "ops/print.hpp"

namespace tinytorch {

using autograd::Reduction;

// ---- arithmetic -------------------------------------------------------------------------------
/// a + alpha * b with broadcasting (torch.add).
inline Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0) { return autograd::Add::forward(a, b, alpha); }
inline Tensor sub(const Tensor& a, const Tensor& b) { return autograd::Sub::forward(a, b); }
inline Tensor mul(const Tensor& a, const Tensor& b) { return autograd::Mul::forward(a, b); }
/// True division (int64 / int64 gives float32, as torch.div).
inline Tensor div(const Tensor& a, const Tensor& b) { return autograd::Div::forward(a, b); }
inline Tensor neg(const Tensor& x) { return autograd::Neg::forward(x); }
inline Tensor exp(const Tensor& x) { return autograd::exp(x); }
inline Tensor log(const Tensor& x) { return autograd::log(x); }
inline Tensor pow(const Tensor& x, double exponent) { return autograd::pow(x, exponent); }
inline Tensor sqrt(const Tensor& x) { return autograd::sqrt(x); }
inline Tensor abs(const Tensor& x) { return autograd::abs(x); }
inline Tensor relu(const Tensor& x) { return autograd::relu(x); }
inline Tensor sigmoid(const Tensor& x) { return autograd::sigmoid(x); }
inline Tensor tanh(const Tensor& x) { return autograd::tanh(x); }
/// Limits x to [min, max]; the gradient passes where min <= x <= max (torch.clamp).
inline Tensor clamp(const Tensor& x, double min, double max) { return autograd::clamp(x, min, max); }
inline Tensor clamp_min(const Tensor& x, double min) {
  return autograd::clamp(x, min, std::numeric_limits<double>::infinity(), "ClampMinBackward0");
}
inline Tensor clamp_max(const Tensor& x, double max) {
  return autograd::clamp(x, -std::numeric_limits<double>::infinity(), max, "ClampMaxBackward0");
}

// ---- reductions -------------------------------------------------------------------------------
inline Tensor sum(const Tensor& x) { return autograd::SumMean::forward(x, std::nullopt, false, false); }
inline Tensor sum(const Tensor& x, int64_t dim, bool keepdim = false) {
  return autograd::SumMean::forward(x, dim, keepdim, false);
}
inline Tensor mean(const Tensor& x) { return autograd::SumMean::forward(x, std::nullopt, false, true); }
inline Tensor mean(const Tensor& x, int64_t dim, bool keepdim = false) {
  return autograd::SumMean::forward(x, dim, keepdim, true);
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
/// Negative log likelihood on log-probabilities (N, C) with int64 class indices (N).
inline Tensor nll_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean) {
  return autograd::NllLoss::forward(input, target, reduction);
}
/// Cross entropy on raw logits (N, C) and int64 class indices (N) = nll_loss(log_softmax(x, 1), t).
/// Stable for large logits (log_softmax subtracts the row max).
inline Tensor cross_entropy(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean) {
  TT_CHECK(input.dim() == 2, "cross_entropy: expected input of shape (N, C), got ", shape_str(input.sizes()));
  return nll_loss(log_softmax(input, 1), target, reduction);
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
    return static_cast<T>(data_ptr<S>()[off]);
  });
}
template <typename T> T Tensor::item() const {
  TT_CHECK(numel() == 1, "item: a Tensor with ", numel(), " elements cannot be converted to Scalar");
  ops::check_device(*this, "item");
  return dispatch(dtype(), [&](auto tag) -> T {
    using S = typename decltype(tag)::type;
    return static_cast<T>(*data_ptr<S>());
  });
}
template <typename T> std::vector<T> Tensor::tolist() const {
  const Tensor c = ops::contiguous(*this);
  std::vector<T> out(static_cast<size_t>(numel()));
  dispatch(dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* p = c.data_ptr<S>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(p[i]);
  });
  return out;
}

// ---- autograd ---------------------------------------------------------------------------------
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
  if (g.defined())
    TT_CHECK(g.sizes() == sizes(), "set_grad: assigned grad has data of a different size (",
             shape_str(g.sizes()), " vs ", shape_str(sizes()), ")");
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
inline Tensor Tensor::view(const Shape& s) const { return autograd::Reshape::forward(*this, s, true); }
inline Tensor Tensor::reshape(const Shape& s) const { return autograd::Reshape::forward(*this, s, false); }
inline Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  return autograd::Transpose::forward(*this, d0, d1, "TransposeBackward0");
}
inline Tensor Tensor::t() const {
  TT_CHECK(dim() <= 2, "t: expects a tensor with <= 2 dimensions, but self is ", dim(), "D (shape ",
           shape_str(sizes()), ")");
  if (dim() < 2) return autograd::Transpose::forward(*this, 0, 0, "TBackward0");
  return autograd::Transpose::forward(*this, 0, 1, "TBackward0");
}
inline Tensor Tensor::permute(const std::vector<int64_t>& dims) const { return autograd::Permute::forward(*this, dims); }
inline Tensor Tensor::unsqueeze(int64_t d) const {
  return autograd::ShapeOnly::wrap(*this, ops::unsqueeze(*this, d), "UnsqueezeBackward0");
}
inline Tensor Tensor::squeeze() const {
  return autograd::ShapeOnly::wrap(*this, ops::squeeze(*this, std::nullopt), "SqueezeBackward0");
}
inline Tensor Tensor::squeeze(int64_t d) const {
  return autograd::ShapeOnly::wrap(*this, ops::squeeze(*this, d), "SqueezeBackward1");
}
inline Tensor Tensor::expand(const Shape& s) const {
  return autograd::ShapeOnly::wrap(*this, ops::expand(*this, s), "ExpandBackward0");
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
  return autograd::Slice::forward(*this, d, start, length, false);
}
inline Tensor Tensor::select(int64_t d, int64_t index) const {
  return autograd::Slice::forward(*this, d, index, 1, true);
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

// ---- elementwise ------------------------------------------------------------------------------
inline Tensor Tensor::operator-() const { return tinytorch::neg(*this); }
inline Tensor Tensor::neg() const { return tinytorch::neg(*this); }
inline Tensor Tensor::exp() const { return tinytorch::exp(*this); }
inline Tensor Tensor::log() const { return tinytorch::log(*this); }
inline Tensor Tensor::pow(double e) const { return tinytorch::pow(*this, e); }
inline Tensor Tensor::sqrt() const { return tinytorch::sqrt(*this); }
inline Tensor Tensor::abs() const { return tinytorch::abs(*this); }
inline Tensor Tensor::relu() const { return tinytorch::relu(*this); }
inline Tensor Tensor::sigmoid() const { return tinytorch::sigmoid(*this); }
inline Tensor Tensor::tanh() const { return tinytorch::tanh(*this); }
inline Tensor Tensor::clamp(double lo, double hi) const { return tinytorch::clamp(*this, lo, hi); }
inline Tensor Tensor::clamp_min(double lo) const { return tinytorch::clamp_min(*this, lo); }
inline Tensor Tensor::clamp_max(double hi) const { return tinytorch::clamp_max(*this, hi); }
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
inline Tensor Tensor::max() const { return tinytorch::max(*this); }
inline std::tuple<Tensor, Tensor> Tensor::max(int64_t d, bool keepdim) const { return tinytorch::max(*this, d, keepdim); }
inline Tensor Tensor::argmax() const { return tinytorch::argmax(*this); }
inline Tensor Tensor::argmax(int64_t d, bool keepdim) const { return tinytorch::argmax(*this, d, keepdim); }
inline Tensor Tensor::matmul(const Tensor& o) const { return tinytorch::matmul(*this, o); }
inline Tensor Tensor::mm(const Tensor& o) const { return tinytorch::mm(*this, o); }
inline Tensor Tensor::softmax(int64_t d) const { return tinytorch::softmax(*this, d); }
inline Tensor Tensor::log_softmax(int64_t d) const { return tinytorch::log_softmax(*this, d); }

// ---- in place ---------------------------------------------------------------------------------
namespace detail {
inline void check_inplace(const Tensor& t, const char* op) {
  TT_CHECK(t.defined(), op, ": called on an undefined tensor");
  if (!GradMode::is_enabled() || !t.requires_grad()) return;
  TT_CHECK(!t.is_leaf(), op, ": a leaf Variable that requires grad is being used in an in-place operation. "
           "Wrap the update in NoGradGuard (as optimizers do) or work on a detach()ed copy.");
  TT_CHECK(false, op, ": in-place operation on a tensor that requires grad (made by ", t.grad_fn()->name(),
           "): tinytorch's autograd does not track in-place changes; use the out-of-place op");
}
}  // namespace detail

inline Tensor& Tensor::add_(const Tensor& o, double alpha) {
  detail::check_inplace(*this, "add_");
  if (alpha == 1) ops::binary_(*this, o, backend::cpu::AddOp{}, "add_");
  else ops::binary_(*this, o, [alpha](auto a, auto b) { return a + alpha * b; }, "add_");
  return *this;
}
inline Tensor& Tensor::add_(double v) {
  detail::check_inplace(*this, "add_");
  ops::unary_(*this, [v](auto a) { return a + v; }, "add_");
  return *this;
}
inline Tensor& Tensor::sub_(const Tensor& o, double alpha) { return add_(o, -alpha); }
inline Tensor& Tensor::mul_(const Tensor& o) {
  detail::check_inplace(*this, "mul_");
  ops::binary_(*this, o, backend::cpu::MulOp{}, "mul_");
  return *this;
}
inline Tensor& Tensor::mul_(double v) {
  detail::check_inplace(*this, "mul_");
  ops::unary_(*this, [v](auto a) { return a * v; }, "mul_");
  return *this;
}
// div_ is true division, as torch.div_: its result is floating point, which an int64 tensor cannot
// hold, so int64 div_ raises as in PyTorch (and never runs an integer division, which would trap
// on a zero divisor or INT64_MIN / -1).
inline Tensor& Tensor::div_(const Tensor& o) {
  detail::check_inplace(*this, "div_");
  TT_CHECK(is_floating_point(), "div_: result type ", scalar_type_name(o.is_floating_point() ? o.dtype() : kFloat32),
           " can't be cast to the desired output type ", scalar_type_name(dtype()));
  ops::binary_(*this, o, backend::cpu::DivOp{}, "div_");
  return *this;
}
inline Tensor& Tensor::div_(double v) {
  detail::check_inplace(*this, "div_");
  TT_CHECK(is_floating_point(), "div_: result type Float can't be cast to the desired output type ",
           scalar_type_name(dtype()));
  ops::unary_(*this, [v](auto a) { return a / v; }, "div_");
  return *this;
}
inline Tensor& Tensor::addcmul_(const Tensor& t1, const Tensor& t2, double value) {
  detail::check_inplace(*this, "addcmul_");
  return add_(ops::binary(t1, t2, backend::cpu::MulOp{}, "addcmul_"), value);
}
inline Tensor& Tensor::addcdiv_(const Tensor& t1, const Tensor& t2, double value) {
  detail::check_inplace(*this, "addcdiv_");
  TT_CHECK(t1.is_floating_point() || t2.is_floating_point(), "addcdiv_: Integer division with addcdiv is no "
           "longer supported (got int64 tensor1 and tensor2); use (input + value * tensor1 / tensor2)");
  return add_(ops::binary(t1, t2, backend::cpu::DivOp{}, "addcdiv_"), value);
}
inline Tensor& Tensor::zero_() { return fill_(0.0); }
inline Tensor& Tensor::fill_(double v) {
  detail::check_inplace(*this, "fill_");
  ops::unary_(*this, [v](auto) { return v; }, "fill_");
  return *this;
}
inline Tensor& Tensor::copy_(const Tensor& src) {
  detail::check_inplace(*this, "copy_");
  ops::binary_(*this, src, [](auto, auto b) { return b; }, "copy_");
  return *this;
}
inline Tensor& Tensor::uniform_(double from, double to, Generator* gen) {
  detail::check_inplace(*this, "uniform_");
  Generator& g = gen ? *gen : default_generator();
  ops::unary_(*this, [&](auto) { return g.uniform(from, to); }, "uniform_");
  return *this;
}
inline Tensor& Tensor::normal_(double mean, double std, Generator* gen) {
  detail::check_inplace(*this, "normal_");
  Generator& g = gen ? *gen : default_generator();
  ops::unary_(*this, [&](auto) { return mean + std * g.normal(); }, "normal_");
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
inline bool Tensor::equal(const Tensor& o) const { return sizes() == o.sizes() && tolist<double>() == o.tolist<double>(); }

inline std::string Tensor::str() const {
  if (!defined()) return "[ Tensor (undefined) ]";
  std::string suffix;
  if (grad_fn()) suffix = "grad_fn=<" + grad_fn()->name() + ">";
  else if (requires_grad()) suffix = "requires_grad=True";
  return detail::format_tensor(sizes(), tolist<double>(), dtype(), suffix);
}
inline std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

// ---- operators --------------------------------------------------------------------------------
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double b) { return autograd::AddScalar::forward(a, b); }
inline Tensor operator-(const Tensor& a, double b) { return autograd::AddScalar::forward(a, -b, "SubBackward1"); }
inline Tensor operator*(const Tensor& a, double b) { return autograd::MulScalar::forward(a, b); }
inline Tensor operator/(const Tensor& a, double b) { return autograd::DivScalar::forward(a, b); }
inline Tensor operator+(double a, const Tensor& b) { return b + a; }
inline Tensor operator-(double a, const Tensor& b) { return autograd::RsubScalar::forward(b, a); }
inline Tensor operator*(double a, const Tensor& b) { return b * a; }
inline Tensor operator/(double a, const Tensor& b) { return pow(b, -1.0) * a; }
inline Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
inline Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
inline Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
inline Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
inline Tensor& operator+=(Tensor& a, double b) { return a.add_(b); }
inline Tensor& operator*=(Tensor& a, double b) { return a.mul_(b); }

}  // namespace tinytorch

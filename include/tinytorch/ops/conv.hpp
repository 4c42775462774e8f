// tinytorch/ops/conv.hpp — conv2d and max_pool2d on Tensors, without autograd: argument checks,
// output sizes, and the calls into backend/cpu/conv.hpp and backend/cpu/pooling.hpp.
//
//   conv2d(x (N, C_in, H, W), w (C_out, C_in/groups, kH, kW), b (C_out) or undefined)
//       -> (N, C_out, H_out, W_out),   H_out = floor((H + 2 pH - dH (kH - 1) - 1) / sH) + 1
//   max_pool2d_with_indices(x (N, C, H, W) or (C, H, W))
//       -> values and int64 indices (N, C, H_out, W_out) or (C, H_out, W_out), with
//          H_out = floor((H + 2 pH - dH (kH - 1) - 1 [+ sH - 1 with ceil_mode]) / sH) + 1,
//          minus 1 in ceil_mode when that last window would start in the bottom padding.
// Size2 is an int or an (h, w) pair, like PyTorch's _size_2_t / ExpandingArray<2>.
// Errors are tinytorch::Error with PyTorch's wording (torch 1.13 / 2.x ConvUtils.h, Convolution.cpp,
// Pool.h), prefixed by the op name; where tinytorch words it differently the comment says why.
// No autograd here: autograd/functions/conv.hpp records the nodes; functional.hpp is the user API.
// Chapter: chapters/01-training-loop.md ("A convolutional network").
// Reference: torch.nn.functional.conv2d and max_pool2d documentation (PyTorch 2.x).
#pragma once

#include <optional>
#include <string>
#include <tuple>

#include "tinytorch/backend/cpu/conv.hpp"
#include "tinytorch/backend/cpu/pooling.hpp"
#include "tinytorch/ops/dispatch.hpp"
#include "tinytorch/ops/shape.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN

// Size2 (an int or an (h, w) pair): core/shape.hpp

namespace ops {

namespace detail {
using tinytorch::detail::pair_str;  // core/shape.hpp

/// a * b + c, or an Error naming `op` when it leaves int64 (absurd kernel, padding or dilation).
inline int64_t checked_mul_add(int64_t a, int64_t b, int64_t c, const char* op) {
  int64_t r = 0;
  TT_CHECK(!__builtin_mul_overflow(a, b, &r) && !__builtin_add_overflow(r, c, &r), op,
           ": sizes overflow int64 (", a, " * ", b, " + ", c, ")");
  return r;
}

/// Checks conv2d's arguments (PyTorch's order and messages); returns the geometry.
inline backend::cpu::Conv2dGeometry conv2d_geometry(const Tensor& x, const Tensor& w, const Tensor& b, Size2 stride,
                                                    Size2 padding, Size2 dilation, int64_t groups) {
  check_cpu_only(x, "conv2d");
  check_cpu_only(w, "conv2d");
  TT_CHECK(x.dim() == 4, "conv2d: Expected 4D (batched) input to conv2d, but got input of size: ", shape_str(x.sizes()));
  // PyTorch derives the number of spatial dims from the weight and then complains about the stride
  // ("expected stride to be a single integer value or a list of 1 values ..."); this says what is wrong.
  TT_CHECK(w.dim() == 4, "conv2d: expected a 4-D weight (out_channels, in_channels/groups, kH, kW), but got weight of "
           "size ", shape_str(w.sizes()));
  TT_CHECK(groups > 0, "conv2d: non-positive groups is not supported");
  TT_CHECK(padding.h >= 0 && padding.w >= 0, "conv2d: negative padding is not supported");
  TT_CHECK(stride.h > 0 && stride.w > 0, "conv2d: non-positive stride is not supported");
  TT_CHECK(dilation.h > 0 && dilation.w > 0, "conv2d: non-positive dilation is not supported");
  const Shape& ws = w.sizes();
  TT_CHECK(ws[0] >= groups, "conv2d: Given groups=", groups, ", expected weight to be at least ", groups,
           " at dimension 0, but got weight of size ", shape_str(ws), " instead");
  TT_CHECK(ws[0] % groups == 0, "conv2d: Given groups=", groups, ", expected weight to be divisible by ", groups,
           " at dimension 0, but got weight of size ", shape_str(ws), " instead");
  TT_CHECK(x.sizes()[1] == ws[1] * groups, "conv2d: Given groups=", groups, ", weight of size ", shape_str(ws),
           ", expected input", shape_str(x.sizes()), " to have ", ws[1] * groups, " channels, but got ",
           x.sizes()[1], " channels instead");
  if (b.defined()) {
    check_cpu_only(b, "conv2d");
    TT_CHECK(b.dim() == 1 && b.sizes()[0] == ws[0], "conv2d: Given weight of size ", shape_str(ws),
             ", expected bias to be 1-dimensional with ", ws[0], " elements, but got bias of size ",
             shape_str(b.sizes()), " instead");
  }
  const int64_t H = x.sizes()[2], W = x.sizes()[3];
  const int64_t padded_h = checked_mul_add(2, padding.h, H, "conv2d"), padded_w = checked_mul_add(2, padding.w, W, "conv2d");
  const int64_t eff_h = checked_mul_add(dilation.h, ws[2] - 1, 1, "conv2d");
  const int64_t eff_w = checked_mul_add(dilation.w, ws[3] - 1, 1, "conv2d");
  TT_CHECK(padded_h >= eff_h && padded_w >= eff_w, "conv2d: Calculated padded input size per channel: (", padded_h,
           " x ", padded_w, "). Kernel size: (", eff_h, " x ", eff_w,
           "). Kernel size can't be greater than actual input size");
  TT_CHECK(w.dtype() == x.dtype(), "conv2d: Input type (", tensor_type_name(x.dtype()), ") and weight type (",
           tensor_type_name(w.dtype()), ") should be the same");
  if (b.defined()) {
    auto lower = [](DType d) {  // PyTorch's C++ type names in this message
      switch (d) {
        case kFloat64: return "double";
        case kFloat32: return "float";
        case kFloat16: return "c10::Half";
        case kBFloat16: return "c10::BFloat16";
        default: return "long int";
      }
    };
    TT_CHECK(b.dtype() == x.dtype(), "conv2d: Input type (", lower(x.dtype()), ") and bias type (", lower(b.dtype()),
             ") should be the same");
  }
  // PyTorch's CPU conv also runs on int64 (slowly); tinytorch convolves floats only.
  TT_CHECK(x.is_floating_point(), "conv2d: expected a floating point input (float32 or float64), got ",
           dtype_name(x.dtype()));
  backend::cpu::Conv2dGeometry g{};
  g.N = x.sizes()[0];
  g.C_in = x.sizes()[1];
  g.H = H;
  g.W = W;
  g.C_out = ws[0];
  g.kH = ws[2];
  g.kW = ws[3];
  g.sH = stride.h;
  g.sW = stride.w;
  g.pH = padding.h;
  g.pW = padding.w;
  g.dH = dilation.h;
  g.dW = dilation.w;
  g.groups = groups;
  g.H_out = (padded_h - eff_h) / stride.h + 1;
  g.W_out = (padded_w - eff_w) / stride.w + 1;
  return g;
}

inline Tensor conv2d_impl(const Tensor& x0, const Tensor& w0, const Tensor& b0, Size2 stride, Size2 padding,
                          Size2 dilation, int64_t groups, bool naive) {
  const auto g = conv2d_geometry(x0, w0, b0, stride, padding, dilation, groups);  // checks the dtypes too
  if (is_reduced_floating_point(x0.dtype())) {  // computed in float32, rounded once (as PyTorch 2.x)
    using ops::to_float32;
    return ops::to_dtype(conv2d_impl(to_float32(x0), to_float32(w0), to_float32(b0), stride, padding, dilation, groups, naive),
                         x0.dtype());
  }
  const Tensor x = contiguous(x0), w = contiguous(w0), b = b0.defined() ? contiguous(b0) : b0;
  Tensor y = make_tensor({g.N, g.C_out, g.H_out, g.W_out}, x.dtype());
  dispatch_floating(x.dtype(), "conv2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* bp = b.defined() ? b.data_ptr<T>() : nullptr;
    if (naive) backend::cpu::conv2d_naive(x.data_ptr<T>(), w.data_ptr<T>(), bp, y.data_ptr<T>(), g);
    else
      backend::dispatch::conv2d_kernel(x.device(), x.data_ptr<T>(), w.data_ptr<T>(), bp, y.data_ptr<T>(), g);
  });
  return y;
}

inline std::tuple<Tensor, Tensor, Tensor> conv2d_backward_impl(const Tensor& dy0, const Tensor& x0, const Tensor& w0,
                                                               Size2 stride, Size2 padding, Size2 dilation,
                                                               int64_t groups, bool need_dx, bool need_dw,
                                                               bool need_db, bool naive) {
  if (is_reduced_floating_point(x0.dtype())) {  // computed in float32, each gradient rounded once
    const DType dt = x0.dtype();
    auto [dx, dw, db] = conv2d_backward_impl(ops::to_dtype(dy0, kFloat32), ops::to_dtype(x0, kFloat32),
                                             ops::to_dtype(w0, kFloat32), stride, padding, dilation, groups, need_dx,
                                             need_dw, need_db, naive);
    auto back = [dt](const Tensor& t) { return t.defined() ? ops::to_dtype(t, dt) : t; };
    return {back(dx), back(dw), back(db)};
  }
  const auto g = conv2d_geometry(x0, w0, Tensor(), stride, padding, dilation, groups);
  TT_CHECK(dy0.sizes() == Shape({g.N, g.C_out, g.H_out, g.W_out}), "conv2d_backward: grad_output of size ",
           shape_str(dy0.sizes()), " does not match the output size ", shape_str({g.N, g.C_out, g.H_out, g.W_out}));
  const Tensor x = contiguous(x0), w = contiguous(w0), dy = contiguous(ops::to_dtype(dy0, x0.dtype()));
  Tensor dx, dw, db;
  if (need_dx) dx = make_tensor(x.sizes(), x.dtype());
  if (need_dw) dw = make_tensor(w.sizes(), w.dtype());
  if (need_db) db = make_tensor({g.C_out}, x.dtype());
  dispatch_floating(x.dtype(), "conv2d_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dxp = need_dx ? dx.data_ptr<T>() : nullptr;
    T* dwp = need_dw ? dw.data_ptr<T>() : nullptr;
    T* dbp = need_db ? db.data_ptr<T>() : nullptr;
    if (naive)
      backend::cpu::conv2d_backward_naive(x.data_ptr<T>(), w.data_ptr<T>(), dy.data_ptr<T>(), dxp, dwp, dbp, g);
    else
      backend::dispatch::conv2d_backward_kernel(x.device(), x.data_ptr<T>(), w.data_ptr<T>(), dy.data_ptr<T>(), dxp,
                                                dwp, dbp, g);
  });
  return {dx, dw, db};
}
}  // namespace detail

/// y = conv2d(x, w) + b for a 4-D x (N, C_in, H, W), by im2col + GEMM. b may be undefined.
/// Throws tinytorch::Error for the inputs PyTorch refuses (see conv2d_geometry) and for int64.
inline Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b = Tensor(), Size2 stride = 1,
                     Size2 padding = 0, Size2 dilation = 1, int64_t groups = 1) {
  return detail::conv2d_impl(x, w, b, stride, padding, dilation, groups, false);
}
/// The same by direct loops (backend::cpu::conv2d_naive): the reference the tests compare with.
inline Tensor conv2d_naive(const Tensor& x, const Tensor& w, const Tensor& b = Tensor(), Size2 stride = 1,
                           Size2 padding = 0, Size2 dilation = 1, int64_t groups = 1) {
  return detail::conv2d_impl(x, w, b, stride, padding, dilation, groups, true);
}
/// (dx, dw, db) of conv2d for grad_output dy; a gradient not asked for is undefined. x and w are
/// needed whatever is asked (x's shape for dx, w's for dw) but read only where the math uses them.
inline std::tuple<Tensor, Tensor, Tensor> conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w,
                                                          Size2 stride, Size2 padding, Size2 dilation, int64_t groups,
                                                          bool need_dx = true, bool need_dw = true,
                                                          bool need_db = true) {
  return detail::conv2d_backward_impl(dy, x, w, stride, padding, dilation, groups, need_dx, need_dw, need_db, false);
}
inline std::tuple<Tensor, Tensor, Tensor> conv2d_backward_naive(const Tensor& dy, const Tensor& x, const Tensor& w,
                                                                Size2 stride, Size2 padding, Size2 dilation,
                                                                int64_t groups, bool need_dx = true,
                                                                bool need_dw = true, bool need_db = true) {
  return detail::conv2d_backward_impl(dy, x, w, stride, padding, dilation, groups, need_dx, need_dw, need_db, true);
}

// ---- max pooling ------------------------------------------------------------------------------

namespace detail {
/// One spatial dim of PyTorch's pooling_output_shape (Pool.h), with its checks.
inline int64_t pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d, bool ceil_mode) {
  TT_CHECK(s != 0, "max_pool2d: stride should not be zero");
  TT_CHECK(pad >= 0, "max_pool2d: pad must be non-negative, but got pad: ", pad);
  // PyTorch 2.x compares with the *effective* (dilated) kernel; 1.13 compared with kernel_size.
  const int64_t eff = checked_mul_add(k - 1, d, 1, "max_pool2d");
  TT_CHECK(pad <= eff / 2, "max_pool2d: pad should be at most half of effective kernel size, but got pad=", pad,
           ", kernel_size=", k, " and dilation=", d);
  const int64_t num = checked_mul_add(2, pad, in, "max_pool2d") - eff + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;  // floor division (div_rtn)
  if (ceil_mode && (out - 1) * s >= in + pad) --out;  // the last window must start inside the image
  return out;
}

/// Checks max_pool2d's arguments (PyTorch's order and messages); returns the geometry.
inline backend::cpu::Pool2dGeometry pool2d_geometry(const Tensor& x, Size2 k, Size2 s, Size2 p, Size2 d,
                                                    bool ceil_mode) {
  check_cpu_only(x, "max_pool2d");
  TT_CHECK(x.dim() == 3 || x.dim() == 4, "max_pool2d: non-empty 3D or 4D (batch mode) tensor expected for input, "
           "but got input of size: ", shape_str(x.sizes()));
  TT_CHECK(k.h > 0 && k.w > 0, "max_pool2d: kernel size should be greater than zero, but got kH: ", k.h, " kW: ", k.w);
  TT_CHECK(s.h >= 0 && s.w >= 0, "max_pool2d: stride should be greater than zero, but got dH: ", s.h, " dW: ", s.w);
  TT_CHECK(d.h > 0 && d.w > 0, "max_pool2d: dilation should be greater than zero, but got dilationH: ", d.h,
           " dilationW: ", d.w);
  const int64_t nd = x.dim();
  const int64_t C = x.sizes()[nd - 3], H = x.sizes()[nd - 2], W = x.sizes()[nd - 1];
  const int64_t H_out = pool_out_size(H, k.h, p.h, s.h, d.h, ceil_mode);
  const int64_t W_out = pool_out_size(W, k.w, p.w, s.w, d.w, ceil_mode);
  TT_CHECK(C != 0 && H != 0 && W != 0,
           "max_pool2d: Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:",
           shape_str(x.sizes()));
  TT_CHECK(H_out >= 1 && W_out >= 1, "max_pool2d: Given input size: (", C, "x", H, "x", W, "). Calculated output size: (",
           C, "x", H_out, "x", W_out, "). Output size is too small");
  TT_CHECK(x.dtype() != kInt64, "max_pool2d: \"max_pool2d\" not implemented for 'Long'");
  backend::cpu::Pool2dGeometry g{};
  g.planes = (nd == 4 ? x.sizes()[0] : 1) * C;
  g.H = H;
  g.W = W;
  g.kH = k.h;
  g.kW = k.w;
  g.sH = s.h;
  g.sW = s.w;
  g.pH = p.h;
  g.pW = p.w;
  g.dH = d.h;
  g.dW = d.w;
  g.H_out = H_out;
  g.W_out = W_out;
  return g;
}

inline Shape pool_out_shape(const Tensor& x, const backend::cpu::Pool2dGeometry& g) {
  Shape s = x.sizes();
  s[s.size() - 2] = g.H_out;
  s[s.size() - 1] = g.W_out;
  return s;
}

inline std::tuple<Tensor, Tensor> max_pool2d_impl(const Tensor& x0, Size2 kernel_size, std::optional<Size2> stride,
                                                  Size2 padding, Size2 dilation, bool ceil_mode, bool naive) {
  if (is_reduced_floating_point(x0.dtype())) {  // a selection: float32 and back is exact (NaN payloads aside)
    auto [y, idx] = max_pool2d_impl(ops::to_dtype(x0, kFloat32), kernel_size, stride, padding, dilation, ceil_mode,
                                    naive);
    return {ops::to_dtype(y, x0.dtype()), idx};
  }
  const auto g = pool2d_geometry(x0, kernel_size, stride.value_or(kernel_size), padding, dilation, ceil_mode);
  const Tensor x = contiguous(x0);
  const Shape out_shape = pool_out_shape(x, g);
  Tensor y = make_tensor(out_shape, x.dtype()), idx = make_tensor(out_shape, kInt64);
  dispatch_floating(x.dtype(), "max_pool2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (naive) backend::cpu::max_pool2d_naive(x.data_ptr<T>(), y.data_ptr<T>(), idx.data_ptr<int64_t>(), g);
    else
      backend::dispatch::max_pool2d_kernel(x.device(), x.data_ptr<T>(), y.data_ptr<T>(), idx.data_ptr<int64_t>(), g);
  });
  return {y, idx};
}
}  // namespace detail

/// (values, indices) of 2-D max pooling over x (N, C, H, W) or (C, H, W); stride defaults to
/// kernel_size. indices are int64 flat positions h * W + w in each input plane (PyTorch's).
/// Throws tinytorch::Error for bad sizes (PyTorch's messages, see pool2d_geometry) and for int64 x.
inline std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, Size2 kernel_size,
                                                          std::optional<Size2> stride = std::nullopt,
                                                          Size2 padding = 0, Size2 dilation = 1,
                                                          bool ceil_mode = false) {
  return detail::max_pool2d_impl(x, kernel_size, stride, padding, dilation, ceil_mode, false);
}
/// The same by the definition (backend::cpu::max_pool2d_naive), for the tests.
inline std::tuple<Tensor, Tensor> max_pool2d_with_indices_naive(const Tensor& x, Size2 kernel_size,
                                                                std::optional<Size2> stride = std::nullopt,
                                                                Size2 padding = 0, Size2 dilation = 1,
                                                                bool ceil_mode = false) {
  return detail::max_pool2d_impl(x, kernel_size, stride, padding, dilation, ceil_mode, true);
}

/// dx of max pooling: dy (shape of the output) routed to `indices`; dx has `input_shape`.
inline Tensor max_pool2d_backward(const Tensor& dy0, const Tensor& indices, const Shape& input_shape, DType dtype) {
  if (is_reduced_floating_point(dtype))  // summed in float32, rounded once
    return to_dtype(max_pool2d_backward(dy0, indices, input_shape, kFloat32), dtype);
  TT_CHECK(dy0.sizes() == indices.sizes(), "max_pool2d_backward: grad_output of size ", shape_str(dy0.sizes()),
           " does not match indices of size ", shape_str(indices.sizes()));
  const Tensor dy = contiguous(to_dtype(dy0, dtype)), idx = contiguous(indices);
  const size_t nd = input_shape.size();
  backend::cpu::Pool2dGeometry g{};
  g.H = input_shape[nd - 2];
  g.W = input_shape[nd - 1];
  g.H_out = dy.sizes()[nd - 2];
  g.W_out = dy.sizes()[nd - 1];
  g.planes = (nd == 4 ? input_shape[0] : 1) * input_shape[nd - 3];
  Tensor dx = make_tensor(input_shape, dtype);
  dispatch_floating(dtype, "max_pool2d_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    backend::dispatch::max_pool2d_backward_kernel(dy.device(), dy.data_ptr<T>(), idx.data_ptr<int64_t>(),
                                                  dx.data_ptr<T>(), g);
  });
  return dx;
}

}  // namespace ops
TT_NAMESPACE_END  // namespace tinytorch

// tinytorch/nn/conv.hpp — nn::Conv2d: a learned 2-D convolution, y = conv2d(x, W) + b.
//
// Shapes: x (N, C_in, H, W) or (C_in, H, W); W (C_out, C_in/groups, kH, kW); b (C_out);
//         y (N, C_out, H_out, W_out), H_out = floor((H + 2 padding - dilation (kH - 1) - 1) / stride) + 1.
// Initialisation as PyTorch's _ConvNd.reset_parameters(): W by kaiming_uniform_(a = sqrt(5)), i.e.
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = C_in/groups * kH * kW, and b ~ U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)), drawn from `gen` or the default generator (the same distributions as PyTorch; the
// streams differ, see core/random.hpp).
// Backward: autograd::Convolution (ConvolutionBackward0), math in backend/cpu/conv.hpp.
// Not supported: padding="same"/"valid" and padding_mode other than zeros.
// Reference: torch.nn.Conv2d. Chapter: chapters/01-training-loop.md ("A convolutional network").
#pragma once

#include <cmath>

#include "tinytorch/nn/init.hpp"
#include "tinytorch/nn/module.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace nn {

class Conv2d : public Module {
 public:
  int64_t in_channels, out_channels;
  Size2 kernel_size, stride, padding, dilation;
  int64_t groups;
  Tensor weight, bias;

  /// Throws tinytorch::Error for non-positive channels, kernel size or groups, and for channels
  /// not divisible by groups (PyTorch's messages). stride/padding/dilation are checked by forward.
  Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size, Size2 stride = 1, Size2 padding = 0,
         Size2 dilation = 1, int64_t groups = 1, bool bias = true, Generator* gen = nullptr)
      : in_channels(in_channels), out_channels(out_channels), kernel_size(kernel_size), stride(stride),
        padding(padding), dilation(dilation), groups(groups) {
    TT_CHECK(in_channels > 0 && out_channels > 0, "Conv2d: in_channels and out_channels must be positive, got ",
             in_channels, " and ", out_channels);
    TT_CHECK(kernel_size.h > 0 && kernel_size.w > 0, "Conv2d: kernel_size must be positive, got ",
             detail::pair_str(kernel_size));
    TT_CHECK(groups > 0, "Conv2d: groups must be a positive integer");
    TT_CHECK(in_channels % groups == 0, "Conv2d: in_channels must be divisible by groups");
    TT_CHECK(out_channels % groups == 0, "Conv2d: out_channels must be divisible by groups");
    weight = register_parameter("weight", empty({out_channels, in_channels / groups, kernel_size.h, kernel_size.w}));
    init::kaiming_uniform_(weight, std::sqrt(5.0), gen);
    if (bias) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(init::fan_in(weight)));
      this->bias = register_parameter("bias", empty({out_channels}));
      init::uniform_(this->bias, -bound, bound, gen);
    }
  }
  Tensor forward(const Tensor& x) override { return conv2d(x, weight, bias, stride, padding, dilation, groups); }
  /// Throws tinytorch::Error when `weight` or `bias` was re-assigned after construction.
  std::shared_ptr<Module> clone() const override {
    check_member(weight, "weight");
    check_member(bias, "bias");
    auto m = clone_as<Conv2d>();
    m->weight = m->get_parameter("weight");
    if (bias.defined()) m->bias = m->get_parameter("bias");
    return m;
  }
  std::string name() const override { return "Conv2d"; }
  /// PyTorch's: "1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1)" (padding, dilation,
  /// groups and bias only when not the default).
  std::string extra_repr() const override {
    using detail::pair_str;
    std::string s = detail::str_cat(in_channels, ", ", out_channels, ", kernel_size=", pair_str(kernel_size),
                                    ", stride=", pair_str(stride));
    if (padding != Size2(0)) s += ", padding=" + pair_str(padding);
    if (dilation != Size2(1)) s += ", dilation=" + pair_str(dilation);
    if (groups != 1) s += detail::str_cat(", groups=", groups);
    if (!bias.defined()) s += ", bias=False";
    return s;
  }
};

}  TT_NAMESPACE_END  // namespace tinytorch::nn

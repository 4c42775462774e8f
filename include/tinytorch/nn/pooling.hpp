// tinytorch/nn/pooling.hpp — nn::MaxPool2d: the maximum of each window of a 2-D input.
//
// Shapes: x (N, C, H, W) or (C, H, W) -> (N, C, H_out, W_out),
//   H_out = floor((H + 2 padding - dilation (kernel_size - 1) - 1) / stride) + 1  (ceil with ceil_mode,
//   as long as the last window starts inside the image or its left padding); stride defaults to
//   kernel_size. No parameters. Backward sends each output's gradient to its window's (first)
//   maximum (autograd::MaxPool2dWithIndices, MaxPool2DWithIndicesBackward0).
// Reference: torch.nn.MaxPool2d. Chapter: chapters/01-training-loop.md ("A convolutional network").
#pragma once

#include <optional>

#include "tinytorch/nn/module.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace nn {

class MaxPool2d : public Module {
 public:
  Size2 kernel_size, stride, padding, dilation;
  bool ceil_mode;

  /// stride: nullopt means kernel_size (PyTorch's stride=None). Sizes are checked by forward
  /// (tinytorch::Error with PyTorch's messages).
  explicit MaxPool2d(Size2 kernel_size, std::optional<Size2> stride = std::nullopt, Size2 padding = 0,
                     Size2 dilation = 1, bool ceil_mode = false)
      : kernel_size(kernel_size), stride(stride.value_or(kernel_size)), padding(padding), dilation(dilation),
        ceil_mode(ceil_mode) {}
  Tensor forward(const Tensor& x) override { return max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode); }
  std::shared_ptr<Module> clone() const override { return clone_as<MaxPool2d>(); }
  std::string name() const override { return "MaxPool2d"; }
  /// "kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False". PyTorch prints each value
  /// as it was given (2 or (2, 2)); tinytorch prints an int when both dims agree, else a pair.
  std::string extra_repr() const override {
    auto v = [](const Size2& s) { return s.h == s.w ? std::to_string(s.h) : detail::pair_str(s); };
    return "kernel_size=" + v(kernel_size) + ", stride=" + v(stride) + ", padding=" + v(padding) +
           ", dilation=" + v(dilation) + ", ceil_mode=" + (ceil_mode ? "True" : "False");
  }
};

}  TT_NAMESPACE_END  // namespace tinytorch::nn

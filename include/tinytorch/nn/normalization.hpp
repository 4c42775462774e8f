// tinytorch/nn/normalization.hpp — nn::LayerNorm: normalisation over the last dims of each sample.
//
//   y = (x - mean) / sqrt(var + eps) * weight + bias
// mean and the biased var are taken over the last len(normalized_shape) dims, separately for
// every position of the leading dims; no running statistics, so training and evaluation compute
// the same thing.
// Shapes: x (*, normalized_shape); weight, bias: normalized_shape (when elementwise_affine;
// bias also needs bias=true); y like x.
// Backward: autograd::NativeLayerNorm (NativeLayerNormBackward0), autograd/functions/normalization.hpp.
// Reference: torch.nn.LayerNorm (torch/nn/modules/normalization.py; `bias` since PyTorch 2.1),
// torch.nn.functional.layer_norm; Ba, Kiros & Hinton, "Layer Normalization", 2016.
// Chapter: chapters/01-training-loop.md.
#pragma once

#include "tinytorch/nn/module.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace nn {

class LayerNorm : public Module {
 public:
  Shape normalized_shape;
  double eps;
  bool elementwise_affine;
  Tensor weight, bias;  ///< normalized_shape; weight ones, bias zeros (when elementwise_affine)

  /// LayerNorm({3}) normalises over a last dim of 3, LayerNorm({3, 4}) over the last two (the
  /// braces make a Shape, as libtorch's LayerNormOptions({3}); PyTorch also takes a bare int).
  /// Throws tinytorch::Error for an empty normalized_shape or a dim <= 0.
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true, bool bias = true)
      : normalized_shape(std::move(normalized_shape)), eps(eps), elementwise_affine(elementwise_affine) {
    TT_CHECK(!this->normalized_shape.empty(), "LayerNorm: normalized_shape must have at least one dim");
    for (int64_t d : this->normalized_shape)
      TT_CHECK(d > 0, "LayerNorm: normalized_shape must have positive dims, got ", shape_str(this->normalized_shape));
    if (elementwise_affine) {
      weight = register_parameter("weight", ones(this->normalized_shape));
      if (bias) this->bias = register_parameter("bias", zeros(this->normalized_shape));
    }
  }
  /// x: (*, normalized_shape) -> same shape. Throws tinytorch::Error when x does not end in
  /// normalized_shape (see layer_norm in functional.hpp).
  Tensor forward(const Tensor& x) override { return layer_norm(x, normalized_shape, weight, bias, eps); }

  /// Throws tinytorch::Error when `weight` or `bias` was re-assigned after construction.
  std::shared_ptr<Module> clone() const override {
    check_member(weight, "weight");
    check_member(bias, "bias");
    auto m = clone_as<LayerNorm>();
    if (weight.defined()) m->weight = m->get_parameter("weight");
    if (bias.defined()) m->bias = m->get_parameter("bias");
    return m;
  }
  std::string name() const override { return "LayerNorm"; }
  /// As PyTorch: "(3,), eps=1e-05, elementwise_affine=True" (the shape printed as a tuple).
  std::string extra_repr() const override {
    std::string shape = "(";
    for (size_t i = 0; i < normalized_shape.size(); ++i)
      shape += (i ? ", " : "") + std::to_string(normalized_shape[i]);
    shape += normalized_shape.size() == 1 ? ",)" : ")";
    return detail::str_cat(shape, ", eps=", eps, ", elementwise_affine=", elementwise_affine ? "True" : "False");
  }
};

}  TT_NAMESPACE_END  // namespace tinytorch::nn

// tinytorch/nn/init.hpp — parameter initialisation (torch.nn.init), in place, without autograd.
//
//   uniform_(t, a, b):             t ~ U(a, b)
//   kaiming_uniform_(t, a):        bound = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2))
//                                  nn.Linear uses a = sqrt(5), so bound = 1 / sqrt(fan_in)
//   xavier_uniform_(t, gain):      bound = gain * sqrt(6 / (fan_in + fan_out))  (Glorot & Bengio 2010;
//                                  nn.MultiheadAttention's in_proj_weight)
//   fan_in of a weight (out, in) is `in`, fan_out is `out` (each times the receptive field).
// Reference: torch/nn/init.py and torch/nn/modules/linear.py reset_parameters().
// Chapter: chapters/01-training-loop.md.
#pragma once

#include <cmath>

#include "tinytorch/functional.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace nn::init {

inline Tensor& uniform_(Tensor& t, double a, double b, Generator* gen = nullptr) {
  NoGradGuard ng;
  return t.uniform_(a, b, gen);
}
inline Tensor& normal_(Tensor& t, double mean, double std, Generator* gen = nullptr) {
  NoGradGuard ng;
  return t.normal_(mean, std, gen);
}
inline Tensor& zeros_(Tensor& t) {
  NoGradGuard ng;
  return t.zero_();
}
inline Tensor& constant_(Tensor& t, double v) {
  NoGradGuard ng;
  return t.fill_(v);
}
/// fan_in = size(1) * (receptive field); throws for tensors with fewer than 2 dims.
inline int64_t fan_in(const Tensor& t) {
  TT_CHECK(t.dim() >= 2, "init: Fan in can not be computed for tensor with fewer than 2 dimensions (shape ",
           shape_str(t.sizes()), ")");
  int64_t rf = 1;
  for (int64_t d = 2; d < t.dim(); ++d) rf *= t.sizes()[d];
  return t.sizes()[1] * rf;
}
/// fan_out = size(0) * (receptive field); throws for tensors with fewer than 2 dims.
inline int64_t fan_out(const Tensor& t) {
  TT_CHECK(t.dim() >= 2, "init: Fan out can not be computed for tensor with fewer than 2 dimensions (shape ",
           shape_str(t.sizes()), ")");
  int64_t rf = 1;
  for (int64_t d = 2; d < t.dim(); ++d) rf *= t.sizes()[d];
  return t.sizes()[0] * rf;
}
inline Tensor& xavier_uniform_(Tensor& t, double gain = 1.0, Generator* gen = nullptr) {
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in(t) + fan_out(t)));
  return uniform_(t, -bound, bound, gen);
}
inline Tensor& kaiming_uniform_(Tensor& t, double a = 0.0, Generator* gen = nullptr) {
  double gain = std::sqrt(2.0 / (1.0 + a * a));
  double bound = gain * std::sqrt(3.0 / static_cast<double>(fan_in(t)));
  return uniform_(t, -bound, bound, gen);
}

}  TT_NAMESPACE_END  // namespace tinytorch::nn::init

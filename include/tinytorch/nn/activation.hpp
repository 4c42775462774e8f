// tinytorch/nn/activation.hpp — ReLU, Sigmoid, Tanh, GELU, Flatten, Dropout as modules.
//
//   ReLU(x) = max(x, 0)   Sigmoid(x) = 1 / (1 + e^-x)   Tanh(x) = tanh x      (any shape)
//   GELU(x) = x Phi(x) = x/2 (1 + erf(x/sqrt 2)), or its tanh approximation  (gelu, functional.hpp)
//   Flatten(start_dim=1, end_dim=-1): (N, C, H, W) -> (N, C*H*W)
//   Dropout(p): in training, zeroes each element with probability p and scales the rest by
//               1/(1-p) (inverted dropout); identity in eval mode.
// Reference: torch.nn.ReLU / Sigmoid / Tanh / GELU / Flatten / Dropout; Hendrycks & Gimpel,
// "Gaussian Error Linear Units (GELUs)", 2016.
// Chapter: chapters/01-training-loop.md.
#pragma once

#include "tinytorch/nn/module.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace nn {

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override { return relu(x); }
  std::shared_ptr<Module> clone() const override { return clone_as<ReLU>(); }
  std::string name() const override { return "ReLU"; }
};

class Sigmoid : public Module {
 public:
  Tensor forward(const Tensor& x) override { return sigmoid(x); }
  std::shared_ptr<Module> clone() const override { return clone_as<Sigmoid>(); }
  std::string name() const override { return "Sigmoid"; }
};

class Tanh : public Module {
 public:
  Tensor forward(const Tensor& x) override { return tanh(x); }
  std::shared_ptr<Module> clone() const override { return clone_as<Tanh>(); }
  std::string name() const override { return "Tanh"; }
};

class GELU : public Module {
 public:
  std::string approximate;
  /// approximate: "none" (exact, erf) or "tanh"; anything else throws PyTorch's
  /// "approximate argument must be either none or tanh.".
  explicit GELU(std::string approximate = "none") : approximate(std::move(approximate)) {
    TT_CHECK(this->approximate == "none" || this->approximate == "tanh",
             "GELU: approximate argument must be either none or tanh. (got '", this->approximate, "')");
  }
  Tensor forward(const Tensor& x) override { return gelu(x, approximate); }
  std::shared_ptr<Module> clone() const override { return clone_as<GELU>(); }
  std::string name() const override { return "GELU"; }
  std::string extra_repr() const override { return "approximate='" + approximate + "'"; }
};

class Flatten : public Module {
 public:
  int64_t start_dim, end_dim;
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override { return x.flatten(start_dim, end_dim); }
  std::shared_ptr<Module> clone() const override { return clone_as<Flatten>(); }
  std::string name() const override { return "Flatten"; }
  std::string extra_repr() const override { return detail::str_cat("start_dim=", start_dim, ", end_dim=", end_dim); }
};

class Dropout : public Module {
 public:
  double p;
  /// nullptr: the default generator, which under DataParallel is each replica's own. A Generator
  /// given here is shared by clones; DataParallel refuses to replicate such a Dropout (its
  /// replicas' threads would share the one Generator: no data race, it is locked, but which
  /// replica gets which numbers would depend on thread timing, and runs would not repeat).
  Generator* gen;
  /// Throws tinytorch::Error unless 0 <= p <= 1.
  explicit Dropout(double p = 0.5, Generator* gen = nullptr) : p(p), gen(gen) {
    TT_CHECK(p >= 0 && p <= 1, "Dropout: dropout probability has to be between 0 and 1, but got ", p);
  }
  Tensor forward(const Tensor& x) override;
  /// Throws tinytorch::Error when replicated (DataParallel) with its own Generator (see `gen`).
  std::shared_ptr<Module> clone() const override {
    TT_CHECK(gen == nullptr || !tinytorch::detail::ReplicateClone::active(),
             "Dropout: cannot be replicated by DataParallel with its own Generator (the replicas' threads would "
             "share it, and the masks would depend on thread timing); construct it without one, and each replica draws "
             "from its own generator");
    return clone_as<Dropout>();
  }
  std::string name() const override { return "Dropout"; }
  std::string extra_repr() const override { return detail::str_cat("p=", p, ", inplace=False"); }
};

}  TT_NAMESPACE_END  // namespace tinytorch::nn

#if TT_HEADER_ONLY
#include "tinytorch/nn/activation.ipp"
#endif

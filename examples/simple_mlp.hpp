// examples/simple_mlp.hpp — the seed article's SimpleMLP: one Linear(2, 1) called "fc".
//
//   forward: x (B, 2) -> fc(x) (B, 1)
// Used by example_ddp (wrapped in DistributedDataParallel) and example_dp (wrapped in
// DataParallel). It shows how a module of yours implements clone(), which DataParallel needs to
// make its replicas: copy yourself with clone_as<...>(), then re-point your member handles.
// Chapters: chapters/05-data-parallel.md, chapters/06-distributed-data-parallel.md.
#pragma once

#include <tinytorch/tinytorch.hpp>

#include <memory>
#include <string>

namespace examples {

class SimpleMLP : public tinytorch::nn::Module {
 public:
  explicit SimpleMLP(tinytorch::Generator* gen = nullptr) {
    fc = register_module("fc", std::make_shared<tinytorch::nn::Linear>(2, 1, true, gen));
  }
  tinytorch::Tensor forward(const tinytorch::Tensor& x) override { return fc->forward(x); }  // (B,2)->(B,1)
  std::string name() const override { return "SimpleMLP"; }
  std::shared_ptr<Module> clone() const override {
    auto m = clone_as<SimpleMLP>();                          // a copy with its own "fc"...
    m->fc = m->get_submodule<tinytorch::nn::Linear>("fc");  // ...which the member now points at
    return m;
  }
  std::shared_ptr<tinytorch::nn::Linear> fc;
};

}  // namespace examples

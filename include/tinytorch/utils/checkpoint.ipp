// tinytorch/utils/checkpoint.ipp — the bodies of checkpoint.hpp: activation checkpointing (CheckpointFunction and the functions that record it).
//
// Not a header to include: checkpoint.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The declarations and their documentation are in checkpoint.hpp.
// Chapter: chapters/09-gradient-accumulation.md.
#pragma once

#include "tinytorch/utils/checkpoint.hpp"
#include "tinytorch/autograd/engine.hpp"
#include "tinytorch/autograd/node.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace utils {
namespace detail {

/// The node checkpoint() records: it keeps fn, its input and the RNG state, and its backward
/// re-runs fn. Prints as PyTorch's reentrant node, CheckpointFunctionBackward.
struct CheckpointFunction : autograd::Node {
  std::function<Tensor(const Tensor&)> fn;
  Tensor input;                     // x, saved (its version is checked before backward)
  bool input_requires_grad = false;
  std::unique_ptr<Generator> rng;   // the default generator as it was before fn ran (or null)
  Shape out_shape;
  DType out_dtype = kFloat32;

  std::string name() const override { return "CheckpointFunctionBackward"; }

  // y = fn(x)  =>  dx = (d fn / dx)^T dy, and d fn / d theta accumulated into theta.grad, both
  // from a backward through fn recomputed now.
  std::vector<Tensor> backward(const Tensor& dy) override {
    Tensor x = input.detach();  // a fresh leaf on x's data: the recomputed graph stops here
    if (input_requires_grad) x.requires_grad_(true);
    Tensor y;
    {
      AutoGradMode grad_on(true);  // backward nodes run with grad mode off: the recompute needs it on
      std::unique_ptr<Generator> replay;
      std::unique_ptr<GeneratorGuard> rng_guard;
      if (rng) {  // a copy, so that a retained graph can replay it again; the default generator
        replay = std::make_unique<Generator>(*rng);  // itself is not advanced by the recompute
        rng_guard = std::make_unique<GeneratorGuard>(replay.get());
      }
      y = fn(x);
    }
    TT_CHECK(y.defined() && y.sizes() == out_shape && y.dtype() == out_dtype,
             "checkpoint: Recomputed values for the output have different metadata than during the forward "
             "pass: ", y.defined() ? tensor_type_name(y.dtype()) + " " + shape_str(y.sizes()) : std::string("undefined"),
             " now, ", tensor_type_name(out_dtype), " ", shape_str(out_shape),
             " in the forward pass (fn must compute the same thing both times)");
    if (!y.requires_grad()) return {Tensor()};  // fn cut the graph: nothing to propagate
    autograd::run_backward(y, dy, /*retain_graph=*/false);  // parameters' .grad accumulate here
    return {input_requires_grad ? x.grad() : Tensor()};
  }
  void release_saved() override {
    input = Tensor();
    fn = nullptr;
    rng.reset();
  }
};

}  // namespace detail
TT_DECL Tensor checkpoint(std::function<Tensor(const Tensor&)> fn, const Tensor& x, bool preserve_rng_state) {
  TT_CHECK(static_cast<bool>(fn), "checkpoint: function is empty");
  TT_CHECK(x.defined(), "checkpoint: the input is an undefined tensor");
  if (!GradMode::is_enabled()) return fn(x);
  auto node = std::make_shared<detail::CheckpointFunction>();
  if (preserve_rng_state) node->rng = std::make_unique<Generator>(default_generator());
  Tensor y;
  if (x.requires_grad()) {
    NoGradGuard no_grad;
    y = fn(x);
  } else {
    Tensor probe = fn(x);                        // with grad on: does the output depend on
    TT_CHECK(probe.defined(), "checkpoint: the function returned an undefined tensor");
    if (!probe.requires_grad()) return probe;    // parameters that require grad?
    y = probe;                                   // yes: keep the values, drop the graph below
  }
  TT_CHECK(y.defined(), "checkpoint: the function returned an undefined tensor");
  // An integer output (argmax, ...) has no gradient: only floating point tensors can require
  // grad (PyTorch's rule), so it gets no node, as with use_reentrant=False.
  if (!is_floating_point(y.dtype())) return y;
  Tensor out = y.detach();  // a fresh tensor (never x itself) to carry the node
  y = Tensor();             // the probe's graph, and the activations it saved, die here
  node->input = node->save(x);
  node->input_requires_grad = x.requires_grad();
  node->fn = std::move(fn);
  node->out_shape = out.sizes();
  node->out_dtype = out.dtype();
  return autograd::set_history(out, node, {&x});
}
TT_DECL Tensor checkpoint_sequential(const std::vector<std::shared_ptr<nn::Module>>& functions, int64_t segments,
                                    const Tensor& input, bool preserve_rng_state) {
  const int64_t n = static_cast<int64_t>(functions.size());
  TT_CHECK(segments >= 1 && segments <= n, "checkpoint_sequential: segments must be between 1 and the number of "
           "modules (", n, "), got ", segments);
  for (int64_t j = 0; j < n; ++j)
    TT_CHECK(functions[static_cast<size_t>(j)] != nullptr, "checkpoint_sequential: module ", j, " is null");
  auto run = [functions](int64_t start, int64_t end) {  // modules start..end, inclusive
    return [functions, start, end](const Tensor& x) {
      Tensor h = x;
      for (int64_t j = start; j <= end; ++j) h = functions[static_cast<size_t>(j)]->forward(h);
      return h;
    };
  };
  const int64_t segment_size = n / segments;
  int64_t end = -1;
  Tensor h = input;
  for (int64_t start = 0; start < segment_size * (segments - 1); start += segment_size) {
    end = start + segment_size - 1;
    h = checkpoint(run(start, end), h, preserve_rng_state);
  }
  return run(end + 1, n - 1)(h);
}
TT_DECL Tensor checkpoint_sequential(const nn::Sequential& model, int64_t segments, const Tensor& input,
                                    bool preserve_rng_state) {
  std::vector<std::shared_ptr<nn::Module>> functions;
  for (const auto& c : model.named_children()) functions.push_back(c.second);
  return checkpoint_sequential(functions, segments, input, preserve_rng_state);
}

}  TT_NAMESPACE_END  // namespace tinytorch::utils

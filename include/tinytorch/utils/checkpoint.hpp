// tinytorch/utils/checkpoint.hpp — activation checkpointing: trade one extra forward for memory.
//
// Backward needs the activations of the forward pass (each node saves its inputs or outputs), so
// a network of L layers holds O(L) activations at the start of backward. checkpoint(fn, x) keeps
// only x instead:
//   forward:   y = fn(x) under no_grad (no graph, nothing saved inside fn); remember x (and the
//              RNG state);
//   backward:  given dy, run fn(x) again with grad on (same RNG state, so Dropout draws the same
//              mask), then backward through that fresh graph with dy: the parameters used by fn
//              get their gradients accumulated into .grad as usual, and x's gradient goes on
//              down the outer graph.
// So fn runs twice, the graph of fn lives only while its own backward runs, and the gradients are
// the same numbers as without checkpointing (the same kernels on the same values, in the same
// order). checkpoint_sequential(model, S, x) cuts a Sequential of L layers into S segments and
// checkpoints all but the last: it holds S segment inputs plus one segment's activations,
// ~ S + L/S, which is smallest, 2 sqrt(L), at S = sqrt(L) (Chen et al., 2016).
//
// Shapes: fn maps one tensor to one tensor, any shapes. The extra cost is one forward of every
// checkpointed segment (~1/3 of a forward + backward step, backward costing about two forwards).
// Chapter: chapters/09-gradient-accumulation.md ("Activation checkpointing").
// Reference: torch.utils.checkpoint.checkpoint(function, *args, use_reentrant=False,
// preserve_rng_state=True) and checkpoint_sequential (PyTorch 2.x docs); T. Chen et al.,
// "Training Deep Nets with Sublinear Memory Cost", arXiv:1604.06174 (2016).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../core/random.hpp"
#include "../functional.hpp"
#include "../nn/container.hpp"
#include "../core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

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
  std::vector<Tensor> apply(const Tensor& dy) override {
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

/// y = fn(x), computed without keeping fn's activations; backward recomputes them.
///   fn: any function of one tensor to one tensor (a module's forward, a block of layers); it may
///       use parameters (they get their .grad as without checkpointing) and Dropout.
///   x:  the input, any shape. It is kept for backward (that is the memory checkpointing costs).
///   preserve_rng_state: save the default generator's state before fn and replay it in the
///       recompute, so that Dropout (or any draw from the default generator) inside fn gives the
///       same numbers both times; the default generator itself is left where the forward left it.
///       A Generator given explicitly to a module (Dropout(p, &gen)) is not saved, as in PyTorch,
///       which saves only the global CPU and CUDA generators.
/// Returns fn(x). Its gradients (for x and for fn's parameters) equal those of fn(x) without
/// checkpointing, bit for bit when fn is deterministic.
/// Semantics are those of PyTorch's use_reentrant=False (the recommended mode):
///   * grad mode off (NoGradGuard): just fn(x);
///   * x does not require grad: the parameters inside fn still get gradients. To know whether
///     the output needs a gradient at all, fn runs once with grad mode on and its graph is
///     dropped at once (PyTorch learns the same from the graph it records). PyTorch's
///     use_reentrant=True instead warns "None of the inputs have requires_grad=True. Gradients
///     will be None" and leaves the parameters without gradients — the classic pitfall of
///     checkpointing a first layer; we do not reproduce it. If nothing inside requires grad, the
///     output does not either (no warning: there is nothing to lose).
/// Differences from PyTorch: one tensor in, one out (PyTorch takes any *args); the graph has one
/// node, CheckpointFunctionBackward (use_reentrant=True's name; use_reentrant=False shows fn's own
/// last node); backward re-enters the engine for fn's graph, as use_reentrant=True does.
/// Under DistributedDataParallel with find_unused_parameters, the parameters inside fn are not
/// reachable from the output's graph (only x is), so that search cannot see them; keep the option
/// off (its default), as PyTorch advises for reentrant checkpointing.
/// Throws tinytorch::Error if fn is empty or x undefined; from backward, if x was changed in
/// place after the forward (PyTorch's "modified by an inplace operation"), if the recomputed
/// output has another shape or dtype, or on a second backward without retain_graph.
inline Tensor checkpoint(std::function<Tensor(const Tensor&)> fn, const Tensor& x, bool preserve_rng_state = true) {
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

/// Runs `functions` one after another on `input`, cut into `segments` chunks of
/// functions.size() / segments modules; every chunk but the last runs under checkpoint() (the
/// last one, remainder included, runs normally: its activations are needed at once). Memory:
/// (segments - 1) chunk inputs + one chunk's activations; segments ~ sqrt(L) minimises it.
/// Throws tinytorch::Error unless 1 <= segments <= functions.size() (PyTorch raises
/// ZeroDivisionError / ValueError there), or if a module is null. Reference: torch.utils.checkpoint.checkpoint_sequential.
inline Tensor checkpoint_sequential(const std::vector<std::shared_ptr<nn::Module>>& functions, int64_t segments,
                                    const Tensor& input, bool preserve_rng_state = true) {
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

/// The same on the children of a Sequential.
inline Tensor checkpoint_sequential(const nn::Sequential& model, int64_t segments, const Tensor& input,
                                    bool preserve_rng_state = true) {
  std::vector<std::shared_ptr<nn::Module>> functions;
  for (const auto& c : model.named_children()) functions.push_back(c.second);
  return checkpoint_sequential(functions, segments, input, preserve_rng_state);
}

}  TT_NAMESPACE_END  // namespace tinytorch::utils

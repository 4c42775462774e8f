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

#include "tinytorch/core/random.hpp"
#include "tinytorch/functional.hpp"
#include "tinytorch/nn/container.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace utils {


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
TT_DECL Tensor checkpoint(std::function<Tensor(const Tensor&)> fn, const Tensor& x, bool preserve_rng_state = true);

/// Runs `functions` one after another on `input`, cut into `segments` chunks of
/// functions.size() / segments modules; every chunk but the last runs under checkpoint() (the
/// last one, remainder included, runs normally: its activations are needed at once). Memory:
/// (segments - 1) chunk inputs + one chunk's activations; segments ~ sqrt(L) minimises it.
/// Throws tinytorch::Error unless 1 <= segments <= functions.size() (PyTorch raises
/// ZeroDivisionError / ValueError there), or if a module is null. Reference: torch.utils.checkpoint.checkpoint_sequential.
TT_DECL Tensor checkpoint_sequential(const std::vector<std::shared_ptr<nn::Module>>& functions, int64_t segments,
                                    const Tensor& input, bool preserve_rng_state = true);

/// The same on the children of a Sequential.
TT_DECL Tensor checkpoint_sequential(const nn::Sequential& model, int64_t segments, const Tensor& input,
                                    bool preserve_rng_state = true);

}  TT_NAMESPACE_END  // namespace tinytorch::utils

#if TT_HEADER_ONLY
#include "tinytorch/utils/checkpoint.ipp"
#endif

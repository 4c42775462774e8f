// tinytorch/autograd/engine.hpp — backward(): topological sort, reverse sweep, accumulation.
//
//   1. From the root's grad_fn, a depth-first search lists every node reachable along
//      next_edges; reversed, the post-order puts every node before the nodes it feeds
//      (a topological order of the reversed graph).
//   2. The root gets d root / d root = `gradient` (1 for a scalar).
//   3. In that order each node takes the sum of the gradients that reached it (grad_buffer),
//      runs its hooks, calls apply(), and adds each result into the next node's grad_buffer.
//      A node reached along two paths (a diamond, a reused tensor) thus sees both contributions
//      before it runs.
//   4. Without retain_graph each node frees its saved tensors; running it again raises.
// Before a node runs, the tensors it saved are checked against their version counters: one that
// was changed in place after the forward pass raises PyTorch's "modified by an inplace operation"
// error (node.hpp, Node::check_saved_versions) instead of giving a wrong gradient.
// Backward runs with grad mode off: gradients are plain tensors (no higher-order gradients).
// Chapter: chapters/02-autograd.md; model: karpathy/micrograd engine.py.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>

#include "tinytorch/ops/elementwise.hpp"
#include "tinytorch/ops/shape.hpp"
#include "tinytorch/autograd/node.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

/// Runs register_hook hooks on the gradient `g` in registration order; a hook may replace the
/// gradient but not change its shape or dtype (PyTorch raises "hook 'hook' has changed the size
/// of value"; later nodes would read past a gradient of another size). `owner` names the tensor
/// the hooks belong to in the error message.
inline Tensor call_hooks(const std::vector<TensorHook>& hooks, Tensor g, const std::string& owner) {
  for (auto& hook : hooks) {
    Tensor r = hook(g);
    if (!r.defined()) continue;  // the hook keeps the gradient
    TT_CHECK(r.sizes() == g.sizes(), "backward: hook 'hook' has changed the size of value (a hook on ", owner,
             " returned a gradient of shape ", shape_str(r.sizes()), " for a value of shape ",
             shape_str(g.sizes()), ")");
    TT_CHECK(r.dtype() == g.dtype(), "backward: hook 'hook' has changed the type of value (was ",
             tensor_type_name(g.dtype()), " got ", tensor_type_name(r.dtype()), "; a hook on ", owner, ")");
    g = r;
  }
  return g;
}

inline std::vector<Tensor> AccumulateGrad::backward(const Tensor& grad_in) {
  std::shared_ptr<TensorImpl> impl = leaf.lock();
  if (!impl) return {};
  Tensor g = grad_in;
  if (!impl->hooks.empty()) g = call_hooks(impl->hooks, g, "a leaf tensor of shape " + shape_str(impl->shape));
  TT_CHECK(g.sizes() == impl->shape, "backward: gradient of shape ", shape_str(g.sizes()),
           " does not match the leaf's shape ", shape_str(impl->shape));
  // the gradient lives on the leaf's device; PyTorch's validate_outputs wording otherwise
  TT_CHECK(g.device() == impl->storage->device(), "backward: invalid gradient at index 0 - expected device ",
           impl->storage->device().str(), " but got ", g.device().str(), " (leaf of shape ", shape_str(impl->shape),
           ")");
  if (g.dtype() != impl->dtype) g = ops::to_dtype(g, impl->dtype);
  if (!impl->grad) {
    // Steal the buffer when nobody else can see it; otherwise copy, so that .grad never aliases
    // another tensor (an in-place zero_() on one grad must not change another).
    bool exclusive = g.impl_ptr().use_count() <= 2 && g.impl()->storage.use_count() == 1 && g.is_contiguous();
    impl->grad = exclusive ? g.impl_ptr() : ops::clone(g).impl_ptr();
  } else {
    Tensor acc(impl->grad);
    ops::binary_(acc, g, backend::cpu::AddOp{}, "AccumulateGrad");
  }
  Tensor self(impl);
  for (auto& hook : impl->post_accumulate_grad_hooks) hook(self);
  return {};
}

/// Nodes reachable from root, in the order backward must run them (root first).
/// Each pass stamps the nodes it visits with a fresh number instead of keeping a hash set.
inline std::vector<Node*> topological_order(Node* root) {
  static std::atomic<uint64_t> passes{0};
  const uint64_t mark = ++passes;
  std::vector<Node*> post;
  std::vector<std::pair<Node*, size_t>> stack;  // (node, next edge to visit)
  post.reserve(32);  // one allocation each for a small graph instead of one per doubling
  stack.reserve(32);
  root->visit_mark = mark;
  stack.push_back({root, 0});
  while (!stack.empty()) {
    auto& [node, i] = stack.back();
    if (i < node->next_edges.size()) {
      Node* child = node->next_edges[i++].fn.get();
      if (child && child->visit_mark != mark) {
        child->visit_mark = mark;
        stack.push_back({child, 0});
      }
    } else {
      post.push_back(node);
      stack.pop_back();
    }
  }
  std::reverse(post.begin(), post.end());
  return post;
}

/// Runs backward from `root` with d root / d root = `gradient` (see Tensor::backward).
inline void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  TT_CHECK(root.requires_grad(), "backward: element 0 of tensors does not require grad and does not "
           "have a grad_fn");
  Tensor seed = gradient;
  if (!seed.defined()) {
    TT_CHECK(root.numel() == 1, "backward: grad can be implicitly created only for scalar outputs "
             "(this tensor has shape ", shape_str(root.sizes()), "); pass a gradient of that shape");
    // ones_like(root): on the root's device (a GPU root gets its seed from the fill kernel)
    seed = ops::make_tensor(root.sizes(), root.dtype(), root.device());
    dispatch_all(root.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      backend::dispatch::fill_kernel(root.device(), seed.data_ptr<T>(), seed.numel(), static_cast<T>(1.0));
    });
  } else {
    TT_CHECK(seed.sizes() == root.sizes(), "backward: Mismatch in shape: grad_output[0] has a shape of ",
             shape_str(seed.sizes()), " and output[0] has a shape of ", shape_str(root.sizes()));
    // PyTorch's validate_outputs wording
    TT_CHECK(seed.device() == root.device(), "backward: invalid gradient at index 0 - expected device ",
             root.device().str(), " but got ", seed.device().str());
    if (seed.dtype() != root.dtype()) seed = ops::to_dtype(seed, root.dtype());
  }
  std::shared_ptr<Node> root_node = gradient_edge(root).fn;  // grad_fn, or a leaf's AccumulateGrad
  TT_CHECK(root_node != nullptr, "backward: element 0 of tensors does not require grad and does not have a "
           "grad_fn (a view made under NoGradGuard)");
  NoGradGuard no_grad;
  std::vector<Node*> order = topological_order(root_node.get());
  root_node->grad_buffer = seed;
  try {
    for (Node* node : order) {
      Tensor g = std::move(node->grad_buffer);
      node->grad_buffer = Tensor();
      if (!g.defined()) continue;  // no path carried a gradient here
      TT_CHECK(!(node->released && node->saves_tensors),
               "backward: Trying to backward through the graph a second time (or directly access saved "
               "tensors after they have already been freed). Saved intermediate values of the graph are "
               "freed when you call .backward(). Specify retain_graph=true if you need to backward through "
               "the graph a second time (in ", node->name(), ")");
      if (!node->hooks.empty()) g = call_hooks(node->hooks, std::move(g), "the output of " + node->name());
      node->check_saved_versions();  // a saved tensor changed in place since: raise, as PyTorch
      std::vector<Tensor> grads = node->apply(g);
      g = Tensor();
      if (!retain_graph) {
        node->release_saved();
        node->saved_versions.clear();
        node->released = true;
      }
      for (size_t i = 0; i < grads.size() && i < node->next_edges.size(); ++i) {
        Node* next = node->next_edges[i].fn.get();
        if (!next || !grads[i].defined()) continue;
        if (grads[i].dtype() != node->next_edges[i].dtype)  // e.g. float64 grad for a float32 input
          grads[i] = ops::to_dtype(grads[i], node->next_edges[i].dtype);
        if (!next->grad_buffer.defined()) next->grad_buffer = std::move(grads[i]);
        else next->grad_buffer = ops::binary(next->grad_buffer, grads[i], backend::cpu::AddOp{}, "backward");
      }
    }
  } catch (...) {
    for (Node* node : order) node->grad_buffer = Tensor();
    throw;
  }
}

}  TT_NAMESPACE_END  // namespace tinytorch::autograd

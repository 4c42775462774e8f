// labs/02-autograd/autograd.cpp — your nodes and engine (lab 02; the tasks are in lab.hpp).
//
// Check your work:   scripts/lab.sh check 02, from the tinytorch clone (add the --dir you gave to start)
// Chapter: chapters/02-autograd.md, sections 2.1-2.5.
// BEGIN REFERENCE ONLY
#ifndef TT_LAB_REFERENCE
#error "labs/02-autograd/autograd.cpp is the reference solution: a student build must compile the student's copy (scripts/lab.sh start 02)"
#endif
// END REFERENCE ONLY
#include "lab.hpp"

#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace lab02 {

using tinytorch::autograd::Node;

Tensor Sigmoid::forward(AutogradContext* ctx, const Tensor& x) {
  // BEGIN SOLUTION sigmoid
  Tensor y = 1.0 / (1.0 + (-x).exp());
  ctx->save_for_backward({y});
  return y;
  // END SOLUTION
}

tensor_list Sigmoid::backward(AutogradContext* ctx, tensor_list grad_outputs) {
  // BEGIN SOLUTION sigmoid
  const Tensor y = ctx->get_saved_variables()[0];
  return {grad_outputs[0] * y * (1.0 - y)};
  // END SOLUTION
}

Tensor LinearFn::forward(AutogradContext* ctx, const Tensor& x, const Tensor& W, const Tensor& b) {
  // BEGIN SOLUTION linear
  ctx->save_for_backward({x, W});
  return x.matmul(W.t()) + b;
  // END SOLUTION
}

tensor_list LinearFn::backward(AutogradContext* ctx, tensor_list grad_outputs) {
  // BEGIN SOLUTION linear
  const tensor_list saved = ctx->get_saved_variables();
  const Tensor &x = saved[0], &W = saved[1], &dy = grad_outputs[0];
  Tensor dx = ctx->needs_input_grad(0) ? dy.matmul(W) : Tensor();
  Tensor dW = ctx->needs_input_grad(1) ? dy.t().matmul(x) : Tensor();
  Tensor db = ctx->needs_input_grad(2) ? dy.sum(0) : Tensor();
  return {dx, dW, db};
  // END SOLUTION
}

std::vector<Node*> topological_order(Node* root) {
  // BEGIN SOLUTION topo_order
  // Depth-first with an explicit stack; a node is emitted after all it leads to (post-order),
  // and the reversed post-order puts every node before the nodes its edges lead to.
  std::vector<Node*> post;
  std::unordered_set<Node*> seen{root};
  std::vector<std::pair<Node*, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->next_edges.size()) {
      Node* child = node->next_edges[next++].fn.get();
      if (child != nullptr && seen.insert(child).second) stack.push_back({child, 0});
    } else {
      post.push_back(node);
      stack.pop_back();
    }
  }
  return std::vector<Node*>(post.rbegin(), post.rend());
  // END SOLUTION
}

void run_backward(const Tensor& loss) {
  // BEGIN SOLUTION engine
  tinytorch::NoGradGuard no_grad;
  Node* root = loss.grad_fn().get();
  std::unordered_map<Node*, Tensor> grads{{root, tinytorch::ones_like(loss)}};
  for (Node* node : topological_order(root)) {
    auto it = grads.find(node);
    if (it == grads.end()) continue;  // no gradient reached this node
    const Tensor g = std::move(it->second);
    grads.erase(it);
    const std::vector<Tensor> out = node->apply(g);
    for (size_t i = 0; i < out.size() && i < node->next_edges.size(); ++i) {
      Node* next = node->next_edges[i].fn.get();
      if (next == nullptr || !out[i].defined()) continue;
      auto [slot, fresh] = grads.try_emplace(next, out[i]);
      if (!fresh) slot->second = slot->second + out[i];
    }
  }
  // END SOLUTION
}

}  // namespace lab02

// labs/02-autograd/lab.hpp — lab 02: autograd from both sides. Write two nodes with the custom
// function API (what every op of the library is: a forward that records, a backward that maps
// d loss/d output to d loss/d inputs), then the engine that runs a graph of them. Your file is
// autograd.cpp.
//
// Custom functions (tinytorch/autograd/function.hpp, PyTorch's torch.autograd.Function):
//   struct F : Function<F> {
//     static Tensor forward(AutogradContext* ctx, <inputs>);      // grad mode is off in here
//     static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs);
//   };                                                           // one gradient per forward input
//   Tensor y = F::apply(<inputs>);
//   ctx->save_for_backward({...}) / ctx->get_saved_variables() / ctx->needs_input_grad(i)
// The graph (tinytorch/autograd/node.hpp): t.grad_fn() is the Node that made t; node->next_edges[i]
// .fn is the Node its i-th input's gradient goes to (the input's own grad_fn, or for a leaf that
// requires grad its AccumulateGrad node, which adds what it receives into leaf.grad; nullptr when
// the input needs no gradient). node->apply(g) takes d loss/d (node's output) and returns one
// gradient per next edge (undefined where none).
// Chapter: chapters/02-autograd.md (2.1 the graph, 2.3 topological order, 2.4 the engine loop,
// 2.5 gradcheck). The library's versions, to compare with once you are done:
// include/tinytorch/autograd/engine.hpp (topological_order, run_backward) and
// autograd/functions/elementwise.hpp (SigmoidBackward0). Model: karpathy/micrograd's engine.py.
#pragma once

#include <tinytorch/tinytorch.hpp>

#include <vector>

namespace lab02 {

using tinytorch::Tensor;
using tinytorch::autograd::AutogradContext;
using tinytorch::autograd::tensor_list;

/// Task sigmoid. y = 1 / (1 + e^-x) elementwise, any shape. Save the *output* for backward:
/// dy/dx = y (1 - y), so backward needs y only. backward returns {grad_outputs[0] * y * (1 - y)}.
struct Sigmoid : tinytorch::autograd::Function<Sigmoid> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x);
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs);
};

/// Task linear. y = x W^T + b: x (N, in), W (out, in), b (out) -> y (N, out), PyTorch's
/// F.linear. backward returns {dx, dW, db} for dy (N, out):
///   dx = dy W (N, in),  dW = dy^T x (out, in),  db = dy summed over N (out)
/// computing only the gradients ctx->needs_input_grad(i) asks for (an undefined Tensor() for the
/// others): a frozen weight costs no matrix product.
struct LinearFn : tinytorch::autograd::Function<LinearFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& W, const Tensor& b);
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs);
};

/// Task topo_order. Every node reachable from root through next_edges (nullptr edges skipped),
/// each exactly once, in an order where a node comes before every node its next_edges lead to
/// (so it has received all its gradient before it runs); root first. Without recursion: a chain
/// of 200,000 nodes must not overflow the stack (use an explicit stack).
std::vector<tinytorch::autograd::Node*> topological_order(tinytorch::autograd::Node* root);

/// Task engine. loss.backward() for a scalar `loss` with a grad_fn, with your topological_order:
/// d loss/d loss = 1 (tinytorch::ones_like(loss)); each node, in order, applies to the sum of the
/// gradients that reached it and passes each result along its next_edges (a node reached by
/// several paths gets their sum; AccumulateGrad nodes write the leaves' .grad themselves).
/// Gradients are computed with grad mode off (tinytorch::NoGradGuard).
void run_backward(const Tensor& loss);

}  // namespace lab02

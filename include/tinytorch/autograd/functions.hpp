// tinytorch/autograd/functions.hpp — the autograd nodes, one struct per differentiable op with its
// forward and backward side by side. This header is the index: it includes one file per op family.
//   functions/common.hpp         record(), grad_math (what the family files share)
//   functions/elementwise.hpp    + - * /, neg, exp/log/sqrt/abs/relu/sigmoid/tanh/pow, maximum/minimum,
//                                pow of tensors, floor_divide, div with a rounding mode, trunc,
//                                remainder/fmod, clamp, where
//   functions/reduce.hpp         sum/mean, max/min (with indices), amax/amin
//   functions/shape.hpp          reshape/view, transpose, permute, expand/squeeze, slices, copy, cat
//   functions/linalg.hpp         mm, linear, bmm
//   functions/softmax.hpp, embedding.hpp, attention.hpp   softmax, log_softmax; embedding (a lookup
//                                of rows); the fused scaled_dot_product_attention
//   functions/loss.hpp, normalization.hpp, conv.hpp       mse_loss, nll_loss; batch_norm,
//                                layer_norm; conv2d, max_pool2d
// A family keeps its file stem on the floors below where it has code (elementwise and reduce on
// every floor: ops/, backend/cpu/, backend/cuda/; linalg's kernels are backend/*/gemm), so one op
// reads top to bottom in one column: functional.hpp -> autograd/functions/<family> ->
// ops/<family> -> backend/{cpu,cuda}/<family>.
// Each struct is a Node. Its static forward() computes the result with ops/ and, when an input
// requires grad, records the node with the tensors backward needs; its backward() maps
// d loss/d output to d loss/d input_i (the engine enters through Node::apply, which calls it).
// The derivative is written above each backward() (y = a * b  =>  da = dy * b,  db = dy * a).
// Broadcast inputs receive their gradient summed back to their own shape (ops::sum_to).
// backward() runs with grad mode off and computes with ops/ and grad_math (functions/common.hpp),
// never with Tensor's operators, which are defined a layer above (functional.ipp).
// Tensors backward reads are kept through Node::save(t) (node.hpp), not t.detach(): save also
// remembers t's version, so that an in-place change of t before backward raises, as in PyTorch.
// Save exactly what PyTorch's derivatives.yaml saves (Pointwise: Saves::Input / Output).
// Node names are PyTorch's (MulBackward0, ...). Where tinytorch fuses what PyTorch records as
// two nodes (Linear's addmm with W^T), the docstring says so.
// Chapter: chapters/02-autograd.md. Reference: PyTorch tools/autograd/derivatives.yaml.
#pragma once

#include "tinytorch/autograd/functions/attention.hpp"
#include "tinytorch/autograd/functions/common.hpp"
#include "tinytorch/autograd/functions/conv.hpp"
#include "tinytorch/autograd/functions/elementwise.hpp"
#include "tinytorch/autograd/functions/embedding.hpp"
#include "tinytorch/autograd/functions/linalg.hpp"
#include "tinytorch/autograd/functions/loss.hpp"
#include "tinytorch/autograd/functions/normalization.hpp"
#include "tinytorch/autograd/functions/reduce.hpp"
#include "tinytorch/autograd/functions/shape.hpp"
#include "tinytorch/autograd/functions/softmax.hpp"

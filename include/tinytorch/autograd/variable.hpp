// tinytorch/autograd/variable.hpp — Tensor's autograd methods: requires_grad / requires_grad_,
// grad / set_grad, grad_fn, is_leaf, backward, detach / detach_, register_hook,
// register_post_accumulate_grad_hook.
//
// They are declared in tensor.hpp with their documentation and defined here, on the autograd
// layer, because they reach the engine (backward: autograd/engine.hpp run_backward) and the view
// rules (autograd/inplace.hpp: a view whose base was changed in place gets its grad_fn remade
// before requires_grad or grad_fn answer). PyTorch keeps the same methods in
// torch/csrc/autograd/variable.cpp, hence the name.
// A program that uses autograd without the differentiable API (tests/layers/autograd_only.cpp)
// includes this header and autograd/functions.hpp; functional.hpp includes it for everyone else.
// Chapter: chapters/02-autograd.md. Reference: torch.Tensor.requires_grad_, .backward, .detach,
// .register_hook, .register_post_accumulate_grad_hook.
#pragma once

#include "tinytorch/tensor.hpp"
#include "tinytorch/core/config.hpp"  // TT_HEADER_ONLY

#if TT_HEADER_ONLY
#include "tinytorch/autograd/variable.ipp"
#endif

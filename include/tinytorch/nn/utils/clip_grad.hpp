// tinytorch/nn/utils/clip_grad.hpp — gradient clipping: clip_grad_norm_ and clip_grad_value_.
//
// clip_grad_norm_(params, max_norm, norm_type = 2):
//   total = || (||g_1||_p, ||g_2||_p, ...) ||_p     one norm over all gradients together, as if
//                                                   they were concatenated into one vector
//   coef  = min(max_norm / (total + 1e-6), 1)
//   g_i  *= coef   for every gradient (in place)        returns total (before clipping)
// p = inf is the largest |g| (and -inf the smallest, p = 0 the count of non-zeros: torch.norm's
// conventions). Parameters whose .grad is undefined are skipped. The 1e-6 keeps the division
// finite for zero gradients and makes the clipped norm land just below max_norm.
// clip_grad_value_(params, clip_value): every gradient element clamped to [-clip_value, clip_value].
// Used between backward() and optimizer.step(); with DDP, after backward (the gradients are then
// the averaged ones, identical on every rank, so every rank clips the same way).
// Reference: torch.nn.utils.clip_grad_norm_ / clip_grad_value_ (torch/nn/utils/clip_grad.py,
// PyTorch 2.x); Pascanu, Mikolov & Bengio, "On the difficulty of training recurrent neural
// networks", ICML 2013. Chapter: chapters/01-training-loop.md.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "tinytorch/nn/module.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace nn::utils {


/// Scales all gradients in place so that their joint p-norm is at most max_norm (see the top of
/// this file). parameters: tensors whose .grad is used (undefined .grad: skipped). Returns the
/// total norm before clipping, a 0-d tensor of the gradients' dtype (float64 if any is float64)
/// on their device (gradients on a CUDA device are reduced there: the host reads only the total
/// norm; p = inf and p = 0 still copy them to the host);
/// a float32 0 when no parameter has a gradient (nothing is changed then).
/// Throws tinytorch::Error when error_if_nonfinite and the total norm is nan or inf (nothing is
/// changed then), with PyTorch's message; otherwise a non-finite norm scales by it (nan
/// gradients), as PyTorch.
TT_DECL Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                              bool error_if_nonfinite = false);
/// The same for one tensor (torch.nn.utils.clip_grad_norm_ accepts a single Tensor too).
TT_DECL Tensor clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                              bool error_if_nonfinite = false);

/// Clamps every gradient element to [-clip_value, clip_value] in place (undefined .grad:
/// skipped). As torch.clamp, nan stays nan, and min(max(g, -v), v) is v everywhere when v < 0.
TT_DECL void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
TT_DECL void clip_grad_value_(const Tensor& parameter, double clip_value);

}  TT_NAMESPACE_END  // namespace tinytorch::nn::utils

#if TT_HEADER_ONLY
#include "tinytorch/nn/utils/clip_grad.ipp"
#endif

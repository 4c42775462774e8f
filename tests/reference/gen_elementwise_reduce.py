#!/usr/bin/python3
# tests/reference/gen_elementwise_reduce.py — generates tests/reference/elementwise_reduce_ref.hpp.
#
# The elementwise and reduction ops of tests/test_elementwise_reduce.cpp (functional.hpp): min /
# argmin / amax / amin, maximum / minimum, pow with a tensor exponent or a number base,
# floor_divide / remainder / fmod, the six comparisons with tensors and numbers, clamp with
# optional and tensor bounds, where, sum / mean over a list of dims, div with a rounding mode and
# trunc. For every
# case this script builds the inputs in PyTorch and records, as gen_ops.py does:
#   <case>.in<i>     the inputs (float32/float64 values, or int64; where's condition is stored as
#                    int64 0/1, the C++ side's bool stand-in, and turned into bool here)
#   <case>.out       the forward result (a bool result is stored as int64 0/1: tinytorch's
#                    comparisons return int64); its dtype is the dtype tinytorch must produce
#   <case>.gout      a fixed upstream gradient (same shape as out)
#   <case>.grad<i>   in<i>.grad after out.backward(gout) (float inputs only)
#   <case>.<extra>   side results (min's indices)
# and the case table: the number of inputs, out.grad_fn.name(), whether backward runs (false for
# floor_divide, whose grad_fn is torch::autograd::NotImplemented: backward raises) and whether
# gradcheck applies (false where an input sits on a tie, a kink, a jump, or a NaN).
# The C++ twins of the cases are in tests/test_elementwise_reduce.cpp.
#
# Run with Debian's PyTorch (python3-torch), not the python3 on PATH:
#   /usr/bin/python3 tests/reference/gen_elementwise_reduce.py
# Float values are written as repr(float(x)) (exact for float32 and float64); int64 values go to a
# separate int64_t array, so values beyond 2^53 stay exact.
# Number operands use aten's Scalar overloads where Python would wrap the number into a tensor
# (aten.pow.Scalar: PowBackward2, as libtorch's C++ torch::pow(Scalar, Tensor) records).
import math
import os

import torch

torch.manual_seed(0)
f32, f64, i64, b8 = torch.float32, torch.float64, torch.int64, torch.bool
aten = torch.ops.aten
nan, inf = float("nan"), float("inf")

DTYPE_CODE = {f32: 0, f64: 1, i64: 2}

arrays = []  # (name, tensor)
cases = []   # (name, n_inputs, grad_fn name, backward, gradcheck)


def rnd(*shape, lo=-2.0, hi=2.0, away=None, dtype=f32):
    """Uniform values in [lo, hi) rounded to 4 decimals; `away` pushes |x - k| >= 0.05 for k in away."""
    t = torch.rand(tuple(shape), dtype=torch.float64) * (hi - lo) + lo
    t = torch.round(t * 1e4) / 1e4
    if away is not None:
        for k in away:
            near = (t - k).abs() < 0.05
            t = torch.where(near, t + torch.where(t >= k, 0.1, -0.1).to(t.dtype), t)
    return t.to(dtype)


def pos(*shape, lo=0.5, hi=2.5, dtype=f32):
    return rnd(*shape, lo=lo, hi=hi, dtype=dtype)


def T(values, dtype=f32):
    return torch.tensor(values, dtype=dtype)


def separated(draw, gap=0.05):
    """Inputs from draw() whose pairs (broadcast) all differ by at least `gap`, redrawn until they
    do: no ties and no kinks for gradcheck."""
    for _ in range(1000):
        tensors = draw()
        ok = all(bool(((tensors[i].double() - tensors[j].double()).abs() >= gap).all())
                 for i in range(len(tensors)) for j in range(i + 1, len(tensors)))
        if ok:
            return list(tensors)
    raise RuntimeError("separated: no draw without near-ties")


def case(name, inputs, fn, gradcheck=True, backward=True):
    """inputs: tensors (float ones get requires_grad); fn(*inputs) -> out or (out, {extra})."""
    leaves = []
    for t in inputs:
        t = t.clone().detach()
        if t.is_floating_point():
            t.requires_grad_(True)
        leaves.append(t)
    res = fn(*leaves)
    extras = {}
    if isinstance(res, tuple):
        res, extras = res
    for i, t in enumerate(leaves):
        arrays.append((f"{name}.in{i}", t.detach()))
    out = res.detach()
    arrays.append((f"{name}.out", out.long() if out.dtype == b8 else out))
    for k, v in extras.items():
        arrays.append((f"{name}.{k}", v.detach()))
    grad_fn = res.grad_fn.name() if res.grad_fn is not None else ""
    if res.requires_grad and backward:
        gout = rnd(*res.shape, lo=-1.0, hi=1.0).to(res.dtype)
        res.backward(gout)
        arrays.append((f"{name}.gout", gout))
        for i, t in enumerate(leaves):
            if t.requires_grad:
                g = t.grad if t.grad is not None else torch.zeros_like(t)
                arrays.append((f"{name}.grad{i}", g))
    else:
        gradcheck = False
    cases.append((name, len(leaves), grad_fn, backward, gradcheck))


def min_dim(x, dim, keepdim=False):
    v, i = x.min(dim, keepdim=keepdim)
    return v, {"indices": i}


# ---- min / argmin ------------------------------------------------------------------------------
case("min_all", [rnd(3, 4)], lambda x: x.min())
case("min_all_ties", [T([[1.0, -3.0, 2.0], [-3.0, 0.5, -3.0]])], lambda x: x.min(), gradcheck=False)
case("min_all_nan", [T([[1.0, nan, 2.0], [nan, -5.0, 0.0]])], lambda x: x.min(), gradcheck=False)
case("max_all_nan", [T([[1.0, nan, 2.0], [3.0, 7.0, nan]])], lambda x: x.max(), gradcheck=False)
case("min_all_0d", [T(1.5)], lambda x: x.min())
case("min_dim", [rnd(3, 4)], lambda x: min_dim(x, 1))
case("min_dim_keepdim", [rnd(3, 4)], lambda x: min_dim(x, 0, True))
case("min_dim_ties", [T([[2.0, 1.0, 1.0, 5.0], [7.0, 7.0, 7.0, 7.0], [0.0, -1.0, 0.0, -1.0]])],
     lambda x: min_dim(x, 1), gradcheck=False)
case("min_dim_neg", [rnd(2, 3, 4)], lambda x: min_dim(x, -2))
case("min_dim_nan", [T([[1.0, nan, 0.0, nan], [3.0, 2.0, 1.0, 0.0]])], lambda x: min_dim(x, 1), gradcheck=False)
case("min_dim_int64", [T([[3, 1, 2], [0, 5, 0]], i64)], lambda x: min_dim(x, 1))
case("argmin_all_ties", [T([[4.0, 1.0, 2.0], [1.0, 5.0, 1.0]])], lambda x: x.argmin())
case("argmin_dim_ties", [T([[1.0, 0.0, 0.0], [3.0, 3.0, 4.0], [-1.0, -1.0, -1.0]])], lambda x: x.argmin(1))
case("argmin_dim0_keepdim", [T([[1.0, 4.0, 4.0], [3.0, -4.0, 0.0], [1.0, -1.0, 5.0]])],
     lambda x: x.argmin(0, keepdim=True))
case("argmin_nan", [T([[1.0, nan, 0.0], [nan, 2.0, nan]])], lambda x: x.argmin(1))
case("argmin_all_nan", [T([[1.0, 0.0, nan], [nan, 2.0, -1.0]])], lambda x: x.argmin())
# ---- amax / amin ----------------------------------------------------------------------------------
case("amax_dim", [rnd(3, 4)], lambda x: x.amax(1))
case("amax_dims_keepdim", [rnd(2, 3, 4)], lambda x: x.amax((0, 2), keepdim=True))
case("amax_all", [rnd(2, 3)], lambda x: x.amax())
case("amax_neg_dims", [rnd(2, 3, 4)], lambda x: x.amax((-1, 0)))
case("amax_ties", [T([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])], lambda x: x.amax(1), gradcheck=False)
case("amax_ties_all", [T([[1.0, 3.0, 3.0], [3.0, 2.0, 0.0]])], lambda x: x.amax((0, 1)), gradcheck=False)
case("amax_nan", [T([[1.0, nan, 3.0], [0.0, 4.0, 2.0]])], lambda x: x.amax(1), gradcheck=False)
case("amax_int64", [T([[3, 1, 2], [0, 5, 0]], i64)], lambda x: x.amax(0))
case("amax_0d", [T(2.5)], lambda x: x.amax())
case("amin_dim", [rnd(3, 4)], lambda x: x.amin(0))
case("amin_dims", [rnd(2, 3, 4)], lambda x: x.amin((1, 2)))
case("amin_ties", [T([[1.0, -3.0, -3.0, 0.0], [2.0, 2.0, 5.0, 2.0]])], lambda x: x.amin(1, keepdim=True),
     gradcheck=False)
# ---- maximum / minimum ------------------------------------------------------------------------
case("maximum", separated(lambda: (rnd(2, 3), rnd(2, 3))), lambda a, b: torch.maximum(a, b))
case("maximum_bcast", [rnd(3, 1, away=[-1.2, 0.3]), T([-1.2, 0.3, 1.9, -0.6])], lambda a, b: torch.maximum(a, b))
case("maximum_ties", [T([[1.0, 2.0, 3.0]]), T([[1.0, 0.0, 3.0], [2.0, 2.0, 2.0]])],
     lambda a, b: torch.maximum(a, b), gradcheck=False)
case("maximum_nan", [T([1.0, nan, 3.0, nan]), T([2.0, 1.0, nan, nan])], lambda a, b: torch.maximum(a, b),
     gradcheck=False)
case("maximum_mixed_dtype", [rnd(2, 3, away=[-1.0, 0.0, 1.0]), T([1, -1, 0], i64)], lambda a, b: torch.maximum(a, b))
case("maximum_f32_f64", separated(lambda: (rnd(2, 3), rnd(2, 3, dtype=f64))), lambda a, b: torch.maximum(a, b))
case("maximum_int64", [T([1, 5, -3], i64), T([[2], [-7]], i64)], lambda a, b: torch.maximum(a, b))
case("max_binary", [rnd(2, 3, away=[-0.5, 0.5, 1.5]), T([-0.5, 0.5, 1.5])], lambda a, b: torch.max(a, b))
case("minimum", separated(lambda: (rnd(2, 3), rnd(2, 3))), lambda a, b: torch.minimum(a, b))
case("minimum_bcast", [rnd(3, 1, away=[-1.2, 0.3]), T([-1.2, 0.3, 1.9, -0.6])], lambda a, b: torch.minimum(a, b))
case("minimum_ties", [T([[1.0, 2.0, 3.0]]), T([[1.0, 0.0, 3.0], [2.0, 2.0, 2.0]])],
     lambda a, b: torch.minimum(a, b), gradcheck=False)
case("minimum_nan", [T([1.0, nan, 3.0, nan]), T([2.0, 1.0, nan, nan])], lambda a, b: torch.minimum(a, b),
     gradcheck=False)
case("min_binary", [rnd(2, 3, away=[-0.5, 0.5, 1.5]), T([-0.5, 0.5, 1.5])], lambda a, b: torch.min(a, b))
# ---- pow ----------------------------------------------------------------------------------------
case("pow_tt", [pos(2, 3), rnd(2, 3)], lambda a, b: a ** b)
case("pow_tt_bcast", [pos(3, 1), rnd(4)], lambda a, b: torch.pow(a, b))
case("pow_tt_method", [pos(2, 3), rnd(3)], lambda a, b: a.pow(b))
case("pow_tt_special", [T([0.0, 0.0, 0.0, 2.0, -2.0, -2.0, 0.0, 1.0, -3.0, -0.0], f64),
                        T([0.0, 2.0, -1.0, 0.0, 2.0, 0.5, 0.5, -1.0, 3.0, -2.0], f64)],
     lambda a, b: a ** b, gradcheck=False)
case("pow_scalar_base", [rnd(2, 3)], lambda e: aten.pow.Scalar(2.0, e))
case("pow_scalar_base_frac", [rnd(2, 3)], lambda e: aten.pow.Scalar(0.5, e))
case("pow_scalar_base_zero", [T([0.0, 1.0, -1.0, 2.0], f64)], lambda e: aten.pow.Scalar(0.0, e), gradcheck=False)
case("pow_scalar_base_neg", [T([0.0, 1.0, -1.0, 2.0], f64)], lambda e: aten.pow.Scalar(-2.0, e), gradcheck=False)
case("pow_scalar_base_int", [T([0, 1, 2, 3, -1, 62], i64)], lambda e: aten.pow.Scalar(2, e))
case("pow_int64", [T([2, 3, -2, 0, 5, 1, -1, 7, 0, -1], i64), T([3, 0, 3, 0, 2, -3, -3, -1, -2, 4], i64)],
     lambda a, b: a ** b)
case("pow_int64_overflow", [T([3, -3, 7, 2], i64), T([41, 41, 30, 63], i64)], lambda a, b: a ** b)
case("pow_int_float", [T([1, 2, 3], i64), rnd(3)], lambda a, b: a ** b)
case("pow_float_int", [pos(3), T([2, -1, 0], i64)], lambda a, b: a ** b)
# ---- floor_divide, remainder, fmod ------------------------------------------------------------
A = T([5.3, -5.3, 5.3, -5.3, 2.9, -0.7])  # a / b stays away from integers: gradcheck-safe
B = T([2.0, 2.0, -2.0, -2.0, 1.1, 0.4])
A_BC = T([[3.3], [-4.1], [0.45]])
B_BC = T([1.7, -0.8, 2.9, -2.2])
SPECIAL_A = T([7.0, -7.0, 7.0, -7.0, 0.0, -0.0, 1.0, 5.0, -5.0, inf, 1.0, nan, 3.0, -3.0, 0.0])
SPECIAL_B = T([2.0, 2.0, -2.0, -2.0, 0.0, 3.0, 0.1, 0.0, 0.0, 2.0, inf, 1.0, -inf, inf, -3.0])
INT_A = T([7, -7, 7, -7, 0, 9, -9, -9223372036854775808, 9223372036854775807], i64)
INT_B = T([2, 2, -2, -2, 3, -4, 4, 3, -2], i64)
case("floor_divide", [A, B], lambda a, b: torch.floor_divide(a, b), backward=False)
case("floor_divide_bcast", [A_BC, B_BC], lambda a, b: torch.floor_divide(a, b), backward=False)
case("floor_divide_special", [SPECIAL_A, SPECIAL_B], lambda a, b: torch.floor_divide(a, b), backward=False)
case("floor_divide_python", [T([1.0, -1.0, 0.3, 4.0]), T([0.1, 0.1, 0.1, 0.4])],
     lambda a, b: torch.floor_divide(a, b), backward=False)  # 1.0 // 0.1 == 9.0, as Python
case("floor_divide_scalar", [rnd(2, 3, lo=-5, hi=5)], lambda a: torch.floor_divide(a, 0.7), backward=False)
case("floor_divide_int64", [INT_A, INT_B], lambda a, b: torch.floor_divide(a, b))
case("floor_divide_int_scalar", [T([7, -7, 0, -1], i64)], lambda a: torch.floor_divide(a, 2))
case("floor_divide_int_frac_scalar", [T([7, -7, 0, -1], i64)], lambda a: torch.floor_divide(a, 2.5))
case("remainder", [A, B], lambda a, b: torch.remainder(a, b))
case("remainder_bcast", [A_BC, B_BC], lambda a, b: torch.remainder(a, b))
case("remainder_operator", [A, B], lambda a, b: a % b)
case("remainder_scalar", [rnd(2, 3, lo=-5, hi=5, away=[-4.5, -3, -1.5, 0, 1.5, 3, 4.5])],
     lambda a: aten.remainder.Scalar(a, 1.5))
case("remainder_scalar_neg", [rnd(2, 3, lo=-5, hi=5, away=[-4.5, -3, -1.5, 0, 1.5, 3, 4.5])],
     lambda a: aten.remainder.Scalar(a, -1.5))
case("remainder_special", [SPECIAL_A, SPECIAL_B], lambda a, b: torch.remainder(a, b), gradcheck=False)
case("remainder_int64", [INT_A, INT_B], lambda a, b: torch.remainder(a, b))
case("remainder_int_scalar", [T([7, -7, 0, -1], i64)], lambda a: a % 3)
case("remainder_int_frac_scalar", [T([7, -7, 0, -1], i64)], lambda a: torch.remainder(a, 2.5))
case("remainder_mixed", [T([7, -7, 3], i64), T([2.5, 2.5, -1.3])], lambda a, b: torch.remainder(a, b))
case("fmod", [A, B], lambda a, b: torch.fmod(a, b))
case("fmod_bcast", [A_BC, B_BC], lambda a, b: torch.fmod(a, b))
case("fmod_scalar", [rnd(2, 3, lo=-5, hi=5, away=[-4.5, -3, -1.5, 0, 1.5, 3, 4.5])],
     lambda a: aten.fmod.Scalar(a, 1.5))
case("fmod_special", [SPECIAL_A, SPECIAL_B], lambda a, b: torch.fmod(a, b), gradcheck=False)
case("fmod_int64", [INT_A, INT_B], lambda a, b: torch.fmod(a, b))
case("fmod_int_scalar", [T([7, -7, 0, -1], i64)], lambda a: torch.fmod(a, -3))
# ---- comparisons (bool results stored as int64 0/1) ---------------------------------------------
CMP_A = T([1.0, 2.0, nan, 4.0, -0.0, inf])
CMP_B = T([1.0, 3.0, nan, 2.0, 0.0, inf])
for op in ["eq", "ne", "lt", "le", "gt", "ge"]:
    f = getattr(torch, op)
    case(f"{op}_tensor", [CMP_A, CMP_B], lambda a, b, f=f: f(a, b))
    case(f"{op}_bcast", [T([[0.0], [1.0], [2.0]]), T([0.0, 1.0, 2.0, 3.0])], lambda a, b, f=f: f(a, b))
    case(f"{op}_scalar", [T([0.1, 0.5, 0.7, nan, -1.0])], lambda a, f=f: f(a, 0.5))
    case(f"{op}_int_scalar", [T([0, 1, 2, -1], i64)], lambda a, f=f: f(a, 1))
    case(f"{op}_int_frac_scalar", [T([0, 1, 2, -1], i64)], lambda a, f=f: f(a, 0.5))
    case(f"{op}_mixed", [T([1, 2, 3], i64), T([1.5, 2.0, 2.5])], lambda a, b, f=f: f(a, b))
case("eq_float32_rounding", [T([0.1, 0.2, 0.3])], lambda a: a == 0.1)  # 0.1 rounded to float32 first
case("lt_float64", [T([0.1, 0.2], f64)], lambda a: a < 0.1)
case("gt_operator", [rnd(2, 3)], lambda a: a > 0.5)
case("le_operator_tensor", [rnd(2, 3), rnd(3)], lambda a, b: a <= b)
# ---- clamp ------------------------------------------------------------------------------------
case("clamp_both", [rnd(3, 4, away=[-0.5, 0.5])], lambda x: x.clamp(-0.5, 0.5))
case("clamp_min_only", [rnd(3, 4, away=[0.2])], lambda x: torch.clamp(x, min=0.2))
case("clamp_max_only", [rnd(3, 4, away=[-0.2])], lambda x: torch.clamp(x, max=-0.2))
case("clamp_bounds_inclusive", [T([-1.0, -0.5, 0.0, 0.5, 1.0])], lambda x: x.clamp(-0.5, 0.5), gradcheck=False)
case("clamp_min_gt_max", [T([-1.0, 0.0, 1.0, 1.5, 2.0, 3.0])], lambda x: x.clamp(2.0, 1.0), gradcheck=False)
case("clamp_nan_input", [T([nan, -1.0, 1.0, 0.25])], lambda x: x.clamp(0.0, 0.5), gradcheck=False)
case("clamp_nan_min", [T([-1.0, 0.3, 1.0])], lambda x: x.clamp(min=nan), gradcheck=False)
case("clamp_nan_max", [T([-1.0, 0.3, 1.0])], lambda x: x.clamp(0.0, nan), gradcheck=False)
case("clamp_nan_max_only", [T([-1.0, 0.3, nan])], lambda x: x.clamp(max=nan), gradcheck=False)
case("clamp_min_nan", [T([-1.0, 0.3, 1.0])], lambda x: torch.clamp_min(x, nan), gradcheck=False)
case("clamp_max_nan", [T([-1.0, 0.3, 1.0])], lambda x: torch.clamp_max(x, nan), gradcheck=False)
case("clamp_int64_nan_min", [T([-5, 0, 3], i64)], lambda x: x.clamp(min=nan))
case("clamp_min_inclusive", [T([-1.0, 0.0, 1.0])], lambda x: torch.clamp_min(x, 0.0), gradcheck=False)
case("clamp_max_inclusive", [T([-1.0, 0.0, 1.0])], lambda x: torch.clamp_max(x, 0.0), gradcheck=False)
case("clamp_int64", [T([-5, 0, 3, 10], i64)], lambda x: x.clamp(-1, 4))
case("clamp_int64_frac", [T([-5, 0, 3, 10], i64)], lambda x: x.clamp(-1.5, 4.5))
case("clamp_int64_min_only", [T([-5, 0, 3, 10], i64)], lambda x: x.clamp(min=0))
case("clamp_float64", [rnd(2, 3, away=[-0.5, 0.5], dtype=f64)], lambda x: x.clamp(-0.5, 0.5))
case("clamp_f32_rounding", [T([0.1, 0.2, 0.05])], lambda x: x.clamp(max=0.1), gradcheck=False)
case("clamp_tensor", separated(lambda: (rnd(3, 4), rnd(3, 4, lo=-1.5, hi=0.0), rnd(4, lo=0.05, hi=1.5))),
     lambda x, lo, hi: x.clamp(lo, hi))
case("clamp_tensor_min_gt_max", [T([[-1.0, 0.5, 2.0], [3.0, 0.0, 1.0]]), T([1.0, 1.0, 1.0]), T([[0.0], [2.0]])],
     lambda x, lo, hi: torch.clamp(x, lo, hi), gradcheck=False)
case("clamp_tensor_ties", [T([0.0, 1.0, 2.0, 1.0, 5.0]), T([0.0, 0.0, 0.0, 1.0, 5.0]), T([2.0, 1.0, 2.0, 2.0, 5.0])],
     lambda x, lo, hi: torch.clamp(x, lo, hi), gradcheck=False)
case("clamp_tensor_min_only", separated(lambda: (rnd(3, 4), rnd(4))), lambda x, lo: torch.clamp(x, min=lo))
case("clamp_tensor_max_only", separated(lambda: (rnd(3, 4), rnd(3, 1))), lambda x, hi: torch.clamp(x, max=hi))
case("clamp_min_tensor", separated(lambda: (rnd(3, 4), rnd(4))), lambda x, lo: torch.clamp_min(x, lo))
case("clamp_max_tensor", separated(lambda: (rnd(3, 4), rnd(3, 1))), lambda x, hi: torch.clamp_max(x, hi))
case("clamp_tensor_nan", [T([nan, 1.0, 2.0, 0.5]), T([0.0, nan, 0.0, 0.0]), T([1.0, 1.0, nan, 1.0])],
     lambda x, lo, hi: torch.clamp(x, lo, hi), gradcheck=False)
case("clamp_tensor_int_x", [T([-3, 0, 5], i64), T([-1.5, 0.5, 0.5])], lambda x, lo: torch.clamp(x, min=lo))
case("clamp_tensor_mixed", separated(lambda: (rnd(2, 3), rnd(3, dtype=f64))), lambda x, hi: torch.clamp(x, max=hi))
case("clamp_tensor_int64", [T([-3, 0, 5], i64), T([-1, 1, 1], i64), T([4], i64)], lambda x, lo, hi: torch.clamp(x, lo, hi))
# ---- where (the condition is stored as int64 0/1, tinytorch's stand-in for bool) ---------------
COND = T([[1, 0, 1], [0, 0, 1]], i64)
case("where", [COND, rnd(2, 3), rnd(2, 3)], lambda c, a, b: torch.where(c.bool(), a, b))
case("where_bcast", [T([[1], [0]], i64), rnd(3), rnd(2, 1)], lambda c, a, b: torch.where(c.bool(), a, b))
case("where_bcast_cond", [T([1, 0, 1, 1], i64), rnd(3, 1), rnd(3, 4)], lambda c, a, b: torch.where(c.bool(), a, b))
case("where_scalar_other", [COND, rnd(2, 3)], lambda c, a: torch.where(c.bool(), a, 0.5))
case("where_scalar_input", [COND, rnd(2, 3)], lambda c, b: torch.where(c.bool(), -1.5, b))
case("where_mixed_dtype", [COND, T([[1, 2, 3], [4, 5, 6]], i64), rnd(2, 3)], lambda c, a, b: torch.where(c.bool(), a, b))
case("where_f32_f64", [COND, rnd(2, 3), rnd(3, dtype=f64)], lambda c, a, b: torch.where(c.bool(), a, b))
case("where_int64", [COND, T([[1, 2, 3], [4, 5, 6]], i64), T([-1], i64)], lambda c, a, b: torch.where(c.bool(), a, b))
case("where_int_scalar", [COND, T([[1, 2, 3], [4, 5, 6]], i64)], lambda c, a: torch.where(c.bool(), a, 0.5))
case("where_method", [COND, rnd(2, 3), rnd(2, 3)], lambda c, a, b: a.where(c.bool(), b))
case("where_nonzero_cond", [T([2, 0, -1], i64), rnd(3), rnd(3)], lambda c, a, b: torch.where(c != 0, a, b))
case("where_from_compare", [rnd(2, 3, away=[0.0]), rnd(2, 3)], lambda a, b: torch.where(a > 0, a, b * 2.0))

# ---- sum / mean over a list of dims (appended last: the cases above keep their random inputs) ----
case("sum_dims", [rnd(2, 3, 4)], lambda x: x.sum((0, 2)))
case("sum_dims_keepdim", [rnd(2, 3, 4)], lambda x: x.sum((0, 2), keepdim=True))
case("sum_dims_neg", [rnd(2, 3, 4)], lambda x: x.sum((-1, 0)))
case("sum_dims_one", [rnd(3, 4)], lambda x: x.sum((1,)))
case("sum_dims_all", [rnd(2, 3)], lambda x: x.sum((0, 1)))
case("sum_dims_empty", [rnd(2, 3)], lambda x: x.sum([]))
case("sum_dims_empty_keepdim", [rnd(2, 3)], lambda x: x.sum([], keepdim=True))
case("sum_dims_4d", [rnd(2, 3, 2, 3, dtype=f64)], lambda x: x.sum((1, 3)))
case("sum_dims_int64", [T([[[1, -2], [3, 4]], [[2**40, 5], [6, -7]]], i64)], lambda x: x.sum((0, 2)))
case("mean_dims", [rnd(2, 3, 4)], lambda x: x.mean((1, 2)))
case("mean_dims_keepdim", [rnd(2, 3, 4)], lambda x: x.mean((0, 2), keepdim=True))
case("mean_dims_f64", [rnd(4, 2, 3, dtype=f64)], lambda x: x.mean((0, -1)))
case("mean_dims_empty", [rnd(2, 3)], lambda x: x.mean([]))

# ---- div with a rounding mode, trunc (appended last, as above) ------------------------------------
# The gradients are zero (derivatives.yaml: grad.zero_()); gradcheck would straddle the jumps.
case("div_trunc", [rnd(2, 3, lo=-6, hi=6), rnd(2, 3, away=[0.0])], lambda a, b: torch.div(a, b, rounding_mode="trunc"),
     gradcheck=False)
case("div_floor", [rnd(2, 3, lo=-6, hi=6), rnd(2, 3, away=[0.0])], lambda a, b: torch.div(a, b, rounding_mode="floor"),
     gradcheck=False)
case("div_trunc_broadcast", [rnd(2, 3, lo=-6, hi=6), rnd(3, away=[0.0], dtype=f64)],
     lambda a, b: torch.div(a, b, rounding_mode="trunc"), gradcheck=False)
case("div_none_mode", [rnd(2, 3), rnd(2, 3, away=[0.0])], lambda a, b: torch.div(a, b, rounding_mode=None))
case("div_trunc_zero", [T([1.0, -1.0, 0.0, 2.5]), T([0.0, 0.0, 0.0, -0.0])],
     lambda a, b: torch.div(a, b, rounding_mode="trunc"), gradcheck=False)
case("div_floor_zero", [T([1.0, -1.0, 0.0, 2.5]), T([0.0, 0.0, 0.0, -0.0])],
     lambda a, b: torch.div(a, b, rounding_mode="floor"), gradcheck=False)
case("div_trunc_int64", [T([[7, -7, 7, -7], [2**62, -(2**62) - 3, 5, -1]], i64), T([2, 2, -2, -2], i64)],
     lambda a, b: torch.div(a, b, rounding_mode="trunc"))
case("div_floor_int64", [T([[7, -7, 7, -7], [2**62, -(2**62) - 3, 5, -1]], i64), T([2, 2, -2, -2], i64)],
     lambda a, b: torch.div(a, b, rounding_mode="floor"))
case("div_trunc_scalar", [rnd(2, 3, lo=-6, hi=6)], lambda a: aten.div.Scalar_mode(a, 0.7, rounding_mode="trunc"),
     gradcheck=False)
case("div_floor_scalar", [rnd(2, 3, lo=-6, hi=6)], lambda a: aten.div.Scalar_mode(a, -0.7, rounding_mode="floor"),
     gradcheck=False)
case("div_floor_scalar_int64", [T([7, -7, 0, -1], i64)], lambda a: aten.div.Scalar_mode(a, 2, rounding_mode="floor"))
case("trunc", [rnd(2, 3, lo=-4, hi=4)], lambda x: torch.trunc(x), gradcheck=False)
case("trunc_special", [T([nan, inf, -inf, -0.0, -0.5, 2.999], f64)], lambda x: x.trunc(), gradcheck=False)
case("trunc_int64", [T([7, -7, 2**62], i64)], lambda x: torch.trunc(x))


# ---- write the header -----------------------------------------------------------------------------
def lit(v):
    v = float(v)
    if math.isnan(v):
        return "kNaN"
    if math.isinf(v):
        return "kInf" if v > 0 else "-kInf"
    r = repr(v)
    return r if ("." in r or "e" in r) else r + ".0"


def int_lit(v):
    v = int(v)
    return "INT64_MIN" if v == -2 ** 63 else f"{v}LL" if abs(v) > 2 ** 31 else str(v)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_path = os.path.join(here, "elementwise_reduce_ref.hpp")
    data, idata, table = [], [], []
    for name, t in arrays:
        t = t.contiguous()
        vals = t.reshape(-1).tolist()
        shape = list(t.shape)
        assert len(shape) <= 4, name
        if t.dtype == i64:
            table.append((name, DTYPE_CODE[t.dtype], shape, len(idata), len(vals)))
            idata.extend(int_lit(v) for v in vals)
        else:
            table.append((name, DTYPE_CODE[t.dtype], shape, len(data), len(vals)))
            data.extend(lit(v) for v in vals)
    lines = []
    w = lines.append
    w("// generated by gen_elementwise_reduce.py — do not edit.")
    w(f"// Regenerate: /usr/bin/python3 tests/reference/gen_elementwise_reduce.py  (PyTorch {torch.__version__})")
    w("// Reference values and gradients of functional.hpp's ops (min, amax, maximum, pow,")
    w("// floor_divide, remainder, fmod, comparisons, clamp, where), computed by PyTorch.")
    w("// kArrays: named row-major arrays (<case>.in<i>, .out, .gout, .grad<i>, .indices); float ones")
    w("// live in kData, int64 ones (exactly) in kIntData. kCases: per case the number of inputs,")
    w("// PyTorch's out.grad_fn.name(), whether backward runs, and whether gradcheck applies.")
    w("// Case definitions: tests/reference/gen_elementwise_reduce.py; C++ twins: tests/test_elementwise_reduce.cpp.")
    w("#pragma once")
    w("")
    w("#include <cstdint>")
    w("#include <limits>")
    w("")
    w("namespace elementwise_reduce_reference {")
    w("")
    w("constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();")
    w("constexpr double kInf = std::numeric_limits<double>::infinity();")
    w("")
    w("struct Array {")
    w("  const char* name;")
    w("  int dtype;  // 0 float32, 1 float64 (values in kData), 2 int64 (values in kIntData)")
    w("  int ndim;")
    w("  int64_t shape[4];")
    w("  int64_t offset;  // into kData or kIntData")
    w("  int64_t numel;")
    w("};")
    w("")
    w("struct Case {")
    w("  const char* name;")
    w("  int n_inputs;")
    w("  const char* grad_fn;  // PyTorch's out.grad_fn.name(); \"\" when out needs no grad")
    w("  bool backward;        // false: backward raises (torch::autograd::NotImplemented)")
    w("  bool gradcheck;       // false where an input sits on a tie, a kink, a jump or a NaN")
    w("};")
    w("")
    w("inline constexpr double kData[] = {")
    for i in range(0, len(data), 6):
        w("    " + ", ".join(data[i:i + 6]) + ",")
    w("};")
    w("")
    w("inline constexpr int64_t kIntData[] = {")
    for i in range(0, len(idata), 8):
        w("    " + ", ".join(idata[i:i + 8]) + ",")
    w("};")
    w("")
    w("inline constexpr Array kArrays[] = {")
    for name, code, shape, off, n in table:
        sh = ", ".join(str(s) for s in (shape + [0] * (4 - len(shape))))
        w(f'    {{"{name}", {code}, {len(shape)}, {{{sh}}}, {off}, {n}}},')
    w("};")
    w("")
    w("inline constexpr Case kCases[] = {")
    for name, n, gf, bw, gc in cases:
        w(f'    {{"{name}", {n}, "{gf}", {"true" if bw else "false"}, {"true" if gc else "false"}}},')
    w("};")
    w("")
    w("}  // namespace elementwise_reduce_reference")
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {out_path}: {len(cases)} cases, {len(table)} arrays, {len(data)} + {len(idata)} values")


if __name__ == "__main__":
    main()

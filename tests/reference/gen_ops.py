#!/usr/bin/python3
# tests/reference/gen_ops.py — generates tests/reference/ops_ref.hpp.
#
# For every differentiable op tinytorch has (arithmetic with broadcasting and scalars, unary
# functions, reductions, matmul in all its shapes, softmax / log_softmax, cat / stack, every view
# used inside a computation, linear, mse_loss, cross_entropy, nll_loss) this script builds a
# small case in PyTorch and records:
#   <case>.in<i>     the inputs (float32 values, or int64 class indices), written exactly
#   <case>.out       the forward result
#   <case>.gout      a fixed upstream gradient (same shape as out)
#   <case>.grad<i>   d(sum(out * gout)) / d in<i>, i.e. in<i>.grad after out.backward(gout)
#   <case>.<extra>   side results (max's indices, chunk sizes, ...)
# and the case table: the number of inputs, out.grad_fn.name(), the name of the node feeding it
# along its first input (so `x.view(3, 4) * c` records ViewBackward0), and whether gradcheck applies
# (false where an input sits on a kink or a tie, e.g. max with repeated maxima).
# The C++ side (tests/ops_cases.hpp) has one lambda per case computing the same thing with
# tinytorch; tests/test_tensor.cpp checks forward values, tests/test_autograd.cpp gradients.
#
# Run with Debian's PyTorch (python3-torch), not the python3 on PATH:
#   /usr/bin/python3 tests/reference/gen_ops.py
# Values are written as repr(float(x)) of the stored float32 element (the exact double of the
# float32), so the C++ side reads the very numbers PyTorch used.
# Scalar ops use aten's Scalar overloads (torch.ops.aten.mul.Scalar), so their grad_fn names are
# the ones libtorch's C++ frontend prints (MulBackward1), which is what tinytorch's `x * 2.0` mirrors.
import math
import os

import torch
import torch.nn.functional as F

torch.manual_seed(0)
f32, f64, i64 = torch.float32, torch.float64, torch.int64
aten = torch.ops.aten

DTYPE_CODE = {f32: 0, f64: 1, i64: 2}

arrays = []  # (name, tensor)
cases = []   # (name, n_inputs, grad_fn name, inner grad_fn name, gradcheck)


def rnd(*shape, lo=-2.0, hi=2.0, away=None, dtype=f32):
    """Uniform values in [lo, hi) rounded to 4 decimals; `away` pushes |x - k| >= 0.05 for k in away."""
    t = torch.rand(tuple(shape), dtype=torch.float64) * (hi - lo) + lo
    t = torch.round(t * 1e4) / 1e4
    if away is not None:
        for k in away:
            near = (t - k).abs() < 0.05
            t = torch.where(near, t + torch.where(t >= k, 0.1, -0.1).to(t.dtype), t)
    return t.to(dtype)


def pos(*shape, lo=0.5, hi=2.5):
    return rnd(*shape, lo=lo, hi=hi)


def T(values, dtype=f32):
    return torch.tensor(values, dtype=dtype)


def case(name, inputs, fn, gradcheck=True, extra=None):
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
    arrays.append((f"{name}.out", res.detach()))
    for k, v in extras.items():
        arrays.append((f"{name}.{k}", v.detach() if torch.is_tensor(v) else torch.tensor(v, dtype=i64)))
    grad_fn = res.grad_fn.name() if res.grad_fn is not None else ""
    inner = ""  # the node feeding out's grad_fn along its first input (a view's own node)
    if res.grad_fn is not None and res.grad_fn.next_functions and res.grad_fn.next_functions[0][0] is not None:
        inner = res.grad_fn.next_functions[0][0].name()
    if res.requires_grad:
        gout = rnd(*res.shape, lo=-1.0, hi=1.0).to(res.dtype)
        res.backward(gout)
        arrays.append((f"{name}.gout", gout))
        for i, t in enumerate(leaves):
            if t.requires_grad:
                g = t.grad if t.grad is not None else torch.zeros_like(t)
                arrays.append((f"{name}.grad{i}", g))
    else:
        gradcheck = False
    cases.append((name, len(leaves), grad_fn, inner, gradcheck))


# ---- binary arithmetic, with broadcasting ----------------------------------------------------
case("add", [rnd(2, 3), rnd(2, 3)], lambda a, b: a + b)
case("add_bcast_row", [rnd(2, 3), rnd(3)], lambda a, b: a + b)
case("add_bcast_both", [rnd(4, 1, 3), rnd(2, 1)], lambda a, b: a + b)
case("add_alpha", [rnd(2, 3), rnd(1, 3)], lambda a, b: torch.add(a, b, alpha=2.5))
case("add_scalar_tensor", [rnd(2, 3), rnd()], lambda a, b: a + b)  # 0-d operand
case("sub", [rnd(2, 3), rnd(2, 3)], lambda a, b: a - b)
case("sub_bcast", [rnd(3, 1), rnd(1, 4)], lambda a, b: a - b)
case("mul", [rnd(2, 3), rnd(2, 3)], lambda a, b: a * b)
case("mul_bcast", [rnd(2, 3), rnd(2, 1)], lambda a, b: a * b)
case("mul_self", [rnd(2, 3)], lambda a: a * a)
case("div", [rnd(2, 3), rnd(2, 3, away=[0.0], lo=-2, hi=2)], lambda a, b: a / b)
case("div_bcast", [rnd(2, 3), pos(3)], lambda a, b: a / b)
case("mul_mixed_dtype", [rnd(2, 3), rnd(2, 3, dtype=f64)], lambda a, b: a.exp() * b)
# ---- scalar operands (aten Scalar overloads: names as libtorch's C++ operators) ---------------
case("add_scalar", [rnd(2, 3)], lambda x: aten.add.Scalar(x, 2.5))
case("sub_scalar", [rnd(2, 3)], lambda x: aten.sub.Scalar(x, 1.5))
case("rsub_scalar", [rnd(2, 3)], lambda x: aten.rsub.Scalar(x, 3.0))
case("mul_scalar", [rnd(2, 3)], lambda x: aten.mul.Scalar(x, -1.5))
case("div_scalar", [rnd(2, 3)], lambda x: aten.div.Scalar(x, 4.0))
case("rdiv_scalar", [pos(2, 3)], lambda x: 2.0 / x)
# ---- unary --------------------------------------------------------------------------------------
case("neg", [rnd(2, 3)], lambda x: -x)
case("exp", [rnd(2, 3)], lambda x: x.exp())
case("log", [pos(2, 3, lo=0.1, hi=3.0)], lambda x: x.log())
case("pow2", [rnd(2, 3)], lambda x: x.pow(2))
case("pow3", [rnd(2, 3)], lambda x: x.pow(3))
case("pow_half", [pos(2, 3)], lambda x: x.pow(0.5))
case("pow_neg", [pos(2, 3)], lambda x: x.pow(-1.5))
case("sqrt", [pos(2, 3, lo=0.1, hi=4.0)], lambda x: x.sqrt())
case("abs", [rnd(2, 3, away=[0.0])], lambda x: x.abs())
case("relu", [rnd(3, 4, away=[0.0])], lambda x: x.relu())
case("sigmoid", [rnd(2, 3, lo=-4, hi=4)], lambda x: x.sigmoid())
case("sigmoid_large", [T([-1000.0, -100.0, -88.5, -30.0, 0.0, 30.0, 88.5, 100.0, 1000.0])],
     lambda x: x.sigmoid(), gradcheck=False)
case("tanh", [rnd(2, 3)], lambda x: x.tanh())
case("tanh_large", [T([-50.0, -10.0, -0.5, 0.0, 0.5, 10.0, 50.0])], lambda x: x.tanh())
case("clamp", [rnd(3, 4, away=[-0.5, 0.5])], lambda x: x.clamp(-0.5, 0.5))
case("clamp_min", [rnd(3, 4, away=[0.1])], lambda x: torch.clamp_min(x, 0.1))
case("clamp_max", [rnd(3, 4, away=[0.2])], lambda x: torch.clamp_max(x, 0.2))
# ---- reductions -----------------------------------------------------------------------------
case("sum_all", [rnd(2, 3, 4)], lambda x: x.sum())
case("sum_dim0", [rnd(2, 3)], lambda x: x.sum(0))
case("sum_dim1_keepdim", [rnd(2, 3, 4)], lambda x: x.sum(1, keepdim=True))
case("sum_dim_neg", [rnd(2, 3, 4)], lambda x: x.sum(-1))
case("mean_all", [rnd(2, 3, 4)], lambda x: x.mean())
case("mean_dim", [rnd(2, 3, 4)], lambda x: x.mean(1))
case("mean_dim_keepdim", [rnd(3, 4)], lambda x: x.mean(0, keepdim=True))
case("max_all", [rnd(3, 4)], lambda x: x.max())
case("max_all_ties", [T([[1.0, 3.0, -2.0], [3.0, 0.5, 3.0]])], lambda x: x.max(), gradcheck=False)


def max_dim(x, dim, keepdim=False):
    v, i = x.max(dim, keepdim=keepdim)
    return v, {"indices": i}


case("max_dim", [rnd(3, 4)], lambda x: max_dim(x, 1))
case("max_dim_keepdim", [rnd(3, 4)], lambda x: max_dim(x, 0, True))
case("max_dim_ties", [T([[2.0, 5.0, 5.0, 1.0], [7.0, 7.0, 7.0, 7.0], [0.0, -1.0, 0.0, -1.0]])],
     lambda x: max_dim(x, 1), gradcheck=False)
case("max_dim_neg", [rnd(2, 3, 4)], lambda x: max_dim(x, -2))
case("argmax_all_ties", [T([[1.0, 4.0, 2.0], [4.0, 0.0, 4.0]])], lambda x: x.argmax())
case("argmax_dim_ties", [T([[1.0, 4.0, 4.0], [3.0, 3.0, 0.0], [-1.0, -1.0, -1.0]])], lambda x: x.argmax(1))
case("argmax_dim0_keepdim", [T([[1.0, 4.0, 4.0], [3.0, 4.0, 0.0], [3.0, -1.0, 5.0]])],
     lambda x: x.argmax(0, keepdim=True))
# ---- matrix products ---------------------------------------------------------------------------
case("matmul_1d_1d", [rnd(4), rnd(4)], lambda a, b: torch.matmul(a, b))
case("matmul_2d_1d", [rnd(3, 4), rnd(4)], lambda a, b: torch.matmul(a, b))
case("matmul_1d_2d", [rnd(4), rnd(4, 2)], lambda a, b: torch.matmul(a, b))
case("matmul_2d_2d", [rnd(3, 4), rnd(4, 2)], lambda a, b: torch.matmul(a, b))
case("matmul_3d_3d", [rnd(2, 3, 4), rnd(2, 4, 2)], lambda a, b: torch.matmul(a, b))
case("matmul_3d_2d", [rnd(2, 3, 4), rnd(4, 2)], lambda a, b: torch.matmul(a, b))
case("matmul_2d_3d", [rnd(3, 4), rnd(2, 4, 2)], lambda a, b: torch.matmul(a, b))
case("matmul_3d_1d", [rnd(2, 3, 4), rnd(4)], lambda a, b: torch.matmul(a, b))
case("matmul_1d_3d", [rnd(4), rnd(2, 4, 2)], lambda a, b: torch.matmul(a, b))
case("matmul_bcast_batch", [rnd(1, 3, 4), rnd(2, 4, 2)], lambda a, b: torch.matmul(a, b))
case("mm", [rnd(3, 4), rnd(4, 2)], lambda a, b: torch.mm(a, b))
case("mm_transposed", [rnd(4, 3), rnd(2, 4)], lambda a, b: torch.mm(a.t(), b.t()))
# ---- softmax ---------------------------------------------------------------------------------
case("softmax_dim1", [rnd(3, 4)], lambda x: x.softmax(1))
case("softmax_dim0", [rnd(3, 4)], lambda x: x.softmax(0))
case("softmax_3d", [rnd(2, 3, 4)], lambda x: x.softmax(1))
case("softmax_large", [T([[1000.0, 1001.0, 999.0], [-1000.0, 0.0, 1000.0]])], lambda x: x.softmax(-1))
case("log_softmax_dim1", [rnd(3, 4)], lambda x: x.log_softmax(1))
case("log_softmax_dim0", [rnd(3, 4)], lambda x: x.log_softmax(0))
case("log_softmax_large", [T([[1000.0, 1001.0, 999.0], [-1000.0, 0.0, 1000.0]])],
     lambda x: x.log_softmax(1))
# ---- cat / stack -------------------------------------------------------------------------------
case("cat_dim0", [rnd(2, 3), rnd(1, 3), rnd(3, 3)], lambda a, b, c: torch.cat([a, b, c], 0))
case("cat_dim1", [rnd(2, 3), rnd(2, 2)], lambda a, b: torch.cat([a, b], 1))
case("cat_neg", [rnd(2, 2, 1), rnd(2, 2, 3)], lambda a, b: torch.cat([a, b], -1))
case("stack_dim0", [rnd(2, 3), rnd(2, 3)], lambda a, b: torch.stack([a, b], 0))
case("stack_dim1", [rnd(2, 3), rnd(2, 3), rnd(2, 3)], lambda a, b, c: torch.stack([a, b, c], 1))
case("stack_neg", [rnd(2, 3), rnd(2, 3)], lambda a, b: torch.stack([a, b], -1))
# ---- views used inside a computation (x: the viewed input, c: a second operand) ---------------
case("view", [rnd(2, 6), rnd(3, 4)], lambda x, c: x.view(3, 4) * c)
case("view_infer", [rnd(2, 6), rnd(3, 4)], lambda x, c: x.view(-1, 4) * c)
case("reshape", [rnd(2, 6), rnd(4, 3)], lambda x, c: x.reshape(4, 3) * c)
case("reshape_noncontig", [rnd(3, 4), rnd(12)], lambda x, c: x.t().reshape(12) * c)
case("transpose", [rnd(2, 3, 4), rnd(4, 3, 2)], lambda x, c: x.transpose(0, 2) * c)
case("t", [rnd(3, 4), rnd(4, 3)], lambda x, c: x.t() * c)
case("permute", [rnd(2, 3, 4), rnd(4, 2, 3)], lambda x, c: x.permute(2, 0, 1) * c)
case("unsqueeze", [rnd(3), rnd(3, 4)], lambda x, c: x.unsqueeze(1) * c)
case("squeeze", [rnd(3, 1, 4), rnd(3, 4)], lambda x, c: x.squeeze() * c)
case("squeeze_dim", [rnd(3, 1, 4), rnd(3, 4)], lambda x, c: x.squeeze(1) * c)
case("flatten", [rnd(2, 3, 4), rnd(2, 12)], lambda x, c: x.flatten(1) * c)
case("narrow", [rnd(4, 5), rnd(4, 3)], lambda x, c: x.narrow(1, 1, 3) * c)
case("select", [rnd(3, 4), rnd(3)], lambda x, c: x.select(1, 2) * c)
case("select_neg", [rnd(3, 4), rnd(4)], lambda x, c: x.select(0, -1) * c)
case("expand", [rnd(3, 1), rnd(3, 4)], lambda x, c: x.expand(3, 4) * c)
case("expand_new_dim", [rnd(3), rnd(2, 3)], lambda x, c: x.expand(2, 3) * c)
case("contiguous", [rnd(3, 4), rnd(4, 3)], lambda x, c: x.t().contiguous() * c)
case("clone", [rnd(2, 3)], lambda x: aten.mul.Scalar(x.clone(), 3.0))
case("to_float64", [rnd(2, 3), rnd(2, 3, dtype=f64)], lambda x, c: x.to(f64) * c)


def chunked(x):
    p = x.chunk(3)  # 7 rows -> 3, 3, 1
    return torch.cat([p[2], p[0] * 2.0, p[1].exp()], 0), {"sizes": [q.shape[0] for q in p]}


def split(x):
    p = x.split(2)  # 5 rows -> 2, 2, 1
    return torch.cat([p[1], p[2] * 3.0, p[0] * -2.0], 0), {"sizes": [q.shape[0] for q in p]}


case("chunk", [rnd(7, 2)], chunked)
case("chunk_fewer", [rnd(6)], lambda x: (torch.cat(x.chunk(4)[::-1]), {"sizes": [q.shape[0] for q in x.chunk(4)]}))
case("split", [rnd(5, 3)], split)
# ---- nn.functional --------------------------------------------------------------------------------
case("linear", [rnd(4, 3), rnd(2, 3), rnd(2)], lambda x, w, b: F.linear(x, w, b))
case("linear_nobias", [rnd(4, 3), rnd(2, 3)], lambda x, w: F.linear(x, w))
case("linear_3d", [rnd(2, 4, 3), rnd(2, 3), rnd(2)], lambda x, w, b: F.linear(x, w, b))
case("mse_mean", [rnd(4, 3), rnd(4, 3)], lambda x, t: F.mse_loss(x, t))
case("mse_sum", [rnd(4, 3), rnd(4, 3)], lambda x, t: F.mse_loss(x, t, reduction="sum"))
case("mse_none", [rnd(4, 3), rnd(4, 3)], lambda x, t: F.mse_loss(x, t, reduction="none"))
case("cross_entropy_mean", [rnd(4, 5), T([1, 0, 4, 2], i64)], lambda x, t: F.cross_entropy(x, t))
case("cross_entropy_sum", [rnd(4, 5), T([3, 3, 0, 1], i64)], lambda x, t: F.cross_entropy(x, t, reduction="sum"))
case("cross_entropy_none", [rnd(4, 5), T([3, 3, 0, 1], i64)], lambda x, t: F.cross_entropy(x, t, reduction="none"))
case("cross_entropy_large", [T([[1000.0, 0.0, -1000.0], [500.0, 501.0, 499.0], [-800.0, 800.0, 0.0]]),
                             T([0, 2, 0], i64)], lambda x, t: F.cross_entropy(x, t))
case("nll_loss_mean", [rnd(4, 5), T([1, 0, 4, 2], i64)], lambda x, t: F.nll_loss(x, t))
case("nll_loss_sum", [rnd(4, 5), T([2, 2, 3, 0], i64)], lambda x, t: F.nll_loss(x, t, reduction="sum"))
case("nll_loss_none", [rnd(4, 5), T([2, 2, 3, 0], i64)], lambda x, t: F.nll_loss(x, t, reduction="none"))


# ---- write the header -----------------------------------------------------------------------------
def lit(v, dtype):
    if dtype == i64:
        return str(int(v))
    v = float(v)
    if math.isnan(v):
        return "kNaN"
    if math.isinf(v):
        return "kInf" if v > 0 else "-kInf"
    r = repr(v)
    return r if ("." in r or "e" in r) else r + ".0"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_path = os.path.join(here, "ops_ref.hpp")
    data, table = [], []
    for name, t in arrays:
        t = t.contiguous()
        vals = t.reshape(-1).tolist()
        shape = list(t.shape)
        assert len(shape) <= 4, name
        table.append((name, DTYPE_CODE[t.dtype], shape, len(data), len(vals)))
        data.extend(lit(v, t.dtype) for v in vals)
    lines = []
    w = lines.append
    w("// generated by gen_ops.py — do not edit.")
    w(f"// Regenerate: /usr/bin/python3 tests/reference/gen_ops.py  (PyTorch {torch.__version__})")
    w("// Reference forward values and gradients of every tinytorch op, computed by PyTorch.")
    w("// kArrays: named row-major arrays in kData (<case>.in<i>, .out, .gout, .grad<i>, extras);")
    w("// kCases: per case the number of inputs, PyTorch's out.grad_fn.name(), the node feeding it")
    w("// along input 0, and whether gradcheck applies.")
    w("// Case definitions: tests/reference/gen_ops.py; C++ twins: tests/ops_cases.hpp.")
    w("#pragma once")
    w("")
    w("#include <cstdint>")
    w("#include <limits>")
    w("")
    w("namespace ops_reference {")
    w("")
    w("constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();")
    w("constexpr double kInf = std::numeric_limits<double>::infinity();")
    w("")
    w("struct Array {")
    w("  const char* name;")
    w("  int dtype;  // 0 float32, 1 float64, 2 int64")
    w("  int ndim;")
    w("  int64_t shape[4];")
    w("  int64_t offset;  // into kData")
    w("  int64_t numel;")
    w("};")
    w("")
    w("struct Case {")
    w("  const char* name;")
    w("  int n_inputs;")
    w("  const char* grad_fn;  // PyTorch's out.grad_fn.name(); \"\" when out needs no grad")
    w("  const char* inner;    // out.grad_fn.next_functions[0][0].name(), e.g. a view's node")
    w("  bool gradcheck;       // false where an input sits on a tie or a kink")
    w("};")
    w("")
    w("inline constexpr double kData[] = {")
    for i in range(0, len(data), 6):
        w("    " + ", ".join(data[i:i + 6]) + ",")
    w("};")
    w("")
    w("inline constexpr Array kArrays[] = {")
    for name, code, shape, off, n in table:
        sh = ", ".join(str(s) for s in (shape + [0] * (4 - len(shape))))
        w(f'    {{"{name}", {code}, {len(shape)}, {{{sh}}}, {off}, {n}}},')
    w("};")
    w("")
    w("inline constexpr Case kCases[] = {")
    for name, n, gf, inner, gc in cases:
        w(f'    {{"{name}", {n}, "{gf}", "{inner}", {"true" if gc else "false"}}},')
    w("};")
    w("")
    w("}  // namespace ops_reference")
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {out_path}: {len(cases)} cases, {len(table)} arrays, {len(data)} values")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# tests/reference/gen_loss_norm.py — generates tests/reference/loss_norm_ref.hpp.
#
# Records what PyTorch computes for the layers and utilities of tests/test_loss_norm.cpp, so that
# the test checks tinytorch against it without PyTorch at run time:
#   * losses over (N, C, d1, ..., dk) with targets (N, d1, ..., dk), and unbatched (C) with a 0-d
#     target (nll_loss, cross_entropy; weights, ignore_index, label_smoothing), at the end
#   * losses: nll_loss and cross_entropy with class weights, ignore_index (the default -100 and
#     another value) and label_smoothing (0.1, 0.25, 1.0), each reduction; the loss, and
#     input.grad after loss.backward(gout).                                  names ce.* / nll.*
#   * BatchNorm1d: three training steps (output, running_mean, running_var, num_batches_tracked
#     after each step; x/weight/bias gradients of one step), then eval() on a new input; for
#     (N, C) input with momentum 0.1, (N, C, L) input with momentum=None and eps=1e-3, and
#     affine=False with track_running_stats=False.                              names bn*.
#   * LayerNorm over the last dim and the last two dims, with and without the affine map, and
#     F.layer_norm with a weight but no bias; output and gradients.             names ln*.
#   * clip_grad_norm_ for norm types 2, 1, inf, 3 and 0.5 (clipping and not clipping): the
#     returned total norm and the clipped gradients; clip_grad_value_.        names clip*.
# Every array is written with its shape; float32 values as repr(float(x)) (the exact double of
# the float32 value), so the C++ side reads the very numbers PyTorch used.
# Inputs are rounded to 4 decimals before use, so they are written exactly too.
#
# Run with Debian's PyTorch (python3-torch), not a `python3` found on PATH:
#     /usr/bin/python3 tests/reference/gen_loss_norm.py
# That is PyTorch 1.13; everything recorded here computes the same in 2.x (LayerNorm's `bias`
# argument, new in 2.1, is exercised through F.layer_norm(weight, bias=None) instead).
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "loss_norm_ref.hpp")
f32 = torch.float32

arrays = []  # (name, tensor)


def put(name, t):
    assert all(n != name for n, _ in arrays), name
    arrays.append((name, t.detach().clone()))


def rnd(*shape, lo=-2.0, hi=2.0):
    t = torch.rand(shape, dtype=torch.float64) * (hi - lo) + lo
    return (torch.round(t * 1e4) / 1e4).to(f32)


def leaf(t):
    return t.clone().detach().requires_grad_(True)


# ---- losses ----------------------------------------------------------------------------------
N, C = 6, 4
X = rnd(N, C, lo=-3.0, hi=3.0)
W = torch.tensor([0.5, 1.0, 2.0, 0.25])
T_DEFAULT = torch.tensor([0, 3, -100, 1, 3, 2])  # one sample ignored by the default ignore_index
T_TWO = torch.tensor([0, 2, 1, 2, 3, 1])         # with ignore_index=2: two samples ignored
GOUT_NONE = rnd(N)
put("loss.x", X)
put("loss.weight", W)
put("loss.target_default", T_DEFAULT.to(torch.float64))
put("loss.target_two", T_TWO.to(torch.float64))
put("loss.gout_none", GOUT_NONE)
GOUT_SCALAR = 1.5

LOSS_CASES = {
    # name: (function, weight?, target, ignore_index, label_smoothing)
    "nll_w": ("nll", True, T_DEFAULT, -100, 0.0),
    "nll_ig2": ("nll", False, T_TWO, 2, 0.0),
    "nll_wig2": ("nll", True, T_TWO, 2, 0.0),
    "ce_w": ("ce", True, T_DEFAULT, -100, 0.0),
    "ce_ls": ("ce", False, T_DEFAULT, -100, 0.1),
    "ce_wls": ("ce", True, T_DEFAULT, -100, 0.25),
    "ce_wig2ls": ("ce", True, T_TWO, 2, 0.1),
    "ce_ls1": ("ce", True, T_DEFAULT, -100, 1.0),
}
for name, (fn, weighted, target, ignore, ls) in LOSS_CASES.items():
    for red in ("mean", "sum", "none"):
        x = leaf(X)
        w = W if weighted else None
        if fn == "nll":
            out = F.nll_loss(x.log_softmax(1), target, weight=w, ignore_index=ignore, reduction=red)
            # tinytorch's test feeds log-probabilities it computes itself: record them too
        else:
            out = F.cross_entropy(x, target, weight=w, ignore_index=ignore, reduction=red, label_smoothing=ls)
            expect = "AddBackward0" if ls > 0 else "NllLossBackward0"
            assert out.grad_fn.name() == expect, (name, out.grad_fn.name())
        out.backward(GOUT_NONE if red == "none" else torch.tensor(GOUT_SCALAR))
        put(f"{name}.{red}.out", out)
        put(f"{name}.{red}.grad", x.grad)

# every target ignored: the mean is 0/0
assert math.isnan(float(F.nll_loss(X.log_softmax(1), torch.full((N,), -100))))
assert math.isnan(float(F.cross_entropy(X, torch.full((N,), -100), label_smoothing=0.1)))

# ---- BatchNorm1d -----------------------------------------------------------------------------


def bn_run(prefix, bn, shape, steps=3, grad_step=1):
    """Training steps, then eval; records outputs, running stats and one step's gradients."""
    for k in range(steps):
        x = leaf(rnd(*shape))
        put(f"{prefix}.x{k}", x)
        y = bn(x)
        assert y.grad_fn.name() == "NativeBatchNormBackward0", y.grad_fn.name()
        put(f"{prefix}.y{k}", y)
        if bn.track_running_stats:
            put(f"{prefix}.running_mean{k}", bn.running_mean)
            put(f"{prefix}.running_var{k}", bn.running_var)
            put(f"{prefix}.num_batches_tracked{k}", bn.num_batches_tracked.to(torch.float64))
        if k == grad_step:
            gout = rnd(*shape)
            put(f"{prefix}.gout", gout)
            y.backward(gout)
            put(f"{prefix}.grad_x", x.grad)
            if bn.affine:
                put(f"{prefix}.grad_weight", bn.weight.grad)
                put(f"{prefix}.grad_bias", bn.bias.grad)
    bn.eval()
    x = leaf(rnd(*([2] + list(shape[1:]))))
    put(f"{prefix}.x_eval", x)
    y = bn(x)
    put(f"{prefix}.y_eval", y)
    gout = rnd(*x.shape)
    put(f"{prefix}.gout_eval", gout)
    y.backward(gout)
    put(f"{prefix}.grad_x_eval", x.grad)


bn = nn.BatchNorm1d(3)  # (N, C), momentum 0.1
with torch.no_grad():
    bn.weight.copy_(torch.tensor([1.5, -0.5, 0.8]))
    bn.bias.copy_(torch.tensor([0.1, 0.2, -0.3]))
put("bn.weight", bn.weight)
put("bn.bias", bn.bias)
bn_run("bn", bn, (5, 3))

bn = nn.BatchNorm1d(2, eps=1e-3, momentum=None)  # (N, C, L), cumulative average
with torch.no_grad():
    bn.weight.copy_(torch.tensor([0.7, 1.2]))
    bn.bias.copy_(torch.tensor([-0.2, 0.4]))
put("bn3.weight", bn.weight)
put("bn3.bias", bn.bias)
bn_run("bn3", bn, (4, 2, 3), grad_step=2)

bn = nn.BatchNorm1d(3, affine=False, track_running_stats=False)  # batch statistics in eval too
bn_run("bn_plain", bn, (4, 3), steps=1, grad_step=0)

# ---- LayerNorm -------------------------------------------------------------------------------


def ln_case(prefix, shape, normalized_shape, weight, bias):
    x = leaf(rnd(*shape))
    w = leaf(weight) if weight is not None else None
    b = leaf(bias) if bias is not None else None
    put(f"{prefix}.x", x)
    if w is not None:
        put(f"{prefix}.weight", w)
    if b is not None:
        put(f"{prefix}.bias", b)
    y = F.layer_norm(x, normalized_shape, w, b, eps=1e-5)
    assert y.grad_fn.name() == "NativeLayerNormBackward0", y.grad_fn.name()
    put(f"{prefix}.y", y)
    gout = rnd(*shape)
    put(f"{prefix}.gout", gout)
    y.backward(gout)
    put(f"{prefix}.grad_x", x.grad)
    if w is not None:
        put(f"{prefix}.grad_weight", w.grad)
    if b is not None:
        put(f"{prefix}.grad_bias", b.grad)


ln_case("ln", (2, 3, 4), (4,), rnd(4, lo=0.5, hi=1.5), rnd(4))
ln_case("ln2", (2, 3, 4), (3, 4), None, None)
ln_case("ln_nobias", (5, 4), (4,), rnd(4, lo=0.5, hi=1.5), None)
# the module with default parameters is the bare normalisation
m = nn.LayerNorm((3, 4))
assert torch.equal(m.weight, torch.ones(3, 4)) and torch.equal(m.bias, torch.zeros(3, 4))

# ---- clip_grad -------------------------------------------------------------------------------
G = [rnd(2, 3), rnd(4), rnd(3)]  # gradients of three parameters; a fourth has no .grad
for k, g in enumerate(G):
    put(f"clip.g{k}", g)


def clip_case(name, max_norm, norm_type):
    ps = [torch.zeros(g.shape, requires_grad=True) for g in G] + [torch.zeros(2, requires_grad=True)]
    for p, g in zip(ps, G):
        p.grad = g.clone()
    total = torch.nn.utils.clip_grad_norm_(ps, max_norm, norm_type)
    put(f"{name}.total", total)
    for k in range(len(G)):
        put(f"{name}.g{k}", ps[k].grad)
    assert ps[3].grad is None


clip_case("clip_l2", 1.0, 2.0)
clip_case("clip_l2_noclip", 100.0, 2.0)
clip_case("clip_l1", 0.5, 1.0)
clip_case("clip_inf", 0.3, math.inf)
clip_case("clip_l3", 2.0, 3.0)
clip_case("clip_lhalf", 0.1, 0.5)
ps = [torch.zeros(g.shape, requires_grad=True) for g in G]
for p, g in zip(ps, G):
    p.grad = g.clone()
torch.nn.utils.clip_grad_value_(ps, 0.25)
for k in range(len(G)):
    put(f"clip_value.g{k}", ps[k].grad)

# ---- losses over (N, C, d1, ..., dk) and unbatched (C) -------------------------------------
# (appended last: the draws above, and so every array above, stay as they were)
ND_CASES = {
    # name: input shape, target (N, d1, ..., dk) or 0-d
    "nd3": (2, 4, 3),
    "nd4": (2, 4, 2, 2),
    "nd5": (2, 4, 2, 1, 2),
    "unb": (4,),
}
ND_LOSSES = {
    # name: (function, weight?, ignore_index, label_smoothing)
    "nll_w": ("nll", True, -100, 0.0),
    "ce_w": ("ce", True, -100, 0.0),
    "ce_ig1ls": ("ce", False, 1, 0.1),
    "ce_wls": ("ce", True, -100, 0.2),
}
for case, shape in ND_CASES.items():
    xs = rnd(*shape, lo=-3.0, hi=3.0)
    C = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    tgt = torch.randint(0, C, tshape)
    if len(shape) > 1:
        tgt.view(-1)[1] = -100  # one position ignored by the default ignore_index
    gout = rnd(*tshape)
    put(f"nd.{case}.x", xs)
    put(f"nd.{case}.target", tgt.to(torch.float64))
    put(f"nd.{case}.gout_none", gout)
    cdim = 0 if len(shape) == 1 else 1
    for lname, (fn, weighted, ignore, ls) in ND_LOSSES.items():
        for red in ("mean", "sum", "none"):
            x = leaf(xs)
            w = W if weighted else None
            # another ignore_index: the position that holds -100 holds it instead (so it is ignored)
            t = tgt if ignore == -100 else torch.where(tgt == -100, torch.tensor(ignore), tgt)
            if fn == "nll":
                out = F.nll_loss(x.log_softmax(cdim), t, weight=w, ignore_index=ignore, reduction=red)
            else:
                out = F.cross_entropy(x, t, weight=w, ignore_index=ignore, reduction=red, label_smoothing=ls)
            out.backward(gout if red == "none" else torch.tensor(GOUT_SCALAR))
            put(f"nd.{case}.{lname}.{red}.out", out)
            put(f"nd.{case}.{lname}.{red}.grad", x.grad)


# ---- write -----------------------------------------------------------------------------------


def fmt(v):
    v = float(v)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return repr(v)


lines = [
    "// generated by gen_loss_norm.py — do not edit.",
    f"// Regenerate: /usr/bin/python3 tests/reference/gen_loss_norm.py  (PyTorch {torch.__version__})",
    "// Loss, BatchNorm1d, LayerNorm and clip_grad reference values checked by tests/test_loss_norm.cpp.",
    "#pragma once",
    "",
    "#include <cmath>",
    "#include <cstdint>",
    "#include <map>",
    "#include <string>",
    "#include <vector>",
    "",
    "namespace loss_norm_ref {",
    "",
    "struct Array {",
    "  std::vector<int64_t> shape;",
    "  std::vector<double> data;  // row-major",
    "};",
    "",
    "/// Every recorded array by name (see gen_loss_norm.py for what each name holds).",
    "inline const std::map<std::string, Array>& arrays() {",
    "  static const std::map<std::string, Array> m = {",
]
for name, t in arrays:
    shape = ", ".join(str(s) for s in t.shape)
    data = ", ".join(fmt(v) for v in t.reshape(-1).tolist())
    lines.append(f'    {{"{name}", {{{{{shape}}}, {{{data}}}}}}},')
lines += ["  };", "  return m;", "}", "", "}  // namespace loss_norm_ref", ""]
with open(OUT, "w") as f:
    f.write("\n".join(lines))
print(f"wrote {len(arrays)} arrays to {OUT}")

#!/usr/bin/python3
# tests/reference/gen_conv.py — generates tests/reference/conv_ref.hpp.
#
# Reference values for tests/test_conv.cpp, computed by PyTorch:
#   kConvCases  F.conv2d on small inputs in several configurations (stride, padding, dilation,
#               groups, no bias, 1x1, unbatched, float64): the inputs, the output, a fixed upstream
#               gradient gy and the gradients of sum(y * gy) w.r.t. input, weight and bias, plus
#               y.grad_fn.name().
#   kPoolCases  F.max_pool2d(..., return_indices=True) in several configurations (padding, dilation,
#               ceil_mode, ties, NaN, -inf, unbatched): inputs, output, indices, gy and the input gradient.
#   kCnn*       a tiny LeNet-like net (Conv2d-ReLU-MaxPool2d-Flatten-Linear) with fixed weights: the
#               cross-entropy loss and every parameter's gradient.
# Inputs are uniform values rounded to 4 decimals (3 classes of integers for the tie case), stored as
# float32 (float64 for the *_f64 case) and written as repr(float(x)), the exact value PyTorch used.
#
# Run with Debian's PyTorch (python3-torch), not the python3 on PATH:
#   /usr/bin/python3 tests/reference/gen_conv.py
import math
import os

import torch
import torch.nn.functional as F

torch.manual_seed(0)


def rnd(*shape, dtype=torch.float32):
    t = torch.rand(shape, dtype=torch.float64) * 4 - 2
    return (torch.round(t * 1e4) / 1e4).to(dtype)


def num(x):
    x = float(x)
    if math.isnan(x):
        return "kNaN"
    if math.isinf(x):
        return "kInf" if x > 0 else "-kInf"
    return repr(x)


def vec(t):
    if t is None:
        return "{}"
    return "{" + ", ".join(num(v) for v in t.detach().reshape(-1).tolist()) + "}"


def shape(t):
    return "{" + ", ".join(str(s) for s in t.shape) + "}"


conv_cases = []


def conv_case(name, xs, ws, bias=True, stride=1, padding=0, dilation=1, groups=1, dtype=torch.float32):
    x = rnd(*xs, dtype=dtype).requires_grad_()
    w = rnd(*ws, dtype=dtype).requires_grad_()
    b = rnd(ws[0], dtype=dtype).requires_grad_() if bias else None
    y = F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    gy = rnd(*y.shape, dtype=dtype)
    y.backward(gy)
    pair = lambda v: (v, v) if isinstance(v, int) else v
    conv_cases.append(dict(name=name, x=x, w=w, b=b, stride=pair(stride), padding=pair(padding),
                           dilation=pair(dilation), groups=groups, f64=dtype == torch.float64, y=y, gy=gy,
                           gx=x.grad, gw=w.grad, gb=b.grad if bias else None, grad_fn=y.grad_fn.name()))


conv_case("basic", (2, 3, 7, 6), (4, 3, 3, 3))
conv_case("stride_pad", (2, 2, 7, 8), (3, 2, 3, 2), stride=(2, 1), padding=(1, 0))
conv_case("dilation", (1, 3, 9, 10), (2, 3, 3, 3), stride=(1, 3), padding=2, dilation=2)
conv_case("dilation_hw", (2, 1, 8, 7), (2, 1, 2, 3), stride=2, padding=(0, 1), dilation=(3, 1))
conv_case("groups_nobias", (2, 4, 5, 5), (6, 2, 3, 3), bias=False, padding=1, groups=2)
conv_case("depthwise", (1, 3, 6, 5), (3, 1, 3, 3), padding=1, stride=2, groups=3)
conv_case("one_by_one", (3, 5, 4, 4), (2, 5, 1, 1))
conv_case("kernel_equals_input", (2, 2, 3, 4), (3, 2, 3, 4))
conv_case("unbatched", (2, 5, 5), (3, 2, 2, 2), padding=1)
conv_case("f64", (2, 2, 6, 6), (3, 2, 3, 3), stride=2, padding=1, dtype=torch.float64)

pool_cases = []


def pool_case(name, x, kernel, stride=None, padding=0, dilation=1, ceil_mode=False):
    x = x.clone().requires_grad_()
    y, idx = F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode, return_indices=True)
    gy = rnd(*y.shape)
    y.backward(gy)
    pair = lambda v: (v, v) if isinstance(v, int) else v
    pool_cases.append(dict(name=name, x=x, kernel=pair(kernel), stride=pair(stride) if stride is not None else None,
                           padding=pair(padding), dilation=pair(dilation), ceil_mode=ceil_mode, y=y, idx=idx, gy=gy,
                           gx=x.grad, grad_fn=y.grad_fn.name()))


pool_case("k2", rnd(2, 3, 6, 6), 2)
pool_case("k3_s2_p1", rnd(1, 2, 7, 7), 3, 2, 1)
pool_case("odd_ceil", rnd(2, 1, 5, 7), (2, 3), (1, 2), (1, 1), (2, 1), True)
pool_case("overlap_s1", rnd(1, 2, 5, 5), 3, 1)
pool_case("ceil_drop", rnd(1, 1, 6, 6), 3, 2, 1, 1, True)  # the last ceil window would start in the padding
ties = torch.randint(0, 3, (1, 2, 6, 6)).to(torch.float32)
pool_case("ties", ties, 3, 2, 1)
special = rnd(1, 1, 4, 4)
special[0, 0, 0, 1] = float("nan")
special[0, 0, 1, 0] = float("nan")
special[0, 0, 2:, 2:] = float("-inf")
pool_case("nan_inf", special, 2)
pool_case("unbatched", rnd(3, 5, 5), 2, None, 0, 1, True)

# A tiny CNN: Conv2d(1, 2, 3, padding=1) - ReLU - MaxPool2d(2) - Flatten - Linear(2*4*4, 3), CE loss.
cnn_x = rnd(2, 1, 8, 8)
cnn_t = torch.tensor([2, 0])
cnn_params = dict(cw=rnd(2, 1, 3, 3), cb=rnd(2), lw=rnd(3, 32) * 0.3, lb=rnd(3))
p = {k: v.clone().requires_grad_() for k, v in cnn_params.items()}
h = F.max_pool2d(F.relu(F.conv2d(cnn_x, p["cw"], p["cb"], padding=1)), 2)
logits = F.linear(h.flatten(1), p["lw"], p["lb"])
cnn_loss = F.cross_entropy(logits, cnn_t)
cnn_loss.backward()


def main():
    out_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conv_ref.hpp")
    L = []
    w = L.append
    w("// generated by gen_conv.py — do not edit.")
    w(f"// Regenerate: /usr/bin/python3 tests/reference/gen_conv.py  (PyTorch {torch.__version__})")
    w("// conv2d and max_pool2d forward values and gradients computed by PyTorch, for tests/test_conv.cpp.")
    w("// Gradients are those of sum(y * gy) (y.backward(gy)). Shapes are row-major.")
    w("#pragma once")
    w("")
    w("#include <cstdint>")
    w("#include <limits>")
    w("#include <vector>")
    w("")
    w("namespace conv_reference {")
    w("")
    w("constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();")
    w("constexpr double kInf = std::numeric_limits<double>::infinity();")
    w("")
    w("struct ConvCase {")
    w("  const char* name;")
    w("  std::vector<int64_t> x_shape, w_shape, y_shape;")
    w("  std::vector<int64_t> stride, padding, dilation;  // (h, w)")
    w("  int64_t groups;")
    w("  bool has_bias, f64;")
    w("  std::vector<double> x, w, b, y, gy, gx, gw, gb;")
    w("  const char* grad_fn;")
    w("};")
    w("")
    w("struct PoolCase {")
    w("  const char* name;")
    w("  std::vector<int64_t> x_shape, y_shape;")
    w("  std::vector<int64_t> kernel, stride, padding, dilation;  // (h, w); stride {} = kernel_size")
    w("  bool ceil_mode;")
    w("  std::vector<double> x, y;")
    w("  std::vector<int64_t> indices;")
    w("  std::vector<double> gy, gx;")
    w("  const char* grad_fn;")
    w("};")
    w("")
    w("inline const std::vector<ConvCase> kConvCases = {")
    for c in conv_cases:
        w(f'    {{"{c["name"]}", {shape(c["x"])}, {shape(c["w"])}, {shape(c["y"])},')
        w(f'     {{{c["stride"][0]}, {c["stride"][1]}}}, {{{c["padding"][0]}, {c["padding"][1]}}}, '
          f'{{{c["dilation"][0]}, {c["dilation"][1]}}}, {c["groups"]}, {"true" if c["b"] is not None else "false"}, '
          f'{"true" if c["f64"] else "false"},')
        for k in ["x", "w", "b", "y", "gy", "gx", "gw", "gb"]:
            w(f"     {vec(c[k])},")
        w(f'     "{c["grad_fn"]}"}},')
    w("};")
    w("")
    w("inline const std::vector<PoolCase> kPoolCases = {")
    for c in pool_cases:
        st = "{}" if c["stride"] is None else f'{{{c["stride"][0]}, {c["stride"][1]}}}'
        w(f'    {{"{c["name"]}", {shape(c["x"])}, {shape(c["y"])},')
        w(f'     {{{c["kernel"][0]}, {c["kernel"][1]}}}, {st}, {{{c["padding"][0]}, {c["padding"][1]}}}, '
          f'{{{c["dilation"][0]}, {c["dilation"][1]}}}, {"true" if c["ceil_mode"] else "false"},')
        w(f"     {vec(c['x'])},")
        w(f"     {vec(c['y'])},")
        w("     {" + ", ".join(str(int(v)) for v in c["idx"].reshape(-1).tolist()) + "},")
        w(f"     {vec(c['gy'])},")
        w(f"     {vec(c['gx'])},")
        w(f'     "{c["grad_fn"]}"}},')
    w("};")
    w("")
    w("// The tiny CNN: Conv2d(1, 2, 3, padding=1) - ReLU - MaxPool2d(2) - Flatten - Linear(32, 3), cross entropy.")
    w(f"inline const std::vector<double> kCnnX = {vec(cnn_x)};  // (2, 1, 8, 8)")
    w("inline const std::vector<int64_t> kCnnTarget = {" + ", ".join(str(int(v)) for v in cnn_t.tolist()) + "};")
    for k, shp in [("cw", "(2, 1, 3, 3)"), ("cb", "(2)"), ("lw", "(3, 32)"), ("lb", "(3)")]:
        w(f"inline const std::vector<double> kCnn_{k} = {vec(p[k])};  // {shp}")
        w(f"inline const std::vector<double> kCnn_{k}_grad = {vec(p[k].grad)};")
    w(f"constexpr double kCnnLoss = {num(cnn_loss)};")
    w("")
    w("}  // namespace conv_reference")
    with open(out_path, "w") as f:
        f.write("\n".join(L) + "\n")
    print(f"wrote {out_path}: {len(conv_cases)} conv cases, {len(pool_cases)} pool cases")


if __name__ == "__main__":
    main()

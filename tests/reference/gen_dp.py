#!/usr/bin/python3
# tests/reference/gen_dp.py — generates tests/reference/dp_ref.hpp.
#
# 1. DataParallel's batch split. torch.nn.DataParallel scatters with torch/csrc/cuda/comm.cpp's
#    scatter, which calls tensor.chunk(len(device_ids), dim) (explicit chunk sizes are only given
#    in backward, where they repeat the forward's). So the table is torch.chunk's sizes, for
#    batch sizes B = 1..33 and device counts n = 1..8; fewer than n chunks means fewer devices
#    used. (comm.scatter itself needs CUDA tensors, so it is torch.chunk that runs here.)
# 2. The gradient DataParallel must reproduce: .grad of a float64 MLP 5 -> 7 (tanh) -> 3 on a
#    full batch with MSELoss (mean), for several batch sizes. PyTorch's DataParallel sums the
#    replicas' gradients into the module's .grad, which with a mean loss over the gathered
#    output equals this full-batch gradient; tests/test_parallel.cpp checks ours against it.
# 3. The same MLP called with several arguments, forward(x, mask, scale) = mlp(x) * mask * scale
#    (mask (B, 3), scale a float): the full-batch output and gradients that DataParallel's
#    forward<M>(x, mask, scale) must give (x and mask are scattered, scale copied to every replica).
#
# Run with Debian's PyTorch (python3-torch):  /usr/bin/python3 tests/reference/gen_dp.py
import math
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def fmt(values):
    return "{" + ", ".join(repr(float(v)) for v in values) + "}"


def chunk_table():
    rows = []
    for batch in range(1, 34):
        for n in range(1, 9):
            sizes = [c.shape[0] for c in torch.arange(batch).chunk(n)]
            rows.append("    {%d, %d, {%s}}," % (batch, n, ", ".join(str(s) for s in sizes)))
    return rows


def mlp_cases():
    torch.set_default_dtype(torch.float64)
    w1 = torch.tensor([[0.5 * math.sin(0.7 * i + 0.3 * j) for j in range(5)] for i in range(7)])
    b1 = torch.tensor([0.1 * math.cos(1.3 * i) for i in range(7)])
    w2 = torch.tensor([[0.4 * math.cos(0.5 * i - 0.9 * j) for j in range(7)] for i in range(3)])
    b2 = torch.tensor([0.05 * (i - 1) for i in range(3)])
    params = [p.requires_grad_() for p in (w1, b1, w2, b2)]
    out = ["inline const std::vector<double> w1 = %s;  // (7, 5)" % fmt(w1.flatten().tolist()),
           "inline const std::vector<double> b1 = %s;  // (7)" % fmt(b1.tolist()),
           "inline const std::vector<double> w2 = %s;  // (3, 7)" % fmt(w2.flatten().tolist()),
           "inline const std::vector<double> b2 = %s;  // (3)" % fmt(b2.tolist()),
           "",
           "struct GradCase {",
           "  int64_t batch;",
           "  std::vector<double> x, target;  // (batch, 5), (batch, 3)",
           "  double loss;",
           "  std::vector<double> output, dw1, db1, dw2, db2;",
           "};",
           "inline const std::vector<GradCase> grad_cases = {"]
    for batch in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 33):
        x = torch.tensor([[math.cos(0.11 * r + 0.23 * c) for c in range(5)] for r in range(batch)])
        target = torch.tensor([[math.sin(0.17 * r - 0.4 * c) for c in range(3)] for r in range(batch)])
        for p in params:
            p.grad = None
        y = torch.nn.functional.linear(torch.tanh(torch.nn.functional.linear(x, w1, b1)), w2, b2)
        loss = torch.nn.functional.mse_loss(y, target)
        loss.backward()
        out.append("    {%d, %s, %s, %r, %s, %s, %s, %s, %s}," % (
            batch, fmt(x.flatten().tolist()), fmt(target.flatten().tolist()), loss.item(),
            fmt(y.detach().flatten().tolist()), fmt(w1.grad.flatten().tolist()), fmt(b1.grad.tolist()),
            fmt(w2.grad.flatten().tolist()), fmt(b2.grad.tolist())))
    out.append("};")
    out += ["",
            "// forward(x, mask, scale) = mlp(x) * mask * scale, MSELoss against target (gen_dp.py, part 3).",
            "struct MaskedCase {",
            "  int64_t batch;",
            "  std::vector<double> x, mask, target;  // (batch, 5), (batch, 3), (batch, 3)",
            "  double scale, loss;",
            "  std::vector<double> output, dw1, db1, dw2, db2;",
            "};",
            "inline const std::vector<MaskedCase> masked_cases = {"]
    for batch in (2, 5, 7):
        x = torch.tensor([[math.cos(0.13 * r + 0.29 * c) for c in range(5)] for r in range(batch)])
        mask = torch.tensor([[float((r + c) % 3 != 0) for c in range(3)] for r in range(batch)])
        target = torch.tensor([[math.sin(0.19 * r - 0.3 * c) for c in range(3)] for r in range(batch)])
        scale = 0.75
        for p in params:
            p.grad = None
        y = torch.nn.functional.linear(torch.tanh(torch.nn.functional.linear(x, w1, b1)), w2, b2) * mask * scale
        loss = torch.nn.functional.mse_loss(y, target)
        loss.backward()
        out.append("    {%d, %s, %s, %s, %r, %r, %s, %s, %s, %s, %s}," % (
            batch, fmt(x.flatten().tolist()), fmt(mask.flatten().tolist()), fmt(target.flatten().tolist()), scale,
            loss.item(), fmt(y.detach().flatten().tolist()), fmt(w1.grad.flatten().tolist()), fmt(b1.grad.tolist()),
            fmt(w2.grad.flatten().tolist()), fmt(b2.grad.tolist())))
    out.append("};")
    return out


def main():
    lines = ["// Generated by tests/reference/gen_dp.py with PyTorch %s. Do not edit." % torch.__version__,
             "// DataParallel's chunk sizes (torch.chunk) and a float64 MLP's full-batch gradients, with one",
             "// input and with several (x, mask, scale).",
             "#pragma once", "", "#include <cstdint>", "#include <vector>", "", "namespace dp_reference {", "",
             "struct ChunkCase {", "  int64_t batch, devices;", "  std::vector<int64_t> sizes;", "};",
             "inline const std::vector<ChunkCase> chunk_cases = {"]
    lines += chunk_table()
    lines += ["};", ""]
    lines += mlp_cases()
    lines += ["", "}  // namespace dp_reference", ""]
    with open(os.path.join(HERE, "dp_ref.hpp"), "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()

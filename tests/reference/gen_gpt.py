#!/usr/bin/python3
# tests/reference/gen_gpt.py — generates tests/reference/gpt_ref.hpp.
#
# nanoGPT's model (karpathy/nanoGPT model.py: GPT, Block, CausalSelfAttention with the manual
# attention path PyTorch 1.13 needs, MLP, the tied lm_head, _init_weights and the scaled c_proj
# init) and its training step (train.py: AdamW with the two weight-decay groups of
# configure_optimizers, get_lr's warmup and cosine decay, clip_grad_norm_ 1.0), in a tiny config,
# recorded so that tests/test_gpt.cpp checks examples/gpt.hpp against it without PyTorch (the
# model itself is tests/reference/nanogpt.py):
#   * param.<name>: every parameter after init (named_parameters: the tied head listed once)
#   * idx, targets (4, 8): one batch; logits (4, 8, V); loss; grad.<name> of that batch
#   * step.idx, step.targets: one batch trained on for 10 AdamW steps; step.loss<k>, step.lr<k>
#     of each step; final.<name>: the parameters after them
# Two configs: "nobias" (nanoGPT's training default bias=False) and "bias" (bias=True).
# Every array is written with its shape; values with 9 significant digits ("%.9g"), which read
# back into float32 give the very float32 value PyTorch had.
#
# Run with Debian's PyTorch (python3-torch), not a `python3` found on PATH:
#     /usr/bin/python3 tests/reference/gen_gpt.py
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from nanogpt import GPT, get_lr
from refgen import Recorder

torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "gpt_ref.hpp")

REC = Recorder()
put = REC.put


# The same constants as tests/test_gpt.cpp.
B, T, STEPS = 4, 8, 10
LR, MIN_LR, WARMUP, DECAY = 1e-2, 1e-3, 3, 10
for tag, bias in (("nobias", False), ("bias", True)):
    torch.manual_seed(1 if bias else 0)
    c = dict(block_size=8, vocab_size=11, n_layer=2, n_head=2, n_embd=16, bias=bias)
    model = GPT(c)
    if bias:  # zero-initialised biases and unit LayerNorm weights would test little: perturb them
        with torch.no_grad():
            for n, p in model.named_parameters():
                if p.dim() == 1:
                    p.add_(torch.randn_like(p) * 0.1)
    names = [n for n, _ in model.named_parameters()]
    for n, p in model.named_parameters():
        put(f"{tag}.param.{n}", p)
    idx = torch.randint(0, c["vocab_size"], (B, T))
    targets = torch.randint(0, c["vocab_size"], (B, T))
    put(f"{tag}.idx", idx.to(torch.float64))
    put(f"{tag}.targets", targets.to(torch.float64))
    logits, loss = model(idx, targets)
    loss.backward()
    put(f"{tag}.logits", logits)
    put(f"{tag}.loss", loss.reshape(1))
    for n, p in model.named_parameters():
        put(f"{tag}.grad.{n}", p.grad)
    model.zero_grad(set_to_none=True)
    opt = model.configure_optimizers(0.1, LR, (0.9, 0.99))
    # one batch, seen every step: the loss must fall
    x = torch.randint(0, c["vocab_size"], (B, T))
    y = torch.roll(x, -1, dims=1)  # predict the next token of a fixed sequence (wrapping at the end)
    put(f"{tag}.step.idx", x.to(torch.float64))
    put(f"{tag}.step.targets", y.to(torch.float64))
    for it in range(STEPS):
        lr = get_lr(it, LR, MIN_LR, WARMUP, DECAY)
        for g in opt.param_groups:
            g["lr"] = lr
        _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        put(f"{tag}.step.loss{it}", loss.detach().reshape(1))
        put(f"{tag}.step.lr{it}", torch.tensor([lr], dtype=torch.float64))
    for n, p in model.named_parameters():
        put(f"{tag}.final.{n}", p)

names = "\n/// The parameter names in named_parameters() order, per config.\n"
names += "inline const std::vector<std::string>& names(const std::string& tag) {\n"
names += "  static const std::map<std::string, std::vector<std::string>> m = {\n"
for tag in ("nobias", "bias"):
    ns = [n[len(tag) + len(".param."):] for n, _ in REC.arrays if n.startswith(f"{tag}.param.")]
    names += f'    {{"{tag}", {{' + ", ".join(f'"{n}"' for n in ns) + "}},\n"
names += "  };\n  return m.at(tag);\n}\n"
REC.write(OUT, "gpt_ref", "gen_gpt.py", "nanoGPT's model and training step in a tiny config, checked by tests/test_gpt.cpp.",
          fmt=lambda v: "%.9g" % v, extra=names)

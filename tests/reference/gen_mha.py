#!/usr/bin/python3
# tests/reference/gen_mha.py — generates tests/reference/mha_ref.hpp.
#
# Records what PyTorch's torch.nn.MultiheadAttention computes, so that tests/test_transformer.cpp
# checks tinytorch's nn::MultiheadAttention (include/tinytorch/nn/attention.hpp) against it
# without PyTorch at run time. E = 8, 2 heads, L = 3 queries, S = 4 keys, N = 2, bias on; the
# parameters are drawn here (rnd: 4 decimals) and loaded by both sides by PyTorch's names
# (in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias). Cases, each with its output,
# attention weights (when asked) and the gradients of query, key, value and every parameter
# under a random output gradient (names mha.<case>.*):
#   self         query = key = value (L, N, E), need_weights, averaged weights
#   cross        key = value (S, N, E) != query, per-head weights (average_attn_weights=False)
#   masks        an attn_mask (L, S) bool (tinytorch: int64, 1 = may not attend) and a
#                key_padding_mask (N, S) bool, averaged weights
#   floatmask    a float attn_mask (N*H, L, S), need_weights=False (no weights)
#   batch_first  batch_first=True: (N, L, E) inputs
#   unbatched    (L, E) / (S, E) inputs, a key_padding_mask (S)
# Masks are written as float64 0/1 (bool) or their values (float).
#
# Run with Debian's PyTorch (python3-torch), not a `python3` found on PATH:
#     /usr/bin/python3 tests/reference/gen_mha.py
import os

import torch
import torch.nn as nn

from refgen import Recorder, leaf, rnd

torch.manual_seed(0)
torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "mha_ref.hpp")

REC = Recorder()
put = REC.put
E, H, L, S, N = 8, 2, 3, 4, 2

PARAMS = {"in_proj_weight": rnd(3 * E, E, lo=-0.5, hi=0.5), "in_proj_bias": rnd(3 * E, lo=-0.5, hi=0.5),
          "out_proj.weight": rnd(E, E, lo=-0.5, hi=0.5), "out_proj.bias": rnd(E, lo=-0.5, hi=0.5)}
for name, t in PARAMS.items():
    put(f"mha.param.{name}", t)

ATTN_MASK = torch.tensor([[False, False, True, True], [False, False, False, True], [False, True, False, False]])
KPM = torch.tensor([[False, False, False, True], [False, True, False, False]])
FLOAT_MASK = rnd(N * H, L, S)
put("mha.masks.attn_mask", ATTN_MASK.to(torch.float64))
put("mha.masks.key_padding_mask", KPM.to(torch.float64))
put("mha.floatmask.attn_mask", FLOAT_MASK)
put("mha.unbatched.key_padding_mask", KPM[0].to(torch.float64))

CASES = {
    #  name: (query shape, key/value shape, self-attention, module kwargs, forward kwargs)
    "self": ((L, N, E), (L, N, E), True, {}, {}),
    "cross": ((L, N, E), (S, N, E), False, {}, {"average_attn_weights": False}),
    "masks": ((L, N, E), (S, N, E), False, {}, {"attn_mask": ATTN_MASK, "key_padding_mask": KPM}),
    "floatmask": ((L, N, E), (S, N, E), False, {}, {"attn_mask": FLOAT_MASK, "need_weights": False}),
    "batch_first": ((N, L, E), (N, S, E), False, {"batch_first": True}, {}),
    "unbatched": ((L, E), (S, E), False, {}, {"key_padding_mask": KPM[0]}),
}
for name, (qs, ks, self_attn, mkw, fkw) in CASES.items():
    m = nn.MultiheadAttention(E, H, **mkw)
    with torch.no_grad():
        for pn, p in m.named_parameters():
            p.copy_(PARAMS[pn])
    Q = rnd(*qs)
    K = Q if self_attn else rnd(*ks)
    V = Q if self_attn else rnd(*ks)
    put(f"mha.{name}.query", Q)
    if not self_attn:
        put(f"mha.{name}.key", K)
        put(f"mha.{name}.value", V)
    q = leaf(Q)
    k, v = (q, q) if self_attn else (leaf(K), leaf(V))
    out, w = m(q, k, v, **fkw)
    G = rnd(*out.shape)
    put(f"mha.{name}.gout", G)
    out.backward(G)
    put(f"mha.{name}.out", out)
    if w is not None:
        put(f"mha.{name}.weights", w)
    put(f"mha.{name}.grad_query", q.grad)
    if not self_attn:
        put(f"mha.{name}.grad_key", k.grad)
        put(f"mha.{name}.grad_value", v.grad)
    for pn, p in m.named_parameters():
        put(f"mha.{name}.grad.{pn}", p.grad)

# ---- write ------------------------------------------------------------------------------------
REC.write(OUT, "mha_ref", "gen_mha.py",
          "torch.nn.MultiheadAttention reference values checked by tests/test_transformer.cpp.")

#!/usr/bin/python3
# tests/reference/gen_transformer.py — generates tests/reference/transformer_ref.hpp.
#
# Records what PyTorch computes for the transformer's parts checked by tests/test_transformer.cpp,
# so that the test compares tinytorch with it without PyTorch at run time:
#   * gelu, approximate "none" and "tanh": outputs and input gradients over [-8, 8]   names gelu.*
#   * embedding with repeated indices, with and without padding_idx (also negative): output and
#     weight gradient                                                               names emb.*
#   * matmul of 4-D and broadcast batch dims: output and both gradients              names mm4.*
#   * scaled_dot_product_attention, computed by the reference formula of PyTorch 2.x's
#     documentation (1.13 has no such function): plain, is_causal with L = S and L < S, a bool
#     mask (tinytorch: int64 0/1), a float mask broadcast over heads, an explicit scale;
#     output and the gradients of query, key and value                               names sdpa.*
# Every array is written with its shape; float32 values as repr(float(x)) (the exact double of
# the float32 value). Inputs are rounded to 4 decimals before use, so they are written exactly.
#
# Run with Debian's PyTorch (python3-torch), not a `python3` found on PATH:
#     /usr/bin/python3 tests/reference/gen_transformer.py
import math
import os

import torch
import torch.nn.functional as F

from refgen import Recorder, leaf, rnd

torch.manual_seed(0)
torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "transformer_ref.hpp")

REC = Recorder()
put = REC.put

# ---- gelu -------------------------------------------------------------------------------------
X = torch.linspace(-8, 8, 65, dtype=torch.float64).to(torch.float32)  # steps of 0.25: exact in float32
put("gelu.x", X)
GOUT = rnd(65)
put("gelu.gout", GOUT)
for approx in ("none", "tanh"):
    x = leaf(X)
    y = F.gelu(x, approximate=approx)
    assert y.grad_fn.name() == "GeluBackward0", y.grad_fn.name()
    y.backward(GOUT)
    put(f"gelu.{approx}.y", y)
    put(f"gelu.{approx}.grad", x.grad)

# ---- embedding --------------------------------------------------------------------------------
W = rnd(7, 3)
put("emb.weight", W)
IDX = torch.tensor([[2, 0, 6, 2], [5, 2, 2, 1]])
put("emb.idx", IDX.to(torch.float64))
EGOUT = rnd(2, 4, 3)
put("emb.gout", EGOUT)
for tag, pad in (("nopad", None), ("pad2", 2), ("padm1", -1)):
    w = leaf(W)
    y = F.embedding(IDX, w, padding_idx=pad)
    assert y.grad_fn.name() == "EmbeddingBackward0", y.grad_fn.name()
    y.backward(EGOUT)
    put(f"emb.{tag}.y", y)
    put(f"emb.{tag}.grad", w.grad)

# ---- matmul with 4-D and broadcast batch dims ----------------------------------------------------
A, B = rnd(2, 1, 3, 4), rnd(3, 4, 5)
put("mm4.a", A)
put("mm4.b", B)
a, b = leaf(A), leaf(B)
y = torch.matmul(a, b)
assert tuple(y.shape) == (2, 3, 3, 5)
G = rnd(2, 3, 3, 5)
put("mm4.gout", G)
y.backward(G)
put("mm4.y", y)
put("mm4.grad_a", a.grad)
put("mm4.grad_b", b.grad)


# ---- scaled_dot_product_attention ----------------------------------------------------------------
def sdpa_reference(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """The formula of torch.nn.functional.scaled_dot_product_attention's documentation (2.x)."""
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    attn_bias = torch.zeros(L, S, dtype=query.dtype)
    if is_causal:
        assert attn_mask is None
        temp_mask = torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)
        attn_bias.masked_fill_(temp_mask.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_bias = attn_bias.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            attn_bias = attn_mask + attn_bias
    attn_weight = query @ key.transpose(-2, -1) * scale_factor
    attn_weight = attn_weight + attn_bias
    attn_weight = torch.softmax(attn_weight, dim=-1)
    assert dropout_p == 0.0
    return attn_weight @ value


BOOL_MASK = torch.rand(5, 6) > 0.3
BOOL_MASK[:, 0] = True  # every query keeps a key: no all-masked row
FLOAT_MASK = rnd(2, 1, 5, 6)
CASES = {
    #  name: (q shape, k shape, v shape, kwargs)
    "plain": ((2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 3), {}),
    "causal": ((2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 3), {"is_causal": True}),
    "causal_wide": ((1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 3), {"is_causal": True}),
    "boolmask": ((2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 3), {"attn_mask": BOOL_MASK}),
    "floatmask": ((2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 3), {"attn_mask": FLOAT_MASK}),
    "scale": ((3, 5, 4), (3, 6, 4), (3, 6, 2), {"scale": 0.3}),
}
put("sdpa.boolmask.mask", BOOL_MASK.to(torch.float64))
put("sdpa.floatmask.mask", FLOAT_MASK)
for name, (qs, ks, vs, kw) in CASES.items():
    Q, K, V = rnd(*qs), rnd(*ks), rnd(*vs)
    put(f"sdpa.{name}.q", Q)
    put(f"sdpa.{name}.k", K)
    put(f"sdpa.{name}.v", V)
    q, k, v = leaf(Q), leaf(K), leaf(V)
    y = sdpa_reference(q, k, v, **kw)
    G = rnd(*y.shape)
    put(f"sdpa.{name}.gout", G)
    y.backward(G)
    put(f"sdpa.{name}.y", y)
    put(f"sdpa.{name}.grad_q", q.grad)
    put(f"sdpa.{name}.grad_k", k.grad)
    put(f"sdpa.{name}.grad_v", v.grad)

# ---- write ------------------------------------------------------------------------------------
REC.write(OUT, "transformer_ref", "gen_transformer.py",
          "gelu, embedding, 4-D matmul and scaled_dot_product_attention reference values checked by\n"
          "// tests/test_transformer.cpp.")

# tests/reference/gen_half.py — PyTorch's float16 and bfloat16 conversions, every bit pattern and
# every rounding boundary, hashed into half_ref.hpp for tests/test_half.cpp.
#
# For each type (float16: 5-bit exponent, 10-bit mantissa; bfloat16: 8 and 7):
#   to_float   all 65,536 patterns -> float32 bits
#   roundtrip  all 65,536 patterns -> float32 -> back to the 16-bit type
#   rounding   for every pair of adjacent positive finite values lo < hi: the float32 midpoint
#              m = (lo + hi) / 2 (exact in float32) and its float32 neighbours below and above,
#              each with both signs -> the 16-bit type (round to nearest, ties to even)
#   specials   a list of float32 values (overflow and underflow edges, inf, NaNs) -> the type
#   from_double a list of float64 values -> the type (PyTorch goes through float32)
#   ops        19 ops on two 8-element tensors of the type (see OPS below), and a 4096-element sum
# Outputs are written as little-endian uint32 (to_float) or uint16 words and hashed with zlib's
# CRC-32 in buckets of 4096 patterns (bucket b covers patterns [4096 b, 4096 b + 4096)), so a
# failure names the range. The specials and from_double outputs are written out in full.
# The C++ test builds the same inputs with the same rules (tests/test_half.cpp).
# Run: /usr/bin/python3 tests/reference/gen_half.py  (Debian's python3-torch 1.13; writes atomically)
import os
import struct
import zlib

import numpy as np
import torch

from refgen import write_atomically

HERE = os.path.dirname(os.path.abspath(__file__))
BUCKET = 4096

# float32 bit patterns the C++ test lists in the same order (SPECIALS_F32 there).
SPECIALS_F32 = [
    0x00000000, 0x80000000, 0x3F800000, 0xBF800000,  # +-0, +-1
    0x477FE000, 0x477FEFFF, 0x477FF000, 0x477FF001, 0x47800000,  # 65504, below/at/above 65520, 65536
    0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x7F7F7FFF,  # float max, bfloat16's rounding to inf
    0x7F800000, 0xFF800000,  # +-inf
    0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0x7FA00000, 0xFFC00123,  # NaNs
    0x33000000, 0x33000001, 0x337FFFFF, 0x33800000, 0x33C00000, 0x34000000,  # 2^-25, 2^-24 and around
    0x387FC000, 0x387FE000, 0x38800000,  # below and at 2^-14 (float16's smallest normal)
    0x00000001, 0x807FFFFF, 0x00800000,  # float32 subnormals, 2^-126
    0x3727C5AC, 0x3283424E, 0x322BCC77,  # 1e-5, 1.5e-8, 1e-8 (chapter 11's gradients)
]
FROM_DOUBLE = [1.0, 0.1, 1e-5, 1e-8, 65519.99, 65520.0, 1e300, -1e-300, 1.0009765625 + 2 ** -30,
               1.00048828125 + 2 ** -40, 3.0 + 2 ** -9]


def f32_from_bits(bits):
    return np.array(bits, dtype=np.uint32).view(np.float32)


def bits_of(t16):
    """The 16-bit patterns of a float16/bfloat16 tensor as Python ints."""
    return (t16.view(torch.int16).to(torch.int32) & 0xFFFF).tolist()


def crcs(words, fmt, per_bucket):
    out = []
    for b in range(0, len(words), per_bucket):
        out.append(zlib.crc32(struct.pack("<%d%s" % (len(words[b:b + per_bucket]), fmt), *words[b:b + per_bucket])))
    return out


def rounding_inputs(values, max_finite):
    """The float32 inputs of the rounding table for positive patterns 0..max_finite-1 (lo = pattern p,
    hi = p + 1): per p, [m, m-, m+, -m, -m-, -m+] (m- and m+ the float32 neighbours of m)."""
    lo = values[:max_finite].astype(np.float64)
    hi = values[1:max_finite + 1].astype(np.float64)
    m = ((lo + hi) / 2).astype(np.float32)
    assert np.all(m.astype(np.float64) == (lo + hi) / 2), "a midpoint is not exact in float32"
    below = np.nextafter(m, np.float32(-np.inf))
    above = np.nextafter(m, np.float32(np.inf))
    return np.stack([m, below, above, -m, -below, -above], axis=1).reshape(-1)


def table(dtype, max_finite):
    patterns = torch.arange(0, 65536, dtype=torch.int32).to(torch.int16).view(dtype)  # 0, 1, ..., 0xFFFF
    as_float = patterns.float()
    to_float = (as_float.view(torch.int32).to(torch.int64) & 0xFFFFFFFF).tolist()
    roundtrip = bits_of(as_float.to(dtype))
    values = as_float.numpy()
    inputs = torch.from_numpy(rounding_inputs(values, max_finite))
    rounding = bits_of(inputs.to(dtype))
    specials = bits_of(torch.from_numpy(f32_from_bits(SPECIALS_F32)).to(dtype))
    from_double = bits_of(torch.tensor(FROM_DOUBLE, dtype=torch.float64).to(dtype))
    return {
        "to_float": crcs(to_float, "I", BUCKET),
        "roundtrip": crcs(roundtrip, "H", BUCKET),
        "rounding": crcs(rounding, "H", BUCKET * 6),
        "specials": specials,
        "from_double": from_double,
    }


# ---- ops on float16/bfloat16 tensors: computed in float32, rounded once -------------------------
# x, y: 8 values each (the inputs are written as bits too). Each op runs in the 16-bit dtype with
# PyTorch's own CPU kernel where 1.13 has one; where it does not ("exp_vml_cpu" not implemented for
# 'Half': most float16 math, mm, softmax, layer_norm on 1.13's CPU) the reference is what PyTorch
# 2.x's CPU kernels compute: the op in float32 on the converted inputs, rounded once. For the ops in
# OPMATH_ONLY the reference is that too, even where 1.13 has a bfloat16 kernel: 1.13's rounds
# intermediate results to bfloat16 (its log_softmax returns exactly 0 for the largest input, its mm
# and layer_norm are off by 1 to 4 units in the last place); PyTorch 2.x computes them in float.
# The header lists, per dtype, the ops 1.13 ran itself and where its own kernel differs.
X = [0.1, -2.5, 3.3, 1e-3, 0.75, -0.3, 12.0, 1.5]
Y = [7.1, 0.2, -1.0, 4.0, -0.6, 2.2, 0.05, -9.0]
OPS = [
    ("add", lambda x, y: x + y), ("sub", lambda x, y: x - y), ("mul", lambda x, y: x * y),
    ("div", lambda x, y: x / y), ("mul_scalar", lambda x, y: x * 0.1), ("add_overflow", lambda x, y: x + 70000.0),
    ("exp", lambda x, y: x.exp()), ("tanh", lambda x, y: x.tanh()), ("sigmoid", lambda x, y: x.sigmoid()),
    ("relu", lambda x, y: x.relu()), ("sqrt_abs", lambda x, y: x.abs().sqrt()), ("pow2", lambda x, y: x.pow(2)),
    ("sum", lambda x, y: x.sum()), ("mean", lambda x, y: x.mean()), ("max", lambda x, y: x.max()),
    ("softmax", lambda x, y: x.softmax(0)), ("log_softmax", lambda x, y: x.log_softmax(0)),
    ("mm", lambda x, y: x.view(2, 4) @ y.view(4, 2)),
    ("layer_norm", lambda x, y: torch.nn.functional.layer_norm(x, (8,))),
]


OPMATH_ONLY = {"softmax", "log_softmax", "mm", "layer_norm"}


def ops_table(dtype):
    x, y = torch.tensor(X).to(dtype), torch.tensor(Y).to(dtype)
    outs, native, differs = [], [], []
    for name, f in OPS:
        opmath = f(x.float(), y.float()).to(dtype)
        try:
            r = f(x, y)
            native.append(name)
        except RuntimeError:
            r = opmath
        if name in OPMATH_ONLY:
            if not torch.equal(r.view(torch.int16), opmath.view(torch.int16)):
                differs.append(name)
            r = opmath
        assert r.dtype == dtype, name
        outs.append(bits_of(r.reshape(-1)))
    # the sum of 4096 copies of 0.1: accumulated in float32 (409.5 -> 409.5), not in the 16-bit type
    big = torch.full((4096,), 0.1).to(dtype)
    try:
        s = big.sum()
    except RuntimeError:
        s = big.float().sum().to(dtype)
    return bits_of(x), bits_of(y), outs, native, differs, bits_of(s.reshape(1))[0]


def arr(name, xs, ctype):
    body = ", ".join("0x%X" % x for x in xs)
    return "inline constexpr %s %s[] = {%s};\n" % (ctype, name, body)


def main():
    out = ["// Generated by tests/reference/gen_half.py from PyTorch %s; do not edit.\n" % torch.__version__,
           "// CRC-32 (zlib) per bucket of 4096 patterns; see the generator for the inputs.\n",
           "#pragma once\n#include <cstdint>\n\nnamespace half_ref {\n"]
    for prefix, dtype, max_finite in (("half", torch.float16, 0x7BFF), ("bfloat16", torch.bfloat16, 0x7F7F)):
        t = table(dtype, max_finite)
        out.append("inline constexpr int %s_max_finite = 0x%X;\n" % (prefix, max_finite))
        for key in ("to_float", "roundtrip", "rounding"):
            out.append(arr("%s_%s_crc" % (prefix, key), t[key], "uint32_t"))
        out.append(arr("%s_specials" % prefix, t["specials"], "uint16_t"))
        out.append(arr("%s_from_double" % prefix, t["from_double"], "uint16_t"))
        xb, yb, outs, native, differs, big_sum = ops_table(dtype)
        out.append(arr("%s_x" % prefix, xb, "uint16_t"))
        out.append(arr("%s_y" % prefix, yb, "uint16_t"))
        for (name, _), o in zip(OPS, outs):
            out.append(arr("%s_%s" % (prefix, name), o, "uint16_t"))
        out.append("// PyTorch %s ran these itself on the CPU: %s\n" % (torch.__version__, ", ".join(native)))
        out.append("// its own kernel differs from float32-then-round (the reference used) for: %s\n"
                   % (", ".join(differs) or "none"))
        out.append("inline constexpr uint16_t %s_sum_4096_tenths = 0x%X;\n" % (prefix, big_sum))
    out.append(arr("specials_f32", SPECIALS_F32, "uint32_t"))
    out.append("inline constexpr double from_double[] = {%s};\n" % ", ".join(repr(x) for x in FROM_DOUBLE))
    out.append("}  // namespace half_ref\n")
    write_atomically(os.path.join(HERE, "half_ref.hpp"), "".join(out))


if __name__ == "__main__":
    main()

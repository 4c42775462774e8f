#!/usr/bin/env python3
"""tests/interop/check_safetensors.py FILE — checks, with the reference reader (the Python
`safetensors` package), a checkpoint that tinytorch::save wrote: test_serialization's
"[safetensors-export]" test case (tests/test_serialization.cpp) writes FILE, and
tests/interop/safetensors_test.sh (ctest safetensors_python) runs both.

Checks: safetensors.numpy.load_file reads it; the names, dtypes, shapes and values (bit for bit)
are EXPECTED below (the same values the C++ test writes); the metadata is read back by
safe_open(...).metadata(), with tinytorch's per-tensor CRC-32 digests computed here by zlib; safetensors' own writer produces the same bytes from the same arrays
(but for the order of the metadata's keys, a hash map's order there);
and, when torch is importable, safetensors.torch.load_file returns the same tensors.
Needs numpy and safetensors; exits 1 with a message on any difference.
"""
import json
import struct
import sys
import zlib

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save

# Keep in step with "[safetensors-export]" in tests/test_serialization.cpp.
W = np.arange(12, dtype=np.float32).reshape(3, 4) * np.float32(0.25) - np.float32(1.5)
EXPECTED = {
    "linear.weight": W,
    "linear.weight_t": np.ascontiguousarray(W.T),
    "linear.bias": np.array([0.1, -0.2, 0.3], dtype=np.float32),
    "state.0.step": np.array(7.0, dtype=np.float64),
    "state.0.exp_avg": np.array([1.0 / 3.0, -2.5e-300], dtype=np.float64),
    "counts": np.array([[-1, 2**40], [3, -(2**62)]], dtype=np.int64),
    "empty": np.zeros((0, 3), dtype=np.float32),
    '\u00fcn\u00ef "q"\\\n\t': np.array([42], dtype=np.int64),
}
USER_METADATA = {"format": "pt", "producer": "tinytorch"}
ST_DTYPE = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64", np.dtype(np.int64): "I64"}


def digest(a):
    """tinytorch's integrity digest (include/tinytorch/serialization.hpp, tensor_digest): CRC-32 of
    "<dtype>[<d0>,<d1>,...]" followed by the array's bytes, as 8 lowercase hex digits."""
    text = f"{ST_DTYPE[a.dtype]}[{','.join(str(d) for d in a.shape)}]".encode()
    return "%08x" % zlib.crc32(np.ascontiguousarray(a).tobytes(), zlib.crc32(text))


# What the reader sees in "__metadata__": the user's entries and one digest per tensor.
METADATA = {**USER_METADATA, **{f"tinytorch.crc32:{k}": digest(v) for k, v in EXPECTED.items()}}


def fail(msg):
    print(f"check_safetensors.py: {msg}")
    sys.exit(1)


def main():
    if len(sys.argv) != 2:
        fail("usage: check_safetensors.py FILE")
    path = sys.argv[1]
    got = load_file(path)
    if sorted(got) != sorted(EXPECTED):
        fail(f"names {sorted(got)!r}, expected {sorted(EXPECTED)!r}")
    for name, want in EXPECTED.items():
        have = got[name]
        if have.dtype != want.dtype or have.shape != want.shape or have.tobytes() != want.tobytes():
            fail(f"{name!r}: got {have.dtype} {have.shape} {have!r}, expected {want.dtype} {want.shape} {want!r}")
    with safe_open(path, framework="np") as f:
        if f.metadata() != METADATA:
            fail(f"metadata {f.metadata()!r}, expected {METADATA!r}")
    with open(path, "rb") as f:
        data = f.read()
    # The same bytes as safetensors' own writer, but for the order of the metadata's keys (a hash
    # map's order there, sorted in tinytorch): same header length, same header as JSON (tensors in
    # the same order), same data buffer.
    ref = save(EXPECTED, metadata=METADATA)
    n, ref_n = struct.unpack("<Q", data[:8])[0], struct.unpack("<Q", ref[:8])[0]
    header, ref_header = json.loads(data[8:8 + n]), json.loads(ref[8:8 + ref_n])
    if n != ref_n or header != ref_header or list(header) != list(ref_header) or data[8 + n:] != ref[8 + ref_n:]:
        fail(f"safetensors.numpy.save writes other bytes for the same arrays:\n{ref[:8 + ref_n]!r}\n{data[:8 + n]!r}")
    try:
        import torch
        from safetensors.torch import load_file as torch_load_file
    except ImportError:
        torch = None
    if torch is not None:
        pt = torch_load_file(path)
        for name, want in EXPECTED.items():
            if not torch.equal(pt[name], torch.from_numpy(want.copy())):
                fail(f"safetensors.torch.load_file: {name!r} differs")
    print(f"check_safetensors.py: {path}: {len(EXPECTED)} tensors, metadata and bytes as expected"
          f"{'' if torch is None else ' (numpy and torch)'}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""tests/reference/gen_safetensors.py — safetensors files written by the reference writer (the
Python `safetensors` package, i.e. its Rust crate), which tests/test_serialization.cpp
("[safetensors]") loads with tinytorch::load and checks value for value, and which
tinytorch::save must reproduce byte for byte from the same tensors.

    python3 -m venv --system-site-packages /tmp/st && /tmp/st/bin/pip install safetensors
    /tmp/st/bin/python tests/reference/gen_safetensors.py     # rewrites tests/data/*.safetensors

Needs torch and safetensors (Debian 12 has python3-torch but no python3-safetensors, hence the
venv). The output is committed; the tests never need Python. Written with safetensors 0.8.0.

python_written.safetensors: every dtype tinytorch has (F32, F64, I64), a 0-d tensor, an empty
  tensor, a name that JSON must escape, and metadata {"format": "pt"} (what transformers expects).
python_bf16.safetensors: one BF16 tensor (tinytorch loads it and writes it back byte for byte).
python_digested.safetensors: TENSORS again, with tinytorch's integrity digests computed here by
  Python's zlib (metadata "tinytorch.crc32:<name>" = CRC-32 of "<dtype>[<shape>]" + the bytes,
  include/tinytorch/serialization.hpp): tinytorch::load verifies digests it did not write.
"""
import os
import zlib

import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "data")  # tests/data

# The C++ test lists the same values (tests/test_serialization.cpp, "[safetensors]").
TENSORS = {
    "fc.weight": torch.tensor([[0.5, -1.25, 3.0], [1e-3, -0.0, 65504.0]], dtype=torch.float32),
    "fc.bias": torch.tensor([0.1, -0.2], dtype=torch.float32),
    "step": torch.tensor(1.0 / 3.0, dtype=torch.float64),  # 0-d
    "ids": torch.tensor([0, -1, 2**62, -(2**63)], dtype=torch.int64),
    "empty": torch.zeros(0, 4, dtype=torch.float32),
    'na\u00efve "name"\n\u20ac': torch.arange(6, dtype=torch.float64).reshape(3, 2) / 8,
}


ST_DTYPE = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}


def digest(t):
    """tinytorch's tensor_digest: CRC-32 of "<dtype>[<d0>,<d1>,...]" and the tensor's bytes."""
    text = f"{ST_DTYPE[t.dtype]}[{','.join(str(d) for d in t.shape)}]".encode()
    return "%08x" % zlib.crc32(t.contiguous().numpy().tobytes(), zlib.crc32(text))


def main():
    os.makedirs(OUT, exist_ok=True)
    save_file(TENSORS, os.path.join(OUT, "python_written.safetensors"), metadata={"format": "pt"})
    save_file({"w": torch.tensor([1.5, -2.0], dtype=torch.bfloat16)}, os.path.join(OUT, "python_bf16.safetensors"))
    meta = {"format": "pt", **{f"tinytorch.crc32:{k}": digest(v) for k, v in TENSORS.items()}}
    save_file(TENSORS, os.path.join(OUT, "python_digested.safetensors"), metadata=meta)
    for name in sorted(os.listdir(OUT)):
        print(os.path.join(OUT, name), os.path.getsize(os.path.join(OUT, name)), "bytes")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""tests/fuzz/gen_corpus.py — writes the seed corpora of the fuzz targets (committed output).

    python3 tests/fuzz/gen_corpus.py      # rewrites tests/fuzz/corpus/{idx,checkpoint}/

Small valid files, so that libFuzzer starts from inputs that reach deep into each reader, plus a
few that each stop at one check. Needs only the Python standard library (no PyTorch).

corpus/idx (IDX, big-endian header; yann.lecun.com/exdb/mnist "FILE FORMATS"; data/mnist.hpp):
  images magic 2051, dims N rows cols, N*rows*cols bytes; labels magic 2049, dim N, N bytes;
  plain and gzip (gzip mtime 0: the bytes do not change between runs).
corpus/checkpoint (tinytorch::load's two formats; serialization.hpp):
  st_*: safetensors, what tinytorch::save writes: u64 little-endian header length N, N bytes of
  JSON {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...} padded with
  spaces to a multiple of 8, then the data (little-endian). Tensors ordered I64, F64, F32, then by
  name, as the reference writer orders them; st_unordered is valid but ordered otherwise.
  ttsd_* (and bad_crc_v2): tinytorch's older format, native = little-endian: "TTSD", u32 version,
  u64 count, per entry u64 name length, name, u8 dtype (0 float32, 1 float64, 2 int64), u64 ndim,
  ndim x i64 sizes, data; version 2 ends with the CRC-32 (zlib.crc32, the same function zlib's
  crc32 computes) of every byte before it.
"""
import gzip
import json
import os
import shutil
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def idx(magic, dims, data):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + bytes(data)


def images(n, rows, cols):
    return idx(2051, [n, rows, cols], [(7 * i + 3) % 256 for i in range(n * rows * cols)])


def labels(n):
    return idx(2049, [n], [i % 10 for i in range(n)])


def entry(name, dtype, sizes, values):
    fmt = {0: "<f", 1: "<d", 2: "<q"}[dtype]
    raw = name.encode()
    out = struct.pack("<Q", len(raw)) + raw + struct.pack("<BQ", dtype, len(sizes))
    out += b"".join(struct.pack("<q", s) for s in sizes)
    return out + b"".join(struct.pack(fmt, v) for v in values)


def checkpoint(entries, version=2):
    body = b"TTSD" + struct.pack("<IQ", version, len(entries)) + b"".join(entries)
    if version == 2:
        body += struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF)
    return body


ST_DTYPE = {"F32": ("<f", 4, 0), "F64": ("<d", 8, 1), "I64": ("<q", 8, 2)}


def safetensors(tensors, metadata=None):
    """tensors: (name, dtype, shape, values) in the order to write; header JSON as serde_json writes it."""
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, values in tensors:
        fmt = ST_DTYPE[dtype][0]
        raw = b"".join(struct.pack(fmt, v) for v in values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def raw_safetensors(text, data=b""):
    text = text.encode()
    return struct.pack("<Q", len(text)) + text + data


def gz(data):
    return gzip.compress(data, mtime=0)


IDX = {
    "images_2x3x2": images(2, 3, 2),
    "images_1x28x28": images(1, 28, 28),
    "images_0x4x4": images(0, 4, 4),
    "images_3x2x2.gz": gz(images(3, 2, 2)),
    "labels_5": labels(5),
    "labels_0": labels(0),
    "labels_4.gz": gz(labels(4)),
    "bad_truncated_images": images(2, 3, 2)[:-1],
    "bad_zero_rows": idx(2051, [1, 0, 5], []),
}

W = [0.5, -1.25, 3.0, 0.0, -0.0, 1e-3]
CHECKPOINT = {
    "st_empty": safetensors([]),
    "st_linear": safetensors([("bias", "F32", [2], [0.1, -0.2]), ("weight", "F32", [2, 3], W)]),
    "st_dtypes": safetensors([
        ("i64", "I64", [3], [0, -1, 2**62]),
        ("f64", "F64", [2, 2], [1.0, -2.0, 1e300, -1e-300]),
        ("", "F32", [1], [7.0]),
        ("empty", "F32", [0, 4], []),
        ("scalar", "F32", [], [42.0]),
        ("state.0.step", "F64", [], [3.0]),
    ], metadata={"format": "pt"}),
    "st_unordered": raw_safetensors(
        '{"w" : {"shape":[2],"extra":[1,{"k":null}],"data_offsets":[8,16],"dtype":"F32"},\n'
        '"\\u00e9\\"q": {"dtype":"I64","shape":[],"data_offsets":[0,8]}, "__metadata__": {"a": "b"}}\t',
        struct.pack("<qff", -5, 1.5, 2.5)),
    "bad_st_trailing": safetensors([("a", "F32", [1], [1.0])])[:-4] + b"\0" * 8,
    "empty_v2": checkpoint([]),
    "linear_v2": checkpoint([entry("weight", 0, [2, 3], W), entry("bias", 0, [2], [0.1, -0.2])]),
    "dtypes_v2": checkpoint([
        entry("f64", 1, [2, 2], [1.0, -2.0, 1e300, -1e-300]),
        entry("i64", 2, [3], [0, -1, 2**62]),
        entry("scalar", 0, [], [42.0]),
        entry("empty", 0, [0, 4], []),
        entry("", 0, [1], [7.0]),
    ]),
    "linear_v1": checkpoint([entry("weight", 0, [3], W[:3])], version=1),
    "bad_crc_v2": checkpoint([entry("w", 0, [1], [1.0])])[:-1] + b"\x00",
}


def write(subdir, files):
    path = os.path.join(HERE, "corpus", subdir)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    for name, data in sorted(files.items()):
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)
    print(f"{path}: {len(files)} files, {sum(len(d) for d in files.values())} bytes")


if __name__ == "__main__":
    write("idx", IDX)
    write("checkpoint", CHECKPOINT)

#!/usr/bin/env python3
"""tests/backend/check_cuda_functions.py -- ctest cuda_backend_functions: backend/cuda has the CPU's launchers.

Issue 7 (item 2) and CUDA.md §5: every launcher of include/tinytorch/backend/cpu/*.hpp (the optimizer
loops sgd_kernel/adam_kernel of backend/cpu/optim.hpp included) has a twin in include/tinytorch/backend/cuda/*.cuh with the SAME
name and the same signature (template header, return type, parameter types; parameter names and
`inline` do not count), so that ops/dispatch.hpp can forward one argument list to either backend.
A CPU function without a twin fails the test unless it is in ALLOWED_MISSING below, with the reason.
A listed function that HAS a twin also fails (stale entry: take it off the list).

How: comments and strings are stripped, then a brace-matching scan collects the functions defined at
the top level of `namespace backend::cpu` / `backend::cuda` (not inside detail::, kernels:: or
gemm_shape::, not __global__ / __device__ kernels) with their declarations up to the body's `{`.
Run: python3 tests/backend/check_cuda_functions.py <repo root>   (exit 0 = twins match; prints both lists)
Chapter: chapters/10-gpu-kernels.md. Reference: dlsyscourse needle (ndarray_backend_cpu.cc and
ndarray_backend_cuda.cu export the same function names; the device picks the module).
"""
import pathlib
import re
import sys

# CPU functions that have no CUDA twin on purpose, or not yet. Keep each line's reason current.
ALLOWED_MISSING = {
    # Not yet ported (issue 7 lists conv/pooling on CUDA as later work; ops/dispatch.hpp throws for them).
    "im2col": "conv helper: conv2d is not ported to CUDA yet",
    "col2im": "conv helper: conv2d is not ported to CUDA yet",
    "conv2d_kernel": "not ported to CUDA yet",
    "conv2d_backward_kernel": "not ported to CUDA yet",
    "conv2d_naive": "not ported to CUDA yet",
    "conv2d_backward_naive": "not ported to CUDA yet",
    "max_pool2d_kernel": "not ported to CUDA yet",
    "max_pool2d_backward_kernel": "not ported to CUDA yet",
    "max_pool2d_naive": "not ported to CUDA yet",
    # Host-only building blocks of the CPU loops: a kernel's grid-stride loop replaces them.
    "strided_loop": "host loop of the strided CPU kernels; a CUDA thread calls Indexer::offset instead",
    "accumulate": "host reduction helper of cpu::sum_dim_kernel; CUDA reduces with warp shuffles",
    # CPU gemm variants with no CUDA meaning: Eigen, small-matrix and serial host paths, and the
    # int64 gemm (integer matmul is not ported: ops/dispatch.hpp throws for int64 on CUDA).
    "gemm_serial_int64": "int64 matmul: not ported to CUDA",
    "gemm_small": "host path for tiny matrices (the tiled kernel covers them on CUDA)",
    "pin_eigen_cache_sizes": "fixes Eigen's host GEMM blocking; the CUDA kernels' tiles are constants",
    "repin_eigen_cache_sizes": "fixes Eigen's host GEMM blocking; the CUDA kernels' tiles are constants",
    "eigen_gemm_kernel": "Eigen's host gemm",
    "gemm_serial": "host single-thread path",
}

CPU_FILES = ["backend/cpu/*.hpp"]
CUDA_FILES = ["backend/cuda/*.cuh"]
SKIP_NAMESPACES = {"detail", "kernels", "gemm_shape", "sim"}


def strip_comments_and_strings(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\])'", "''", text)
    return text


def functions(text):
    """Yield (namespace path, declaration) for every function defined in `text` outside classes."""
    text = strip_comments_and_strings(text)
    text = re.sub(r"^\s*#.*$", " ", text, flags=re.M)  # preprocessor lines
    text = text.replace("TT_NAMESPACE_BEGIN", " ").replace("TT_NAMESPACE_END", " ")
    stack = []  # one entry per open brace: a namespace name, or None for anything else
    start = 0  # where the current declaration began
    i = 0
    while i < len(text):
        c = text[i]
        if c == ";":
            start = i + 1
        elif c == "{":
            decl = " ".join(text[start:i].split())
            m = re.match(r"^(?:inline\s+)?namespace\s*([\w:]*)$", decl)
            in_namespaces = all(s is not None for s in stack)
            if m:
                stack.append(m.group(1) or "<anon>")
            else:
                if in_namespaces and "(" in decl and not re.match(r"^(struct|class|union|enum)\b", decl) \
                        and "=" not in decl.split("(")[0]:
                    yield "::".join(stack), decl
                stack.append(None)
            start = i + 1
        elif c == "}":
            if stack:
                stack.pop()
            start = i + 1
        i += 1


def split_top(params):
    out, depth, cur = [], 0, ""
    for ch in params:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def signature(decl):
    """(name, normalised signature) of a declaration, or None for kernels and non-functions."""
    if "__global__" in decl or "__device__" in decl and "__host__" not in decl:
        return None
    m = re.search(r"([A-Za-z_]\w*)\s*\(", decl)
    head = decl[: m.start()] if m else ""
    # the function's own '(' is the first one after the template header
    tmpl = ""
    if decl.startswith("template"):
        depth, j = 0, decl.index("<")
        for j in range(decl.index("<"), len(decl)):
            depth += decl[j] == "<"
            depth -= decl[j] == ">"
            if depth == 0:
                break
        tmpl, rest = decl[: j + 1], decl[j + 1 :]
    else:
        rest = decl
    m = re.search(r"([A-Za-z_]\w*)\s*\(", rest)
    if not m:
        return None
    name = m.group(1)
    ret = rest[: m.start()]
    depth, k = 0, m.end() - 1
    for k in range(m.end() - 1, len(rest)):
        depth += rest[k] == "("
        depth -= rest[k] == ")"
        if depth == 0:
            break
    params = []
    for p in split_top(rest[m.end() : k]):
        p = p.split("=")[0].strip()
        p = re.sub(r"\s*([*&])\s*", r"\1 ", p).strip()
        toks = p.split()
        if len(toks) > 1 and re.fullmatch(r"[A-Za-z_]\w*", toks[-1]) and toks[-1] not in ("const",):
            toks = toks[:-1]  # drop the parameter's name
        params.append(" ".join(toks).replace("* ", "*").replace("& ", "&").strip())
    ret = " ".join(w for w in ret.split() if w not in ("inline", "static", "TT_HOST_DEVICE", "__host__",
                                                        "__device__", "__forceinline__", "constexpr"))
    tmpl = " ".join(tmpl.split()).replace("typename ", "class ")
    return name, f"{tmpl} {ret} {name}({', '.join(params)})".strip()


def collect(root, patterns, backend):
    found = {}
    for pattern in patterns:
        for path in sorted(root.glob(pattern)):
            for ns, decl in functions(path.read_text()):
                parts = [p for p in ns.replace("::", " ").split()]
                if any(p in SKIP_NAMESPACES for p in parts):
                    continue
                if f"backend {backend}" not in " ".join(parts):
                    continue
                sig = signature(decl)
                if not sig:
                    continue
                name, text = sig
                found.setdefault(name, []).append((str(path.relative_to(root)), text))
    return found


def main():
    repo = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
    inc = repo / "include" / "tinytorch"
    cpu, cuda = collect(inc, CPU_FILES, "cpu"), collect(inc, CUDA_FILES, "cuda")
    if not cpu or not cuda:
        print(f"FAIL: found no functions (cpu {len(cpu)}, cuda {len(cuda)}): has the layout changed?")
        return 1
    failures = []
    for name in sorted(cpu):
        cpu_sigs = {s for _, s in cpu[name]}
        if name not in cuda:
            if name in ALLOWED_MISSING:
                print(f"  allowed  {name}: {ALLOWED_MISSING[name]}")
            else:
                failures.append(f"{name} ({cpu[name][0][0]}) has no CUDA twin in backend/cuda/*.cuh; "
                                f"port it or add it to ALLOWED_MISSING with the reason")
            continue
        if name in ALLOWED_MISSING:
            failures.append(f"{name} is in ALLOWED_MISSING but backend/cuda has it ({cuda[name][0][0]}): "
                            f"take it off the list")
        cuda_sigs = {s for _, s in cuda[name]}
        if not cpu_sigs & cuda_sigs:
            failures.append(f"{name}: signatures differ\n    cpu : {sorted(cpu_sigs)}\n    cuda: {sorted(cuda_sigs)}")
        else:
            print(f"  twin     {name}: {sorted(cpu_sigs & cuda_sigs)[0]}")
    extra = sorted(set(cuda) - set(cpu))
    print(f"  cuda-only launchers (naive twins, fast paths, helpers; fine): {', '.join(extra)}")
    for f in failures:
        print("FAIL: " + f)
    print(f"cuda_backend_functions: {len(cpu)} CPU functions, {len(failures)} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

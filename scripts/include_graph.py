#!/usr/bin/env python3
"""scripts/include_graph.py: the include graph of include/tinytorch/ has no circle and follows the layers.

    python3 scripts/include_graph.py          prints the layers and any violation; exit 1 on one
    python3 scripts/include_graph.py --dot    the graph in Graphviz's dot language (stdout)

Run by ctest `include_graph` (tests/packaging/tests.cmake). The layers are the ones docs/architecture.md
draws, from the bottom up; a header may include its own layer and the ones
below it, never one above:

    core -> backend -> tensor.hpp -> ops -> autograd -> amp/autocast_mode.hpp -> functional
         -> autograd tools (gradcheck, dot) -> nn -> optim -> amp/grad_scaler.hpp -> data
         -> serialization.hpp -> utils -> parallel -> distributed -> umbrellas

Two further rules from the design: backend/ never includes tensor.hpp (kernels see raw pointers and
sizes, never a Tensor), data/ never includes nn/.

An edge from a header to its own `.ipp` (foo.hpp includes foo.ipp at its end in the header-only
build; foo.ipp includes foo.hpp for its declarations) is not a circle: the two are one file cut in
two for separate compilation (core/config.hpp, TT_DECL). Any other circle is reported with its path.

Only includes of tinytorch's own headers count: a quoted path resolved against the including file's
folder, or <tinytorch/...>.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "include")

# Bottom to top: a layer's rank is its place in this list. A file's layer is the highest one whose
# pattern matches its path under include/ (so "autograd tools" wins over "autograd").
LAYERS = [
    ("core", r"tinytorch/core/"),
    ("backend", r"tinytorch/backend/"),
    ("tensor", r"tinytorch/tensor\.hpp$"),
    ("ops", r"tinytorch/ops/"),
    ("autograd", r"tinytorch/autograd/"),
    # the autocast state, read by the ops on its lists in functional.ipp
    ("autocast", r"tinytorch/amp/autocast_mode\.hpp$"),
    ("functional", r"tinytorch/functional"),
    # gradcheck and the dot printer call the differentiable API, as torch.autograd.gradcheck calls
    # torch ops: they sit above functional.hpp although they live in autograd/ (their namespace).
    ("autograd tools", r"tinytorch/autograd/(gradcheck|dot)\.hpp$"),
    ("nn", r"tinytorch/nn/"),
    ("optim", r"tinytorch/optim/"),
    ("amp", r"tinytorch/amp/grad_scaler\.hpp$"),  # GradScaler steps an optimizer
    ("data", r"tinytorch/data/"),
    ("serialization", r"tinytorch/serialization\.(hpp|ipp)$"),
    ("utils", r"tinytorch/utils/"),
    ("parallel", r"tinytorch/parallel/"),
    ("distributed", r"tinytorch/distributed/"),
    ("umbrella", r"tinytorch/(tinytorch|distributed|src)\.hpp$"),
]
RANK = {name: rank for rank, (name, _) in enumerate(LAYERS)}
FORBIDDEN = [  # (from layer, to pattern, why)
    ("backend", r"tinytorch/tensor\.hpp$", "backend/ never sees Tensor: kernels take raw pointers and sizes"),
    ("data", r"tinytorch/nn/", "data/ never includes nn/"),
]
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(path):
    for name, pattern in reversed(LAYERS):
        if re.search(pattern, path):
            return name
    return None


def read_graph(root):
    graph = {}
    for folder, _, files in os.walk(root):
        for name in files:
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            deps = []
            with open(full, encoding="utf-8") as f:
                for line in f:
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = m.group(2)
                    if m.group(1) == '"':
                        cand = os.path.normpath(os.path.join(os.path.dirname(rel), target)).replace(os.sep, "/")
                        if os.path.exists(os.path.join(root, cand)):
                            deps.append(cand)
                            continue
                    if target.startswith("tinytorch/"):
                        deps.append(os.path.normpath(target).replace(os.sep, "/"))
            graph[rel] = deps
    return graph


def own_ipp(a, b):
    """True for foo.hpp <-> foo.ipp, the two halves of one file."""
    sa, sb = os.path.splitext(a), os.path.splitext(b)
    return sa[0] == sb[0] and {sa[1], sb[1]} == {".hpp", ".ipp"}


def circles(graph):
    """Strongly connected components with more than one file (Tarjan), own-.ipp edges left out."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, []):
            if own_ipp(v, w):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main(argv):
    graph = read_graph(ROOT)
    if "--dot" in argv:
        print("digraph tinytorch {")
        for v in sorted(graph):
            for w in graph[v]:
                print(f'  "{v}" -> "{w}";')
        print("}")
        return 0
    problems = []
    for v in sorted(graph):
        lv = layer_of(v)
        if lv is None:
            problems.append(f"{v}: in no layer (add it to LAYERS in scripts/include_graph.py)")
            continue
        for w in graph[v]:
            if w not in graph:
                problems.append(f"{v} includes {w}, which does not exist")
                continue
            lw = layer_of(w)
            if lw is not None and RANK[lw] > RANK[lv]:
                problems.append(f"{v} ({lv}) includes {w} ({lw}), a layer above it")
            for frm, pattern, why in FORBIDDEN:
                if lv == frm and re.search(pattern, w):
                    problems.append(f"{v} includes {w}: {why}")
    for comp in circles(graph):
        problems.append("include circle: " + " <-> ".join(comp))
    edges = sum(len(d) for d in graph.values())
    print(f"include_graph: {len(graph)} files, {edges} includes of tinytorch headers")
    for rank, (name, _) in enumerate(LAYERS):
        n = sum(1 for v in graph if layer_of(v) == name)
        print(f"  layer {rank:2d} {name:15s} {n:3d} files")
    for p in problems:
        print("include_graph: " + p)
    if problems:
        print(f"include_graph: {len(problems)} problem(s)")
        return 1
    print("include_graph: no circle, every include goes to the same layer or one below")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

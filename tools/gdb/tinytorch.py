# tools/gdb/tinytorch.py — GDB pretty-printers for tinytorch, and the skip list for `step`.
#
# Load it in gdb (from the repository root; any path works):
#     (gdb) source tools/gdb/tinytorch.py
# or  gdb -x tools/gdb/tinytorch.py build-debug/bin/example_single
# (the repository's .gdbinit does the same once gdb is allowed to read it: see
# chapters/01-training-loop.md, "Stepping through in gdb").
#
# What `print` then shows:
# (matched with or without the inline ABI namespace: tinytorch::cpu_abi::Tensor is tinytorch::Tensor)
#   tinytorch::Tensor      tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], shape=(2, 3), dtype=float32,
#                                 device=cpu, requires_grad=true, grad_fn=AddmmBackward0)
#                          the first `print tinytorch-elements` values (default 20; 0: all) in
#                          row-major order, read through the tensor's strides and offset as
#                          Tensor::at() reads them; "tensor(undefined)" for Tensor().
#   tinytorch::TensorImpl  the same line, then its fields (grad, grad_fn, storage, ...)
#   Shape, Strides         (any tinytorch::SmallVector) [2, 3]
#   tinytorch::autograd::Node   <AddmmBackward0 next_functions=(None, torch::autograd::AccumulateGrad)>
#                          (seen as a Node: `print *node`, `print *t.impl_._M_ptr->grad_fn._M_ptr`);
#                          an AccumulateGrad shows the leaf it feeds: <... variable=tensor(...)>
#
# Everything is read from the program's memory: no function of the program is called (no
# Tensor::str(), no virtual name()), so the printers also work on a core file and never change
# the program's state. That needs the layout of the structs (include/tinytorch/tensor.hpp's
# TensorImpl, core/storage.hpp's Storage, core/small_vector.hpp, autograd/node.hpp) and, for a
# node's PyTorch name (MulBackward0, ...), the body of its `name()`: gdb finds the node's dynamic
# type from its vtable, and this script reads that struct's `std::string name() const override
# { return ...; }` from the headers next to it (include/tinytorch/**.hpp) and evaluates the
# expression on the node's fields: a literal ("MulBackward0"), a field (node_name), a bool field
# choosing between literals (all ? "MaxBackward1" : "MaxBackward0"), and `std::string(...) + (...)`.
# A node whose name() is something else prints as its C++ struct name.
#
# Needs a gdb with Python (Debian's gdb) and libstdc++'s layout of std::shared_ptr and
# std::vector (g++, or clang++ with libstdc++). Tested by ctest gdb_pretty_printer
# (tests/gdb/check_session.py), also on a core file.
#
# It also sources tools/gdb/skip.gdb (what `step` steps over: the C++ standard library, Eigen,
# tinytorch's handle copies) unless TINYTORCH_GDB_NO_SKIP is set in gdb's environment.
#
# Reference: the GDB manual, "Writing a Pretty-Printer" and "Python API"; libstdc++'s printers
# (/usr/share/gcc/python/libstdcxx/v6/printers.py) for the style.
import os
import re
import struct

import gdb
import gdb.printing

_HERE = os.path.dirname(os.path.abspath(os.path.expanduser(__file__)))
_INCLUDE = os.path.normpath(os.path.join(_HERE, "..", "..", "include", "tinytorch"))

# tinytorch::DType's enumerators (core/dtype.hpp), by name as PyTorch spells the dtype:
# (element size in bytes, Python struct format). A dtype missing here prints without values.
_DTYPES = {"float32": (4, "f"), "float64": (8, "d"), "int64": (8, "q"), "float16": (2, "e")}
_MAX_DIMS = 64  # more dims than this: not a tensor (an uninitialised local, a dangling handle)


class _ElementsParameter(gdb.Parameter):
    """How many values of a tensor `print` shows (0: all of them)."""

    set_doc = "Set how many values of a tinytorch tensor `print` shows (0: all)."
    show_doc = "Show how many values of a tinytorch tensor `print` shows."

    def __init__(self):
        super().__init__("print tinytorch-elements", gdb.COMMAND_DATA, gdb.PARAM_ZUINTEGER)
        self.value = 20

    def get_show_string(self, svalue):
        return "tinytorch tensors print at most %s values (0: all)" % svalue


# gdb runs a sourced script in __main__, so a second `source` (say, by hand after .gdbinit) sees
# the first one's globals: the parameter and the skip list are then not made twice.
_FIRST_LOAD = "_ELEMENTS" not in globals()
if _FIRST_LOAD:
    _ELEMENTS = _ElementsParameter()


def _elements_limit():
    value = gdb.parameter("print tinytorch-elements")
    return None if not value else int(value)


# ---- small readers ---------------------------------------------------------------------------

def _shared_ptr_get(sp):
    """The raw pointer inside a std::shared_ptr / weak_ptr (libstdc++: _M_ptr), or None."""
    ptr = sp["_M_ptr"]
    return None if int(ptr) == 0 else ptr


def _small_vector(v, limit=_MAX_DIMS):
    """The elements of a tinytorch::SmallVector (fields data_, size_) as a Python list."""
    n = int(v["size_"])
    if n < 0 or n > limit:
        raise ValueError("SmallVector of size %d" % n)
    data = v["data_"]
    return [data[i] for i in range(n)]


def _shape_str(dims):
    """(2, 3), (5,), () — as a Python tuple prints, the way torch.Size reads."""
    if len(dims) == 1:
        return "(%d,)" % dims[0]
    return "(" + ", ".join(str(d) for d in dims) + ")"


def _float_str(x, fmt):
    """The shortest text that reads back as the same float32 / float64 (0.1, not 0.10000000149),
    with PyTorch's "1." for an integral value."""
    if x != x or x in (float("inf"), float("-inf")):
        return repr(x)
    if fmt in ("f", "e"):  # float32, float16: fewest digits that round back to the same value
        for digits in range(1, 10):
            s = "%.*g" % (digits, x)
            if struct.unpack(fmt, struct.pack(fmt, float(s)))[0] == x:
                break
        s = repr(float(s))  # Python's spelling of those digits: 100000.0, not 1e+05
    else:
        s = repr(x)
    if "e" not in s and "." not in s:
        s += "."
    elif s.endswith(".0"):
        s = s[:-1]
    return s


# ---- autograd node names ---------------------------------------------------------------------

_NAME_EXPRS = None  # struct short name -> the expression its name() returns


def node_name_expressions():
    """{struct name: the expression its name() returns}, read from the headers once."""
    global _NAME_EXPRS
    if _NAME_EXPRS is None:
        _NAME_EXPRS = _scan_node_names()
    return _NAME_EXPRS


def _scan_node_names():
    """Reads include/tinytorch/**.hpp once: for each struct deriving from Node (directly or through
    another node struct), the expression after `return` in its name() override."""
    found = {}
    struct_re = re.compile(r"^\s*(?:template\s*<[^\n]*>\s*)?struct\s+(\w+)\s*(?:final\s*)?:\s*([^{\n]*)\{", re.M)
    name_re = re.compile(r"std::string\s+name\(\)\s+const\s+override\s*\{\s*return\s+(.*?);\s*\}", re.S)
    headers = []
    for root, _dirs, files in os.walk(_INCLUDE):
        headers += [os.path.join(root, f) for f in sorted(files) if f.endswith(".hpp")]
    bases = {}
    for path in sorted(headers):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            continue
        starts = list(struct_re.finditer(text))
        for i, m in enumerate(starts):
            end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
            body = name_re.search(text, m.end(), end)
            bases[m.group(1)] = re.findall(r"\w+", m.group(2))
            if body:
                found.setdefault(m.group(1), " ".join(body.group(1).split()))
    is_node = {"Node"}
    changed = True
    while changed:  # Min : Max : Node
        changed = False
        for name, base_words in bases.items():
            if name not in is_node and is_node.intersection(base_words):
                is_node.add(name)
                changed = True
    return {name: expr for name, expr in found.items() if name in is_node}


_TOKEN_RE = re.compile(r'\s*(?:(std::string)|("(?:[^"\\]|\\.)*")|(\w+)|(.))')


def eval_name(expr, field):
    """Evaluates a name() return expression; field(name) gives a field's value (a bool/int or a
    string). Grammar (what the headers use):
    cond := sum ['?' cond ':' cond];  sum := primary {'+' primary};
    primary := "literal" | field | std::string '(' cond ')' | '(' cond ')'."""
    tokens = [next(t for t in m.groups() if t is not None) for m in _TOKEN_RE.finditer(expr)]
    tokens = [t for t in tokens if t.strip()]
    pos = [0]

    def peek():
        return tokens[pos[0]] if pos[0] < len(tokens) else None

    def take(expected=None):
        t = peek()
        if t is None or (expected is not None and t != expected):
            raise ValueError("unexpected %r in %r" % (t, expr))
        pos[0] += 1
        return t

    def primary():
        t = take()
        if t.startswith('"'):
            return t[1:-1]
        if t in ("std::string", "("):
            if t == "std::string":
                take("(")
            v = cond()
            take(")")
            return v
        if re.match(r"\w+$", t):
            return field(t)
        raise ValueError("unexpected %r in %r" % (t, expr))

    def total():
        v = primary()
        while peek() == "+":
            take()
            v = str(v) + str(primary())
        return v

    def cond():
        v = total()
        if peek() == "?":
            take()
            a = cond()
            take(":")
            b = cond()
            return a if v else b
        return v

    result = cond()
    if peek() is not None:
        raise ValueError("trailing %r in %r" % (peek(), expr))
    return str(result)


def _field_value(v):
    """A node field as Python: a bool/int, a C string, or a std::string."""
    t = v.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_PTR:
        return v.string() if int(v) else ""
    if t.code == gdb.TYPE_CODE_STRUCT:  # std::string (libstdc++)
        return v["_M_dataplus"]["_M_p"].string(length=int(v["_M_string_length"]))
    return int(v)


def _short_struct_name(type_name):
    base = type_name.split("<", 1)[0]
    return base.rsplit("::", 1)[-1]


def node_name(node_ptr):
    """PyTorch's name of the autograd node at `node_ptr` (a Node* value): AddmmBackward0, ..."""
    try:
        dyn = node_ptr.dereference().dynamic_type  # from the vtable: no call into the program
    except gdb.error:
        dyn = node_ptr.dereference().type
    struct_name = _short_struct_name(str(dyn.strip_typedefs()))
    expr = node_name_expressions().get(struct_name)
    if expr is None:
        return struct_name
    try:
        node = node_ptr.cast(dyn.pointer()).dereference()
        return eval_name(expr, lambda f: _field_value(node[f]))
    except (gdb.error, ValueError, KeyError):
        return struct_name


# ---- tensors ---------------------------------------------------------------------------------

def _read_values(impl, dims, dtype_name, limit):
    """The first `limit` (None: all) elements in row-major order, read through strides/offset as
    Tensor::at() reads them: element (i0, ..., ik) is storage[offset + sum_j i_j * strides[j]].
    Raises ValueError when the view reaches outside its storage (a garbage or dangling tensor)."""
    size, fmt = _DTYPES[dtype_name]
    strides = [int(s) for s in _small_vector(impl["strides"])]
    if len(strides) != len(dims):
        raise ValueError("shape and strides differ in length")
    storage = _shared_ptr_get(impl["storage"]).dereference()
    base = int(storage["data_"])
    nbytes = int(storage["nbytes_"])
    offset = int(impl["offset"])
    numel = 1
    for d in dims:
        numel *= d
    count = numel if limit is None else min(numel, limit)
    if count == 0:
        return [], numel
    # The elements the view can reach: [lo, hi]. Read that span once (at most 16 MiB), not each
    # element on its own: printing all of a 784x256 weight stays quick.
    lo = offset + sum(min(0, (d - 1) * s) for d, s in zip(dims, strides))
    hi = offset + sum(max(0, (d - 1) * s) for d, s in zip(dims, strides))
    if lo < 0 or (hi + 1) * size > nbytes:
        raise ValueError("view [%d, %d] reaches outside its storage of %d bytes" % (lo, hi, nbytes))
    inferior = gdb.selected_inferior()
    span = None
    if (hi - lo + 1) * size <= 16 << 20:
        span = bytes(inferior.read_memory(base + lo * size, (hi - lo + 1) * size))
    values = []
    index = [0] * len(dims)
    for _ in range(count):
        element = offset + sum(i * s for i, s in zip(index, strides))
        if span is not None:
            values.append(struct.unpack_from(fmt, span, (element - lo) * size)[0])
        else:
            raw = bytes(inferior.read_memory(base + element * size, size))
            values.append(struct.unpack(fmt, raw)[0])
        for k in reversed(range(len(dims))):  # next row-major index
            index[k] += 1
            if index[k] < dims[k]:
                break
            index[k] = 0
    return values, numel


def _nest(values, dims, numel, fmt):
    """[[a, b], [c, ...]]: nested lists over `dims`; "..." where the values stop before numel."""
    text = [_float_str(v, fmt) if fmt != "q" else str(v) for v in values]
    truncated = len(values) < numel

    def build(level, start):
        # Returns (text, number of values consumed, whether it stopped early).
        if level == len(dims):
            if start < len(text):
                return text[start], 1, False
            return "...", 0, True
        parts, used = [], 0
        for _ in range(dims[level]):
            if start + used >= len(text) and truncated:
                parts.append("...")
                return "[" + ", ".join(parts) + "]", used, True
            s, n, stopped = build(level + 1, start + used)
            parts.append(s)
            used += n
            if stopped:
                return "[" + ", ".join(parts) + "]", used, True
        return "[" + ", ".join(parts) + "]", used, False

    return build(0, 0)[0]


def tensor_summary(impl_ptr):
    """The one-line description of the TensorImpl at impl_ptr (a TensorImpl* value, may be 0)."""
    if impl_ptr is None or int(impl_ptr) == 0:
        return "tensor(undefined)"
    impl = impl_ptr.dereference()
    try:
        dims = [int(d) for d in _small_vector(impl["shape"])]
        # "tinytorch::DType::Float32" -> "float32" (an uninitialised value prints as a number)
        dtype_name = str(impl["dtype"]).rsplit("::", 1)[-1].lower()
        if not re.match(r"^[a-z]\w*$", dtype_name) or any(d < 0 for d in dims):
            raise ValueError("bad dtype or shape")
        requires_grad = bool(impl["requires_grad"])
        grad_fn = _shared_ptr_get(impl["grad_fn"])
        storage = _shared_ptr_get(impl["storage"])
        if storage is None:
            raise ValueError("no storage")
        device = storage.dereference()["device_"]
        on_cpu = int(device["type"]) == 0
        device_str = "cpu" if on_cpu else "cuda:%d" % int(device["index"])
    except (gdb.error, gdb.MemoryError, ValueError) as e:
        return "<invalid tinytorch tensor at 0x%x: %s>" % (int(impl_ptr), e)
    if not on_cpu:
        data = "<data on %s>" % device_str
    elif dtype_name not in _DTYPES:
        data = "<values of dtype %s: not known to tools/gdb/tinytorch.py>" % dtype_name
    else:
        try:
            values, numel = _read_values(impl, dims, dtype_name, _elements_limit())
            data = _nest(values, dims, numel, _DTYPES[dtype_name][1])
        except (gdb.error, gdb.MemoryError, ValueError) as e:
            data = "<unreadable: %s>" % e
    parts = [data, "shape=" + _shape_str(dims), "dtype=" + dtype_name, "device=" + device_str,
             "requires_grad=" + ("true" if requires_grad or grad_fn is not None else "false")]
    if grad_fn is not None:
        try:
            parts.append("grad_fn=" + node_name(grad_fn))
        except (gdb.error, gdb.MemoryError) as e:
            parts.append("grad_fn=<unreadable: %s>" % e)
    return "tensor(" + ", ".join(parts) + ")"


class TensorPrinter:
    """tinytorch::Tensor: a shared handle (impl_) to a TensorImpl."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        try:
            return tensor_summary(_shared_ptr_get(self.val["impl_"]))
        except (gdb.error, gdb.MemoryError) as e:
            return "<invalid tinytorch tensor: %s>" % e


class TensorImplPrinter:
    """tinytorch::TensorImpl: the summary line, then the fields as gdb would print them."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        return tensor_summary(self.val.address)

    def children(self):
        for field in self.val.type.strip_typedefs().fields():
            if field.name and not field.is_base_class:
                yield field.name, self.val[field.name]


class SmallVectorPrinter:
    """tinytorch::SmallVector<T, N> (Shape, Strides): [2, 3]."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        try:
            return "[" + ", ".join(str(v) for v in _small_vector(self.val, limit=1 << 16)) + "]"
        except (gdb.error, gdb.MemoryError, ValueError) as e:
            return "<invalid SmallVector: %s>" % e


class NodePrinter:
    """tinytorch::autograd::Node (static type Node; a derived struct prints its fields as usual):
    <AddmmBackward0 next_functions=(None, torch::autograd::AccumulateGrad)>, PyTorch's
    grad_fn.next_functions; an AccumulateGrad shows its leaf (PyTorch's .variable)."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        try:
            name = node_name(self.val.address)
            leaf = _accumulate_grad_leaf(self.val)
            if leaf is not None:  # AccumulateGrad: no next functions; show the leaf it feeds
                return "<%s variable=%s>" % (name, tensor_summary(leaf))
            edges = self.val["next_edges"]
            begin, end = edges["_M_impl"]["_M_start"], edges["_M_impl"]["_M_finish"]
            nexts = []
            for i in range(min(int(end - begin), 64)):
                fn = _shared_ptr_get(begin[i]["fn"])
                nexts.append("None" if fn is None else node_name(fn))
            return "<%s next_functions=(%s)>" % (name, ", ".join(nexts))
        except (gdb.error, gdb.MemoryError) as e:
            return "<invalid tinytorch node: %s>" % e


def _accumulate_grad_leaf(node):
    """For an AccumulateGrad node: its leaf's TensorImpl* (0 once the leaf is gone); else None."""
    try:
        dyn = node.dynamic_type
    except gdb.error:
        return None
    if _short_struct_name(str(dyn.strip_typedefs())) != "AccumulateGrad":
        return None
    leaf = node.address.cast(dyn.pointer()).dereference()["leaf"]  # std::weak_ptr<TensorImpl>
    counts = leaf["_M_refcount"]["_M_pi"]
    if int(counts) == 0 or int(counts.dereference()["_M_use_count"]) == 0:
        return gdb.Value(0).cast(leaf["_M_ptr"].type)
    return leaf["_M_ptr"]


def build_pretty_printer():
    pp = gdb.printing.RegexpCollectionPrettyPrinter("tinytorch")
    # ABI: the inline ABI namespace between tinytorch:: and the name (core/config.hpp's
    # TT_NAMESPACE_BEGIN): tinytorch::cpu_abi::Tensor (g++), cuda_abi (nvcc), sim_abi (simulator).
    ABI = r"((cpu|cuda|sim)_abi::)?"
    pp.add_printer("Tensor", r"^tinytorch::" + ABI + r"Tensor$", TensorPrinter)
    pp.add_printer("TensorImpl", r"^tinytorch::" + ABI + r"TensorImpl$", TensorImplPrinter)
    pp.add_printer("SmallVector", r"^tinytorch::" + ABI + r"SmallVector<.*>$", SmallVectorPrinter)
    pp.add_printer("Node", r"^tinytorch::" + ABI + r"autograd::Node$", NodePrinter)
    return pp


gdb.printing.register_pretty_printer(None, build_pretty_printer(), replace=True)

if not _FIRST_LOAD:
    print("tinytorch: pretty-printers reloaded")
elif not os.environ.get("TINYTORCH_GDB_NO_SKIP"):
    gdb.execute("source " + os.path.join(_HERE, "skip.gdb"), to_string=True)  # quietly
    print("tinytorch: pretty-printers for Tensor, Shape, Node; `step` skips std::, Eigen:: (tools/gdb/skip.gdb)")
else:
    print("tinytorch: pretty-printers for Tensor, Shape, Node")

# tests/gdb/check_session.py — ctest gdb_pretty_printer: a gdb session on tests/gdb/gdb_demo.cpp,
# checked line by line. Runs inside gdb (its Python), started by tests/gdb/run_gdb_test.sh:
#     gdb -batch -nx -x tools/gdb/tinytorch.py -x tests/gdb/check_session.py build/bin/gdb_demo
# (tools/gdb/tinytorch.py, the pretty-printers and the skip list, loaded first as a user loads it;
# sourced from inside this script instead, gdb 13 registers the skip list but `step` run from the
# same script ignores it). Then it
#   1. stops in stop_here(), goes up to main and prints its tensors (float32, float64, int64, a
#      strided view with an offset, 0-dim, undefined, truncated at `print tinytorch-elements`,
#      grad_fn names made by a literal, a field and a condition), Shapes and a graph node;
#   2. writes a core file there;
#   3. stops at `loss.backward();` in examples/single_loop.hpp (chapter 01's loop), prints the
#      training tensors, and checks that `step` goes to tinytorch::Tensor::backward and a second
#      `step` to the engine (tinytorch::autograd::run_backward), not into std:: or Eigen code;
#      then stops at each `node->apply(g)` of the engine's loop and prints the node and its
#      gradient (the session chapter 01 shows);
#   4. opens the core file and prints main's tensors again: the printers read memory only and
#      call no function of the program (a core file has no process to call into);
#   5. checks that the printer understands every autograd node's name() in include/, and that the
#      breakpoint lines chapter 01's copy of this session shows are still those lines.
# Each printed value must equal the expected text exactly. Exits gdb with status 1 on a mismatch.
# Expected values: the numbers the program stores, each printed as the shortest text that reads
# back as the same float32/float64 (0.1, not 0.100000001); the loop's are chapter 01's (PyTorch's:
# preds [[0.1], [-0.275]], loss 3.3803 at epoch 0, tests/reference/gen_examples.py).
import os
import re
import sys

import gdb

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
failures = []


def run(cmd):
    print("(gdb) " + cmd)
    out = gdb.execute(cmd, to_string=True)
    sys.stdout.write(out)
    return out


def expect(cmd, expected):
    """`print ...` must show exactly `expected` after "$N = "."""
    out = run(cmd).strip()
    value = re.sub(r"^\$\d+ = ", "", out)
    if value != expected:
        failures.append("%s\n    got:      %s\n    expected: %s" % (cmd, value, expected))


def expect_frame(what, function, file_suffix):
    frame = gdb.selected_frame()
    sal = frame.find_sal()
    filename = sal.symtab.fullname() if sal.symtab else "?"
    # gdb names some frames with their parameter types ("f(int, bool)"): compare the name only.
    name = (frame.name() or "?").split("(")[0]
    # The inline ABI namespace (tinytorch::cpu_abi::Tensor::backward) is not part of the name a
    # user reads in the source: compare without it.
    name = re.sub(r"^tinytorch::(cpu|cuda|sim)_abi::", "tinytorch::", name)
    if name != function or not filename.endswith(file_suffix):
        failures.append("%s: in %s at %s:%d, expected %s in .../%s" %
                        (what, frame.name(), filename, sal.line, function, file_suffix))


MAIN_TENSORS = [
    ("print w", "tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], shape=(2, 3), dtype=float32, device=cpu, "
                "requires_grad=false)"),
    ("print x64", "tensor([0.3333333333333333, -2.5, 1e-10], shape=(3,), dtype=float64, device=cpu, "
                  "requires_grad=false)"),
    ("print labels", "tensor([3, 1, 4, 1, 5], shape=(5,), dtype=int64, device=cpu, requires_grad=false)"),
    ("print big", "tensor([[[0., 1., 2., 3.], [4., 5., 6., 7.], [8., 9., 10., 11.]], [[12., 13., 14., 15.], "
                  "[16., 17., 18., 19.], ...]], shape=(2, 3, 4), dtype=float64, device=cpu, requires_grad=false)"),
    ("print col", "tensor([[1., 5., 9.], [13., 17., 21.]], shape=(2, 3), dtype=float64, device=cpu, "
                  "requires_grad=false)"),
    ("print scalar", "tensor(7.5, shape=(), dtype=float32, device=cpu, requires_grad=false)"),
    ("print none", "tensor(undefined)"),
    ("print a", "tensor([[1., 1.], [1., 1.]], shape=(2, 2), dtype=float32, device=cpu, requires_grad=true)"),
    ("print a_sum", "tensor([2., 2.], shape=(2,), dtype=float32, device=cpu, requires_grad=true, "
                    "grad_fn=SumBackward1)"),
    ("print a_max", "tensor(1., shape=(), dtype=float32, device=cpu, requires_grad=true, grad_fn=MaxBackward1)"),
    ("print a_t", "tensor([[1., 1.], [1., 1.]], shape=(2, 2), dtype=float32, device=cpu, requires_grad=true, "
                  "grad_fn=TBackward0)"),
    ("print col.impl_._M_ptr->shape", "[2, 3]"),
    ("print col.impl_._M_ptr->strides", "[12, 4]"),
    ("print col.impl_._M_ptr->offset", "1"),
    ("print *a_sum.impl_._M_ptr->grad_fn._M_ptr", "<SumBackward1 next_functions=(torch::autograd::AccumulateGrad)>"),
]

LOOP_TENSORS = [
    ("print X", "tensor([[1., 0.5], [0.5, 1.]], shape=(2, 2), dtype=float32, device=cpu, requires_grad=false)"),
    ("print y", "tensor([[2.], [1.5]], shape=(2, 1), dtype=float32, device=cpu, requires_grad=false)"),
    ("print preds", "tensor([[0.1], [-0.275]], shape=(2, 1), dtype=float32, device=cpu, requires_grad=true, "
                    "grad_fn=AddmmBackward0)"),
    ("print loss", "tensor(3.3803124, shape=(), dtype=float32, device=cpu, requires_grad=true, "
                   "grad_fn=MseLossBackward0)"),
    ("print *loss.impl_._M_ptr->grad_fn._M_ptr", "<MseLossBackward0 next_functions=(AddmmBackward0, None)>"),
    ("print *preds.impl_._M_ptr->grad_fn._M_ptr",
     "<AddmmBackward0 next_functions=(None, torch::autograd::AccumulateGrad, torch::autograd::AccumulateGrad)>"),
]


# The engine's loop (autograd/engine.hpp, at `node->apply(g)`): each node in topological order and
# the gradient it receives — chapter 01's hand computation: d loss/d preds = [-1.9, -1.775],
# d loss/d bias = -3.675, d loss/d W = [-2.7875, -2.725].
ENGINE_STEPS = [
    ("<MseLossBackward0 next_functions=(AddmmBackward0, None)>",
     "tensor(1., shape=(), dtype=float32, device=cpu, requires_grad=false)"),
    ("<AddmmBackward0 next_functions=(None, torch::autograd::AccumulateGrad, torch::autograd::AccumulateGrad)>",
     "tensor([[-1.9], [-1.775]], shape=(2, 1), dtype=float32, device=cpu, requires_grad=false)"),
    ("<torch::autograd::AccumulateGrad variable=tensor([0.1], shape=(1,), dtype=float32, device=cpu, "
     "requires_grad=true)>",
     "tensor([-3.675], shape=(1,), dtype=float32, device=cpu, requires_grad=false)"),
    ("<torch::autograd::AccumulateGrad variable=tensor([[0.25, -0.5]], shape=(1, 2), dtype=float32, device=cpu, "
     "requires_grad=true)>",
     "tensor([[-2.7875, -2.725]], shape=(1, 2), dtype=float32, device=cpu, requires_grad=false)"),
]


def line_of(relative_path, text):
    """The number of the first line of ROOT/relative_path that starts with `text` (stripped)."""
    path = os.path.join(ROOT, relative_path)
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip().startswith(text):
                return number
    raise RuntimeError("no line starting with %r in %s" % (text, path))


def check_chapter_lines():
    """chapters/01-training-loop.md shows this session: its breakpoint lines must be today's."""
    path = os.path.join(ROOT, "chapters", "01-training-loop.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for spec, relative_path, line_text in (
            ("single_loop.hpp", "examples/single_loop.hpp", "loss.backward();"),
            ("engine.hpp", "include/tinytorch/autograd/engine.hpp", "std::vector<Tensor> grads = node->apply(g);")):
        shown = re.findall(r"\(gdb\) break %s:(\d+)" % re.escape(spec), text)
        actual = line_of(relative_path, line_text)
        if not shown or any(int(n) != actual for n in shown):
            failures.append("chapter 01 breaks at %s:%s; %r is on line %d now" %
                            (spec, "/".join(shown) or "(none)", line_text, actual))


def check_node_names():
    """Every Node in include/ has a name() the printer can evaluate, whatever its fields hold."""
    # gdb runs a -x / sourced .py file in __main__: tinytorch.py's functions are there.
    printer = sys.modules["__main__"]

    exprs = printer.node_name_expressions()
    if len(exprs) < 40:
        failures.append("only %d autograd nodes found in include/ (expected 40 or more)" % len(exprs))
    for struct_name, expr in sorted(exprs.items()):
        for flag in (True, False):
            field = lambda f, flag=flag: ("SomeBackward0" if f == "node_name" else flag)
            try:
                name = printer.eval_name(expr, field)
            except ValueError as e:
                failures.append("%s::name(): %s" % (struct_name, e))
                break
            if not re.match(r"^[A-Za-z_:0-9]+$", name):
                failures.append("%s::name() evaluates to %r" % (struct_name, name))
    expected = {"Linear": "AddmmBackward0", "MseLoss": "MseLossBackward0", "AccumulateGrad":
                "torch::autograd::AccumulateGrad"}
    for struct_name, name in expected.items():
        got = printer.eval_name(exprs.get(struct_name, '"missing"'), lambda f: False)
        if got != name:
            failures.append("%s::name() evaluates to %r, expected %r" % (struct_name, got, name))
    print("check_session: %d autograd node names understood" % len(exprs))


def main():
    for setting in ("pagination off", "confirm off", "width unlimited", "height unlimited"):
        gdb.execute("set " + setting)
    gdb.parameter("print tinytorch-elements")  # raises unless tools/gdb/tinytorch.py was loaded
    run("info skip")
    core = os.path.join(os.getcwd(), "gdb_demo.core")

    # 1. main's tensors, live.
    run("break stop_here")
    run("run")
    run("up")
    expect_frame("up from stop_here", "main", "tests/gdb/gdb_demo.cpp")
    for cmd, value in MAIN_TENSORS:
        expect(cmd, value)
    run("set print tinytorch-elements 3")
    expect("print w", "tensor([[0.1, 0.2, 0.3], ...], shape=(2, 3), dtype=float32, device=cpu, "
                      "requires_grad=false)")
    expect("print labels", "tensor([3, 1, 4, ...], shape=(5,), dtype=int64, device=cpu, requires_grad=false)")
    run("set print tinytorch-elements 0")
    expect("print big", "tensor([[[0., 1., 2., 3.], [4., 5., 6., 7.], [8., 9., 10., 11.]], [[12., 13., 14., 15.], "
                        "[16., 17., 18., 19.], [20., 21., 22., 23.]]], shape=(2, 3, 4), dtype=float64, "
                        "device=cpu, requires_grad=false)")
    run("set print tinytorch-elements 20")

    # 2. a core file of this moment.
    run("generate-core-file " + core)

    # 3. chapter 01's loop, at loss.backward(); then step into the engine.
    run("break single_loop.hpp:%d" % line_of("examples/single_loop.hpp", "loss.backward();"))
    run("continue")
    expect_frame("breakpoint at loss.backward()", "examples::train_two_samples", "examples/single_loop.hpp")
    for cmd, value in LOOP_TENSORS:
        expect(cmd, value)
    run("step")
    expect_frame("step from loss.backward()", "tinytorch::Tensor::backward", "include/tinytorch/autograd/variable.ipp")
    run("step")
    expect_frame("second step", "tinytorch::autograd::run_backward", "include/tinytorch/autograd/engine.hpp")
    expect("print root", LOOP_TENSORS[3][1])
    run("break engine.hpp:%d" % line_of("include/tinytorch/autograd/engine.hpp",
                                         "std::vector<Tensor> grads = node->apply(g);"))
    for node, grad in ENGINE_STEPS:
        run("continue")
        expect_frame("engine loop", "tinytorch::autograd::run_backward", "include/tinytorch/autograd/engine.hpp")
        expect("print *node", node)
        expect("print g", grad)
    run("kill")

    # 4. the same tensors from the core file: no process to call into.
    run("core-file " + core)
    run("frame 1")
    expect_frame("core file, frame 1", "main", "tests/gdb/gdb_demo.cpp")
    for cmd, value in MAIN_TENSORS:
        expect(cmd, value)
    os.remove(core)

    # 5. every autograd node's name(); chapter 01's copy of the session.
    check_node_names()
    check_chapter_lines()


try:
    main()
except Exception as e:  # a gdb command that failed: report it as a test failure
    failures.append("%s: %s" % (type(e).__name__, e))
finally:
    if os.path.exists(os.path.join(os.getcwd(), "gdb_demo.core")):
        os.remove(os.path.join(os.getcwd(), "gdb_demo.core"))

if failures:
    print("\ncheck_session: %d FAILED:\n  %s" % (len(failures), "\n  ".join(failures)))
    gdb.execute("quit 1")
print("\ncheck_session: all checks passed")
gdb.execute("quit 0")

#!/usr/bin/python3
# tests/reference/gen_inplace.py — generates tests/reference/inplace_ref.hpp.
#
# The cases of tests/test_inplace.cpp, run in PyTorch: autograd through in-place ops (history
# rebased on non-leaves, CopySlices for writes through views, AsStridedBackward0 for views whose
# base changed), the version-counter errors (a saved tensor written through detach(), under
# no_grad, by optimizer.step()), the leaf / view errors, the memory-overlap rules of in-place ops,
# _version counts, and the LR scheduler's order warning. Records
#   values["<case>.<what>"]   flat row-major float values (results, gradients, versions)
#   strings["<case>.<what>"]  grad_fn names and error messages
# Version-counter messages are cut before " Hint:" (tinytorch's hint differs: it has no anomaly
# mode). Scalar in-place ops use aten's Scalar overloads (aten.add_.Scalar), whose grad_fn names
# (AddBackward1) are the ones libtorch's C++ frontend prints and tinytorch's add_(double) mirrors.
#
# Run with Debian's PyTorch (python3-torch), not the python3 on PATH:
#   /usr/bin/python3 tests/reference/gen_inplace.py
import os
import warnings

import torch

aten = torch.ops.aten
f32, f64 = torch.float32, torch.float64

values = {}   # name -> list of floats
strings = {}  # name -> str


def T(v, dtype=f32, rg=False):
    return torch.tensor(v, dtype=dtype, requires_grad=rg)


def put(name, t):
    if isinstance(t, torch.Tensor):
        values[name] = [float(x) for x in t.detach().reshape(-1).tolist()]
    else:
        values[name] = [float(x) for x in t]


def error_of(fn):
    try:
        fn()
    except RuntimeError as e:
        msg = str(e)
        return msg.split(" Hint:")[0]
    raise AssertionError("expected an error")


# ---- version counter: saved tensors changed in place --------------------------------------------
def sigmoid_detach():
    a = T([1, 2, 3], rg=True)
    s = a.sigmoid()
    s.detach().zero_()
    s.sum().backward()


strings["sigmoid_detach.error"] = error_of(sigmoid_detach)


def sigmoid_no_grad():
    a = T([1, 2, 3], rg=True)
    s = a.sigmoid()
    with torch.no_grad():
        s.zero_()
    s.sum().backward()


strings["sigmoid_no_grad.error"] = error_of(sigmoid_no_grad)


def step_between(make_opt):
    x = T([[1, 2]], rg=True)
    x.grad = torch.ones(1, 2)
    opt = make_opt([x])
    y = (x * x).sum()
    opt.step()
    y.backward()


strings["step_between.sgd"] = error_of(lambda: step_between(lambda p: torch.optim.SGD(p, lr=0.1)))
strings["step_between.adam"] = error_of(lambda: step_between(lambda p: torch.optim.Adam(p, lr=0.1)))


def versions_after_step(make_opt):
    x = T([[1, 2]], rg=True)
    x.grad = torch.ones(1, 2)
    make_opt([x]).step()
    return x._version


put("step_version", [versions_after_step(lambda p: torch.optim.SGD(p, lr=0.1)),
                     versions_after_step(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.1)),
                     versions_after_step(lambda p: torch.optim.Adam(p, lr=0.1)),
                     versions_after_step(lambda p: torch.optim.AdamW(p, lr=0.1, weight_decay=0.01))])


def leaf_no_grad_write():
    x = T([1, 2], rg=True)
    y = (x * x).sum()
    with torch.no_grad():
        aten.mul_.Scalar(x, 2.0)
    y.backward()


strings["leaf_no_grad.error"] = error_of(leaf_no_grad_write)


def mul_self():
    a = T([1, 2, 3], rg=True)
    q = a * 1
    q.mul_(q)
    q.sum().backward()


strings["mul_self.error"] = error_of(mul_self)


def log_input_changed():
    a = T([1, 2, 3], rg=True)
    q = a * 1
    r = q.log()
    aten.add_.Scalar(q, 1.0)
    r.sum().backward()


strings["log_input.error"] = error_of(log_input_changed)


def exp_input_changed():  # exp saves only its result: changing its input is fine
    a = T([1, 2, 3], rg=True)
    q = a * 1
    r = q.exp()
    aten.add_.Scalar(q, 1.0)
    r.sum().backward()
    return a.grad


put("exp_input.a_grad", exp_input_changed())


def relu_output_changed():  # relu saves its result
    a = T([1, -2, 3], rg=True)
    r = (a * 1).relu()
    aten.mul_.Scalar(r, 2.0)
    r.sum().backward()


strings["relu_output.error"] = error_of(relu_output_changed)


def max_indices_changed():
    x = T([[1, 5], [3, 2]], rg=True)
    v, i = (x * 1).max(0)
    i.zero_()
    v.sum().backward()


strings["max_indices.error"] = error_of(max_indices_changed)


def double_message():
    p = T([1, 2], dtype=f64, rg=True)
    q = p * 1
    r = q * q
    aten.add_.Scalar(q, 3.0)
    r.sum().backward()


strings["double.error"] = error_of(double_message)

# ---- in-place ops recorded in the graph -------------------------------------------------------
a0 = [[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]]
w0 = [2.0, -0.5, 1.5]
b0 = [[0.25, 1.5, -2.0], [3.0, -1.0, 0.75]]
g0 = [[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]]  # upstream gradient: loss = sum(q * g)


def binary_case(name, op, *, w=w0, b=b0):
    a = T(a0, rg=True)
    wt = T(w, rg=True)
    bt = T(b, rg=True)
    q = a * 1
    op(q, wt, bt)
    (q * T(g0)).sum().backward()
    put(name + ".out", q)
    put(name + ".a_grad", a.grad)
    put(name + ".w_grad", wt.grad if wt.grad is not None else torch.zeros(3))
    put(name + ".b_grad", bt.grad if bt.grad is not None else torch.zeros(2, 3))
    strings[name + ".grad_fn"] = q.grad_fn.name()


binary_case("add", lambda q, w, b: q.add_(w, alpha=2.0))
binary_case("sub", lambda q, w, b: q.sub_(w, alpha=0.5))
binary_case("mul", lambda q, w, b: q.mul_(w))
binary_case("div", lambda q, w, b: q.div_(w), w=[2.0, 0.5, 1.5])
binary_case("addcmul", lambda q, w, b: q.addcmul_(w, b, value=0.5))
binary_case("addcdiv", lambda q, w, b: q.addcdiv_(b, w, value=-1.5), w=[2.0, 0.5, 1.5])
binary_case("copy", lambda q, w, b: q.copy_(w))
binary_case("add_scalar", lambda q, w, b: aten.add_.Scalar(q, 1.5))
binary_case("mul_scalar", lambda q, w, b: aten.mul_.Scalar(q, -3.0))
binary_case("div_scalar", lambda q, w, b: aten.div_.Scalar(q, 4.0))
binary_case("zero", lambda q, w, b: q.zero_())
binary_case("fill", lambda q, w, b: aten.fill_.Scalar(q, 2.5))
binary_case("mul_then_add", lambda q, w, b: q.mul_(w).add_(b))


def plus_equals():  # the q = 2*p; q += 1
    p = T([1, 2], rg=True)
    q = 2 * p
    aten.add_.Scalar(q, 1.0)
    strings["plus_equals.grad_fn"] = q.grad_fn.name()
    put("plus_equals.version", [q._version])
    put("plus_equals.out", q)
    q.sum().backward()
    put("plus_equals.p_grad", p.grad)


plus_equals()


def add_requires_grad_operand():  # x = zeros(3); x.add_(w)
    w = T([1, 2, 3], rg=True)
    x = torch.zeros(3)
    x.add_(w)
    strings["x_add_w.grad_fn"] = x.grad_fn.name()
    put("x_add_w.is_leaf", [x.is_leaf])
    (x * x).sum().backward()
    put("x_add_w.w_grad", w.grad)


add_requires_grad_operand()


def mixed_dtype():  # float64 self, float32 operand: the operand's grad is float32
    a = T([1, 2, 3], rg=True)
    x = torch.zeros(3, dtype=f64)
    x.add_(a, alpha=2.0)
    (x * x).sum().backward()
    put("mixed_dtype.a_grad", a.grad)


mixed_dtype()

# ---- views: CopySlices and AsStridedBackward0 --------------------------------------------------


def copy_slices():
    a = T([1, 2, 3], rg=True)
    q = a * 2
    aten.mul_.Scalar(q[1], 3.0)
    q.narrow(0, 0, 2).add_(q[2].detach())
    strings["copy_slices.grad_fn"] = q.grad_fn.name()
    put("copy_slices.out", q)
    (q * q).sum().backward()
    put("copy_slices.a_grad", a.grad)


copy_slices()


def view_of_view():
    a = T([1, 2, 3], rg=True)
    c = T([[1, -2, 0.5]], rg=True)
    q = a * 2
    v = q.view(3, 1).t()
    v.mul_(c)
    strings["view_of_view.v_grad_fn"] = v.grad_fn.name()
    strings["view_of_view.q_grad_fn"] = q.grad_fn.name()
    (q * q).sum().backward()
    put("view_of_view.a_grad", a.grad)
    put("view_of_view.c_grad", c.grad)


view_of_view()


def stale_view():
    a = T([1, 2, 3], rg=True)
    q = a * 1
    v = q[0:2]
    aten.mul_.Scalar(q, 3.0)
    strings["stale_view.grad_fn"] = v.grad_fn.name()
    put("stale_view.out", v)
    (v * T([1, 2])).sum().backward()
    put("stale_view.a_grad", a.grad)


stale_view()


def base_without_grad():
    w = T([1, 2, 3], rg=True)
    x = torch.zeros(3)
    v = x[0:2]
    x[1:3].add_(w[0:2])
    strings["base_without_grad.x_grad_fn"] = x.grad_fn.name()
    strings["base_without_grad.v_grad_fn"] = v.grad_fn.name()
    put("base_without_grad.flags", [x.is_leaf, v.requires_grad, x._version, v._version])
    (v * v).sum().backward()
    put("base_without_grad.w_grad", w.grad)


base_without_grad()


def write_through_view_of_leaf():
    a = T([1, 2, 3], rg=True)
    aten.add_.Scalar(a[0:2], 1.0)


strings["view_of_leaf.error"] = error_of(write_through_view_of_leaf)


def leaf_write():
    a = T([1, 2, 3], rg=True)
    aten.add_.Scalar(a, 1.0)


strings["leaf.error"] = error_of(leaf_write)


def no_grad_view_write():
    a = T([1, 2, 3], rg=True)
    q = a * 1
    with torch.no_grad():
        v = q[0:2]
    aten.add_.Scalar(v, 1.0)


strings["no_grad_view.error"] = error_of(no_grad_view_write)


def no_grad_view_stale():
    a = T([1, 2, 3], rg=True)
    q = a * 1
    with torch.no_grad():
        v = q[0:2]
    aten.mul_.Scalar(q, 2.0)
    v.grad_fn


strings["no_grad_view_stale.error"] = error_of(no_grad_view_stale)


def expanded_with_grad():
    a = T([1, 2, 3], rg=True)
    aten.add_.Scalar((a * 1).expand(2, 3), 1.0)


strings["expanded_grad.error"] = error_of(expanded_with_grad)

# ---- memory overlap -----------------------------------------------------------------------------
strings["overlap.partial"] = error_of(lambda: (lambda a: a.add_(a.t()))(torch.arange(9.).reshape(3, 3)))
strings["overlap.internal"] = error_of(lambda: aten.add_.Scalar(torch.zeros(3).expand(2, 3), 1.0))
assert error_of(lambda: (lambda b: b.narrow(0, 1, 4).copy_(b.narrow(0, 0, 4)))(torch.arange(5.))) == strings["overlap.partial"]
assert error_of(lambda: torch.zeros(3).expand(2, 3).copy_(torch.ones(2, 3))) == strings["overlap.internal"]
assert error_of(lambda: torch.zeros(3).expand(2, 3).uniform_()) == strings["overlap.internal"]
assert error_of(lambda: (lambda x: x.add_(x[0]))(torch.arange(4.).reshape(2, 2))) == strings["overlap.partial"]
assert error_of(lambda: (lambda x: x.narrow(0, 0, 3).addcmul_(x.narrow(0, 1, 3), torch.ones(3)))(torch.arange(6.))) \
    == strings["overlap.partial"]


def allowed(name, fn):
    put("overlap." + name, fn())


def add_self():
    b = torch.arange(3.)
    b.add_(b)
    return b


def copy_self_narrow():
    b = torch.arange(4.)
    b.narrow(0, 1, 2).copy_(b.narrow(0, 1, 2))
    return b


def too_hard():
    x = torch.arange(4.).reshape(2, 2)
    x[0].add_(x[:, 0])
    return x


def fill_expanded():
    x = torch.zeros(3)
    x.expand(2, 3).fill_(1.5)
    return x


def same_range_mul():
    x = torch.arange(6.)
    x.narrow(0, 0, 3).mul_(x.narrow(0, 0, 3))
    return x


def disjoint_copy():
    b = torch.arange(6.)
    b.narrow(0, 0, 3).copy_(b.narrow(0, 3, 3))
    return b


allowed("add_self", add_self)
allowed("copy_self", copy_self_narrow)
allowed("too_hard", too_hard)
allowed("fill_expanded", fill_expanded)
allowed("same_range_mul", same_range_mul)
allowed("disjoint_copy", disjoint_copy)

# ---- _version -------------------------------------------------------------------------------------


def versions():
    out = []
    a = torch.zeros(2, 2)
    out.append(a._version)
    a.add_(1)
    a.zero_()
    out.append(a._version)
    a[0].fill_(3)
    out.append(a._version)
    b = a.t()
    b.mul_(2)
    out += [a._version, b._version]
    out.append(a.clone()._version)
    d = a.detach()
    d.add_(1)
    out.append(a._version)
    out.append(torch.cat([a, a])._version)
    return out


put("versions", versions())

# ---- lr_scheduler order warning ------------------------------------------------------------------
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("default")
    x = torch.zeros(2, requires_grad=True)
    opt = torch.optim.SGD([x], lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2)
    sched.step()
    sched.step()
    sched2 = torch.optim.lr_scheduler.StepLR(torch.optim.SGD([x], lr=0.1), 2)
    sched2.step()
order = [str(w.message) for w in caught if "lr_scheduler.step()" in str(w.message)]
assert len(order) == 1, order  # once per process
strings["scheduler.warning"] = order[0]


def cstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inplace_ref.hpp")
with open(out, "w") as f:
    f.write("// generated by gen_inplace.py — do not edit.\n")
    f.write("// Regenerate: /usr/bin/python3 tests/reference/gen_inplace.py  (PyTorch %s)\n" % torch.__version__)
    f.write("// PyTorch's results for tests/test_inplace.cpp: values[\"<case>.<what>\"] (flat, row-major) and\n")
    f.write("// strings[\"<case>.<what>\"] (grad_fn names, error messages). Cases: tests/reference/gen_inplace.py.\n")
    f.write("#pragma once\n\n#include <map>\n#include <string>\n#include <vector>\n\n")
    f.write("namespace inplace_reference {\n\n")
    f.write("inline const std::map<std::string, std::vector<double>>& values() {\n")
    f.write("  static const std::map<std::string, std::vector<double>> m{\n")
    for k in sorted(values):
        f.write("      {%s, {%s}},\n" % (cstr(k), ", ".join(repr(v) for v in values[k])))
    f.write("  };\n  return m;\n}\n\n")
    f.write("inline const std::map<std::string, std::string>& strings() {\n")
    f.write("  static const std::map<std::string, std::string> m{\n")
    for k in sorted(strings):
        f.write("      {%s,\n       %s},\n" % (cstr(k), cstr(strings[k])))
    f.write("  };\n  return m;\n}\n\n")
    f.write("}  // namespace inplace_reference\n")
print("wrote", out, len(values), "value arrays,", len(strings), "strings")

#!/usr/bin/python3
# tests/reference/gen_print.py — generates tests/reference/print_cases.hpp.
#
# Builds ~50 tensors in PyTorch, records repr(t) for each, and writes a C++ header that
# tests/test_print.cpp checks tinytorch::detail::format_tensor against. The cases cover
# what torch/_tensor_str.py distinguishes: int_mode (`1.`), fixed `1.5000`, sci_mode
# (ratio > 1000, max > 1e8, min < 1e-4), nan/inf/-0., 0-d, empty tensors (size=/dtype=
# suffixes), rows wrapped at linewidth 80, 2-D/3-D/4-D nesting, summarisation with `...`
# (numel > 1000, 3 edge items), float64 (dtype= suffix), int64, and the requires_grad /
# grad_fn suffixes, including the ones that move to their own line.
#
# Run with Debian's PyTorch (python3-torch):  /usr/bin/python3 tests/reference/gen_print.py
# Values are written as repr(float(x)) of the stored element, i.e. the exact double of a
# float32 value, so the C++ side formats the very same numbers PyTorch did.
import math
import os

import numpy as np
import torch

torch.set_printoptions(profile="default")
torch.manual_seed(0)

f32, f64, i64 = torch.float32, torch.float64, torch.int64
nan, inf = float("nan"), float("inf")

cases = []  # (name, tensor)


def add(name, t):
    cases.append((name, t))


def grad(t):
    """A leaf with requires_grad=True (prints `requires_grad=True`)."""
    return t.clone().requires_grad_(True)


def mul(t):
    """A non-leaf made by a multiplication (prints `grad_fn=<MulBackward0>`)."""
    return grad(t) * 1.0


# --- small floats, fixed and int mode -------------------------------------------------------
add("int_mode_2d_requires_grad", grad(torch.tensor([[1.0, 2.0]])))
add("fixed_1d", torch.tensor([0.1, 0.2, 0.3]))
add("fixed_mixed_signs", torch.tensor([1.5, -2.25, 3.0]))
add("negatives", torch.tensor([-1.0, -2.0, -3.5]))
add("int_mode_widths", torch.tensor([100.0, 2000.0, -3.0]))
add("fixed_widths", torch.tensor([123.456, 1.5, -0.25]))
add("int_mode_sci_ratio", torch.tensor([1.0, 10000.0]))
add("int_mode_sci_large", torch.tensor([3.0, 1e9]))
add("sci_small", torch.tensor([1e-5, 1.0]))
add("sci_large", torch.tensor([1e10, 1.5]))
add("sci_tiny", torch.tensor([1e-8, -2e-8, 3.5e-9]))
add("sci_ratio", torch.tensor([0.001, 5.0]))
add("sci_max_1e8", torch.tensor([1e8, 1.0]))
add("sci_with_zero_nan", torch.tensor([0.0, 1e-6, nan, -inf]))
# --- nan / inf / zeros ----------------------------------------------------------------------
add("nan_inf_fixed", torch.tensor([1.5, nan, inf, -inf]))
add("nan_inf_int_mode", torch.tensor([1.0, nan, inf, -inf]))
add("all_nan", torch.tensor([nan, nan]))
add("all_zero", torch.zeros(3))
add("neg_zero_int_mode", torch.tensor([-0.0, 1.0]))
add("neg_zero_fixed", torch.tensor([-0.0, 0.5]))
add("zeros_2d_f64", torch.zeros(2, 2, dtype=f64))
# --- 0-d ------------------------------------------------------------------------------------
add("scalar_fixed", torch.tensor(3.5))
add("scalar_int_mode", torch.tensor(2.0))
add("scalar_int64", torch.tensor(7))
add("scalar_f64", torch.tensor(0.1, dtype=f64))
add("scalar_nan", torch.tensor(nan))
add("scalar_sci", torch.tensor(1e-5))
add("scalar_neg_zero", torch.tensor(-0.0))
add("scalar_requires_grad", grad(torch.tensor(-1.25)))
add("scalar_grad_fn", mul(torch.tensor(4.0)))
# --- empty ----------------------------------------------------------------------------------
add("empty_1d", torch.zeros(0))
add("empty_2d", torch.zeros(0, 3))
add("empty_3d", torch.zeros(2, 0, 4))
add("empty_int64", torch.zeros(0, dtype=i64))
add("empty_f64_2d", torch.zeros(0, 3, dtype=f64))
add("empty_requires_grad", grad(torch.zeros(1, 0)))
# --- int64 ----------------------------------------------------------------------------------
add("int64_1d", torch.tensor([1, 2, 3]))
add("int64_negative", torch.tensor([-5, 10, 300]))
add("int64_2d", torch.tensor([[1, -20], [300, 4]]))
add("int64_long_row", torch.arange(60) * 1000)
add("int64_summarised", torch.arange(2000))
add("int64_summarised_2d", torch.arange(2400).reshape(40, 60) - 1200)
# --- 1-D / 2-D / 3-D / 4-D ------------------------------------------------------------------
add("randn_1d_wrap", torch.randn(50))
add("randn_1d_wrap_x100", torch.randn(30) * 100)
add("randn_2d", torch.randn(4, 5))
add("randn_2d_wrap", torch.randn(3, 20))
add("randn_3d", torch.randn(2, 3, 4))
add("randn_4d", torch.randn(2, 2, 2, 3))
add("column", torch.randn(3, 1))
add("singletons", torch.tensor([[[5.0]]]))
add("one_element", torch.tensor([-7.5]))
add("sci_2d", torch.randn(3, 4) * 1e-6)
# --- summarised (numel > 1000) --------------------------------------------------------------
add("summarised_1d", torch.randn(2000))
add("summarised_40x40", torch.randn(40, 40))
add("summarised_3d", torch.randn(10, 12, 15))
add("summarised_3d_fixed", torch.rand(10, 12, 15) + 0.5)
add("summarised_4d", torch.randn(8, 8, 4, 5))
add("summarised_short_dim0", torch.randn(5, 300))
add("summarised_int_mode", torch.arange(2000, dtype=f32))
add("summarised_sci", torch.randn(30, 40) * 1e5)
# --- float64 --------------------------------------------------------------------------------
add("f64_1d", torch.tensor([0.1, 0.2], dtype=f64))
add("f64_2d", torch.randn(3, 3, dtype=f64))
add("f64_requires_grad", grad(torch.tensor([1.0, 2.5], dtype=f64)))
add("f64_grad_fn", mul(torch.randn(2, 2, dtype=f64)))
add("f64_summarised", torch.randn(1200, dtype=f64))
# --- suffixes that do / do not fit on the last line -----------------------------------------
add("grad_fn_2d", mul(torch.randn(3, 3)))
add("requires_grad_full_row", grad(torch.randn(8)))   # last line 7+72=79 wide -> new line
add("requires_grad_short_row", grad(torch.randn(5)))
add("grad_fn_wrapped_rows", mul(torch.randn(12)))
add("f64_suffixes_break", grad(torch.randn(7, dtype=f64)))
add("f64_grad_fn_break", mul(torch.randn(9, dtype=f64)))
add("requires_grad_summarised", grad(torch.randn(1001)))


def suffix_of(t):
    """The text the C++ caller passes as suffix_kwargs (built from grad_fn/requires_grad)."""
    if t.grad_fn is not None:
        return "grad_fn=<{}>".format(type(t.grad_fn).__name__)
    if t.requires_grad:
        return "requires_grad=True"
    return ""


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def c_double(x, is_f32):
    """A C++ literal for x. float32 values use their shortest float32 repr plus `f`, which the
    compiler rounds back to exactly the same float (and the vector widens it to double)."""
    if math.isnan(x):
        return "kNaN"
    if math.isinf(x):
        return "kInf" if x > 0 else "-kInf"
    if is_f32:
        s = repr(np.float32(x))
        assert "." in s or "e" in s, s
        assert float(np.float32(s)) == x
        return s + "f"
    return repr(float(x))


def c_values(vals, is_f32):
    parts = [c_double(v, is_f32) for v in vals]
    lines, cur = [], ""
    for p in parts:
        if len(cur) + len(p) + 2 > 92:
            lines.append(cur)
            cur = ""
        cur += p + ", "
    if cur:
        lines.append(cur)
    return "{" + "\n       ".join(l.rstrip() for l in lines).rstrip(",") + "}"


dtype_code = {f32: 0, f64: 1, i64: 2}

out = []
out.append("// generated by gen_print.py — do not edit.")
out.append("// Regenerate: /usr/bin/python3 tests/reference/gen_print.py  (PyTorch %s)" % torch.__version__)
out.append("// Each case: a tensor's shape, row-major values, dtype, the suffix the caller passes")
out.append("// (grad_fn=<...> or requires_grad=True) and repr(t) as PyTorch prints it.")
out.append("#pragma once")
out.append("")
out.append("#include <cstdint>")
out.append("#include <limits>")
out.append("#include <vector>")
out.append("")
out.append("namespace print_reference {")
out.append("")
out.append("struct PrintCase {")
out.append("  const char* name;")
out.append("  std::vector<int64_t> shape;")
out.append("  std::vector<double> values;  // row-major; float32 values as their exact double")
out.append("  int dtype;                   // 0 float32, 1 float64, 2 int64")
out.append("  const char* suffix;          // suffix_kwargs passed to format_tensor")
out.append("  const char* expected;        // repr(t) from PyTorch")
out.append("};")
out.append("")
out.append("inline const std::vector<PrintCase>& print_cases() {")
out.append("  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();")
out.append("  constexpr double kInf = std::numeric_limits<double>::infinity();")
out.append("  (void)kNaN;")
out.append("  (void)kInf;")
out.append("  static const std::vector<PrintCase> cases = {")
for name, t in cases:
    d = t.detach()
    vals = [float(v) for v in d.reshape(-1).tolist()]
    out.append("    {%s," % c_string(name))
    out.append("     {%s}," % ", ".join(str(s) for s in d.shape))
    out.append("     " + c_values(vals, d.dtype == f32) + ",")
    out.append("     %d, %s," % (dtype_code[d.dtype], c_string(suffix_of(t))))
    out.append("     " + c_string(repr(t)) + "},")
out.append("  };")
out.append("  return cases;")
out.append("}")
out.append("")
out.append("}  // namespace print_reference")
out.append("")

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "print_cases.hpp")
with open(path, "w") as f:
    f.write("\n".join(out))
print("wrote %d cases to %s" % (len(cases), path))

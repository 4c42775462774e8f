#!/usr/bin/python3
# tests/reference/gen_optim.py — generates tests/reference/optim_ref.hpp.
#
# Records what torch.optim does, so that tests/test_optim.cpp can check tinytorch::optim against
# it without PyTorch at run time:
#   * optimizer trajectories: a Linear(3, 2) with injected weights, fixed inputs (4, 3) and
#     targets (4, 2), MSE loss, and 5 real training steps
#         opt.zero_grad(set_to_none=True); loss = mse_loss(model(x), y); loss.backward(); opt.step()
#     for SGD (plain, momentum, dampening, nesterov, weight decay, both, an lr change midway, two
#     param groups), Adam (plain, weight decay, amsgrad) and AdamW (default and explicit decay),
#     and SGD driven by a warmup + cosine SequentialLR. After every step the weight (row-major,
#     2 x 3) and the bias (2) are recorded, and the loss computed before that step.
#   * learning-rate schedules: get_last_lr() right after construction and after every
#     scheduler.step() for CosineAnnealingLR (past 2 * T_max, with and without eta_min, two param
#     groups, an lr changed by hand midway), LinearLR (warmup, defaults, decay), StepLR and
#     SequentialLR (LinearLR -> CosineAnnealingLR, and three schedulers).
#   * state_dict keys: optimizer.state_dict() of SGD(momentum) and Adam(amsgrad) with two param
#     groups after one step, and a SequentialLR's state_dict(), flattened to the keys
#     tinytorch's flat state dicts use ("state.0.exp_avg", "param_groups.1.lr", with each
#     tensor's shape), leaving out the flags tinytorch does not have (maximize, foreach, fused,
#     capturable, differentiable, verbose, _get_lr_called_within_step).
#
# Run with Debian's PyTorch (python3-torch), not a `python3` found on PATH:
#     /usr/bin/python3 tests/reference/gen_optim.py
# That is PyTorch 1.13, whose defaults differ from 2.x in places, so every argument that matters
# is passed explicitly (zero_grad(set_to_none=True), SGD's lr). Differences between 1.13 and 2.x
# that remain are rounding only (2.x Adam updates exp_avg with lerp_, 1.13 with mul_ + add_) and
# are covered by the tests' 1e-6 tolerance; the schedulers produce the same numbers in both.
# Float32 values are written as repr(float(x)): the exact double of the float32 value.
import math
import os
import warnings

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore")  # "lr_scheduler.step() before optimizer.step()" etc.
torch.set_num_threads(1)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "optim_ref.hpp")

# ---- the model and data (float32) ------------------------------------------------------------
W0 = [[0.5, -0.3, 0.8], [-0.6, 0.2, 0.4]]  # Linear(3, 2).weight: (out=2, in=3)
B0 = [0.1, -0.2]                           # Linear(3, 2).bias: (2)
X = [[1.0, 2.0, -1.0], [0.5, -1.5, 2.0], [-2.0, 0.3, 0.7], [1.2, 0.8, -0.4]]  # (4, 3)
Y = [[1.0, -1.0], [0.0, 2.0], [-0.5, 0.5], [2.0, 0.0]]                      # (4, 2)
STEPS = 5


def make_model():
    model = torch.nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor(W0))
        model.bias.copy_(torch.tensor(B0))
    return model


def flat(model):
    return [float(v) for v in model.weight.detach().reshape(-1)] + [float(v) for v in model.bias.detach()]


def train(make_opt, steps=STEPS, before_step=None, make_sched=None):
    """Runs `steps` real training steps; returns (losses, params after each step)."""
    model = make_model()
    opt = make_opt(model)
    sched = make_sched(opt) if make_sched else None
    x, y = torch.tensor(X), torch.tensor(Y)
    losses, params = [], []
    for i in range(steps):
        if before_step:
            before_step(i, opt)
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if sched:
            sched.step()
        losses.append(float(loss))
        params.append(flat(model))
    return losses, params


def set_lr_at(step, lr):
    def hook(i, opt):
        if i == step:
            opt.param_groups[0]["lr"] = lr
    return hook


SGD, Adam, AdamW = torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW
trajectories = [
    ("sgd_plain", "SGD(lr=0.1)",
     train(lambda m: SGD(m.parameters(), lr=0.1))),
    ("sgd_momentum", "SGD(lr=0.1, momentum=0.9)",
     train(lambda m: SGD(m.parameters(), lr=0.1, momentum=0.9))),
    ("sgd_dampening", "SGD(lr=0.1, momentum=0.9, dampening=0.5)",
     train(lambda m: SGD(m.parameters(), lr=0.1, momentum=0.9, dampening=0.5))),
    ("sgd_nesterov", "SGD(lr=0.1, momentum=0.9, nesterov=True)",
     train(lambda m: SGD(m.parameters(), lr=0.1, momentum=0.9, nesterov=True))),
    ("sgd_weight_decay", "SGD(lr=0.1, weight_decay=0.01)",
     train(lambda m: SGD(m.parameters(), lr=0.1, weight_decay=0.01))),
    ("sgd_momentum_weight_decay", "SGD(lr=0.05, momentum=0.8, dampening=0.1, weight_decay=0.1)",
     train(lambda m: SGD(m.parameters(), lr=0.05, momentum=0.8, dampening=0.1, weight_decay=0.1))),
    ("sgd_lr_change", "SGD(lr=0.1, momentum=0.9); param_groups[0]['lr'] = 0.01 before step 3 (index 2)",
     train(lambda m: SGD(m.parameters(), lr=0.1, momentum=0.9), before_step=set_lr_at(2, 0.01))),
    ("sgd_param_groups", "SGD([{'params': [weight]}, {'params': [bias], 'lr': 0.01, 'momentum': 0.5}], "
     "lr=0.1, momentum=0.9)",
     train(lambda m: SGD([{"params": [m.weight]}, {"params": [m.bias], "lr": 0.01, "momentum": 0.5}],
                         lr=0.1, momentum=0.9))),
    ("adam", "Adam(lr=0.01)",
     train(lambda m: Adam(m.parameters(), lr=0.01))),
    ("adam_weight_decay", "Adam(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)",
     train(lambda m: Adam(m.parameters(), lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1))),
    ("adam_amsgrad", "Adam(lr=0.05, amsgrad=True)",
     train(lambda m: Adam(m.parameters(), lr=0.05, amsgrad=True), steps=8)),
    ("adamw", "AdamW(lr=0.01) (weight_decay defaults to 0.01)",
     train(lambda m: AdamW(m.parameters(), lr=0.01))),
    ("adamw_weight_decay", "AdamW(lr=0.02, weight_decay=0.5)",
     train(lambda m: AdamW(m.parameters(), lr=0.02, weight_decay=0.5))),
    ("sgd_warmup_cosine", "SGD(lr=0.1, momentum=0.9) with SequentialLR([LinearLR(start_factor=0.5, "
     "total_iters=2), CosineAnnealingLR(T_max=4, eta_min=0.01)], milestones=[2]), stepped after each "
     "optimizer step",
     train(lambda m: SGD(m.parameters(), lr=0.1, momentum=0.9), steps=7,
           make_sched=lambda o: torch.optim.lr_scheduler.SequentialLR(
               o, [torch.optim.lr_scheduler.LinearLR(o, start_factor=0.5, total_iters=2),
                   torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=4, eta_min=0.01)], milestones=[2]))),
]


# ---- learning-rate schedules ------------------------------------------------------------------
def schedule(lrs, make_sched, steps, before_step=None):
    """get_last_lr() after construction and after each of `steps` scheduler steps."""
    params = [torch.zeros(1, requires_grad=True) for _ in lrs]
    opt = SGD([{"params": [p], "lr": lr} for p, lr in zip(params, lrs)], lr=lrs[0])
    sched = make_sched(opt)
    out = [list(sched.get_last_lr())]
    for i in range(steps):
        if before_step:
            before_step(i, opt)
        opt.step()
        sched.step()
        out.append(list(sched.get_last_lr()))
    return out


def scale_lr_at(step, factor):
    def hook(i, opt):
        if i == step:
            for g in opt.param_groups:
                g["lr"] *= factor
    return hook


S = torch.optim.lr_scheduler
schedules = [
    ("cosine", "lr=0.1, CosineAnnealingLR(T_max=10, eta_min=0.001), 32 steps (past 3 * T_max)",
     schedule([0.1], lambda o: S.CosineAnnealingLR(o, T_max=10, eta_min=0.001), 32)),
    ("cosine_eta_min_0", "lr=0.5, CosineAnnealingLR(T_max=7), 2 * T_max = 14 steps",
     schedule([0.5], lambda o: S.CosineAnnealingLR(o, T_max=7), 14)),
    ("cosine_two_groups", "lrs 0.1 and 0.02, CosineAnnealingLR(T_max=5, eta_min=0.005), 12 steps",
     schedule([0.1, 0.02], lambda o: S.CosineAnnealingLR(o, T_max=5, eta_min=0.005), 12)),
    ("cosine_lr_changed", "lr=0.1, CosineAnnealingLR(T_max=8, eta_min=0.001); every group's lr halved "
     "by hand before step 4 (index 3), 16 steps (the recursive form scales from the current lr)",
     schedule([0.1], lambda o: S.CosineAnnealingLR(o, T_max=8, eta_min=0.001), 16,
              before_step=scale_lr_at(3, 0.5))),
    ("linear_warmup", "lr=0.1, LinearLR(start_factor=0.25, end_factor=1.0, total_iters=4), 8 steps",
     schedule([0.1], lambda o: S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=4), 8)),
    ("linear_defaults", "lr=0.05, LinearLR() (start_factor=1/3, end_factor=1, total_iters=5), 8 steps",
     schedule([0.05], lambda o: S.LinearLR(o), 8)),
    ("linear_decay", "lr=0.2, LinearLR(start_factor=1.0, end_factor=0.1, total_iters=5), 8 steps",
     schedule([0.2], lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=5), 8)),
    ("step_lr", "lr=0.1, StepLR(step_size=3, gamma=0.5), 10 steps",
     schedule([0.1], lambda o: S.StepLR(o, step_size=3, gamma=0.5), 10)),
    ("sequential_warmup_cosine", "lr=0.1, SequentialLR([LinearLR(start_factor=0.1, total_iters=3), "
     "CosineAnnealingLR(T_max=6, eta_min=0.001)], milestones=[3]), 14 steps",
     schedule([0.1], lambda o: S.SequentialLR(
         o, [S.LinearLR(o, start_factor=0.1, total_iters=3), S.CosineAnnealingLR(o, T_max=6, eta_min=0.001)],
         milestones=[3]), 14)),
    ("sequential_three", "lrs 0.1 and 0.04, SequentialLR([LinearLR(start_factor=0.5, total_iters=2), "
     "StepLR(step_size=2, gamma=0.5), CosineAnnealingLR(T_max=4)], milestones=[2, 6]), 14 steps",
     schedule([0.1, 0.04], lambda o: S.SequentialLR(
         o, [S.LinearLR(o, start_factor=0.5, total_iters=2), S.StepLR(o, step_size=2, gamma=0.5),
             S.CosineAnnealingLR(o, T_max=4)], milestones=[2, 6]), 14)),
]


# ---- state_dict keys, flattened ----------------------------------------------------------------
NOT_IN_TINYTORCH = {"maximize", "foreach", "fused", "capturable", "differentiable", "verbose",
                    "_get_lr_called_within_step"}


def flatten(d, prefix=""):
    """[(key, shape)] of a nested state dict, as tinytorch's flat state dicts name them."""
    out = []
    items = d.items() if isinstance(d, dict) else enumerate(d)
    for k, v in items:
        if k in NOT_IN_TINYTORCH:
            continue
        key = f"{prefix}{k}"
        if isinstance(v, torch.Tensor):
            out.append((key, list(v.shape)))
        elif isinstance(v, dict) or (isinstance(v, list) and v and isinstance(v[0], dict)):
            out += flatten(v, key + ".")
        elif isinstance(v, (list, tuple)):
            out.append((key, [len(v)]))
        else:  # a float, int or bool: a 0-d tensor in tinytorch
            out.append((key, []))
    return out


def optimizer_keys(make):
    w0 = torch.nn.Parameter(torch.zeros(2, 3))
    b0 = torch.nn.Parameter(torch.zeros(2))
    w1 = torch.nn.Parameter(torch.zeros(4))
    opt = make([w0, b0], [w1])
    (w0.sum() + b0.sum() + w1.sum()).backward()
    opt.step()
    sd = opt.state_dict()
    return flatten({"state": sd["state"]}) + flatten({"param_groups": sd["param_groups"]})


def sgd_two_groups(g0, g1):
    opt = torch.optim.SGD(g0, lr=0.1, momentum=0.9)
    opt.add_param_group({"params": g1, "lr": 0.01})
    return opt


def adam_two_groups(g0, g1):
    opt = torch.optim.Adam(g0, lr=0.1, amsgrad=True)
    opt.add_param_group({"params": g1, "lr": 0.01})
    return opt


def sequential_keys():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=0.1)
    warm = torch.optim.lr_scheduler.LinearLR(opt, 0.1, 1.0, 3)
    cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 7)
    s = torch.optim.lr_scheduler.SequentialLR(opt, [warm, cos], [3])
    return flatten(s.state_dict())


state_dict_keys = [
    ("sgd_momentum_state_dict_keys", "SGD(lr=0.1, momentum=0.9) + a group with lr 0.01, after one step",
     optimizer_keys(sgd_two_groups)),
    ("adam_amsgrad_state_dict_keys", "Adam(lr=0.1, amsgrad=True) + a group with lr 0.01, after one step",
     optimizer_keys(adam_two_groups)),
    ("sequential_lr_state_dict_keys", "SequentialLR([LinearLR(0.1, 1.0, 3), CosineAnnealingLR(7)], [3])",
     sequential_keys()),
]

# ---- write the header -------------------------------------------------------------------------
def num(v):
    r = repr(float(v))
    return r if ("e" in r or "." in r or "n" in r) else r + ".0"


def vec(values):
    return "{" + ", ".join(num(v) for v in values) + "}"


lines = []
w = lines.append
w("// generated by gen_optim.py — do not edit.")
w(f"// Regenerate: /usr/bin/python3 tests/reference/gen_optim.py  (PyTorch {torch.__version__})")
w("// torch.optim trajectories and learning-rate schedules checked by tests/test_optim.cpp.")
w("#pragma once")
w("")
w("#include <string>")
w("#include <utility>")
w("#include <vector>")
w("")
w("namespace optim_reference {")
w("")
w("/// The model every trajectory starts from: Linear(3, 2), MSE loss, one full batch.")
w(f"inline const std::vector<double>& init_weight() {{ static const std::vector<double> v = {vec(sum(W0, []))}; return v; }}  // (2, 3)")
w(f"inline const std::vector<double>& init_bias() {{ static const std::vector<double> v = {vec(B0)}; return v; }}  // (2)")
w(f"inline const std::vector<double>& inputs() {{ static const std::vector<double> v = {vec(sum(X, []))}; return v; }}  // (4, 3)")
w(f"inline const std::vector<double>& targets() {{ static const std::vector<double> v = {vec(sum(Y, []))}; return v; }}  // (4, 2)")
w("")
w("/// One training run: the loss before each step, and weight (row-major, 2 x 3) then bias (2)")
w("/// after each step.")
w("struct Trajectory {")
w("  std::vector<double> losses;")
w("  std::vector<std::vector<double>> params;")
w("};")
w("")
for name, desc, (losses, params) in trajectories:
    w(f"/// {desc}")
    w(f"inline const Trajectory& {name}() {{")
    w("  static const Trajectory t = {")
    w(f"    {vec(losses)},")
    w("    {")
    for p in params:
        w(f"      {vec(p)},")
    w("    }};")
    w("  return t;")
    w("}")
    w("")
w("/// get_last_lr() after construction, then after each scheduler.step(): one row per call,")
w("/// one value per param group.")
for name, desc, rows in schedules:
    w(f"/// {desc}")
    w(f"inline const std::vector<std::vector<double>>& {name}() {{")
    w("  static const std::vector<std::vector<double>> lrs = {")
    for r in rows:
        w(f"    {vec(r)},")
    w("  };")
    w("  return lrs;")
    w("}")
    w("")
w("/// state_dict() keys, flattened as tinytorch's flat state dicts, with each entry's shape")
w("/// (a Python number: [], a list or tuple: [len]).")
w("using KeyShapes = std::vector<std::pair<std::string, std::vector<long long>>>;")
for name, desc, keys in state_dict_keys:
    w(f"/// {desc}")
    w(f"inline const KeyShapes& {name}() {{")
    w("  static const KeyShapes k = {")
    for key, shape in keys:
        w(f'    {{"{key}", {{{", ".join(str(d) for d in shape)}}}}},')
    w("  };")
    w("  return k;")
    w("}")
    w("")
w("}  // namespace optim_reference")

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"wrote {OUT}: {len(trajectories)} trajectories, {len(schedules)} schedules")

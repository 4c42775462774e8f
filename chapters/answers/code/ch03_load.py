# ch03 ex5: the optimizer part of a train_mnist checkpoint, loaded into torch.optim.SGD.
import sys, torch, torch.nn as nn
from safetensors.torch import load_file
flat = load_file(sys.argv[1] if len(sys.argv) > 1 else "/tmp/ck.tt")  # the checkpoint written by --save
opt_flat = {k[len("optimizer."):]: v for k, v in flat.items() if k.startswith("optimizer.")}
print(sorted(opt_flat)[:4], "...", len(opt_flat), "keys")
state, groups = {}, {}
for k, v in opt_flat.items():
    kind, idx, name = k.split(".", 2)
    if kind == "state":
        state.setdefault(int(idx), {})[name] = v
    else:
        g = groups.setdefault(int(idx), {})
        if name == "params": g[name] = [int(i) for i in v.tolist()]
        elif name in ("nesterov", "maximize", "foreach", "differentiable"): g[name] = bool(v.item())
        elif v.dim() == 0: g[name] = v.item()
        else: g[name] = tuple(v.tolist())
sd = {"state": state, "param_groups": [groups[i] for i in sorted(groups)]}
print("param_groups:", {k: v for k, v in sd["param_groups"][0].items() if k != "params"}, "params", sd["param_groups"][0]["params"])
model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
model.load_state_dict({k[len("model."):]: v for k, v in flat.items() if k.startswith("model.")})
opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
opt.load_state_dict(sd)
buf = opt.state[model[0].weight]["momentum_buffer"]
print("loaded: lr", opt.param_groups[0]["lr"], "| state of", len(opt.state), "params | momentum_buffer of model[0].weight", tuple(buf.shape),
      "equal to the file's:", torch.equal(buf, flat["optimizer.state.0.momentum_buffer"]))

# ch02 exercise 1: PyTorch's autograd graph of the same 784-256-128-10 MLP (walks loss.grad_fn.next_functions).
import torch, torch.nn as nn
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(784,256), nn.ReLU(), nn.Linear(256,128), nn.ReLU(), nn.Linear(128,10))
loss = nn.CrossEntropyLoss()(m(torch.randn(64,784)), torch.randint(0,10,(64,)))
seen, stack = [], [loss.grad_fn]
while stack:
    f = stack.pop()
    if f is None or f in seen: continue
    seen.append(f); stack += [g for g, _ in f.next_functions]
print(torch.__version__, len(seen), sorted(type(f).__name__ for f in seen))

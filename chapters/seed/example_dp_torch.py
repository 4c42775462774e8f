#!/usr/bin/python3
"""The seed article's example_dp.py with its slips fixed, in plain PyTorch (runs on CPU).

    /usr/bin/python3 chapters/seed/example_dp_torch.py

Prints the same five losses as tinytorch's port, build/bin/example_dp (examples/example_dp.cpp):
3.3803, 3.0994, 2.8419, 2.6057, 2.3892. What changed from the article (example_dp.py here):
- torch's own nn.Linear and nn.MSELoss and torch tensors; the article fed TinyTorch tensors and
  layers to torch.nn.DataParallel, which cannot work;
- the initial weights are fixed to the ones examples/example_single.cpp uses (w = [0.25, -0.5],
  b = 0.1) so the numbers can be compared; the article left them random.
Without GPUs DataParallel just calls the module (torch.nn.DataParallel's docs), so on a CPU the
loop is the single-process one; with 2 GPUs it splits each batch of 2 into 2 batches of 1.
Chapter: chapters/05-data-parallel.md.
"""
import torch
import torch.nn as nn
import torch.optim as optim


class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 1)

    def forward(self, x):
        return self.fc(x)


model = SimpleMLP()
with torch.no_grad():
    model.fc.weight.copy_(torch.tensor([[0.25, -0.5]]))
    model.fc.bias.copy_(torch.tensor([0.1]))
model = torch.nn.DataParallel(model)  # <-- wrap for data-parallel

X = torch.tensor([[1.0, 0.5], [0.5, 1.0]])  # tiny toy data
y = torch.tensor([[2.0], [1.5]])
if torch.cuda.is_available():
    model, X, y = model.cuda(), X.cuda(), y.cuda()

optimizer = optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.MSELoss()

for epoch in range(5):
    optimizer.zero_grad()
    preds = model(X)
    loss = loss_fn(preds, y)
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss={loss.item():.4f}")

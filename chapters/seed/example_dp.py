# example_dp.py

import torch
import torch.nn as nn
import torch.optim as optim
from tinytorch.core.tensor import Tensor   # TinyTorch tensor wrapper

from tinytorch.core.layers import Linear
from tinytorch.core.losses import MSELoss

# ------- Model -------------------------------------------------

class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = Linear(2, 1)

    def forward(self, x):
        return self.fc.forward(x)

model = SimpleMLP()
model = torch.nn.DataParallel(model)   # <‑‑ wrap for data-parallel

# ------- Data --------------------------------------------------

X = Tensor([[1.0, 0.5], [0.5, 1.0]])   # tiny toy data

y = Tensor([[2.0], [1.5]])

optimizer = optim.SGD(model.parameters(), lr=0.01)
loss_fn   = MSELoss()

# ------- Training ----------------------------------------------

for epoch in range(5):
    optimizer.zero_grad()
    preds = model(X)
    loss  = loss_fn(preds, y)
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss={loss.item():.4f}")

# example_ddp.py

import os, torch, torch.distributed as dist, torch.nn as nn, torch.optim as optim
from tinytorch.core.tensor import Tensor
from tinytorch.core.layers import Linear
from tinytorch.core.losses import MSELoss
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

def setup(rank, world_size):
    os.environ["MASTER_ADDR"] = "127.0.0.1"      # replace with master node IP

    os.environ["MASTER_PORT"] = "29500"
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)

def cleanup():
    dist.destroy_process_group()

class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = Linear(2, 1)

    def forward(self, x):
        return self.fc.forward(x)

def main(rank, world_size):
    setup(rank, world_size)

    # ----- Model -------------------------------------------------

    model = SimpleMLP().to(rank)
    model = DDP(model, device_ids=[rank])

    # ----- Data --------------------------------------------------

    X = Tensor([[1.0, 0.5], [0.5, 1.0], [0.2, 0.8], [0.9, 0.1]])
    y = Tensor([[2.0], [1.5], [1.0], [2.2]])
    dataset = TensorDataset(X, y)

    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
    loader  = DataLoader(dataset, batch_size=2, sampler=sampler)

    optimizer = optim.SGD(model.parameters(), lr=0.01)
    loss_fn   = MSELoss()

    # ----- Training ---------------------------------------------

    for epoch in range(5):
        sampler.set_epoch(epoch)            # shuffle each epoch

        for xb, yb in loader:
            xb = xb.to(rank); yb = yb.to(rank)
            optimizer.zero_grad()
            preds = model(xb)
            loss  = loss_fn(preds, yb)
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"[rank {rank}] epoch {epoch}: loss={loss.item():.4f}")

    cleanup()

if __name__ == "__main__":
    # torchrun automatically passes rank/world_size; manual launch example:

    # torchrun --nproc_per_node=2 example_ddp.py

    pass

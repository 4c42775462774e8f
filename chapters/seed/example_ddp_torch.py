#!/usr/bin/python3
"""The seed article's example_ddp.py with its slips fixed, in plain PyTorch (runs on CPU, gloo).

    torchrun --nproc_per_node=2 chapters/seed/example_ddp_torch.py --no-shuffle
    /usr/bin/python3 chapters/seed/example_ddp_torch.py --no-shuffle   # starts 2 ranks itself

Debian 12's torchrun (PyTorch 1.13 on Python 3.11) stops with "AttributeError: 'NoneType' object
has no attribute 'get'" in elastic/multiprocessing/api.py before starting any rank; started
without torchrun, the script starts its 2 ranks with torch.multiprocessing.spawn and sets the
environment torchrun would (MASTER_ADDR=127.0.0.1, MASTER_PORT=29500, RANK, WORLD_SIZE, LOCAL_RANK).

With --no-shuffle rank 0 prints the same losses as tinytorch's port
(scripts/mpirun.sh -np 2 build/bin/example_ddp --no-shuffle, examples/example_ddp.cpp).
Shuffled runs differ from the port: torch.randperm and tinytorch's Generator draw different
orders. What changed from the article (example_ddp.py here):
- main() is called: the article's __main__ block is `pass`, so torchrun started processes that
  did nothing;
- rank and world size come from torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK), and the GPU
  is picked by the LOCAL rank: the article used an undefined `local_rank` in one sketch and the
  global rank (torch.cuda.set_device(rank)) in this one, which breaks on a second node;
- the backend is gloo on CPU (nccl needs GPUs), nccl when CUDA is available;
- torch tensors and torch.nn layers: the article fed TinyTorch tensors to torch's TensorDataset;
- the initial weights are fixed (w = [0.25, -0.5], b = 0.1) so the numbers can be compared;
- the sampler shuffles unless --no-shuffle (DistributedSampler's default, as in the article).
Chapter: chapters/06-distributed-data-parallel.md.
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 1)

    def forward(self, x):
        return self.fc(x)


def main(spawned_rank=None, spawned_world_size=None):
    if spawned_rank is not None:  # started by torch.multiprocessing.spawn, not torchrun
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29500", RANK=str(spawned_rank),
                          WORLD_SIZE=str(spawned_world_size), LOCAL_RANK=str(spawned_rank))
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=world_size)
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(local_rank)

    model = SimpleMLP()
    with torch.no_grad():
        model.fc.weight.copy_(torch.tensor([[0.25, -0.5]]))
        model.fc.bias.copy_(torch.tensor([0.1]))
    model = DDP(model.to(device), device_ids=[local_rank] if cuda else None)

    X = torch.tensor([[1.0, 0.5], [0.5, 1.0], [0.2, 0.8], [0.9, 0.1]])
    y = torch.tensor([[2.0], [1.5], [1.0], [2.2]])
    dataset = TensorDataset(X, y)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank,
                                 shuffle="--no-shuffle" not in sys.argv)
    loader = DataLoader(dataset, batch_size=2, sampler=sampler)

    optimizer = optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.MSELoss()

    for epoch in range(5):
        sampler.set_epoch(epoch)  # a new order each epoch
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch}: loss={loss.item():.4f}")

    dist.destroy_process_group()


if __name__ == "__main__":
    if "RANK" in os.environ:
        main()
    else:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(2,), nprocs=2)

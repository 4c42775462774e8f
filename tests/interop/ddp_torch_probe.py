#!/usr/bin/env python3
"""tests/interop/ddp_torch_probe.py — what PyTorch's DistributedDataParallel does with the two
mistakes tinytorch's DDP refuses (include/tinytorch/distributed/ddp.hpp, DistributedDataParallel::
forward; chapters/06-distributed-data-parallel.md, 6.10). Run by hand, not by ctest:

    /usr/bin/python3 tests/interop/ddp_torch_probe.py     # Debian's python3-torch (1.13), gloo, 2 ranks

What it prints with Debian's torch 1.13.0a0 (each line once per rank):
  second_backward: no error; weight.grad[0,0] after the first backward 2.1094, after the second
                   4.2189 (the average, plus the local gradient: here the inputs are equal)
  skip_backward:   rank 1 skips iteration 1's backward; rank 0's iteration-1 gradient is 10.0
                   (its own is 8.0, rank 1's iteration-2 one 12.0: averaged across iterations),
                   rank 1's iteration 2 prints 10.0 too, then rank 0 waits for a last all-reduce
                   and rank 1 at the final barrier until gloo's timeout (8 s here), both with
                   "Timed out waiting 8000ms for recv operation to complete"
"""
import datetime
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def second_backward(rank, ddp, m):
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(0))
    loss = ddp(x).sum()
    loss.backward(retain_graph=True)
    first = m.weight.grad[0, 0].item()
    loss.backward()
    print(f"second_backward rank {rank}: no error; grad {first:.4f} then {m.weight.grad[0, 0].item():.4f}", flush=True)


def skip_backward(rank, ddp, m):
    for it in range(3):
        out = ddp(torch.full((4, 3), float(it + 1)))
        if rank == 1 and it == 1:
            continue  # e.g. a caught NaN check: no backward on this rank
        out.sum().backward()
        print(f"skip_backward rank {rank}: iteration {it} weight.grad[0,0] = {m.weight.grad[0, 0].item()}", flush=True)
        m.weight.grad = None
        m.bias.grad = None
    dist.barrier()


def run(rank):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29519"
    dist.init_process_group("gloo", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=8))
    for probe in (second_backward, skip_backward):
        torch.manual_seed(0)
        m = torch.nn.Linear(3, 2)
        ddp = torch.nn.parallel.DistributedDataParallel(m)
        try:
            probe(rank, ddp, m)
        except Exception as e:  # the timeout of skip_backward
            print(f"{probe.__name__} rank {rank}: {type(e).__name__}: {str(e)[:120]}", flush=True)


if __name__ == "__main__":
    mp.spawn(run, nprocs=2)

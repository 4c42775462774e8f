# chapters/answers/code/ch13_ex2_partition.py — chapter 13, exercise 2: PyTorch's own ZeRO-1
# partition (ZeroRedundancyOptimizer._partition_parameters) of train_mnist's MLP with the first
# layer split into two Linear(784, 128), on 2 ranks: elements and momentum bytes per rank.
# Run: /usr/bin/python3 chapters/answers/code/ch13_ex2_partition.py  (Debian's python3-torch)
# PyTorch computes the partition from its world_size attribute alone, so one process (gloo, world
# size 1) is enough, as tests/reference/gen_zero.py does.
import os, tempfile, torch, torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer
f = tempfile.mktemp()
dist.init_process_group("gloo", init_method="file://" + f, rank=0, world_size=1)
sizes = [784*128, 128, 784*128, 128, 256*128, 128, 128*10, 10]
ps = [torch.nn.Parameter(torch.zeros(n)) for n in sizes]
z = ZeroRedundancyOptimizer(ps, optimizer_class=torch.optim.SGD, lr=0.1, momentum=0.9)
z.world_size = 2
z._partition_parameters_cache = []
part = z._partition_parameters()
for r, groups in enumerate(part):
    n = sum(p.numel() for g in groups for p in g["params"])
    print(r, n, 4 * n)

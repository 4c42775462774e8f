#!/usr/bin/env python3
"""bench/mlp_step_torch.py: PyTorch eager's MLP training step on a GPU, beside bench_cuda's mlp_step.

What it times (issue 7, item 6: "MLP step at batch 64 no slower than PyTorch eager"): one step of
bench/bench_mlp.cpp's model, the same one bench/bench_cuda.cu times through tinytorch on cuda:0:
  MLP 784-256-128-10, ReLU, float32, batch 64, CrossEntropyLoss, SGD(lr=0.02, momentum=0.9):
  zero_grad, forward, loss, backward, step. Input torch.rand, targets torch.randint(0, 10).
Timing as bench_cuda's: torch.cuda.Event around each step (record, step, record, synchronize),
--warmup untimed steps first, then --steps timed ones; the figure is the median (ms).
TF32 stays off for float32 matmuls (PyTorch's default, torch.backends.cuda.matmul.allow_tf32 =
False), as bench_cuda's cuBLAS runs with CUBLAS_DEFAULT_MATH: both compute in FP32.
Output: one line that scripts/gpu_check.sh reads and passes on to bench_cuda --torch-mlp-ms:
  mlp_step_torch: median_ms=0.1234 steps=1000 warmup=50 torch=2.11.0 device=NVIDIA H200 tf32=False
Without torch or without a CUDA device: "SKIPPED: ..." and exit 77 (ctest's "skipped"), as bench_cuda.
Run: python3 bench/mlp_step_torch.py [--steps N] [--warmup N]
Chapter: chapters/10-gpu-kernels.md ("Measuring on a GPU"). Reference: torch.cuda.Event docs;
PyTorch's own benchmark utilities time CUDA work the same way (events, synchronize, median).
"""
import argparse
import statistics
import sys


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1000, help="timed steps (default 1000)")
    p.add_argument("--warmup", type=int, default=50, help="untimed steps first (default 50)")
    args = p.parse_args()
    if args.steps < 1 or args.warmup < 0:
        print(f"mlp_step_torch: --steps must be >= 1 and --warmup >= 0, got {args.steps} and {args.warmup}")
        return 2
    try:
        import torch
    except ImportError as e:
        print(f"SKIPPED: torch is not importable ({e})")
        return 77
    if not torch.cuda.is_available():
        print(f"SKIPPED: no CUDA device (torch {torch.__version__}: torch.cuda.is_available() is False)")
        return 77

    dev = torch.device("cuda:0")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
                                torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.rand(64, 784, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(args.steps):
        start.record()
        loss = step()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    final = loss.item()
    if final != final:
        print("mlp_step_torch: the loss is NaN")
        return 1
    print(f"mlp_step_torch: median_ms={statistics.median(times):.4f} steps={args.steps} warmup={args.warmup} "
          f"torch={torch.__version__} device={torch.cuda.get_device_name(0)} "
          f"tf32={torch.backends.cuda.matmul.allow_tf32} loss={final:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""bench/gpt_step_torch.py: PyTorch's GPT training step on this CPU, beside bench_gpt_libtorch.

What it times (issue 23's speed target: tinytorch's tokens/s >= PyTorch 1.13's on the same model
and batch): one step of chapter 12's GPT in PyTorch itself, nanoGPT's model.py
(tests/reference/nanogpt.py, the model test_gpt is checked against) with its CPU settings for
shakespeare_char: 4 layers, 4 heads, C = 128, T = 64, V = 65, batch 12, no biases, dropout 0;
forward and cross-entropy, backward, clip_grad_norm_(1.0), AdamW with nanoGPT's two groups,
zero_grad(set_to_none=True). Random tokens. bench/bench_gpt_libtorch.cpp times the same step in
tinytorch and in libtorch (C++); this is the Python framework a PyTorch user runs.
Timing: time.perf_counter around each step, --warmup untimed steps, then --steps timed ones; the
figure is the median, per torch.set_num_threads value in --threads. Interleave it with
bench_gpt_libtorch runs (docs/performance.md's command) and compare medians: this machine is shared.
Output, one line per thread count:
  gpt_step_torch: threads=1 median_ms=101.2 tokens_per_s=7589 steps=40 torch=1.13.0a0 blas=...
Run: /usr/bin/python3 bench/gpt_step_torch.py [--threads 1 2] [--steps N] [--warmup N]
Chapter: chapters/12-model-parallelism.md (12.5).
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch.set_num_threads values (default 1 2)")
    p.add_argument("--steps", type=int, default=40, help="timed steps per thread count (default 40)")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first (default 10)")
    args = p.parse_args()
    if args.steps < 1 or args.warmup < 0 or any(t < 1 for t in args.threads):
        print(f"gpt_step_torch: --steps and --threads must be >= 1 and --warmup >= 0, got {args.steps}, "
              f"{args.threads} and {args.warmup}")
        return 2
    try:
        import torch
        from nanogpt import GPT
    except ImportError as e:
        print(f"SKIPPED: PyTorch is not importable ({e}); use Debian's /usr/bin/python3 with python3-torch")
        return 77
    torch.ones(64, 64) @ torch.ones(64, 64)  # loads the BLAS
    with open("/proc/self/maps") as f:  # which libblas the dynamic linker picked (Debian's alternatives)
        libs = {os.path.realpath(line.split()[-1]) for line in f if "blas" in line.split()[-1]}
    blas = ",".join(sorted(libs)) or "unknown"
    c = dict(vocab_size=65, block_size=64, n_layer=4, n_head=4, n_embd=128, bias=False)
    batch, T = 12, 64
    for threads in args.threads:
        torch.set_num_threads(threads)
        torch.manual_seed(0)
        model = GPT(c)
        opt = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99))
        x, y = torch.randint(0, 65, (batch, T)), torch.randint(0, 65, (batch, T))
        times = []
        for i in range(args.warmup + args.steps):
            t0 = time.perf_counter()
            _, loss = model(x, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            if i >= args.warmup:
                times.append(time.perf_counter() - t0)
        ms = statistics.median(times) * 1e3
        print(f"gpt_step_torch: threads={threads} median_ms={ms:.1f} tokens_per_s={batch * T / ms * 1e3:.0f} "
              f"steps={args.steps} torch={torch.__version__} blas={blas}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

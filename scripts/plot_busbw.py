#!/usr/bin/python3
"""scripts/plot_busbw.py — plot bus bandwidth vs message size from bench_allreduce CSVs and fit
the alpha-beta model to each algorithm.

    scripts/mpirun.sh -np 2 build/bin/bench_allreduce --csv allreduce_np2.csv
    /usr/bin/python3 scripts/plot_busbw.py allreduce_np2.csv [more.csv ...] \
        [--out chapters/img/allreduce_busbw.png] [--no-plot] [--fit-max-bytes B]
    # chapter 07's figure and table:
    /usr/bin/python3 scripts/plot_busbw.py chapters/data/allreduce_np2.csv --fit-max-bytes 4194304 \
        --out chapters/img/allreduce_busbw.png

The model (chapters/07-all-reduce.md): the time of one all-reduce of M bytes on N ranks is

    T(M) = a * alpha + b * M / beta

with a (number of message steps on the critical path) and b (bytes on the busiest link, in units
of M) fixed by the algorithm:

    ring               a = 2(N-1)          b = 2(N-1)/N
    parameter_server   a = 2(N-1)          b = 2(N-1)        (rank 0 receives and sends N-1 copies)
    tree (binomial)    a = 2 ceil(log2 N)  b = 2 ceil(log2 N)
    mpi                fitted as a ring (Open MPI picks its algorithm by size; read with care)

A straight line T = c0 + c1 * M is fitted per (file, algorithm) by least squares on the
*relative* error (weights 1/T), so the small sizes (which carry alpha) count as much as the large
ones (which carry beta). Then alpha = c0 / a and beta = b / c1, and n* = alpha * beta is the size
where latency and bandwidth cost the same.

busbw (nccl-tests): algbw * 2(N-1)/N with algbw = M / T, in GB/s (1e9 bytes/s).
Reference: NVIDIA/nccl-tests doc/PERFORMANCE.md; Hockney's alpha-beta model.
Needs python3-numpy and python3-matplotlib (Debian packages; run with /usr/bin/python3).
"""
import argparse
import csv
import math
import os
import sys

import numpy as np


def load(path):
    """Rows of one bench_allreduce CSV, grouped by algorithm: {algo: (N, sizes[], times_s[], busbw[])}."""
    groups = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            algo = row["algo"]
            n = int(row["world_size"])
            g = groups.setdefault(algo, (n, [], [], []))
            g[1].append(float(row["size_bytes"]))
            g[2].append(float(row["time_us"]) * 1e-6)
            g[3].append(float(row["busbw_gbs"]))
    return groups


def model_coefficients(algo, n):
    """(a, b) of T = a*alpha + b*M/beta for an algorithm on n ranks."""
    if n <= 1:
        return 1.0, 1.0
    steps = math.ceil(math.log2(n))
    if algo == "parameter_server":
        return 2.0 * (n - 1), 2.0 * (n - 1)
    if algo == "tree":
        return 2.0 * steps, 2.0 * steps
    return 2.0 * (n - 1), 2.0 * (n - 1) / n  # ring, and mpi read as a ring


def fit(algo, n, sizes, times):
    """alpha (s), beta (bytes/s), c0, c1 from a relative-error least-squares line T = c0 + c1*M."""
    M = np.asarray(sizes)
    T = np.asarray(times)
    w = 1.0 / T  # minimise sum ((c0 + c1 M - T) / T)^2
    A = np.stack([np.ones_like(M), M], axis=1) * w[:, None]
    c0, c1 = np.linalg.lstsq(A, T * w, rcond=None)[0]
    a, b = model_coefficients(algo, n)
    alpha = c0 / a
    beta = b / c1 if c1 > 0 else float("inf")
    return alpha, beta, c0, c1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="+", help="bench_allreduce --csv output(s)")
    ap.add_argument("--out", default="chapters/img/allreduce_busbw.png", help="PNG to write")
    ap.add_argument("--no-plot", action="store_true", help="only print the fitted alpha and beta")
    ap.add_argument("--fit-max-bytes", type=float, default=float("inf"),
                    help="fit only sizes up to this many bytes (e.g. 4194304: leave out the sizes whose "
                         "working set no longer fits the caches)")
    args = ap.parse_args()

    curves = []  # (label, sizes, busbw, model_busbw)
    print(f"{'file':<28} {'algo':<17} {'N':>2} {'alpha_us':>9} {'beta_GBs':>9} {'n*=ab':>10} {'max_err':>8}"
          + ("" if math.isinf(args.fit_max_bytes) else f"   (fit on sizes <= {int(args.fit_max_bytes)} B)"))
    for path in args.csv:
        for algo, (n, sizes, times, busbw) in load(path).items():
            keep = [i for i, m in enumerate(sizes) if m <= args.fit_max_bytes]
            alpha, beta, c0, c1 = fit(algo, n, [sizes[i] for i in keep], [times[i] for i in keep])
            model_t = c0 + c1 * np.asarray(sizes)
            err = np.max(np.abs(model_t[keep] - np.asarray(times)[keep]) / np.asarray(times)[keep])
            nstar = alpha * beta
            print(f"{os.path.basename(path):<28} {algo:<17} {n:>2} {alpha * 1e6:9.2f} {beta / 1e9:9.2f} "
                  f"{nstar / 1024:8.1f}Ki {err * 100:7.0f}%")
            factor = 2.0 * (n - 1) / n if n > 1 else 1.0
            model_busbw = np.asarray(sizes) / model_t * factor / 1e9
            label = f"{algo} (N={n})" if len(args.csv) > 1 else algo
            curves.append((label, sizes, busbw, model_busbw))

    if args.no_plot:
        return 0
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for i, (label, sizes, busbw, model_busbw) in enumerate(curves):
        color = f"C{i % 10}"
        ax.plot(sizes, busbw, "o-", color=color, label=label)
        ax.plot(sizes, model_busbw, ":", color=color, linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size M (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title("all-reduce busbw = M/T * 2(N-1)/N   (dotted: fitted alpha-beta model)")
    ticks = sorted({s for _, sizes, _, _ in curves for s in sizes})
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{int(s) >> 20} MiB" if s >= 1 << 20 else f"{int(s) >> 10} KiB" for s in ticks],
                       rotation=30)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

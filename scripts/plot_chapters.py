#!/usr/bin/python3
r"""scripts/plot_chapters.py — the plots of chapters 01, 03, 04, 05, 06, 08, 09, 11, 12 and 13, drawn from the programs' own output.

Each plot reads one log that a program printed, committed in chapters/data/. To measure again
(from the repository root, after building; `nice` leaves the shared cores to other work, but the
benches of 05 and 06 want a quiet machine: run them without it, and their last line says whether
other processes held a core):

    nice -n 10 build/bin/train_mnist | cat > chapters/data/ch01_train_mnist.txt
    nice -n 10 build/bin/data_pipeline --workers 0,1,2,3,4,5,6 > chapters/data/ch04_data_pipeline.txt
    scripts/mpirun.sh -np 2 build/bin/bench_dp > chapters/data/ch05_bench_dp.txt
    scripts/mpirun.sh -np 2 build/bin/bench_ddp > chapters/data/ch06_bench_ddp.txt
    grep '^\$ .*train_mnist' chapters/08-large-batch.md | grep -v -- --limit | cut -c3- |   # 8.3, 8.4: ~10 min
        while read -r c; do echo "\$ $c"; eval "nice -n 10 $c" </dev/null; done > chapters/data/ch08_runs.txt
    nice -n 10 build/bin/checkpoint_memory > chapters/data/ch09_checkpoint_memory.txt
    build/bin/optimizer_memory > chapters/data/ch03_optimizer_memory.txt
    build/bin/fp16_underflow > chapters/data/ch11_fp16_underflow.txt
    build/bin/pipeline_schedule > chapters/data/ch12_pipeline_schedule.txt
    for z in 0 1 2 3; do scripts/mpirun.sh -np 2 build/bin/zero_memory --zero $z --steps 0; done \
        > chapters/data/ch13_zero_memory.txt

then draw:

    /usr/bin/python3 scripts/plot_chapters.py --all        # every log above -> chapters/img/
    /usr/bin/python3 scripts/plot_chapters.py ch01 [LOG] [--out PNG]     (likewise ch04 ... ch09)

  ch01  chapters/img/ch01-mnist-curves.png: the training loss against the epoch (the progress
        lines' "mean loss so far in this epoch", at epoch e-1 + i/n) and train_acc / test_acc
        per epoch (chapters/01-training-loop.md, Step 2). `| cat` matters: on a terminal the
        progress line is redrawn in place instead of printed four times an epoch.
  ch03  chapters/img/ch03-optimizer-memory.png: the parameters and each optimizer's state after one
        step, in units of the parameters (chapters/03-optimizers.md, 3.5).
  ch04  chapters/img/ch04-utilisation.png: the measured and the predicted utilisation against
        num_workers, with the book's R_pipe / R_compute (20%: one loader) and 100% (the step
        never waits) (chapters/04-data-pipeline.md, 4.6).
  ch05  chapters/img/ch05-dp-vs-ddp.png: throughput / single model of the table's rows (one model,
        DataParallel over 2 CPU replicas, DDP on 2 ranks), and DataParallel's step phases
        (scatter+replicate, replicas' forward, gather, loss+backward, optimizer step) stacked beside
        the single model's forward and loss+backward, from the two "(us)" lines
        (chapters/05-data-parallel.md, 5.8).
  ch06  chapters/img/ch06-ddp-efficiency.png: part 1's DDP efficiency of every repetition (the line
        "per repetition, DDP efficiency: ..."), their median (the scaling efficiency), the "alone"
        ratio and the bench's 0.92 target (which it sets for DDP / ceiling); part 2's step times with
        overlap, with one bucket after backward and of every rank alone (the ceiling), with the
        0.95 target as a step time (chapters/06-distributed-data-parallel.md, 6.8).
  ch08  chapters/img/ch08-accuracy.png: test accuracy against the ranks (1, 2, 4, 8) for the rule,
        --no-scale-lr and --warmup-epochs 2 (8.3), and against the batch of one process (512, 1024,
        2048) for lr 0.02, the rule's lr and the rule + warmup, the other runs as single points and
        a diverged run (test_accuracy 0.1000, chance) as an x on the axis' floor (8.4)
        (chapters/08-large-batch.md). Each run is read from its `$` line's flags (-np N,
        --batch-size, --lr, --no-scale-lr, --warmup-epochs, --warmup-start-factor; the defaults
        are batch 64, lr 0.02) and its output ('epoch e/E loss=...', 'test_accuracy=...').
  ch09  chapters/img/ch09-checkpoint-memory.png: peak activation memory, in units of one
        activation A, against the number of segments S, with the book's model S + L/S, the count
        of section 9.5 for checkpoint_sequential's cut ((S-1) segment inputs + the last segment's
        layers), no checkpointing, S = sqrt(L), and the layer forwards on a second axis
        (chapters/09-gradient-accumulation.md, 9.5).
  ch11  chapters/img/ch11-fp16-underflow.png: the relative error of a gradient stored in float16,
        without and with the loss scale (Part 1), and the loss per step of float32, float16 without
        a scaler and float16 with GradScaler (Part 2) (chapters/11-mixed-precision.md, 11.3).
  ch12  chapters/img/ch12-pipeline-schedules.png: GPipe's and 1F1B's placements (stage against
        time, each forward and backward of each micro-batch), the efficiency against M beside the
        book's M / (M + P - 1), and the activations stage 0 keeps (chapters/12-model-parallelism.md,
        12.6).
  ch13  chapters/img/ch13-zero-memory.png: what rank 0 holds under DDP, ZeRO-1, -2 and -3
        (parameters, gradients, buckets, Adam state, batch), the formula and the peak, in units of
        P (chapters/13-sharding.md, 13.8).
The logs of 03, 11, 12 and 13 hold no timing: they print the same on any machine.

The parsers are strict: a line they cannot read stops them with FILE:LINE and the line, so a
changed output format fails here instead of drawing an empty or wrong plot.
Needs python3-numpy and python3-matplotlib (Debian packages; run with /usr/bin/python3).
"""
import argparse
import math
import os
import re
import shlex
import sys

import numpy as np

NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"   # one finite number, as the programs print it

CHAPTERS = {  # name -> (default log, default PNG)
    "ch01": ("chapters/data/ch01_train_mnist.txt", "chapters/img/ch01-mnist-curves.png"),
    "ch03": ("chapters/data/ch03_optimizer_memory.txt", "chapters/img/ch03-optimizer-memory.png"),
    "ch04": ("chapters/data/ch04_data_pipeline.txt", "chapters/img/ch04-utilisation.png"),
    "ch05": ("chapters/data/ch05_bench_dp.txt", "chapters/img/ch05-dp-vs-ddp.png"),
    "ch06": ("chapters/data/ch06_bench_ddp.txt", "chapters/img/ch06-ddp-efficiency.png"),
    "ch08": ("chapters/data/ch08_runs.txt", "chapters/img/ch08-accuracy.png"),
    "ch09": ("chapters/data/ch09_checkpoint_memory.txt", "chapters/img/ch09-checkpoint-memory.png"),
    "ch11": ("chapters/data/ch11_fp16_underflow.txt", "chapters/img/ch11-fp16-underflow.png"),
    "ch12": ("chapters/data/ch12_pipeline_schedule.txt", "chapters/img/ch12-pipeline-schedules.png"),
    "ch13": ("chapters/data/ch13_zero_memory.txt", "chapters/img/ch13-zero-memory.png"),
}


class LogError(Exception):
    """A log that does not read as the program's output: the message names the file and line."""


def read_lines(path):
    """[(line number, text without the newline)] of a log."""
    try:
        with open(path, encoding="utf-8") as f:
            return [(i + 1, line.rstrip("\n")) for i, line in enumerate(f)]
    except OSError as e:
        raise LogError(f"{path}: cannot open: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise LogError(f"{path}: not a text log (not UTF-8 at byte {e.start})") from None


def bad_line(path, number, text, expected):
    if re.search(r"\b(nan|-?inf)\b", text):   # a diverged run: nothing to plot on a finite axis
        expected += " (a value of nan or inf cannot be plotted: the run diverged)"
    return LogError(f"{path}:{number}: cannot read this line:\n    {text!r}\n  expected {expected}")


# --- chapter 01: train_mnist -----------------------------------------------------------------------

PROGRESS = re.compile(rf"epoch (\d+)/(\d+) \[(\d+)/(\d+)\] loss={NUM} samples/s={NUM}$")
SUMMARY = re.compile(rf"epoch (\d+)/(\d+) loss={NUM} train_acc={NUM} test_acc={NUM} samples/s={NUM} time={NUM}s$")


def parse_train_mnist(path):
    """{"recipe": str, "progress": [(epoch as a float, loss)], "epochs": [(e, loss, train_acc, test_acc)]}."""
    log = {"recipe": "", "progress": [], "epochs": []}
    for number, text in read_lines(path):
        if not text.strip() or text.startswith("threads:") or text.startswith("test_accuracy="):
            continue
        if text.startswith("train_mnist:"):          # "... images from DIR, batch 64, lr 0.02, ..."
            log["recipe"] = text.split(", ", 1)[-1]
            continue
        m = PROGRESS.match(text)
        if m:
            e, i, n, loss = int(m.group(1)), int(m.group(3)), int(m.group(4)), float(m.group(5))
            if n == 0 or i > n:
                raise bad_line(path, number, text, "iteration i of n > 0 batches in '[i/n]'")
            if log["epochs"] and e < log["epochs"][-1][0]:
                raise bad_line(path, number, text, f"epoch {log['epochs'][-1][0]} or later (two logs in one file?)")
            log["progress"].append((e - 1 + i / n, loss))
            continue
        m = SUMMARY.match(text)
        if m:
            log["epochs"].append((int(m.group(1)), float(m.group(3)), float(m.group(4)), float(m.group(5))))
            log["of"] = int(m.group(2))
            continue
        if "\033" in text:   # a terminal's capture: the progress line redrawn with \r and ESC[K
            raise bad_line(path, number, text, "plain lines: capture with `build/bin/train_mnist | cat > FILE`")
        raise bad_line(path, number, text, "'epoch e/E [i/n] loss=... samples/s=...', 'epoch e/E loss=... "
                       "train_acc=... test_acc=... samples/s=... time=...s' or a header line")
    if not log["epochs"]:
        raise LogError(f"{path}: no epoch summary line 'epoch e/E loss=... train_acc=...': "
                       "not the output of train_mnist, or the run stopped in its first epoch")
    if log["epochs"][-1][0] != log["of"]:   # a run still going, or stopped: plotted, but say so
        print(f"{path}: warning: the log ends after epoch {log['epochs'][-1][0]} of {log['of']}", file=sys.stderr)
    return log


def plot_ch01(log, out, plt):
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(9, 4.5))
    x, loss = zip(*log["progress"]) if log["progress"] else ((), ())
    epochs, epoch_loss, train_acc, test_acc = zip(*log["epochs"])
    ax_loss.plot(x, loss, ".-", color="C0", label="progress line: mean loss so far in the epoch")
    ax_loss.plot(epochs, epoch_loss, "o", color="C3", label="epoch summary: the epoch's mean loss")
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("training loss (cross-entropy)")
    ax_loss.set_title("training loss")
    ax_loss.legend(fontsize=8)

    ax_acc.plot(epochs, train_acc, "o-", color="C0", label="train_acc (during the epoch)")
    ax_acc.plot(epochs, test_acc, "s-", color="C1", label="test_acc (10,000 test images)")
    ax_acc.annotate(f"{test_acc[-1]:.4f}", (epochs[-1], test_acc[-1]), textcoords="offset points",
                    xytext=(-10, -14), ha="right", fontsize=8, color="C1")
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("accuracy")
    ax_acc.set_title("accuracy (the gap: the model starts to overfit)")
    ax_acc.legend(fontsize=8, loc="lower right")
    ax_loss.set_xticks(range(0, max(epochs) + 1))
    ax_acc.set_xticks(range(1, max(epochs) + 1))
    for ax in (ax_loss, ax_acc):
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"Chapter 01: train_mnist on Fashion-MNIST ({log['recipe']})", fontsize=10)
    return fig


# --- chapter 04: data_pipeline ---------------------------------------------------------------------

RATIO = re.compile(rf"one loader: R_pipe = {NUM} samples/s; the step: R_compute = {NUM} samples/s; "
                   rf"R_pipe / R_compute = {NUM}%$")
PIPELINE_ROW = re.compile(rf"\s*(\d+)\s+{NUM}\s+{NUM}\s+{NUM}%\s+{NUM}%\s+{NUM}%\s+(\d+)$")


def parse_data_pipeline(path):
    """{"setup": first line, "ratio": R_pipe / R_compute in %, "rows": [(W, utilisation %, predicted %, checksum)]}."""
    log = {"setup": "", "ratio": None, "rows": []}
    in_table = False
    for number, text in read_lines(path):
        if not text.strip():
            continue
        if text.startswith("first batch"):          # the last line: the batches' contents
            in_table, log["complete"] = False, True
            continue
        if text.startswith("data_pipeline:"):
            log["setup"] = text[len("data_pipeline:"):].strip()
            continue
        m = RATIO.match(text)
        if m:
            log["ratio"] = float(m.group(3))
            continue
        if text.split()[0] == "num_workers":
            in_table = True
            continue
        m = PIPELINE_ROW.match(text) if in_table else None
        if m:
            log["rows"].append((int(m.group(1)), float(m.group(5)), float(m.group(6)), int(m.group(7))))
            continue
        raise bad_line(path, number, text, "a row 'num_workers batches/s samples/s waiting% utilisation% "
                       "predicted% checksum' after the table's header, or a header line of data_pipeline")
    if log["ratio"] is None:
        raise LogError(f"{path}: no line 'one loader: R_pipe = ... R_pipe / R_compute = ...%'")
    if not log["rows"]:
        raise LogError(f"{path}: no table rows under 'num_workers  batches/s ...'")
    if not log.get("complete"):
        print(f"{path}: warning: no 'first batch' line: the log may be cut short", file=sys.stderr)
    checksums = {row[3] for row in log["rows"]}
    if len(checksums) > 1:   # the same batches for every num_workers is what the chapter claims
        print(f"{path}: warning: the checksums differ between rows: {sorted(checksums)}", file=sys.stderr)
    return log


def plot_ch04(log, out, plt):
    workers, measured, predicted, _ = zip(*log["rows"])
    fig, ax = plt.subplots(figsize=(9, 5))
    ax.plot(workers, measured, "o-", color="C0", label="measured: the fraction of the epoch the step computed")
    ax.plot(workers, predicted, "s--", color="C1", mfc="none", ms=10,
            label="predicted: the loader's schedule replayed with the exact costs")
    ax.axhline(100, color="C2", linestyle=":", label="100%: the step never waits (R_pipe ≥ R_compute)")
    ax.axhline(log["ratio"], color="C3", linestyle=":",
               label=f"R_pipe / R_compute = {log['ratio']:g}%: one loader (the book's example)")
    for w, u in zip(workers, measured):
        ax.annotate(f"{u:.1f}%", (w, u), textcoords="offset points", xytext=(0, 8), ha="center", fontsize=8)
    ax.set_xticks(workers)
    ax.set_ylim(0, 110)
    ax.set_xlabel("num_workers (0: the main thread loads, then computes)")
    ax.set_ylabel("utilisation of the step (%)")
    ax.set_title("Chapter 04: utilisation against num_workers\n" + log["setup"], fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.88))
    return fig


# --- chapter 05: bench_dp -------------------------------------------------------------------------

DP_ROW = re.compile(rf"\| (\S.*?)\s*\|\s*{NUM} \| {NUM} \|$")
DP_PHASES = re.compile(r"DataParallel step, medians of (\d+) instrumented steps \(us\): (.+)$")
SINGLE_PHASES = re.compile(r"The single model on the same batch, interleaved with those steps \(us\): (.+)$")
PHASE = re.compile(rf"(\S.*?) {NUM}$")


def parse_phases(path, number, text, parts):
    """[(name, us)] of 'name N | name N | ...'."""
    phases = []
    for part in parts.split(" | "):
        m = PHASE.match(part)
        if not m:
            raise bad_line(path, number, text, "'(us): name N | name N | ...' (a phase name and its microseconds)")
        phases.append((m.group(1), float(m.group(2))))
    return phases


def parse_bench_dp(path):
    """{"setup", "rows": [(configuration, samples/s, throughput / single)], "dp": [(phase, us)], "sum": us,
    "steps": instrumented steps, "single": [(phase, us)], "warning": the load WARNING or ""}."""
    log = {"setup": "", "rows": [], "dp": None, "sum": None, "single": None, "warning": ""}
    for number, text in read_lines(path):
        if not text.strip() or text.startswith("load:") or text.startswith("(no DDP row"):
            continue
        if text.startswith("bench_dp:"):
            log["setup"] = text[len("bench_dp:"):].strip()
            continue
        if text.startswith("WARNING: load"):
            log["warning"] = text
            continue
        if text.startswith("| configuration") or text == "|---|---|---|":
            continue
        m = DP_ROW.match(text)
        if m:
            log["rows"].append((m.group(1), float(m.group(2)), float(m.group(3))))
            continue
        m = DP_PHASES.match(text)
        if m:
            phases = parse_phases(path, number, text, m.group(2))
            if phases[-1][0] != "sum" or len(phases) < 2:
                raise bad_line(path, number, text, "the phases of the DataParallel step, then '| sum N'")
            log["dp"], log["sum"], log["steps"] = phases[:-1], phases[-1][1], int(m.group(1))
            continue
        m = SINGLE_PHASES.match(text)
        if m:
            log["single"] = parse_phases(path, number, text, m.group(1))
            continue
        raise bad_line(path, number, text, "a table row '| configuration | samples/s | ratio |', the line "
                       "'DataParallel step, medians of ... (us): ...', 'The single model ... (us): ...' "
                       "or a header or load line of bench_dp")
    if not log["rows"]:
        raise LogError(f"{path}: no table rows '| configuration | samples/s | throughput / single |'")
    for key, what in (("dp", "'DataParallel step, medians of N instrumented steps (us): ...'"),
                      ("single", "'The single model on the same batch, ... (us): forward N | loss+backward N'")):
        if log[key] is None:
            raise LogError(f"{path}: no line {what}: the log may be cut short")
    if log["warning"]:
        print(f"{path}: warning: the bench flagged its run: {log['warning']}", file=sys.stderr)
    return log


def phase_colour(name):
    """The same colour for the same kind of work in both bars."""
    for key, colour in (("forward", "C0"), ("backward", "C1"), ("scatter", "C2"), ("gather", "C4"),
                        ("optimizer", "C7")):
        if key in name:
            return colour
    return "C5"


def plot_ch05(log, out, plt):
    fig, (ax_r, ax_p) = plt.subplots(1, 2, figsize=(9, 4.8), gridspec_kw={"width_ratios": [1, 1.15]})
    names = [row[0].replace(", ", "\n", 1).replace(" (", "\n(") for row in log["rows"]]
    ratios = [row[2] for row in log["rows"]]
    colours = ["C7" if "single" in row[0] else "C0" if "DataParallel" in row[0] else "C3" for row in log["rows"]]
    bars = ax_r.bar(range(len(names)), ratios, color=colours, width=0.6)
    for bar, (_, samples, ratio) in zip(bars, log["rows"]):
        ax_r.annotate(f"{ratio:.2f}\n{samples:,.0f} samples/s", (bar.get_x() + bar.get_width() / 2, ratio),
                      textcoords="offset points", xytext=(0, 3), ha="center", va="bottom", fontsize=8)
    ax_r.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax_r.axhline(2.0, color="C2", linestyle="--", linewidth=1, label="2.00: twice one model (2 cores)")
    ax_r.set_xticks(range(len(names)))
    ax_r.set_xticklabels(names, fontsize=7.5)
    ax_r.set_ylim(0, 2.3)
    ax_r.set_ylabel("throughput / single model (median of per-rep ratios)")
    ax_r.set_title("throughput against one model", fontsize=10)
    ax_r.legend(fontsize=8, loc="upper left")
    ax_r.grid(True, axis="y", alpha=0.3)

    stacks = [("DataParallel\n(2 CPU replicas)", log["dp"]), ("single model\n(same batch)", log["single"])]
    for x, (_, phases) in enumerate(stacks):
        bottom = 0.0
        for name, us in phases:
            ax_p.bar(x, us, bottom=bottom, width=0.7, color=phase_colour(name), edgecolor="white", linewidth=0.6)
            if us >= 0.1 * log["sum"]:             # a thick slice: named inside
                wrapped = name.replace(" (", "\n(")
                ax_p.text(x, bottom + us / 2, f"{wrapped}\n{us:.0f} µs", ha="center", va="center", fontsize=7.5,
                          color="white")
            else:                                  # a thin slice: named beside the bar
                ax_p.annotate(f"{name} {us:.0f} µs", (x + 0.35, bottom + us / 2), textcoords="offset points",
                              xytext=(3, 0), va="bottom" if bottom == 0 else "center", fontsize=7)
            bottom += us
        ax_p.annotate(f"{bottom:.0f} µs", (x, bottom), textcoords="offset points", xytext=(0, 3), ha="center",
                      va="bottom", fontsize=8, fontweight="bold")
    ax_p.set_xticks(range(len(stacks)))
    ax_p.set_xticklabels([s[0] for s in stacks], fontsize=8)
    ax_p.set_xlim(-0.45, 1.95)
    ax_p.set_ylim(0, max(log["sum"], sum(us for _, us in log["single"])) * 1.1)
    ax_p.set_ylabel("µs per step (medians)")
    ax_p.set_title(f"where a step goes ({log['steps']} instrumented steps)", fontsize=10)
    ax_p.grid(True, axis="y", alpha=0.3)
    title = "Chapter 05: bench_dp — DataParallel against one model and DDP\n" + log["setup"]
    if log["warning"]:
        title += "\n(the bench's WARNING: other processes held cores during the run)"
    fig.suptitle(title, fontsize=9)
    return fig


# --- chapter 06: bench_ddp ------------------------------------------------------------------------

DDP_HEAD = re.compile(r"bench_ddp: world_size=(\d+), (.+)$")
DDP_ROW = re.compile(rf"(1 rank \(no DDP\)|\d+ ranks, each alone \(no all-reduce\)|\d+ ranks \(DDP\))"
                     rf"\s+{NUM}\s+{NUM}(?:\s+{NUM})?\s*$")
SCALING = re.compile(rf"scaling efficiency \(median of the per-repetition ratios\) = {NUM}\s+"
                     rf"\(without any communication: {NUM}\)$")
VS_CEILING = re.compile(rf"DDP / ceiling = {NUM}\s+\(.*target >= {NUM} at (\d+) ranks\)$")
PER_REP = re.compile(rf"per repetition, DDP efficiency:((?: {NUM})+)$")
OVERLAP_HEAD = re.compile(r"overlap: (.+)$")
OVERLAP_ROW = re.compile(rf"    (\S.*?)\s+{NUM} ms(?:\s+-> hidden share {NUM}%)?$")
OVERLAP_CEILING = re.compile(rf"  DDP / ceiling = {NUM} with overlap \(bucket_cap_mb=(\d+); target >= {NUM}\), "
                             rf"{NUM} with one bucket after backward")
STEP_ROWS = {"overlap": "step time, bucket_cap_mb=1 (overlap)", "one bucket": "step time, one bucket after backward",
             "ceiling": "step time, every rank alone (ceiling)"}


def parse_bench_ddp(path):
    """{"N", "setup", "per_rep": [scaling efficiency per repetition], "scaling", "alone", "vs_ceiling", "target",
    "overlap_setup", "steps": {"overlap"|"one bucket"|"ceiling": ms}, "hidden" (%), "ov_ceiling": (overlap,
    one bucket), "ov_target", "warning"}."""
    log = {"N": None, "per_rep": None, "scaling": None, "vs_ceiling": None, "overlap_setup": None, "ov": {},
           "hidden": None, "ov_ceiling": None, "warning": ""}
    for number, text in read_lines(path):
        if not text.strip() or text.startswith("load:"):
            continue
        if text.startswith("WARNING: load"):
            log["warning"] = text
            continue
        m = DDP_HEAD.match(text)
        if m:
            log["N"], log["setup"] = int(m.group(1)), m.group(2)
            continue
        if (text.startswith("DDP buckets:") or text.startswith("medians over repetitions")
                or text.startswith("DDP step ") or text.startswith("  last bucket's all-reduce:")
                or text.startswith("  bucket_cap_mb=") or text.startswith("  per step (medians")):
            continue                                 # read by the chapter, not plotted
        if DDP_ROW.match(text):
            continue                                 # the medians: the two lines below give their ratios
        m = SCALING.match(text)
        if m:
            log["scaling"], log["alone"] = float(m.group(1)), float(m.group(2))
            continue
        m = VS_CEILING.match(text)
        if m:
            log["vs_ceiling"], log["target"], log["target_at"] = float(m.group(1)), float(m.group(2)), int(m.group(3))
            continue
        m = PER_REP.match(text)
        if m:
            log["per_rep"] = [float(v) for v in m.group(1).split()]
            continue
        m = OVERLAP_HEAD.match(text)
        if m:
            log["overlap_setup"] = m.group(1)
            continue
        m = OVERLAP_ROW.match(text) if log["overlap_setup"] else None
        if m:
            log["ov"][m.group(1)] = float(m.group(2))
            if m.group(3) is not None:
                log["hidden"] = float(m.group(3))
            continue
        m = OVERLAP_CEILING.match(text)
        if m:
            log["ov_ceiling"], log["ov_target"] = (float(m.group(1)), float(m.group(4))), float(m.group(3))
            continue
        raise bad_line(path, number, text, "a line of bench_ddp's report: 'per repetition, DDP efficiency: ...', "
                       "'scaling efficiency ... = ...', 'DDP / ceiling = ...', an overlap row '    name  N ms', "
                       "or a header, table or load line")
    for key, what in (("N", "'bench_ddp: world_size=N, ...'"),
                      ("per_rep", "'per repetition, DDP efficiency: ...'"),
                      ("scaling", "'scaling efficiency (median of the per-repetition ratios) = ...'"),
                      ("vs_ceiling", "'DDP / ceiling = ... target >= ... at N ranks)' (a run on 1 rank has none)"),
                      ("overlap_setup", "'overlap: ...' (part 2 runs on 2 ranks or more)"),
                      ("ov_ceiling", "'  DDP / ceiling = ... with overlap ..., ... with one bucket after backward'")):
        if log[key] is None:
            raise LogError(f"{path}: no line {what}: the log may be cut short")
    missing = [row for row in STEP_ROWS.values() if row not in log["ov"]]
    if missing:
        raise LogError(f"{path}: no overlap row(s) {', '.join(repr(r) for r in missing)}")
    log["steps"] = {key: log["ov"][row] for key, row in STEP_ROWS.items()}
    if log["warning"]:
        print(f"{path}: warning: the bench flagged its run: {log['warning']}", file=sys.stderr)
    return log


def plot_ch06(log, out, plt):
    fig, (ax_e, ax_s) = plt.subplots(1, 2, figsize=(9, 4.8), gridspec_kw={"width_ratios": [1.4, 1]})
    eff = np.array(log["per_rep"])
    reps = np.arange(1, len(eff) + 1)
    ax_e.plot(reps, eff, "o", color="C0", ms=4.5, label="one repetition: DDP / (N × 1 rank)")
    ax_e.axhline(log["scaling"], color="C0", linewidth=1.5,
                 label=f"median: {log['scaling']:.3f} (the scaling efficiency)")
    ax_e.axhline(log["alone"], color="C2", linestyle="--", linewidth=1,
                 label=f"{log['N']} ranks alone, no all-reduce: {log['alone']:.3f}")
    ax_e.axhline(log["target"], color="C3", linestyle=":", linewidth=1.5,
                 label=f"target {log['target']:.2f} (set for DDP / ceiling: {log['vs_ceiling']:.3f} here)")
    ax_e.set_xlabel("repetition")
    ax_e.set_ylabel("DDP efficiency in that repetition")
    low = min(eff.min(), log["target"])
    ax_e.set_ylim(low - 0.02, 1.1)
    ax_e.set_xlim(0, len(eff) + 1)
    ax_e.legend(fontsize=7, loc="upper right")
    ax_e.set_title(f"part 1: {log['setup'].split(', 1 thread')[0]}\n{log['N']} ranks, {len(eff)} repetitions",
                   fontsize=8)
    ax_e.grid(True, alpha=0.3)

    steps = log["steps"]
    labels = ["overlap\n(1 MB buckets)", "one bucket\nafter backward", "ranks alone\n(ceiling)"]
    values = [steps["overlap"], steps["one bucket"], steps["ceiling"]]
    bars = ax_s.bar(range(3), values, color=["C0", "C1", "C2"], width=0.6)
    notes = [f"DDP / ceiling\n{log['ov_ceiling'][0]:.3f}", f"DDP / ceiling\n{log['ov_ceiling'][1]:.3f}", ""]
    for bar, v, note in zip(bars, values, notes):
        centre = bar.get_x() + bar.get_width() / 2
        ax_s.annotate(f"{v:.2f}\nms", (centre, v), textcoords="offset points", xytext=(0, -4), ha="center",
                      va="top", fontsize=8, color="white")
        if note:
            ax_s.annotate(note, (centre, v), textcoords="offset points", xytext=(0, 3), ha="center", va="bottom",
                          fontsize=7.5)
    target_ms = steps["ceiling"] / log["ov_target"]
    ax_s.axhline(target_ms, color="C3", linestyle=":", linewidth=1.5,
                 label=f"target: ceiling / {log['ov_target']:.2f} = {target_ms:.2f} ms")
    ax_s.set_xticks(range(3))
    ax_s.set_xticklabels(labels, fontsize=7.5)
    ax_s.set_ylim(0, max(values) * 1.35)
    ax_s.set_ylabel("step time (ms, median, slowest rank)")
    hidden = f"\n{log['hidden']:.0f}% of the all-reduce hidden in backward" if log["hidden"] is not None else ""
    ax_s.set_title(f"part 2: {log['overlap_setup'].split(', ')[0]}{hidden}", fontsize=8)
    ax_s.legend(fontsize=7, loc="upper right")
    ax_s.grid(True, axis="y", alpha=0.3)
    title = f"Chapter 06: bench_ddp on {log['N']} ranks — DDP efficiency per repetition, and what overlap buys"
    if log["warning"]:
        title += "\n(the bench's WARNING: other processes held cores during the run)"
    fig.suptitle(title, fontsize=10)
    return fig


# --- chapter 08: the runs of 8.3 and 8.4 ----------------------------------------------------------

BASE_BATCH, BASE_LR = 64, 0.02   # train_mnist's --batch-size and --lr (chapter 08, 8.2)
LARGE_BATCH = 512                # 8.4's single-process runs use --batch-size 512 and more
CHANCE = 0.1                     # ten classes: a diverged run predicts one class
RUN_EPOCH = re.compile(rf"epoch (\d+)/(\d+) loss={NUM} train_acc={NUM} test_acc={NUM} samples/s={NUM}"
                       rf"(?: per_rank_samples/s={NUM} world_size=(\d+))? time={NUM}s$")
RUN_ACCURACY = re.compile(rf"test_accuracy={NUM}$")
RUN_FLAGS = {"--batch-size": int, "--lr": float, "--warmup-epochs": int, "--warmup-start-factor": float}


def parse_command(path, number, text):
    """The run of '$ [scripts/mpirun.sh -np N] build/bin/train_mnist FLAGS [| filter]'."""
    expected = ("'$ [scripts/mpirun.sh -np N] build/bin/train_mnist [--batch-size B] [--lr X] [--no-scale-lr] "
                "[--warmup-epochs K] [--warmup-start-factor F] [| filter]'")
    try:
        words = shlex.split(text[2:].split("|", 1)[0])
    except ValueError:
        raise bad_line(path, number, text, expected) from None
    run = {"line": number, "np": 1, "batch": BASE_BATCH, "lr": BASE_LR, "scale": True, "warmup": 0, "start": None,
           "epoch": None, "acc": None}
    if words[:2] == ["scripts/mpirun.sh", "-np"] and len(words) > 2 and words[2].isdigit() and int(words[2]) > 0:
        run["np"], words = int(words[2]), words[3:]
    if not words or not words[0].endswith("train_mnist"):
        raise bad_line(path, number, text, expected)
    i = 1
    while i < len(words):
        flag = words[i]
        if flag == "--no-scale-lr":
            run["scale"], i = False, i + 1
            continue
        if flag not in RUN_FLAGS or i + 1 == len(words):
            raise bad_line(path, number, text, expected + f" (not a flag the plot knows: {flag!r})")
        try:
            value = RUN_FLAGS[flag](words[i + 1])
        except ValueError:
            raise bad_line(path, number, text, f"a number after {flag}") from None
        run[{"--batch-size": "batch", "--lr": "lr", "--warmup-epochs": "warmup",
             "--warmup-start-factor": "start"}[flag]] = value
        i += 2
    run["global"] = run["np"] * run["batch"]
    run["peak"] = run["lr"] * run["np"] if run["scale"] else run["lr"]
    return run


def parse_runs(path):
    """[run]: each '$ command' with its flags, its epoch line (e, E, loss, test_acc) if printed, and
    its test_accuracy."""
    runs = []
    for number, text in read_lines(path):
        if not text.strip():
            continue
        if text.startswith("$ "):
            if runs and runs[-1]["acc"] is None:
                raise LogError(f"{path}:{runs[-1]['line']}: no 'test_accuracy=...' line after this command")
            runs.append(parse_command(path, number, text))
            continue
        if not runs:
            raise bad_line(path, number, text, "a command line '$ ...' before its output")
        run = runs[-1]
        m = RUN_EPOCH.match(text)
        if m and run["acc"] is None:
            world = int(m.group(8)) if m.group(8) else 1
            if world != run["np"]:
                raise bad_line(path, number, text, f"world_size={run['np']}, as the command's -np")
            run["epoch"] = (int(m.group(1)), int(m.group(2)), float(m.group(3)), float(m.group(5)))
            continue
        m = RUN_ACCURACY.match(text)
        if m and run["acc"] is None:
            run["acc"] = float(m.group(1))
            continue
        raise bad_line(path, number, text, "under a command, 'epoch e/E loss=... test_acc=... time=...s' and "
                       "one 'test_accuracy=...' line, or the next '$ command'")
    if not runs:
        raise LogError(f"{path}: no command lines '$ build/bin/train_mnist ...'")
    if runs[-1]["acc"] is None:
        raise LogError(f"{path}:{runs[-1]['line']}: no 'test_accuracy=...' line after this command")
    if not any(r["np"] > 1 for r in runs) or not any(r["np"] == 1 and r["global"] >= LARGE_BATCH for r in runs):
        raise LogError(f"{path}: the plot needs the runs of both 8.3 (scripts/mpirun.sh -np N ...) and 8.4 "
                       f"(one process, --batch-size {LARGE_BATCH} or more)")
    for r in runs:   # where plot_ch08 puts a one-process run: by its batch
        if r["np"] == 1 and r["global"] <= BASE_BATCH and not (
                r["global"] == BASE_BATCH and close(r["peak"], BASE_LR) and not r["warmup"]):
            raise LogError(f"{path}:{r['line']}: a one-process run with batch {r['global']} and lr {r['peak']:g}: "
                           f"the plot places batch {BASE_BATCH} at lr {BASE_LR:g} (the baseline), larger batches "
                           f"below {LARGE_BATCH} beside the ranks, and {LARGE_BATCH} or more in the large-batch panel")
    return runs


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9)


def recipe(run):
    """(legend label, colour, marker) of a run's recipe; the rule scales --lr by the batch's growth."""
    k = run["global"] / BASE_BATCH
    rule = run["scale"] and close(run["peak"], BASE_LR * k)
    default_start = run["start"] is None or (run["np"] > 1 and run["scale"] and close(run["start"], 1 / run["np"]))
    if not run["warmup"]:
        if rule or k == 1:
            return f"the rule: lr {BASE_LR:g} × batch / {BASE_BATCH}", "C0", "o"
        if close(run["peak"], BASE_LR):
            return f"unscaled: lr {BASE_LR:g} (--no-scale-lr)", "C1", "s"
        return f"lr {run['peak']:g}", "C4", "v"
    if rule and default_start:
        return f"the rule + --warmup-epochs {run['warmup']}", "C2", "^"
    start = run["start"] if run["start"] is not None else (1 / run["np"] if run["np"] > 1 and run["scale"] else 0.1)
    return f"lr {run['peak']:g}, warmup {run['warmup']} epochs from {run['peak'] * start:g}", "C5", "D"


def plot_ch08(runs, out, plt):
    fig, (ax_n, ax_b) = plt.subplots(1, 2, figsize=(9, 5))
    single = [r for r in runs if r["np"] == 1]
    base = next((r for r in single if r["global"] == BASE_BATCH and close(r["peak"], BASE_LR) and not r["warmup"]),
                None)
    ddp = [r for r in runs if r["np"] > 1]
    ranks = sorted({r["np"] for r in ddp} | ({1} if base else set()))
    large = [r for r in single if r["global"] >= LARGE_BATCH]
    same_math = [r for r in single if BASE_BATCH < r["global"] < LARGE_BATCH]
    for r in single:
        if r is not base and r not in large and r not in same_math:
            raise AssertionError("parse_runs lets no such run through")

    # left: accuracy against the ranks, one line per recipe; one rank is the same run for every recipe
    series = {}
    for r in ddp:
        series.setdefault(recipe(r), []).append(r)
    for (label, colour, marker), members in series.items():
        points = sorted((r["np"], r["acc"]) for r in members)
        if base and all(not r["warmup"] and r["batch"] == BASE_BATCH and close(r["lr"], BASE_LR) for r in members):
            points = [(1, base["acc"])] + points   # at one rank, the rule and --no-scale-lr are the baseline run
        x, y = zip(*points)
        ax_n.plot(x, y, marker + "-", color=colour, label=label, ms=6)
    if base:
        ax_n.plot([1], [base["acc"]], "o", color="k", ms=7, zorder=5,
                  label=f"1 process, batch {BASE_BATCH}, lr {BASE_LR:g}: {base['acc']:.4f}")
        ax_n.axhline(base["acc"], color="k", linewidth=0.8, alpha=0.4)
    for r in same_math:
        n = r["global"] / BASE_BATCH
        ax_n.plot([n], [r["acc"]], "o", mfc="none", color="grey", ms=9,
                  label=f"1 process, batch {r['global']}, lr {r['peak']:g} (the math of {n:g} ranks)")
    ax_n.set_xscale("log", base=2)
    ax_n.set_xticks(ranks)
    ax_n.set_xticklabels([f"{n}\n(batch {n * BASE_BATCH})" for n in ranks], fontsize=8)
    ax_n.set_xlabel(f"ranks N (DDP, {BASE_BATCH} samples per rank)")
    ax_n.set_ylabel("test accuracy after 10 epochs")
    ax_n.set_title("8.3: DDP on 1 to 8 ranks", fontsize=10)
    ax_n.legend(fontsize=7, loc="lower left")
    ax_n.grid(True, alpha=0.3)

    # right: one process, large batches; a diverged run (chance) is drawn as an x on the axis' floor
    finite = [r["acc"] for r in large if r["acc"] > CHANCE + 1e-6]
    shown = finite + ([base["acc"]] if base else []) or [CHANCE + 0.05]
    lo, hi = min(shown) - 0.02, max(shown) + 0.008
    floor = lo + 0.004
    step = (hi - lo) / 26                          # one line of 7-point text, in accuracy units
    series = {}
    for r in large:
        series.setdefault(recipe(r), []).append(r)
    left_labels = set(ax_n.get_legend_handles_labels()[1])
    texts = {}                                     # x -> the text lines placed there: (y, text, colour)
    for (label, colour, marker), members in series.items():
        members.sort(key=lambda r: r["global"])
        pts = [(r["global"], r["acc"]) for r in members if r["acc"] > CHANCE + 1e-6]
        if len(members) > 1:                       # a recipe over the batches: its colour as on the left
            if pts:
                ax_b.plot(*zip(*pts), marker + "-", color=colour, ms=6,
                          label=None if label in left_labels else label)
        elif pts:                                  # a run of its own: named beside its point
            ax_b.plot(*zip(*pts), marker, color=colour, ms=6)
            texts.setdefault(pts[0][0], []).append((pts[0][1], f"{label}: {pts[0][1]:.4f}", colour))
        for r in members:
            if r["acc"] > CHANCE + 1e-6:
                continue
            nth = sum(1 for t in texts.get(("x", r["global"]), []))
            x = r["global"] * (0.95 + 0.1 * nth)   # two diverged runs at one batch: side by side
            ax_b.plot([x], [floor], "x", color=colour, ms=10, mew=2.5, clip_on=False, zorder=5)
            how = ""
            if r["epoch"]:
                e, _, loss, test_acc = r["epoch"]
                how = f",\nloss {loss:.0f} in epoch {e}" if loss > 10 else f",\ntest_acc {test_acc:.4f} after epoch {e}"
            name = label if len(members) == 1 else label.split(":")[0]
            texts.setdefault(("x", r["global"]), []).append(
                (floor, f"{name}: diverged to {r['acc']:.4f} (chance){how}", colour))
    for key, lines in texts.items():               # right-aligned left of the points, at least a line apart
        diverged = isinstance(key, tuple)
        x = key[1] if diverged else key
        top = bottom = None                       # the span of the texts placed so far
        for y, text, colour in sorted(lines, reverse=not diverged):
            height = step * (text.count("\n") + 1)
            if diverged:                           # stacked upwards from the floor
                y = floor if top is None else top + step * 0.4
                bottom, top = y, y + height
                ax_b.annotate(text, (x / 1.07, y), ha="right", va="bottom", fontsize=7, color=colour)
            else:                                  # at the point's height, or below the text above
                y = y if bottom is None else min(y, bottom - height / 2)
                bottom = y - height / 2
                ax_b.annotate(text, (x / 1.07, y), ha="right", va="center", fontsize=7, color=colour)
    if base:
        ax_b.axhline(base["acc"], color="k", linewidth=0.8, alpha=0.4)
        ax_b.annotate(f"1 process, batch {BASE_BATCH}, lr {BASE_LR:g}: {base['acc']:.4f}", (0.01, base["acc"]),
                      xycoords=("axes fraction", "data"), textcoords="offset points", xytext=(2, -9), fontsize=7)
    batches = sorted({r["global"] for r in large})
    ax_b.set_xscale("log", base=2)
    ax_b.set_xticks(batches)
    ax_b.set_xticklabels([str(b) for b in batches])
    ax_b.set_xlim(batches[0] / 1.35, batches[-1] * 1.25)
    ax_b.set_ylim(lo, hi)
    ax_b.set_xlabel("--batch-size (one process)")
    ax_b.set_ylabel("test accuracy after 10 epochs")
    ax_b.set_title("8.4: one process, large batches (colours: left)", fontsize=10)
    if ax_b.get_legend_handles_labels()[1]:
        ax_b.legend(fontsize=7, loc="lower left")
    ax_b.grid(True, alpha=0.3)
    fig.suptitle("Chapter 08: Fashion-MNIST test accuracy — the linear scaling rule and warmup", fontsize=10)
    return fig


# --- chapter 09: checkpoint_memory -----------------------------------------------------------------

MODEL = re.compile(r"deep MLP: (\d+) blocks ReLU\(Linear\((\d+), (\d+)\)\), batch (\d+)")
ACTIVATION = re.compile(r"one activation A = .* = (\d+) bytes")
CHECKPOINT_ROW = re.compile(rf"(none|\d+)\s+(\d+)\s+{NUM}\s+{NUM}%\s+(\d+) \(\+\s*{NUM}%\)\s+{NUM}$")


def parse_checkpoint_memory(path):
    """{"L", "A" (bytes), "none": (peak/A, forwards), "rows": [(S, peak/A, layer forwards)]}.
    Reads the activation-checkpointing table and the two header lines; the gradient-accumulation
    table before it is not plotted."""
    log = {"L": None, "A": None, "none": None, "rows": []}
    in_table = False
    for number, text in read_lines(path):
        m = MODEL.match(text)
        if m:
            log["L"] = int(m.group(1))
            if log["L"] < 2:
                raise bad_line(path, number, text, "a model of at least 2 blocks")
        m = ACTIVATION.match(text)
        if m:
            log["A"] = int(m.group(1))
            if log["A"] == 0:
                raise bad_line(path, number, text, "an activation of more than 0 bytes")
        if text.startswith("gradients after the step"):   # the last line
            log["complete"] = True
        if text.startswith("segments ") and "peak bytes" in text:
            in_table = True
            continue
        if not in_table:
            continue
        if not text.strip() or text.startswith("("):   # the footnote ends the table
            in_table = False
            continue
        m = CHECKPOINT_ROW.match(text)
        if not m:
            raise bad_line(path, number, text, "a row 'segments peak_bytes peak/A vs_none% layer_forwards "
                           "(+x%) step_ms' of the activation checkpointing table")
        if log["A"] is None:
            raise LogError(f"{path}:{number}: a table row before the line 'one activation A = ... bytes'")
        peak_a, forwards = int(m.group(2)) / log["A"], int(m.group(5))   # peak/A from the exact bytes
        if m.group(1) == "none":
            log["none"] = (peak_a, forwards)
        else:
            log["rows"].append((int(m.group(1)), peak_a, forwards))
    for key, what in (("L", "'deep MLP: L blocks ReLU(Linear(H, H)), batch B'"),
                      ("A", "'one activation A = B x H x 4 = ... bytes'")):
        if log[key] is None:
            raise LogError(f"{path}: no line {what}")
    if not log["rows"] or log["none"] is None:
        raise LogError(f"{path}: no rows 'none' and S under 'segments     peak bytes ...'")
    if not log.get("complete"):
        print(f"{path}: warning: no 'gradients after the step' line: the log may be cut short", file=sys.stderr)
    return log


def plot_ch09(log, out, plt):
    L, A = log["L"], log["A"]
    S, peak, forwards = (np.array(c) for c in zip(*sorted(log["rows"])))
    fig, ax = plt.subplots(figsize=(9, 5))
    s = np.geomspace(1.5, L * 1.2, 200)
    ax.plot(s, s + L / s, "--", color="grey", label="book's model: S + L/S activations")
    cut = (S - 1) + (L - (S - 1) * (L // S))       # checkpoint_sequential: the remainder goes to the last
    ax.plot(S, cut, "x", color="C2", ms=7,
            label="(S−1) inputs + last segment's layers (9.5)")
    ax.plot(S, peak, "o-", color="C0", label="measured: max_memory_allocated() / A")
    ax.axhline(log["none"][0], color="C3", linestyle=":",
               label=f"no checkpointing: {log['none'][0]:.2f} A")
    ax.axvline(math.sqrt(L), color="k", linewidth=0.8, alpha=0.5)
    ax.text(math.sqrt(L) * 1.03, 2, f"S = √L = {math.sqrt(L):.2f}", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xlim(1.5, L * 1.2)
    ax.set_xticks(S)
    ax.set_xticklabels([str(v) for v in S])
    ax.set_ylim(0, max(peak.max(), log["none"][0]) * 1.12)
    ax.set_xlabel("segments S of checkpoint_sequential (log scale)")
    ax.set_ylabel(f"peak activation memory (units of A = {A // 1024} KiB)")
    ax.grid(True, alpha=0.3)

    ax2 = ax.twinx()                                # compute: the layer forwards of one step
    ax2.plot(S, forwards, "d:", color="C1", label="layer forwards per step (right axis)")
    ax2.axhline(log["none"][1], color="C1", linewidth=0.8, alpha=0.4)
    ax2.set_ylim(0, 2 * L * 1.12)
    ax2.set_ylabel(f"layer forwards per step (without checkpointing: {log['none'][1]})", color="C1")
    ax2.tick_params(axis="y", colors="C1")

    lines = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    labels = ax.get_legend_handles_labels()[1] + ax2.get_legend_handles_labels()[1]
    order = [2, 0, 1, 3, 4]                         # measured first, then the models
    ax.legend([lines[i] for i in order], [labels[i] for i in order], fontsize=7.5, loc="lower left")
    ax.set_title(f"Chapter 09: activation checkpointing, {L} blocks ReLU(Linear): memory against recompute",
                 fontsize=10)
    return fig


# --- chapter 03: optimizer_memory ------------------------------------------------------------------

OPTIM_HEADER = re.compile(r"optimizer_memory: .*, (\d+) parameters = (\d+) bytes")
OPTIM_ROW = re.compile(rf"(\S+(?: \S+=\S+)?)\s{{2,}}(.+?)\s{{2,}}(\d+)\s+{NUM}x\s+{NUM}x$")


def parse_optimizer_memory(path):
    """{"P": parameters, "bytes": parameter bytes, "rows": [(optimizer, state names, state bytes)]}."""
    log = {"P": None, "bytes": None, "rows": []}
    for number, text in read_lines(path):
        m = OPTIM_HEADER.match(text)
        if m:
            log["P"], log["bytes"] = int(m.group(1)), int(m.group(2))
            continue
        if not text.strip() or text.startswith("optimizer "):
            continue
        m = OPTIM_ROW.match(text)
        if not m:
            raise bad_line(path, number, text, "a row 'optimizer  state names  state_bytes  Nx  Mx'")
        log["rows"].append((m.group(1), m.group(2).strip(), int(m.group(3))))
    if log["P"] is None or not log["rows"]:
        raise LogError(f"{path}: no 'optimizer_memory: ..., P parameters = B bytes' line or no rows")
    return log


def plot_ch03(log, out, plt):
    names = [r[0] for r in log["rows"]]
    state = np.array([r[2] for r in log["rows"]]) / log["bytes"]
    fig, ax = plt.subplots(figsize=(9, 4))
    y = np.arange(len(names))[::-1]
    ax.barh(y, np.ones(len(names)), color="C0", label="parameters (float32): 1x")
    ax.barh(y, state, left=1, color="C1", label="optimizer state after one step (measured)")
    for yi, st, r in zip(y, state, log["rows"]):
        ax.text(1 + st + 0.05, yi, f"{1 + st:.2f}x   {r[1]}", va="center", fontsize=8)
    ax.set_yticks(y)
    ax.set_yticklabels(names)
    ax.set_xlim(0, 7.5)
    ax.set_xlabel(f"bytes, in units of the parameters' {log['bytes']} ({log['P']} float32 parameters)")
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title("Chapter 03: what each optimizer keeps besides the parameters (optimizer_memory)", fontsize=10)
    return fig


# --- chapter 11: fp16_underflow --------------------------------------------------------------------

GRAD_ROW = re.compile(rf"\s*{NUM} \|\s+{NUM}\s+{NUM}% \|\s+{NUM}\s+{NUM}%")
STEP_ROW = re.compile(rf"\s*(\d+) \|\s+{NUM} \|\s+{NUM} \|\s+{NUM}$")


def parse_fp16_underflow(path):
    """{"grads": [(g, rel err of float16(g), rel err of float16(g S)/S)], "steps": [(step, f32, f16, f16 + scaler)]}."""
    log = {"grads": [], "steps": [], "scale": None}
    part = 0
    for number, text in read_lines(path):
        if text.startswith("Part 1"):
            part = 1
            m = re.search(r"loss scale of 2\^(\d+)", text)
            log["scale"] = int(m.group(1)) if m else None
            continue
        if text.startswith("Part 2"):
            part = 2
            log["part2"] = text
            continue
        if part == 1 and "|" in text and not text.lstrip().startswith("gradient"):
            m = GRAD_ROW.match(text)
            if not m:
                raise bad_line(path, number, text, "a row 'g | float16(g) err% | float16(gS)/S err%'")
            log["grads"].append((float(m.group(1)), float(m.group(3)), float(m.group(5))))
        elif part == 2 and "|" in text and not text.lstrip().startswith("step"):
            m = STEP_ROW.match(text)
            if not m:
                raise bad_line(path, number, text, "a row 'step | float32 | float16 | float16 + scaler'")
            log["steps"].append(tuple([int(m.group(1))] + [float(m.group(k)) for k in (2, 3, 4)]))
    if not log["grads"] or not log["steps"]:
        raise LogError(f"{path}: no Part 1 or Part 2 table: not the output of fp16_underflow")
    return log


def plot_ch11(log, out, plt):
    fig, (ax_g, ax_l) = plt.subplots(1, 2, figsize=(10, 4.5))
    g, plain, scaled = (np.array(c) for c in zip(*log["grads"]))
    ax_g.loglog(g, np.maximum(plain, 1e-3), "o-", color="C3", label="float16(g)")
    ax_g.loglog(g, np.maximum(scaled, 1e-3), "s-", color="C2",
                label=f"float16(g · 2^{log['scale']}) / 2^{log['scale']}")
    for x, lab in ((5.96e-08, "2^-24: smallest subnormal"), (6.104e-05, "2^-14: smallest normal")):
        ax_g.axvline(x, color="grey", linestyle=":", linewidth=0.8)
        ax_g.text(x * 1.15, 0.3, lab, fontsize=7, rotation=90, va="center")
    ax_g.set_xlabel("gradient g")
    ax_g.set_ylabel("relative error, % (100% = flushed to 0)")
    ax_g.legend(fontsize=8, loc="center left")
    ax_g.grid(True, which="both", alpha=0.3)
    ax_g.set_title("one gradient stored in float16", fontsize=9)
    step, f32, f16, f16s = (np.array(c) for c in zip(*log["steps"]))
    ax_l.semilogy(step, f32, "o-", color="C0", label="float32")
    ax_l.semilogy(step, f16, "^-", color="C3", label="float16, no scaler: stops when dL/dy flushes")
    ax_l.semilogy(step, f16s, "s-", color="C2", label="float16 + GradScaler")
    ax_l.set_xlabel("SGD step")
    ax_l.set_ylabel("mse loss before the step (log scale)")
    ax_l.legend(fontsize=8)
    ax_l.grid(True, which="both", alpha=0.3)
    ax_l.set_title("y = X w, mse over 65536 rows", fontsize=9)
    fig.suptitle("Chapter 11: float16 underflow and loss scaling (fp16_underflow)", fontsize=10)
    return fig


# --- chapter 12: pipeline_schedule -----------------------------------------------------------------

EFF_ROW = re.compile(rf"\s*(\d+)\s+{NUM}%\s+{NUM}%\s+{NUM}%\s+(\d+)\s+(\d+)$")
SCHEDULE = re.compile(r"(GPipe|1F1B), P = (\d+), M = (\d+), .*: makespan (\d+) units, bubble " + NUM + "%")
STAGE = re.compile(r"stage (\d+): ([.FB0-9]+)$")


def parse_pipeline_schedule(path):
    """{"eff": [(M, formula, gpipe, 1f1b, gpipe peak, 1f1b peak)],
        "schedules": {name: {"P", "M", "makespan", "bubble", "stages": [[(start, kind, micro-batch)]]}}}.
    A stage's line holds two characters per time unit: "F3" a forward of micro-batch 3, ".." idle."""
    log = {"eff": [], "schedules": {}}
    current = None
    for number, text in read_lines(path):
        m = EFF_ROW.match(text)
        if m:
            log["eff"].append((int(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(4)),
                               int(m.group(5)), int(m.group(6))))
            continue
        m = SCHEDULE.match(text)
        if m:
            current = {"P": int(m.group(2)), "M": int(m.group(3)), "makespan": int(m.group(4)),
                       "bubble": float(m.group(5)), "stages": []}
            log["schedules"][m.group(1)] = current
            continue
        m = STAGE.match(text)
        if m and current is not None:
            row, ops = m.group(2), []
            if len(row) != 2 * current["makespan"]:
                raise bad_line(path, number, text, f"{2 * current['makespan']} characters: 2 per time unit")
            for t in range(current["makespan"]):
                cell = row[2 * t:2 * t + 2]
                if cell != "..":
                    if not re.fullmatch(r"[FB]\d", cell):
                        raise bad_line(path, number, text, "cells '..', 'Fk' or 'Bk' (k < 10)")
                    ops.append((t, cell[0], int(cell[1])))
            current["stages"].append(ops)
    if not log["eff"] or set(log["schedules"]) != {"GPipe", "1F1B"}:
        raise LogError(f"{path}: no efficiency table or not both schedules: not the output of pipeline_schedule")
    return log


def plot_ch12(log, out, plt):
    fig = plt.figure(figsize=(11, 6.5))
    grid = fig.add_gridspec(2, 2, width_ratios=[1.6, 1])
    for row, name in enumerate(("GPipe", "1F1B")):
        sch = log["schedules"][name]
        ax = fig.add_subplot(grid[row, 0])
        for stage, ops in enumerate(sch["stages"]):
            for t, kind, mb in ops:
                colour = plt.cm.Blues(0.35 + 0.15 * mb) if kind == "F" else plt.cm.Oranges(0.35 + 0.15 * mb)
                ax.barh(stage, 1, left=t, color=colour, edgecolor="white", linewidth=0.5)
                ax.text(t + 0.5, stage, f"{kind}{mb}", ha="center", va="center", fontsize=6.5)
        ax.set_ylim(sch["P"] - 0.5, -0.5)
        ax.set_xlim(0, sch["makespan"])
        ax.set_yticks(range(sch["P"]))
        ax.set_yticklabels([f"stage {k}" for k in range(sch["P"])], fontsize=7)
        ax.set_xlabel("time (units of one micro-batch's forward on one stage)", fontsize=8)
        ax.set_title(f"{name}, P = {sch['P']}, M = {sch['M']}: makespan {sch['makespan']}, "
                     f"bubble {sch['bubble']:.1f}% (white)", fontsize=9)
    M, formula, gpipe, ofob, gpeak, opeak = (np.array(c) for c in zip(*log["eff"]))
    panels = ((0, "efficiency, %", [(formula, "-", "grey", "M / (M + P − 1)"), (gpipe, "o", "C0", "GPipe (placed)"),
                                    (ofob, "x", "C1", "1F1B (placed)")]),
              (1, "activations stage 0 keeps (micro-batches)", [(gpeak, "o-", "C0", "GPipe: M"),
                                                                (opeak, "x-", "C1", "1F1B: at most P")]))
    for row, ylabel, curves in panels:
        ax = fig.add_subplot(grid[row, 1])
        for y, style, colour, label in curves:
            ax.plot(M, y, style, color=colour, ms=8 if "x" in style else 6, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(M)
        ax.set_xticklabels([str(v) for v in M])
        ax.set_ylabel(ylabel)
        ax.set_xlabel("micro-batches M")
        ax.legend(fontsize=7.5)
        ax.grid(True, alpha=0.3)
    fig.suptitle("Chapter 12: pipeline schedules, as pipeline_schedule places them", fontsize=10)
    return fig


# --- chapter 13: zero_memory -----------------------------------------------------------------------

ZERO_HEADER = re.compile(r"zero_memory: .*P = (\d+) parameters, .*, (\d+) rank\(s\), (.+)$")
ZERO_ROW = re.compile(r"\s*0" + r"\s+(\d+)" * 9 + rf"\s+{NUM}$")


def parse_zero_memory(path):
    """[(mode, P, {"params", "grads", "buckets", "optim", "batch", "held", "formula", "peak"})]: rank 0's
    row of each zero_memory run in the log."""
    runs, current = [], None
    for number, text in read_lines(path):
        m = ZERO_HEADER.match(text)
        if m:
            current = (m.group(3).split(" (")[0], int(m.group(1)))
            continue
        m = ZERO_ROW.match(text)
        if m and current:
            keys = ("owned", "params", "grads", "buckets", "optim", "batch", "held", "formula", "peak")
            runs.append((current[0], current[1], dict(zip(keys, (int(m.group(k)) for k in range(1, 10))))))
            current = None
    if not runs:
        raise LogError(f"{path}: no 'zero_memory: ...' header followed by rank 0's row")
    return runs


def plot_ch13(runs, out, plt):
    fig, ax = plt.subplots(figsize=(9, 4.8))
    P = runs[0][1]
    x = np.arange(len(runs))
    bottom = np.zeros(len(runs))
    for key, colour, label in (("params", "C0", "parameters"), ("grads", "C1", "gradients"),
                               ("buckets", "C4", "DDP's buckets"), ("optim", "C2", "Adam state"),
                               ("batch", "C7", "batch")):
        v = np.array([r[2][key] for r in runs]) / P
        ax.bar(x, v, 0.6, bottom=bottom, color=colour, label=label)
        bottom += v
    ax.plot(x, [r[2]["formula"] / P for r in runs], "_", color="k", ms=40, mew=2,
            label="the formula (13.2-13.8)")
    ax.plot(x, [r[2]["peak"] / P for r in runs], "v", color="C3", ms=8, label="peak (max_memory_allocated)")
    for xi, r in zip(x, runs):
        ax.text(xi, r[2]["peak"] / P + 0.4, f"held {r[2]['held'] / P:.2f} P", ha="center", fontsize=8)
    ax.set_xticks(x)
    ax.set_xticklabels([r[0] for r in runs])
    ax.set_ylabel(f"bytes on rank 0, in units of P = {P} parameters")
    ax.set_ylim(0, max(r[2]["peak"] for r in runs) / P * 1.15)
    ax.legend(fontsize=7.5, loc="upper right")
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title("Chapter 13: what each rank holds, by ZeRO stage (zero_memory, 2 ranks, measured)", fontsize=10)
    return fig


# ---------------------------------------------------------------------------------------------------

PARSE = {"ch01": parse_train_mnist, "ch03": parse_optimizer_memory, "ch04": parse_data_pipeline,
         "ch05": parse_bench_dp, "ch06": parse_bench_ddp, "ch08": parse_runs, "ch09": parse_checkpoint_memory,
         "ch11": parse_fp16_underflow, "ch12": parse_pipeline_schedule, "ch13": parse_zero_memory}
PLOT = {"ch01": plot_ch01, "ch03": plot_ch03, "ch04": plot_ch04, "ch05": plot_ch05, "ch06": plot_ch06,
        "ch08": plot_ch08, "ch09": plot_ch09, "ch11": plot_ch11, "ch12": plot_ch12, "ch13": plot_ch13}


def draw(chapter, log_path, out, plt):
    fig = PLOT[chapter](PARSE[chapter](log_path), out, plt)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    print(f"wrote {out} (from {log_path})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Commands that reproduce the logs: see the docstring (head -60 of this file).")
    ap.add_argument("chapter", nargs="?", choices=sorted(CHAPTERS), help="the plot to draw")
    ap.add_argument("log", nargs="?", help="the program's output (default: chapters/data/chNN_*.txt)")
    ap.add_argument("--out", help="PNG to write (default: chapters/img/chNN-*.png)")
    ap.add_argument("--all", action="store_true", help="draw them all from chapters/data into chapters/img")
    args = ap.parse_args()
    if args.all == bool(args.chapter):
        ap.error(f"give one chapter ({', '.join(sorted(CHAPTERS))}) or --all")
    if args.all and (args.log or args.out):
        ap.error("--all reads and writes the default paths: no LOG or --out")
    if args.out and not args.out.lower().endswith(".png"):
        ap.error(f"--out {args.out}: the plots are PNG files (name it .png)")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    jobs = sorted(CHAPTERS) if args.all else [args.chapter]
    try:
        for chapter in jobs:
            log_path, out = CHAPTERS[chapter]
            draw(chapter, args.log or log_path, args.out or out, plt)
    except LogError as e:
        print(f"{ap.prog}: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

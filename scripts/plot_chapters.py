#!/usr/bin/python3
"""scripts/plot_chapters.py — the plots of chapters 01, 04 and 09, drawn from the programs' own output.

Each plot reads one log that a program printed, committed in chapters/data/. To measure again
(from the repository root, after building; `nice` leaves the shared cores to other work):

    nice -n 10 build/bin/train_mnist | cat > chapters/data/ch01_train_mnist.txt
    nice -n 10 build/bin/data_pipeline --workers 0,1,2,3,4,5,6 > chapters/data/ch04_data_pipeline.txt
    nice -n 10 build/bin/checkpoint_memory > chapters/data/ch09_checkpoint_memory.txt

then draw:

    /usr/bin/python3 scripts/plot_chapters.py --all        # the three logs above -> chapters/img/
    /usr/bin/python3 scripts/plot_chapters.py ch01 [LOG] [--out PNG]     (likewise ch04, ch09)

  ch01  chapters/img/ch01-mnist-curves.png: the training loss against the epoch (the progress
        lines' "mean loss so far in this epoch", at epoch e-1 + i/n) and train_acc / test_acc
        per epoch (chapters/01-training-loop.md, Step 2). `| cat` matters: on a terminal the
        progress line is redrawn in place instead of printed four times an epoch.
  ch04  chapters/img/ch04-utilisation.png: the measured and the predicted utilisation against
        num_workers, with the book's R_pipe / R_compute (20%: one loader) and 100% (the step
        never waits) (chapters/04-data-pipeline.md, 4.6).
  ch09  chapters/img/ch09-checkpoint-memory.png: peak activation memory, in units of one
        activation A, against the number of segments S, with the book's model S + L/S, the count
        of section 9.5 for checkpoint_sequential's cut ((S-1) segment inputs + the last segment's
        layers), no checkpointing, S = sqrt(L), and the layer forwards on a second axis
        (chapters/09-gradient-accumulation.md, 9.5).

The parsers are strict: a line they cannot read stops them with FILE:LINE and the line, so a
changed output format fails here instead of drawing an empty or wrong plot.
Needs python3-numpy and python3-matplotlib (Debian packages; run with /usr/bin/python3).
"""
import argparse
import math
import os
import re
import sys

import numpy as np

NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"   # one finite number, as the programs print it

CHAPTERS = {  # name -> (default log, default PNG)
    "ch01": ("chapters/data/ch01_train_mnist.txt", "chapters/img/ch01-mnist-curves.png"),
    "ch04": ("chapters/data/ch04_data_pipeline.txt", "chapters/img/ch04-utilisation.png"),
    "ch09": ("chapters/data/ch09_checkpoint_memory.txt", "chapters/img/ch09-checkpoint-memory.png"),
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


# ---------------------------------------------------------------------------------------------------

PARSE = {"ch01": parse_train_mnist, "ch04": parse_data_pipeline, "ch09": parse_checkpoint_memory}
PLOT = {"ch01": plot_ch01, "ch04": plot_ch04, "ch09": plot_ch09}


def draw(chapter, log_path, out, plt):
    fig = PLOT[chapter](PARSE[chapter](log_path), out, plt)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    print(f"wrote {out} (from {log_path})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Commands that reproduce the logs: see the docstring (head -40 of this file).")
    ap.add_argument("chapter", nargs="?", choices=sorted(CHAPTERS), help="the plot to draw")
    ap.add_argument("log", nargs="?", help="the program's output (default: chapters/data/chNN_*.txt)")
    ap.add_argument("--out", help="PNG to write (default: chapters/img/chNN-*.png)")
    ap.add_argument("--all", action="store_true", help="draw all three from chapters/data into chapters/img")
    args = ap.parse_args()
    if args.all == bool(args.chapter):
        ap.error("give one chapter (ch01, ch04, ch09) or --all")
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

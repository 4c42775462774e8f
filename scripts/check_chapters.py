#!/usr/bin/python3
"""scripts/check_chapters.py — run the commands a chapter shows and compare what they print with
what the chapter says they print (a doctest for the chapters).

    scripts/check_chapters.py [--build build] [--full] [--list] [chapters/01-training-loop.md ...]
    ctest --test-dir build -L chapters          # one test per chapter (chapter_01, ...)

A chapter marks an expected-output block by the word `check` in the fence's info string:

    ```console check timing=samples/s,time load=2 simd=avx512
    $ build/bin/train_mnist | cat
    epoch 1/10 [234/938] loss=0.7238 samples/s=12620
    ...
    test_accuracy=0.8963
    ```

Each `$ ` line is a command (run by bash in a scratch directory where build/, scripts/, tests/,
include/ and chapters/ point into the repository and build tree; commands of one block run in
order, in the same directory). The lines after it are what it must print (stdout and stderr
together), in order, with any other lines allowed between them (a `...` line shows a learner where
lines were left out). Inside a line, `...` stands for any text. Numbers are compared as written:
exactly, except the *timing* numbers: a number written `~2585` in the block (the output has no
`~`), and those the info string declares:

    timing=K1,K2     a number right after `K1=` or `K2=` is a timing (e.g. samples/s=12620)
    timing-cols=2-5  in a table row fields 2 to 5 are timings (a table row: a line whose first
                     field is a number, fields split at blanks; or a line that starts with `|`,
                     fields between the bars)
    tol=3            a timing passes when actual/expected is within [1/3, 3] (default 3)
    load=2           timings hold when the 1-minute load average stays at or below 2 during the
                     commands; above it they are not compared and the check says so (default 1.5)
    simd=avx512      the numbers depend on the CPU's vector instructions (the programs are built
                     with -march=native): on a CPU without them the block is skipped, with a reason
    full             the command takes minutes: checked only with --full (a shorter block beside it
                     is checked every time)
    exit=N           the last command must exit with status N (default 0)

A block the ctest of another program checks line by line says so instead: `console
checked-by=gdb_pretty_printer`. Its numbers count as checked for the rule below, the block is not
run here.

The rule for prose: every number in a chapter's text that looks like a program's output (a
decimal with two or more digits after the point, or a ratio or percentage with a decimal point
such as 1.43x or 88.9%; headings, and section numbers that a heading carries, are left out)
must appear in one of the chapter's checked blocks (as printed, or rounded to fewer digits: "about
0.896" for a printed 0.8963), or be cited in an HTML comment that says where
it comes from instead (a hand calculation, the book, a PyTorch run):

    <!-- cited: 0.8953 0.8965 (PyTorch 1.13, tests/reference/gen_mnist_mlp.py) -->

so prose cannot drift from output.

Exit status: 0 all checked blocks matched (skips are printed with their reason), 1 a mismatch or
a prose number without a source, 2 bad usage or a malformed block, 77 nothing could run (the build
has no such programs: ctest shows it as Skipped).
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMBER = r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
PROSE_NUMBER = re.compile(r"(?<![\w.])(\d+\.\d{2,}|\d+\.\d+(?:x|%))(?![\w.]*\d)")


class BlockError(Exception):
    """A block that cannot be read (bad attribute): exit status 2."""


class Block:
    """One fenced block with `check` or `checked-by=` in its info string."""

    def __init__(self, path, line, info, body):
        self.path, self.line, self.body = path, line, body
        words = info.split()
        self.checked_by = None
        self.attrs = {}
        for w in words[1:]:
            if w == "check":
                continue
            k, _, v = w.partition("=")
            self.attrs[k] = v
        self.checked_by = self.attrs.pop("checked-by", None)
        allowed = {"timing", "timing-cols", "tol", "load", "simd", "full", "exit"}
        for k in self.attrs:
            if k not in allowed:
                raise BlockError(f"{path}:{line}: unknown attribute '{k}' (known: {', '.join(sorted(allowed))})")
        self.timing_keys = [k for k in self.attrs.get("timing", "").split(",") if k]
        self.timing_cols = set()
        for part in filter(None, self.attrs.get("timing-cols", "").split(",")):
            lo, _, hi = part.partition("-")
            self.timing_cols.update(range(int(lo), int(hi or lo) + 1))
        self.tol = float(self.attrs.get("tol", 3))
        self.load = float(self.attrs.get("load", 1.5))
        self.exit = int(self.attrs.get("exit", 0))
        self.commands = []  # [(command, [expected lines])]
        for text in body if not self.checked_by else []:
            if text.startswith("$ "):
                self.commands.append((text[2:], []))
            elif not self.commands:
                raise BlockError(f"{path}:{line}: a check block must start with a '$ command' line")
            elif text.strip() and text.strip() != "...":
                self.commands[-1][1].append(text)

    def numbers(self):
        return set(re.findall(NUMBER, "\n".join(self.body)))


def read_chapter(path):
    """(blocks, prose lines [(lineno, text)], cited numbers) of one markdown file."""
    blocks, prose, cited = [], [], set()
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(.*)$", lines[i])
        if m:
            indent, info, start, body = len(m.group(1)), m.group(2).strip(), i + 1, []
            i += 1
            while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
                body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i])  # a block in a list
                i += 1
            words = info.split()
            if "check" in words or any(w.startswith("checked-by=") for w in words):
                blocks.append(Block(path, start, info, body))
        else:
            prose.append((i + 1, lines[i]))
        i += 1
    text = "\n".join(lines)
    for c in re.findall(r"<!--\s*cited:(.*?)-->", text, re.S):
        cited.update(re.findall(NUMBER + r"x?", c))
    cited.update(re.findall(r"(?m)^#+ (\d+\.\d+) ", text))  # section numbers ("see 6.12") name headings
    return blocks, prose, cited


def prose_numbers(prose):
    """[(lineno, number)] of output-like numbers in the text outside fences and comments."""
    found, in_comment = [], False
    for lineno, text in prose:
        if text.startswith("#"):                        # headings: section numbers
            continue
        if in_comment or "<!--" in text:
            in_comment = "-->" not in text.split("<!--")[-1] if "<!--" in text else "-->" not in text
            continue
        text = re.sub(r"\]\([^)]*\)", "]", text)        # link targets
        text = re.sub(r"https?://\S+|arXiv:\S+", "", text)
        found += [(lineno, m.group(1)) for m in PROSE_NUMBER.finditer(text)]
    return found


def is_known(n, known):
    """Whether prose number n (maybe with x or %) is a checked or cited number, or one of them
    rounded to fewer digits ("about 0.896" for a printed 0.8963)."""
    bare = n.rstrip("x%")
    if n in known or bare in known:
        return True
    digits = len(bare.partition(".")[2])
    for k in known:
        kd = k.rstrip("x%").partition(".")[2]
        if len(kd) > digits and re.fullmatch(NUMBER, k.rstrip("x%")) and f"{float(k.rstrip('x%')):.{digits}f}" == bare:
            return True
    return False


def line_pattern(expected, block):
    """A regex for one expected line, and for each of its numbers whether it is a timing."""
    pattern, timing = "", []
    fields = expected.split()
    pipe_row = expected.lstrip().startswith("|")   # | name | 31033 | 0.82 |: fields between the bars
    table_row = pipe_row or (bool(fields) and re.fullmatch(NUMBER, fields[0]) is not None)
    pos = 0
    for m in re.finditer(r"\.\.\.|~?" + NUMBER + r"|\s+", expected):
        pattern += re.escape(expected[pos:m.start()])
        tok = m.group(0)
        if tok == "...":
            pattern += ".*?"
        elif tok.isspace():
            pattern += r"\s+"
        else:
            pattern += "(" + NUMBER + ")"
            before = expected[:m.start()]
            is_timing = tok.startswith("~") or any(before.endswith(k + "=") for k in block.timing_keys)
            if pipe_row:
                field = before.count("|")
                starts_field = before.split("|")[-1].strip() == ""
            else:
                field = len(before.split()) + 1
                starts_field = not before or before[-1].isspace()
            if table_row and starts_field and field in block.timing_cols:
                is_timing = True  # the number opens a field the block declares a timing
            timing.append(is_timing)
        pos = m.end()
    pattern += re.escape(expected[pos:])
    return re.compile(r"\s*" + pattern + r"\s*"), timing


def loadavg():
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except OSError:
        return 0.0


def simd_level():
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return "unknown"
    if re.search(r"\bavx512f\b", flags):
        return "avx512"
    if re.search(r"\bavx2\b", flags) and re.search(r"\bfma\b", flags):
        return "avx2"
    return "sse"


def scratch_dir(build):
    d = tempfile.mkdtemp(prefix="check_chapters.")
    for name, target in [("build", build), ("scripts", "scripts"), ("tests", "tests"), ("include", "include"),
                         ("chapters", "chapters"), ("examples", "examples")]:
        os.symlink(os.path.join(ROOT, target) if not os.path.isabs(target) else target, os.path.join(d, name))
    return d


def run_block(block, build, full):
    """Returns (status, messages): status 'ok', 'skip' or 'fail'."""
    where = f"{os.path.relpath(block.path, ROOT)}:{block.line}"
    if block.checked_by:
        return "ok", [f"  {where}: checked by ctest {block.checked_by}"]
    if "full" in block.attrs and not full:
        return "skip", [f"  {where}: skipped: a full run (minutes); scripts/check_chapters.py --full checks it"]
    if block.attrs.get("simd") and block.attrs["simd"] != simd_level():
        return "skip", [f"  {where}: skipped: its numbers were printed on a {block.attrs['simd']} CPU, this one is "
                        f"{simd_level()} (the programs are built with -march=native; the last digits differ)"]
    for cmd, _ in block.commands:
        prog = re.search(r"build/bin/(\w+)", cmd)
        if prog and not os.path.exists(os.path.join(build, "bin", prog.group(1))):
            return "missing", [f"  {where}: skipped: {build}/bin/{prog.group(1)} is not built"]
    d = scratch_dir(build)
    msgs, status, load_max = [], "ok", loadavg()
    timings_compared = timings_skipped = 0
    for idx, (cmd, expected) in enumerate(block.commands):
        t0 = time.time()
        r = subprocess.run(["bash", "-c", cmd], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=1800)
        load_max = max(load_max, loadavg())
        out = r.stdout.decode("utf-8", "replace").split("\n")
        want_exit = block.exit if idx == len(block.commands) - 1 else 0
        if r.returncode != want_exit:
            tail = "\n      ".join(out[-15:])
            return "fail", [f"  {where}: `{cmd}` exited with {r.returncode}, expected {want_exit}; its last lines:\n"
                            f"      {tail}"]
        pos = 0
        for exp in expected:
            pat, timing = line_pattern(exp, block)
            hit, near = None, None
            for j in range(pos, len(out)):
                m = pat.fullmatch(out[j])
                if not m:
                    continue
                bad = []
                for k, (got, want) in enumerate(zip(m.groups(), re.findall(NUMBER, exp.replace("~", "")))):
                    if not timing[k]:
                        if got != want:
                            bad.append(f"{want} -> {got}")
                    elif float(want) == 0:
                        pass  # printed as 0 (e.g. time=0.0s): too coarse to compare
                    elif load_max > block.load:
                        timings_skipped += 1
                    else:
                        timings_compared += 1
                        ratio = float(got) / float(want) if float(want) else float("inf")
                        if not (1 / block.tol <= ratio <= block.tol):
                            bad.append(f"timing {want} -> {got} (x{ratio:.2f}, outside the block's tol={block.tol:g})")
                if not bad:
                    hit = j
                    break
                if near is None or len(bad) < len(near[1]):
                    near = (j, bad)  # the closest line of the same shape, for the message
            if hit is None:
                status = "fail"
                if near:
                    msgs.append(f"  {where}: `{cmd}`: the chapter's line\n      {exp}\n    the output's line "
                                f"{near[0] + 1}\n      {out[near[0]]}\n    differs: {', '.join(near[1])}")
                else:
                    msgs.append(f"  {where}: `{cmd}`: no line of the output (after line {pos}) matches the "
                                f"chapter's\n      {exp}\n    the output was:\n      " + "\n      ".join(out[:60]))
                break
            pos = hit + 1
        if status == "fail":
            break
    subprocess.run(["rm", "-rf", d])
    if status == "ok":
        note = f"{sum(len(e) for _, e in block.commands)} lines matched"
        if timings_skipped:
            note += (f"; {timings_skipped} timing numbers not compared: load average reached {load_max:.1f}, "
                     f"above the block's load={block.load:g}")
        elif timings_compared:
            note += f"; {timings_compared} timing numbers within x{block.tol:g} (load {load_max:.1f})"
        msgs.append(f"  {where}: ok ({note}): {block.commands[0][0]}")
    return status, msgs


def check_chapter(path, build, full):
    """Returns the chapter's status: 0 ok, 1 fail, 77 nothing ran."""
    name = os.path.basename(path)
    try:
        blocks, prose, cited = read_chapter(path)
    except BlockError as e:
        print(f"✗ {e}")
        return 2
    print(f"{os.path.relpath(path, ROOT)}: {len(blocks)} checked blocks")
    failed, ran = False, 0
    for b in blocks:
        status, msgs = run_block(b, build, full)
        print("\n".join(msgs))
        failed |= status == "fail"
        ran += status in ("ok", "fail") and not b.checked_by
    known = set(cited)
    for b in blocks:
        known |= b.numbers()
        known |= {n + "x" for n in b.numbers()}
    missing = [(ln, n) for ln, n in prose_numbers(prose) if not is_known(n, known)]
    for ln, n in missing:
        print(f"  {os.path.relpath(path, ROOT)}:{ln}: the number {n} is in no checked block and not cited "
              f"(<!-- cited: {n} (where it comes from) -->)")
    failed |= bool(missing)
    if failed:
        print(f"✗ {name}")
        return 1
    if not blocks:
        print(f"- {name}: no checked blocks yet (skipped)")
        return 77
    if ran == 0 and all(not b.checked_by for b in blocks):
        print(f"- {name}: nothing ran")
        return 77
    print(f"✓ {name}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("chapters", nargs="*", help="markdown files (default: chapters/[0-9]*.md)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build directory (default: build)")
    ap.add_argument("--full", action="store_true", help="also run the blocks marked full (minutes each)")
    args = ap.parse_args()
    paths = args.chapters or sorted(os.path.join(ROOT, "chapters", f) for f in os.listdir(os.path.join(ROOT, "chapters"))
                                    if re.match(r"\d\d-.*\.md$", f))
    build = os.path.abspath(args.build)
    results = [check_chapter(os.path.abspath(p), build, args.full) for p in paths]
    if any(r in (1, 2) for r in results):
        sys.exit(max(r for r in results if r in (1, 2)))
    sys.exit(77 if results and all(r == 77 for r in results) else 0)


if __name__ == "__main__":
    main()

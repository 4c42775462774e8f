#!/usr/bin/python3
"""scripts/check_chapters.py — run the commands a chapter shows and compare what they print with
what the chapter says they print (a doctest for the chapters).

    scripts/check_chapters.py [--build build] [--full] [--update] [chapters/01-training-loop.md ...]
    ctest --test-dir build -L chapters          # one test per chapter (chapter_01, ...)

A chapter marks an expected-output block by the word `check` in the fence's info string:

    ```console check timing=samples/s,time load=1
    $ build/bin/train_mnist | cat
    epoch 1/10 [234/938] loss=0.7238 samples/s=12620
    ...
    test_accuracy=0.8963
    ```

Fences follow CommonMark (``` or ~~~, closed by a fence of the same character at least as long);
a fence left open, or a fence with an info string inside a ```-fence, is an error; blocks inside
HTML comments are ignored. Each `$ ` line is a command (run by bash in a scratch directory where
build/, scripts/, tests/, include/, chapters/, examples/ and data/ point into the repository and
build tree; commands of one block run in
order, in the same directory). The lines after it are what it must print (stdout and stderr
together), in order, with any other lines allowed between them (a `...` line shows a learner where
lines were left out). Inside a line, `...` stands for any text. Numbers are compared as written:
exactly, except the *timing* numbers: a number written `~2585` in the block (the output has no
`~`), and those the info string declares:

    timing=K1,K2     a number right after `K1=` or `K2=` is a timing (e.g. samples/s=12620)
    timing-cols=2-5  in a table row fields 2 to 5 are timings (a table row: a line whose first
                     field is a number, fields split at blanks; or a line that starts with `|`,
                     fields between the bars); `2-3:rate,6:time` also says what they measure (a
                     column without a kind is what its unit says, else a ratio)
    timing-unit=time the other timings whose unit or key does not say (and not written 1.41x or
                     78.4%) measure time (or `rate`)
    tol=3            the factor a timing may miss by (default 3; below); a timing the chapter
                     writes as 0, or a time or ratio printed as 0 (time=0.0s), is too coarse and
                     not compared
    load=1           timings hold when other processes held at most 1 core on average while the
                     commands ran (default 1): the machine's busy time from /proc/stat minus the
                     commands' own CPU time, per second, as bench/load_watch.hpp measures it; above
                     it they are not compared and the check says so. (Not the load average, which
                     counts the commands themselves and lags by a minute.) A block whose only
                     mismatch is a timing runs once more (the machine is shared: a chapter_05 run
                     under ctest once measured a 146 us step at 764 us with no other process
                     busy); it fails when the second run misses too.
    full             the command takes minutes: checked only with --full (a shorter block beside it
                     is checked every time)
    exit=N           the last command must exit with status N (default 0)
    timeout=S        a command running longer than S seconds (default 600) is killed, with its
                     children, and the block fails

A timing is a claim about this machine's speed only as a bound: it fails only when the program
ran more than `tol` times *slower* than the chapter says, never because the machine is faster.
Which way is slower comes from what the number measures: a time (a unit ns, us, ms, s or min
after it, a key like time=, a column or block declared `time`) is slower when larger, a rate
(a unit or key with /s, such as samples/s or GFLOP/s, or declared `rate`) when smaller. Any
other timing is a ratio of two timings (1.41x, 0.92, 78.4%), the same on a faster machine, and
is held to [1/tol, tol] both ways.

The numbers a chapter shows print the same on any x86-64 machine: the examples are built for
one instruction set, without floating-point contraction, with Eigen's GEMM blocking pinned
(CMakeLists.txt, tt_portable); ctest chapter_numbers_portable checks that they do not depend on
the number of threads. After a change that moves them, `--update` writes the printed numbers
(not the timings) into the chapter's blocks, and into the prose numbers that quoted the old ones
where that is unambiguous (the others are listed); review the diff.

A block the ctest of another program checks line by line says so instead: `console
checked-by=gdb_pretty_printer`. Its numbers count as checked for the rule below, the block is not
run here.

The rule for prose: every number in a chapter's text that looks like a program's output (a
decimal with two or more digits after the point, or a ratio or percentage with a decimal point
such as 1.43x or 88.9%; headings, and section numbers that a heading carries, are left out)
must appear in one of the chapter's checked blocks (as printed, or rounded to fewer digits: "about
0.896" for a printed 0.8963), or be cited in an HTML comment that says where
it comes from instead (a hand calculation, the book, a PyTorch run):

    <!-- cited: 0.8940 0.8979 (PyTorch 1.13, tests/reference/gen_cnn_mnist.py --model mlp) -->

so prose cannot drift from output.

Exit status: 0 all checked blocks matched (skips are printed with their reason), 1 a mismatch or
a prose number without a source, 2 bad usage or a malformed block, 77 nothing could run (the build
has no such programs: ctest shows it as Skipped).
"""
import argparse
import decimal
import os
import resource
import signal
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMBER = r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
# An output-like number in prose: 0.8963, 3.14e-5, 1.43x, 88.9% (not 1.5, 2x, 10).
PROSE_NUMBER = re.compile(r"(?<![A-Za-z0-9.])(\d+\.\d{2,}(?:[eE][-+]?\d+)?|\d+\.\d+(?:x|%))(?![\w.]*\d)")
COMMAND_TIMEOUT = 600  # seconds per command unless a block says timeout=


class BlockError(Exception):
    """A chapter that cannot be read (a bad attribute, an unclosed fence): exit status 2."""


def attribute(path, line, key, value, convert, ok, expected):
    """value converted, or a BlockError naming the attribute and what it should be."""
    try:
        v = convert(value)
    except ValueError:
        v = None
    if v is None or not ok(v):
        raise BlockError(f"{path}:{line}: {key}={value!r}: expected {expected}")
    return v


class Block:
    """One fenced block with `check` or `checked-by=` in its info string. body: [(line number, text)]."""

    def __init__(self, path, line, info, body):
        self.path, self.line, self.body = path, line, body
        self.attrs = {}
        words = info.split()[1:]
        for w in words:
            k, eq, v = w.partition("=")
            if k == "check" and not eq:
                continue
            if k in self.attrs:
                raise BlockError(f"{path}:{line}: attribute '{k}' given twice")
            self.attrs[k] = v if eq else None
        self.checked_by = self.attrs.pop("checked-by", None)
        if "checked-by" in info and not self.checked_by:
            raise BlockError(f"{path}:{line}: checked-by= needs the name of the ctest that checks the block")
        if self.checked_by and "check" in words:
            raise BlockError(f"{path}:{line}: a block is either `check` (run here) or `checked-by=` (run by a ctest)")
        allowed = {"timing", "timing-cols", "timing-unit", "tol", "load", "full", "exit", "timeout"}
        for k, v in self.attrs.items():
            if k not in allowed:
                raise BlockError(f"{path}:{line}: unknown attribute '{k}' (known: {', '.join(sorted(allowed))})")
            if (v is None) != (k == "full"):
                raise BlockError(f"{path}:{line}: {k}: " + ("takes no value" if k == "full" else "needs a value (k=v)"))
        self.full = "full" in self.attrs
        self.timing_keys = [k for k in (self.attrs.get("timing") or "").split(",") if k]
        for k in self.timing_keys:
            if not re.fullmatch(r"[\w/]+", k):
                raise BlockError(f"{path}:{line}: timing: {k!r}: a key is letters, digits, _ and / (samples/s)")
        self.timing_cols = {}  # column -> what it measures: "time", "rate" or None (its unit says, else a ratio)
        for part in filter(None, (self.attrs.get("timing-cols") or "").split(",")):
            m = re.fullmatch(r"(\d+)(?:-(\d+))?(?::(time|rate))?", part)
            lo, hi = (int(m.group(1)), int(m.group(2) or m.group(1))) if m else (0, 0)
            if not 1 <= lo <= hi <= 1000:
                raise BlockError(f"{path}:{line}: timing-cols: {part!r}: expected columns (1 to 1000) like 2,5 "
                                 "or 2-5, optionally with :time or :rate")
            self.timing_cols.update(dict.fromkeys(range(lo, hi + 1), m.group(3)))
        self.timing_unit = self.attrs.get("timing-unit")
        if self.timing_unit not in (None, "time", "rate"):
            raise BlockError(f"{path}:{line}: timing-unit: {self.timing_unit!r}: expected time or rate")
        finite = lambda x: x == x and x not in (float("inf"), float("-inf"))  # noqa: E731
        self.tol = attribute(path, line, "tol", self.attrs.get("tol", "3"), float, lambda x: finite(x) and x >= 1,
                             "a factor >= 1")
        self.load = attribute(path, line, "load", self.attrs.get("load", "1"), float, lambda x: finite(x) and x >= 0,
                              "cores >= 0 that other processes may hold")
        self.exit = attribute(path, line, "exit", self.attrs.get("exit", "0"), int, lambda x: 0 <= x <= 255,
                              "an exit status 0..255")
        self.timeout = attribute(path, line, "timeout", self.attrs.get("timeout", str(COMMAND_TIMEOUT)), float,
                                 lambda x: finite(x) and x > 0, "seconds > 0")
        self.commands = []  # [(command, [(line number, expected line)])]
        for lineno, text in body if not self.checked_by else []:
            if text.startswith("$ "):
                if text.rstrip().endswith("\\"):
                    raise BlockError(f"{path}:{lineno}: a command must fit on one line (no trailing backslash)")
                self.commands.append((text[2:], []))
            elif not self.commands:
                raise BlockError(f"{path}:{lineno}: a check block must start with a '$ command' line, not {text!r}")
            elif text.strip() and text.strip() != "...":
                self.commands[-1][1].append((lineno, text))
        if not self.checked_by and not self.commands:
            raise BlockError(f"{path}:{line}: an empty check block (no '$ command' line)")

    def numbers(self):
        return set(re.findall(NUMBER, "\n".join(text for _, text in self.body)))


def read_chapter(path):
    """(blocks, prose lines [(lineno, text)], cited numbers) of one markdown file. Fences follow
    CommonMark (``` or ~~~, closed by the same character at least as long); HTML comments are
    not prose and hide the blocks inside them; a fence left open is an error, as is a line that
    opens a fence with an info string inside a ```-fence (the fence before it was not closed)."""
    try:
        lines = open(path, encoding="utf-8").read().split("\n")
    except OSError as e:
        raise BlockError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise BlockError(f"{path}: not UTF-8 ({e.reason} at byte {e.start})") from None
    blocks, prose, comments = [], [], []
    fence = None          # (character, length, indent, info, first line, body)
    in_comment = False
    for i, raw in enumerate(lines):
        lineno = i + 1
        if fence:
            ch, n, indent, info, start, body = fence
            if re.fullmatch(rf"\s*{re.escape(ch)}{{{n},}}\s*", raw):
                words = info.split()
                if "check" in words or any(w.startswith("checked-by") for w in words):
                    blocks.append(Block(path, start, info, body))
                fence = None
            elif n == 3 and re.match(rf"\s*{re.escape(ch * 3)}\s*[^{re.escape(ch)}\s]", raw):
                raise BlockError(f"{path}:{start}: the fence opened here is not closed before line {lineno}, "
                                 f"which opens another ({raw.strip()!r})")
            else:
                body.append((lineno, raw[indent:] if raw[:indent].strip() == "" else raw.lstrip()))
            continue
        text = raw
        if in_comment:                                       # blank out comment text, keep the rest
            end = text.find("-->")
            if end < 0:
                comments[-1] += "\n" + text
                continue
            comments[-1] += "\n" + text[:end]
            text, in_comment = " " * (end + 3) + text[end + 3:], False
        while "<!--" in text:
            s = text.find("<!--")
            e = text.find("-->", s + 4)
            if e < 0:
                comments.append(text[s + 4:])
                text, in_comment = text[:s], True
                break
            comments.append(text[s + 4:e])
            text = text[:s] + " " * (e + 3 - s) + text[e + 3:]
        m = re.match(r"^(\s*)(`{3,}|~{3,})(.*)$", text)
        if m and not (m.group(2)[0] == "`" and "`" in m.group(3)):
            fence = (m.group(2)[0], len(m.group(2)), len(m.group(1)), m.group(3).strip(), lineno, [])
            continue
        prose.append((lineno, text))
    if fence:
        raise BlockError(f"{path}:{fence[4]}: a fence opened here is never closed")
    cited = set()
    for c in comments:
        if c.lstrip().startswith("cited:"):
            for n in re.findall(NUMBER + r"[x%]?", c):
                cited.update({n, n.rstrip("x%")})
    cited.update(re.findall(r"(?m)^#+ (\d+\.\d+) ", "\n".join(lines)))  # section numbers ("see 6.12")
    return blocks, prose, cited


def prose_numbers(prose):
    """[(lineno, number)] of output-like numbers in the text outside fences and comments."""
    found = []
    for lineno, text in prose:
        if text.lstrip().startswith("#"):               # headings: section numbers
            continue
        text = re.sub(r"\]\([^)]*\)", "]", text)        # link targets
        text = re.sub(r"https?://\S+|arXiv:\S+", "", text)
        found += [(lineno, m.group(1)) for m in PROSE_NUMBER.finditer(text)]
    return found


def is_known(n, known):
    """Whether prose number n (maybe with x or %) is a checked or cited number, or one of them
    rounded to fewer digits ("about 0.896" for a printed 0.8963; halves rounded up or to even)."""
    bare = n.rstrip("x%")
    if n in known or bare in known:
        return True
    if "e" in bare.lower():
        return False
    digits = len(bare.partition(".")[2])
    quantum = decimal.Decimal(1).scaleb(-digits)
    for k in known:
        k = k.rstrip("x%")
        if "e" in k.lower() or len(k.partition(".")[2]) <= digits or not re.fullmatch(NUMBER, k):
            continue
        d = decimal.Decimal(k)
        if bare in (str(d.quantize(quantum, decimal.ROUND_HALF_UP)), str(d.quantize(quantum, decimal.ROUND_HALF_EVEN))):
            return True
    return False


TIME_UNIT = re.compile(r"\s*(ns|us|µs|ms|s|sec|secs|seconds?|min|minutes?)\b")
RATE_UNIT = re.compile(r"\s*[\w.]*/s(ec)?\b")
RATE_KEY = re.compile(r"(per_s|/s|/sec)$")
TIME_KEY = re.compile(r"(time|(^|_)(ns|us|µs|ms|s|sec|min))$")


def timing_kind(after, key, column_kind, block_unit):
    """What a timing measures: "time" (slower when larger), "rate" (slower when smaller) or "ratio"
    (the same on a faster machine): from the unit right after it, else the key before its `=`, else
    its column's declared kind, else "ratio" when written 1.41x or 78.4%, else the block's
    timing-unit."""
    if RATE_UNIT.match(after) or (key and RATE_KEY.search(key)):
        return "rate"
    if TIME_UNIT.match(after) or (key and TIME_KEY.search(key)):
        return "time"
    if column_kind:
        return column_kind
    if re.match(r"\s*[x%]", after):
        return "ratio"
    return block_unit or "ratio"


def line_pattern(expected, block):
    """A regex for one expected line, and for each of its numbers whether it is a timing: False,
    or what the timing measures ("time", "rate" or "ratio": timing_kind)."""
    pattern, timing = "", []
    fields = expected.split()
    pipe_row = expected.lstrip().startswith("|")   # | name | 31033 | 0.82 |: fields between the bars
    table_row = pipe_row or (bool(fields) and re.fullmatch("~?" + NUMBER, fields[0]) is not None)
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
            before, after = expected[:m.start()], expected[m.end():]
            key = re.search(r"([\w/]+)=$", before)   # samples/s=12620: the key is samples/s
            key = key.group(1) if key else None
            is_timing = tok.startswith("~") or key in block.timing_keys
            if pipe_row:
                field = before.count("|")
                starts_field = before.split("|")[-1].strip() == ""
            else:
                field = len(before.split()) + 1
                starts_field = not before or before[-1].isspace()
            in_col = table_row and starts_field and field in block.timing_cols
            if in_col:
                is_timing = True  # the number opens a field the block declares a timing
            timing.append(timing_kind(after, key, block.timing_cols[field] if in_col else None,
                                      block.timing_unit if not in_col else None)
                          if is_timing else False)
        pos = m.end()
    pattern += re.escape(expected[pos:])
    return re.compile(r"\s*" + pattern + r"\s*"), timing


def machine_busy_seconds():
    """CPU seconds all cores have been busy since boot (/proc/stat), or None where unknown."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = v + [0] * (8 - len(v))
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def shown(path):
    """A chapter's path as messages show it: relative to the repository when inside it."""
    return os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path


def scratch_dir(build):
    d = tempfile.mkdtemp(prefix="check_chapters.")
    for name, target in [("build", build), ("scripts", "scripts"), ("tests", "tests"), ("include", "include"),
                         ("chapters", "chapters"), ("examples", "examples"), ("data", "data")]:
        os.symlink(os.path.join(ROOT, target) if not os.path.isabs(target) else target, os.path.join(d, name))
    return d


def is_project_program(name):
    """Whether some CMakeLists.txt / .cmake file of the project names `name` (a target that this
    build may have left out), as opposed to a typo."""
    for top in ("CMakeLists.txt", "examples", "bench", "tests", "cmake", "docs", "chapters"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)) if top != "CMakeLists.txt" else [(ROOT, [], [top])]:
            for f in files:
                if f == "CMakeLists.txt" or f.endswith(".cmake"):
                    with open(os.path.join(dirpath, f), encoding="utf-8", errors="replace") as fh:
                        if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", fh.read()):
                            return True
    return False


def run_command(cmd, cwd, timeout):
    """(exit status or None on timeout, output lines). The command runs in its own process group,
    killed whole when it outlives `timeout` (background children included)."""
    p = subprocess.Popen(["bash", "-c", cmd], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        status = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        status = None
    return status, out.decode("utf-8", "replace").split("\n")


def updated_line(exp, timing, got):
    """`exp` with each of its numbers that is not a timing replaced by the one printed (`got`)."""
    it = iter(zip(timing, got))
    def repl(m):
        is_timing, printed = next(it)
        return m.group(0) if is_timing or m.group(0).startswith("~") else printed
    return re.sub(r"~?" + NUMBER, repl, exp)


def labels_match(exp, got, timing):
    """--update: whether the printed line is the one `exp` stands for: its whole numbers that are
    not timings (epoch 7, [468/938], a rank) equal the chapter's, so only measured values (with a
    decimal point or an exponent) would change."""
    want = re.findall(NUMBER, exp.replace("~", ""))
    return all(w == g for w, g, t in zip(want, got, timing) if not t and re.fullmatch(r"\d+", w))


def compare(block, exp, out, pos, others, counts, updates=None):
    """Finds the expected line `exp` in out[pos:]. Returns (index of the matching line, None) or
    (None, message). With `updates` (a list: --update), a line of the same shape whose numbers
    differ (not only its timings) counts as found, and (exp, exp with the printed numbers) is
    appended to it."""
    pat, timing = line_pattern(exp, block)
    near = None
    for j in range(pos, len(out)):
        m = pat.fullmatch(out[j])
        if not m:
            continue
        bad = []
        for k, (got, want) in enumerate(zip(m.groups(), re.findall(NUMBER, exp.replace("~", "")))):
            if timing[k] is False:
                if got != want:
                    bad.append(f"the chapter says {want}, the program printed {got}")
            elif float(want) == 0 or (float(got) == 0 and timing[k] != "rate"):
                pass  # printed as 0 (e.g. time=0.0s): too coarse to compare (a rate of 0 is slower)
            elif others is None or others > block.load:
                counts["skipped"] += 1
            else:
                counts["compared"] += 1
                ratio = float(got) / float(want)
                kind = timing[k]
                lo = 1 / block.tol if kind in ("rate", "ratio") else 0          # a faster machine's
                hi = block.tol if kind in ("time", "ratio") else float("inf")   # numbers always pass
                if not (lo <= ratio <= hi):
                    what = {"time": "a time, slower", "rate": "a rate, slower", "ratio": "a ratio, further off"}[kind]
                    bad.append(f"timing: the chapter says {want}, the program printed {got} (x{ratio:.2f}: {what} "
                               f"than the block's tol={block.tol:g} allows)")
        if not bad:
            return j, None
        if near is None or len(bad) < len(near[1]):
            near = (j, bad, m.groups())  # the closest line of the same shape, for the message
    if near:
        # --update rewrites measured values only when no timing missed its bound on the same line
        if (updates is not None and near[1] and not any(b.startswith("timing:") for b in near[1])
                and labels_match(exp, near[2], timing)):
            updates.append((exp, updated_line(exp, timing, near[2])))
            return near[0], None
        return None, (f"the output's line {near[0] + 1}\n      {out[near[0]]}\n    differs: " + "; ".join(near[1]))
    return None, (f"no line of the output after its line {pos} has this shape; the output was:\n      " +
                  "\n      ".join(out[:60]))


def run_block(block, build, full, updates=None):
    """Returns (status, messages): status 'ok', 'skip', 'missing', 'fail', or 'timing' (only a timing
    number missed its tolerance: check_chapter measures the block once more)."""
    rel = shown(block.path)
    where = f"{rel}:{block.line}"
    if block.checked_by:
        return "ok", [f"  {where}: checked by ctest {block.checked_by}"]
    if block.full and not full:
        return "skip", [f"  {where}: skipped: a full run (minutes); scripts/check_chapters.py --full checks it"]
    for cmd, _ in block.commands:
        for prog in re.findall(r"build/bin/([\w.-]+)", cmd):
            if not os.path.exists(os.path.join(build, "bin", prog)):
                if not is_project_program(prog):
                    return "fail", [f"  {where}: `{cmd}`: no program '{prog}' in this project (a typo?)"]
                return "missing", [f"  {where}: skipped: {build}/bin/{prog} is not built"]
    d = scratch_dir(build)
    others = 0.0
    counts = {"compared": 0, "skipped": 0}
    try:
        for idx, (cmd, expected) in enumerate(block.commands):
            busy0, cpu0, t0 = machine_busy_seconds(), children_cpu_seconds(), time.time()
            code, out = run_command(cmd, d, block.timeout)
            busy1, wall = machine_busy_seconds(), time.time() - t0
            if others is not None:   # the cores other processes held, the most of any command
                others = None if busy0 is None or busy1 is None else max(
                    others, (busy1 - busy0 - (children_cpu_seconds() - cpu0)) / max(wall, 1e-3))
            if code is None:
                return "fail", [f"  {where}: `{cmd}` did not finish within {block.timeout:g} s (killed; a block may "
                                f"set timeout=SECONDS); its last lines:\n      " + "\n      ".join(out[-15:])]
            want_exit = block.exit if idx == len(block.commands) - 1 else 0
            if code != want_exit:
                return "fail", [f"  {where}: `{cmd}` exited with {code}, expected {want_exit}; its last lines:\n"
                                f"      " + "\n      ".join(out[-15:])]
            pos = 0
            for lineno, exp in expected:
                n_before = len(updates) if updates is not None else 0
                hit, why = compare(block, exp, out, pos, others, counts, updates)
                if updates is not None and len(updates) > n_before:
                    updates[-1] = (lineno,) + updates[-1]
                if hit is None:
                    parts = why.split("differs: ", 1)[1].split("; ") if "differs: " in why else [""]
                    timing_only = all(p.startswith("timing:") for p in parts)
                    return ("timing" if timing_only else "fail"), [
                        f"  {rel}:{lineno}: `{cmd}`: the chapter's line\n      {exp}\n    {why}"]
                pos = hit + 1
    finally:
        subprocess.run(["rm", "-rf", d])
    note = f"{sum(len(e) for _, e in block.commands)} lines matched"
    if counts["skipped"]:
        held = "an unknown number of" if others is None else f"{max(others, 0):.2f}"
        note += (f"; {counts['skipped']} timing numbers NOT compared: other processes held {held} cores, "
                 f"more than the block's load={block.load:g}")
    elif counts["compared"]:
        note += (f"; {counts['compared']} timing numbers within x{block.tol:g} (other processes held "
                 f"{max(others, 0):.2f} cores)")
    return "ok", [f"  {where}: ok ({note}): {block.commands[0][0]}"]


def rounded_like(n, value):
    """`value` (a printed number) rounded to as many decimals as prose number `n` shows."""
    digits = len(n.rstrip("x%").partition(".")[2])
    q = decimal.Decimal(value.rstrip("x%")).quantize(decimal.Decimal(1).scaleb(-digits), decimal.ROUND_HALF_EVEN)
    return str(q) + n[len(n.rstrip("x%")):]


def write_file(path, lines):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    os.replace(path + ".tmp", path)


def write_block_updates(path, updates):
    """--update: writes the printed numbers into the chapter's block lines. Returns {old number:
    {new numbers}} of what changed."""
    lines = open(path, encoding="utf-8").read().split("\n")
    changed = {}
    for lineno, exp, new in updates:
        raw = lines[lineno - 1]
        if exp in raw:
            lines[lineno - 1] = raw.replace(exp, new, 1)
        for a, b in zip(re.findall(NUMBER, exp.replace("~", "")), re.findall(NUMBER, new.replace("~", ""))):
            if a != b:
                changed.setdefault(a, set()).add(b)
    write_file(path, lines)
    return changed


def update_prose(path, changed, prose_missing):
    """--update: replaces each prose number that no block shows any more by the new value of the
    block number it quoted (exactly or rounded), when exactly one block number changed that way.
    Returns the prose numbers it could not replace."""
    lines = open(path, encoding="utf-8").read().split("\n")
    left = []
    for lineno, n in prose_missing:
        bare = n.rstrip("x%")
        cands = set()
        for old, news in changed.items():
            if "e" in (old + "".join(news)).lower():
                continue  # an exponent: the prose's form of it is not ours to guess
            if old == bare or is_known(bare, {old}):
                cands |= {rounded_like(n, v) for v in news}
        text = lines[lineno - 1]
        pat = rf"(?<![\d.]){re.escape(n)}(?![\d])"
        if len(cands) == 1 and len(re.findall(pat, text)) == 1:
            new = cands.pop()
            lines[lineno - 1] = re.sub(pat, new, text, count=1)
            print(f"  {shown(path)}:{lineno}: --update: the text's {n} is now {new}")
        else:
            left.append((lineno, n))
    write_file(path, lines)
    return left


QUICKSTART_TARGETS = {"train_mnist"}  # what scripts/quickstart.sh builds, before any chapter


def chapter_text_lines(path):
    """The chapter's lines with HTML comments blanked out (a build line or a program named in a
    comment is not one a student sees)."""
    text = re.sub(r"<!--.*?-->", lambda m: re.sub(r"[^\n]", " ", m.group(0)),
                  open(path, encoding="utf-8").read(), flags=re.S)
    return text.split("\n")


def built_targets(path):
    """The targets the chapter's own build lines put in build/: every target of a `cmake --build
    build ... --target a b c` (or -t a, --target=a) command in the file, plus what
    scripts/quickstart.sh builds. A line that builds another folder (build-tsan, a preset) does
    not count."""
    targets = set(QUICKSTART_TARGETS)
    for line in chapter_text_lines(path):
        for cmd in re.findall(r"cmake --build build(?=\s)[^`&|#;<>\\]*", line):
            for m in re.finditer(r"(?:--target|-t)(?:=|\s+)((?:[\w.+-]+\s*)+)", cmd):
                targets.update(t for t in m.group(1).split() if not t.startswith("-"))
    return targets


def unbuilt_programs(path):
    """[(line, program)]: build/bin programs the chapter names (in a command, a block or the text,
    not in an HTML comment) that no build line of the chapter builds (a student who followed the
    chapter from its top would get 'No such file')."""
    targets = built_targets(path)
    found = []
    for i, line in enumerate(chapter_text_lines(path)):
        found += [(i + 1, prog) for prog in re.findall(r"(?<![\w-])(?:\./)?build/bin/(\w[\w.-]*\w)", line)
                  if prog not in targets]
    return found


def check_chapter(path, build, full, update=False):
    """Returns the chapter's status: 0 ok, 1 fail, 77 nothing ran."""
    name = os.path.basename(path)
    try:
        blocks, prose, cited = read_chapter(path)
    except BlockError as e:
        print(f"✗ {e}")
        return 2
    rel = shown(path)
    print(f"{rel}: {len(blocks)} checked blocks")
    failed, ran = False, 0
    for line, prog in unbuilt_programs(path):
        print(f"  {rel}:{line}: runs build/bin/{prog}, which no build line of the chapter builds "
              f"(add it to one: cmake --build build -j2 --target ... {prog})")
        failed = True
    updates = [] if update else None
    for b in blocks:
        block_updates = [] if update else None
        status, msgs = run_block(b, build, full, block_updates)
        if status == "timing":  # the machine is shared: a timing that missed is measured once more
            print("\n".join(msgs) + "\n    (a timing only: the block runs once more)")
            block_updates = [] if update else None
            status, msgs = run_block(b, build, full, block_updates)
            if status == "timing":
                status = "fail"
        print("\n".join(msgs))
        if block_updates and status == "ok":
            updates += block_updates
        elif block_updates:
            print(f"  {shown(b.path)}:{b.line}: --update: nothing written from this block (it failed)")
        failed |= status == "fail"
        ran += status in ("ok", "fail") and not b.checked_by
    if updates:
        print(f"  {rel}: --update: {len(updates)} lines of its blocks now show the printed numbers")
        changed = write_block_updates(path, updates)
        blocks, prose, cited = read_chapter(path)
    known = set(cited)
    for b in blocks:
        known |= b.numbers()   # is_known strips a prose number's x or %
    missing = [(ln, n) for ln, n in prose_numbers(prose) if not is_known(n, known)]
    if updates:
        update_prose(path, changed, missing)
        blocks, prose, cited = read_chapter(path)   # the verdict is the rewritten chapter's
        known = set(cited)
        for b in blocks:
            known |= b.numbers()
        missing = [(ln, n) for ln, n in prose_numbers(prose) if not is_known(n, known)]
    for ln, n in missing:
        print(f"  {rel}:{ln}: the number {n} is in no checked block and not cited "
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
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].partition(" — ")[2],
                                 epilog="How to write a block: the docstring of scripts/check_chapters.py.")
    ap.add_argument("chapters", nargs="*", help="markdown files (default: chapters/[0-9]*.md)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build directory (default: build)")
    ap.add_argument("--full", action="store_true", help="also run the blocks marked full (minutes each)")
    ap.add_argument("--update", action="store_true",
                    help="write the numbers the programs print into the chapter (not timings), and the prose "
                         "numbers that quoted them; review the diff")
    args = ap.parse_args()
    paths = args.chapters or sorted(os.path.join(ROOT, "chapters", f) for f in os.listdir(os.path.join(ROOT, "chapters"))
                                    if re.match(r"\d\d-.*\.md$", f))
    build = os.path.abspath(args.build)
    if not os.path.isdir(os.path.join(build, "bin")):
        print(f"check_chapters: {build}/bin does not exist: pass the build directory with --build")
        sys.exit(2)
    results = [check_chapter(os.path.abspath(p), build, args.full, args.update) for p in paths]
    if any(r in (1, 2) for r in results):
        sys.exit(max(r for r in results if r in (1, 2)))
    sys.exit(77 if results and all(r == 77 for r in results) else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""scripts/lab.py — the labs: start one, check your work, grade it (scripts/lab.sh runs this).

    scripts/lab.sh list                       the labs and their tasks
    scripts/lab.sh start 07                   copy lab 07's skeleton to your workspace
    scripts/lab.sh check 07                   build your files against the lab's tests; a table
                                              of the tasks: passed / failed (the first failing
                                              check, the rank) / not implemented
    scripts/lab.sh grade 07 --json [FILE]     the same, and a score file (default
                                              <workspace>/07-all-reduce/grade.json)

The workspace is $TT_LAB_WORKSPACE or ~/tinytorch-labs (--dir DIR overrides both); lab NN-name
lives in <workspace>/NN-name/, outside the clone: the files there are yours. `check` configures
and builds <workspace>/build (labs/student/CMakeLists.txt, one build for every lab you started):
the first time the library is compiled (about two minutes), afterwards only what you changed. A lab may be named by number (7, 07), by directory (07-all-reduce) or by the name after
the number.

For instructors and CI:
    scripts/lab.py skeleton 07 --out DIR      write the student skeleton of lab 07 into DIR
    scripts/lab.py meta 07 --reference BIN --skeleton BIN
                                              ctest lab_07: the reference passes every task with
                                              at least one check, the skeleton fails every task
                                              with "not implemented", every test case belongs to
                                              a task of lab.json
    scripts/lab.py run 07 --program BIN       the task table of any build of the lab's tests

A lab (labs/NN-name/, how to write one: labs/README.md) holds lab.json (title, chapter, the
student's files, the test files, the tasks, and "ranks" for a lab run under MPI), the reference
solution in the student's files between markers, its tests (Catch2, one tag [task:NAME] per task)
and INSTRUCTOR.md. The markers, each on a line of its own:

    // BEGIN SOLUTION <task>        the lines up to `// END SOLUTION` are the reference; in the
    ...                             skeleton they become a TODO and
    // END SOLUTION                   throw tinytorch::NotImplemented("lab NN task <task> (file:line)");
    // BEGIN REFERENCE ONLY         lines the skeleton leaves out altogether (the #error guard that
    ...                             stops a student build from compiling the reference)
    // END REFERENCE ONLY

Each task runs in a process of its own (under scripts/mpirun.sh, on each rank count of "ranks",
for an MPI lab), with a time limit (TT_LAB_TASK_TIMEOUT seconds, default 120; an MPI lab's ranks
also give up on a peer after TINYTORCH_DIST_TIMEOUT, default here 20) and an output limit (64
MiB), so a crash, a hang or an endless loop in one task does not hide the others. One check at a
time runs in a workspace (a lock file; a second waits).
Exit status: 0 when every task passed (check, grade, meta), 1 otherwise, 2 for bad usage.
"""

import argparse
import collections
import datetime
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LABS = os.path.join(ROOT, "labs")
TASK_TIMEOUT_S = int(os.environ.get("TT_LAB_TASK_TIMEOUT", "120"))  # seconds per task (per rank count)
BEGIN = re.compile(r"^(\s*)// BEGIN SOLUTION(?:\s+(\S+))?\s*$")
END = re.compile(r"^\s*// END SOLUTION\s*$")
BEGIN_REF = re.compile(r"^\s*// BEGIN REFERENCE ONLY\s*$")
END_REF = re.compile(r"^\s*// END REFERENCE ONLY\s*$")


class LabError(Exception):
    """A message for the user; exit status 2."""


# ---- labs ---------------------------------------------------------------------------------------

def all_labs():
    out = []
    for name in sorted(os.listdir(LABS)):
        path = os.path.join(LABS, name)
        if re.match(r"^\d\d-", name) and os.path.isfile(os.path.join(path, "lab.json")):
            out.append(name)
    return out


def find_lab(key):
    """'7', '07', '07-all-reduce' or 'all-reduce' -> ('07-all-reduce', lab.json as a dict)."""
    names = all_labs()
    k = str(key).strip().rstrip("/")
    k = os.path.basename(k)
    number = re.fullmatch(r"[0-9]{1,3}", k) is not None
    matches = [n for n in names if n == k or n[3:] == k or (number and int(n[:2]) == int(k))]
    if not k or len(matches) != 1:
        raise LabError("no lab '%s'; the labs are: %s" % (key, ", ".join(names) or "(none)"))
    name = matches[0]
    return name, read_lab_json(name)


def read_lab_json(name):
    """labs/<name>/lab.json, checked: a LabError naming the file and the field for anything amiss."""
    path = os.path.join(LABS, name, "lab.json")
    where = "labs/%s/lab.json" % name
    try:
        with open(path, encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, ValueError) as e:
        raise LabError("%s: %s" % (where, e))
    if not isinstance(info, dict):
        raise LabError("%s: expected a JSON object" % where)
    for field in ("title", "chapter"):
        if not isinstance(info.get(field), str) or not info[field]:
            raise LabError("%s: '%s' must be a non-empty string" % (where, field))
    for field in ("files", "tests"):
        v = info.get(field)
        if not isinstance(v, list) or not v or not all(isinstance(x, str) and re.fullmatch(r"[\w.-]+\.cpp", x) for x in v):
            raise LabError("%s: '%s' must be a non-empty list of .cpp file names" % (where, field))
        for x in v:
            if not os.path.isfile(os.path.join(LABS, name, x)):
                raise LabError("%s: '%s' lists %s, which is not in labs/%s/" % (where, field, x, name))
    tasks = info.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise LabError("%s: 'tasks' must be a non-empty list" % where)
    seen = set()
    for i, t in enumerate(tasks):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", t["name"]):
            raise LabError("%s: task %d needs a 'name' made of letters, digits and _" % (where, i))
        if t["name"] in seen:
            raise LabError("%s: task '%s' appears twice" % (where, t["name"]))
        seen.add(t["name"])
        if not isinstance(t.get("summary"), str):
            raise LabError("%s: task '%s' needs a 'summary'" % (where, t["name"]))
    ranks = info.get("ranks")
    if ranks is not None and (not isinstance(ranks, list) or not ranks
                              or not all(isinstance(r, int) and 1 <= r <= 64 for r in ranks)):
        raise LabError("%s: 'ranks' must be a list of rank counts in [1, 64]" % where)
    env = info.get("env")
    if env is not None and (not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values())):
        raise LabError("%s: 'env' must map names to strings" % where)
    return info


def task_names(info):
    return [t["name"] for t in info["tasks"]]


# ---- skeleton -----------------------------------------------------------------------------------

def skeleton_text(name, info, filename, text):
    """The student's version of one reference file: solution bodies become a TODO and a throw."""
    nn = name[:2]
    tasks = set(task_names(info))
    out, i, lines = [], 0, text.splitlines(keepends=True)
    seen = set()
    while i < len(lines):
        line = lines[i]
        m = BEGIN.match(line)
        if re.search(r"//\s*(BEGIN|END) (SOLUTION|REFERENCE ONLY)", line) \
                and not any(p.match(line) for p in (BEGIN, END, BEGIN_REF, END_REF)):
            raise LabError("labs/%s/%s:%d: a malformed marker %r: markers are '// BEGIN SOLUTION <task>', "
                           "'// END SOLUTION', '// BEGIN REFERENCE ONLY', '// END REFERENCE ONLY', alone on their line"
                           % (name, filename, i + 1, line.strip()))
        if BEGIN_REF.match(line):
            j = i + 1
            while j < len(lines) and not END_REF.match(lines[j]):
                if BEGIN.match(lines[j]) or BEGIN_REF.match(lines[j]):
                    raise LabError("labs/%s/%s:%d: a marker inside REFERENCE ONLY" % (name, filename, j + 1))
                j += 1
            if j == len(lines):
                raise LabError("labs/%s/%s:%d: BEGIN REFERENCE ONLY without END REFERENCE ONLY" % (name, filename, i + 1))
            i = j + 1
            continue
        if m:
            indent, task = m.group(1), m.group(2)
            if task is None or task not in tasks:
                raise LabError("labs/%s/%s:%d: BEGIN SOLUTION must name a task of lab.json (%s), got %r"
                               % (name, filename, i + 1, ", ".join(sorted(tasks)), task))
            j = i + 1
            while j < len(lines) and not END.match(lines[j]):
                if BEGIN.match(lines[j]) or BEGIN_REF.match(lines[j]):
                    raise LabError("labs/%s/%s:%d: BEGIN SOLUTION at line %d has no END SOLUTION before this next "
                                   "BEGIN (markers do not nest)" % (name, filename, j + 1, i + 1))
                j += 1
            if j == len(lines):
                raise LabError("labs/%s/%s:%d: BEGIN SOLUTION without END SOLUTION" % (name, filename, i + 1))
            seen.add(task)
            out.append("%s// TODO(task %s): your code here.\n" % (indent, task))
            out.append('%sthrow tinytorch::NotImplemented("lab %s task %s (%s)");\n' % (indent, nn, task, filename))
            i = j + 1
            continue
        if END.match(line) or END_REF.match(line):
            raise LabError("labs/%s/%s:%d: END marker without BEGIN" % (name, filename, i + 1))
        if i == 0:  # "// labs/07-all-reduce/ring.cpp — ..." becomes "// ring.cpp — ...": the student's file
            line = line.replace("// labs/%s/" % name, "// ", 1)
        out.append(line)
        i += 1
    return "".join(out), seen


def write_atomic(path, data):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 -> what open() would have made
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def skeletons(name, info):
    """{file: skeleton text} for every student file; every task must have a solution region."""
    result, seen = {}, set()
    for f in info["files"]:
        with open(os.path.join(LABS, name, f), encoding="utf-8") as fh:
            text, s = skeleton_text(name, info, f, fh.read())
        result[f] = text
        seen |= s
    missing = [t for t in task_names(info) if t not in seen]
    if missing:
        raise LabError("labs/%s: task(s) %s have no BEGIN SOLUTION region in %s"
                       % (name, ", ".join(missing), ", ".join(info["files"])))
    return result


def cmd_skeleton(args):
    name, info = find_lab(args.lab)
    for f, text in skeletons(name, info).items():
        write_atomic(os.path.join(args.out, f), text)
    return 0


# ---- workspace ----------------------------------------------------------------------------------

def inside(path, root):
    real, root = os.path.realpath(path), os.path.realpath(root)
    return real == root or real.startswith(root + os.sep)


def workspace(args, name):
    if args.dir is not None and not args.dir.strip():
        raise LabError("--dir needs a directory")
    base = args.dir or os.environ.get("TT_LAB_WORKSPACE") or os.path.join(os.path.expanduser("~"), "tinytorch-labs")
    base = os.path.abspath(base)
    if inside(base, ROOT):
        raise LabError("the workspace %s is inside the tinytorch clone %s; keep your work outside it "
                       "(--dir DIR or TT_LAB_WORKSPACE=DIR)" % (base, ROOT))
    if re.search(r'[;"$\\]', base):  # CMake would split or expand them
        raise LabError("the workspace path %s holds one of ; \" $ \\, which CMake cannot take in a path; "
                       "choose another" % base)
    if os.path.exists(base) and not os.path.isdir(base):
        raise LabError("the workspace %s is not a directory" % base)
    ws = os.path.join(base, name)
    if os.path.lexists(ws) and inside(ws, ROOT):
        raise LabError("%s leads into the tinytorch clone (%s): a workspace must be outside it"
                       % (ws, os.path.realpath(ws)))
    return ws


def again(args, name, command="check"):
    """The command line to run next, with the same --dir."""
    return "scripts/lab.sh %s %s%s" % (command, name[:2], "" if args.dir is None else " --dir " + shlex.quote(args.dir))


def cmd_start(args):
    name, info = find_lab(args.lab)
    ws = workspace(args, name)
    files = skeletons(name, info)
    existing = [f for f in files if os.path.lexists(os.path.join(ws, f))]
    if existing and not args.force:
        raise LabError("%s already holds %s: your work is kept. To start over, move it away or run "
                       "`%s --force` (the old files are kept as *.orig, *.orig.1, ...)"
                       % (ws, ", ".join(existing), again(args, name, "start")))
    for f, text in files.items():
        dst = os.path.join(ws, f)
        if os.path.lexists(dst) and inside(dst, ROOT):
            raise LabError("%s leads into the tinytorch clone (%s): not touching it" % (dst, os.path.realpath(dst)))
        if os.path.lexists(dst):
            keep, k = dst + ".orig", 0
            while os.path.lexists(keep):  # never overwrite an earlier copy
                k += 1
                keep = "%s.orig.%d" % (dst, k)
            os.replace(dst, keep)
            print("your old %s is now %s" % (f, keep))
        write_atomic(dst, text)
    print("lab %s: %s (%s)" % (name, info["title"], info["chapter"]))
    print("your files: %s" % ", ".join(os.path.join(ws, f) for f in files))
    print("tasks:")
    for t in info["tasks"]:
        print("  %-18s %s" % (t["name"], t["summary"]))
    print("next: edit the files, then run  %s" % again(args, name))
    return 0


OUTPUT_CAP = 64 * 1024 * 1024  # a program that prints more than this is stopped


def run_captured(cmd, env=None, timeout=None):
    """Runs cmd in a process group of its own and reads its stdout+stderr as it comes, keeping the
    first and the last 64 KiB (memory stays bounded whatever the program prints; one that prints
    more than OUTPUT_CAP bytes is stopped). Returns (exit status, or None when it was killed at
    the timeout or the cap; its output, decoded leniently: a program may print any bytes)."""
    limit = 64 * 1024
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    head, tail_chunks, total = bytearray(), collections.deque(), [0, False]

    def kill():
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def reader():
        tail_size = 0
        while True:
            chunk = p.stdout.read1(65536) if hasattr(p.stdout, "read1") else p.stdout.read(65536)
            if not chunk:
                return
            total[0] += len(chunk)
            if len(head) < limit:
                take = limit - len(head)
                head.extend(chunk[:take])
                chunk = chunk[take:]
            if chunk:
                tail_chunks.append(chunk)
                tail_size += len(chunk)
                while tail_size - len(tail_chunks[0]) >= limit:
                    tail_size -= len(tail_chunks.popleft())
            if total[0] > OUTPUT_CAP and not total[1]:
                total[1] = True
                kill()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    try:
        code = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill()
        p.wait()
        code = None
    except BaseException:
        kill()
        p.wait()
        raise
    t.join()
    tail_bytes = b"".join(tail_chunks)
    kept = len(head) + len(tail_bytes)
    data = bytes(head) + (b"\n[... %d bytes of output left out ...]\n" % (total[0] - kept) if total[0] > kept else b"") \
        + tail_bytes
    text = data.decode("utf-8", errors="replace")
    if total[1]:
        text += "\n[stopped: the program printed more than %d MiB]" % (OUTPUT_CAP >> 20)
        code = None
    return code, text


def cache_value(cache, key):
    m = re.search(r"^%s:[A-Z]+=(.*)$" % re.escape(key), cache, re.M)
    return m.group(1) if m else None


def configure_and_build(name, info, ws, jobs):
    """Builds lab_NN in the workspace's build directory (<workspace>/build, shared by every lab
    started there: the library is compiled once); returns (program, None) or (None, message)."""
    root = os.path.dirname(ws)
    build = os.path.join(root, "build")
    target = "lab_" + name[:2]
    cache_path = os.path.join(build, "CMakeCache.txt")
    if os.path.exists(cache_path):
        with open(cache_path, encoding="utf-8", errors="replace") as f:
            cache = f.read()
        made_for = (cache_value(cache, "CMAKE_CACHEFILE_DIR"), cache_value(cache, "TT_LAB_WORKSPACE"))
        if cache_value(cache, "CMAKE_PROJECT_NAME") == "tinytorch_labs" and made_for != (build, root):
            # A workspace copied or moved from elsewhere: its build still compiles the old files.
            print("%s was made for the workspace %s: building afresh for this one" % (build, made_for[1]), flush=True)
            shutil.rmtree(build)
    generated = os.path.exists(cache_path) and any(
        os.path.exists(os.path.join(build, f)) for f in ("Makefile", "build.ninja"))
    known = os.path.isdir(os.path.join(build, "CMakeFiles", target + ".dir"))
    if not (generated and known):
        first = "" if generated else " (the first time: the library is compiled too, about two minutes)"
        print("configuring %s for lab %s%s ..." % (build, name, first), flush=True)
        code, out = run_captured(["cmake", "-S", os.path.join(LABS, "student"), "-B", build,
                                  "-DTT_LAB_WORKSPACE=" + root])
        if code != 0 or not os.path.isdir(os.path.join(build, "CMakeFiles", target + ".dir")):
            return None, (out.rstrip() + "\nlab %s: the build directory %s could not be configured (CMake's messages "
                          "are above): not a problem in your code; delete that directory and check again"
                          % (name, build))
    code, out = run_captured(["cmake", "--build", build, "--target", target, "-j", str(jobs)])
    if code != 0:
        return None, out.rstrip() + "\nlab %s: your code does not build (the compiler's messages are above); no task ran" % name
    return os.path.join(build, "bin", target), None


# ---- running the tasks ----------------------------------------------------------------------------

def run_task(program, task, ranks, tmp, extra_env=None):
    """Runs one task's test cases; returns (status, detail) with status one of 'passed', 'failed',
    'not implemented'."""
    report = os.path.join(tmp, task)
    for f in os.listdir(tmp):
        if f.startswith(task + ".rank"):
            os.unlink(os.path.join(tmp, f))
    env = dict(os.environ, TT_LAB_REPORT=report)
    env.update(extra_env or {})  # lab.json's "env", e.g. the kernel simulator's checks
    env.setdefault("TINYTORCH_DIST_TIMEOUT", "20")  # a rank that waits for a peer: an error after 20 s
    cmd = [program, "[task:%s]" % task, "--warn", "NoTests"]
    if ranks:
        cmd = ["bash", os.path.join(ROOT, "scripts", "mpirun.sh"), "-np", str(ranks)] + cmd
    code, out = run_captured(cmd, env=env, timeout=TASK_TIMEOUT_S)
    where = " on %d ranks" % ranks if ranks else ""
    cases, fails, checks, open_cases, empty_cases = [], [], 0, {}, []
    for f in sorted(os.listdir(tmp)):
        if not f.startswith(task + ".rank"):
            continue
        rank = f[len(task) + 5:]
        with open(os.path.join(tmp, f), encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.rstrip("\n").split("\t")
                if parts[0] == "case" and len(parts) >= 2:
                    cases.append(parts[1])
                    open_cases[rank] = parts[1]
                elif parts[0] == "fail" and len(parts) >= 3:
                    fails.append((rank, parts[1], parts[2].replace("\\n", "\n"), cases[-1] if cases else "?"))
                elif parts[0] == "end" and len(parts) >= 4:
                    open_cases.pop(rank, None)
                    n = int(parts[2]) + int(parts[3])
                    checks += n
                    if n == 0:
                        empty_cases.append(parts[1])
    # A rank killed by another rank's MPI_Abort reports the SIGTERM as its failure: not the cause.
    fails = [x for x in fails if "SIGTERM" not in x[2]]
    not_impl = [x for x in fails if ": not implemented" in x[2]]
    if not_impl:
        return "not implemented", not_impl[0][2].split("threw: ")[-1]
    if fails:
        r, at, what, case = fails[0]
        if what.startswith("threw: "):  # an exception: where the last check was is no help
            at = 'in "%s"' % case
        else:
            at = os.path.basename(at.rsplit(":", 1)[0]) + ":" + at.rsplit(":", 1)[1]
        who = "rank %s of %d, " % (r, ranks) if ranks and ("rank %s of %d" % (r, ranks)) not in what else ""
        return "failed", "%s%s: %s" % (who, at, what)
    if code is None and out.endswith("MiB]"):
        return "failed", "the program printed more than %d MiB%s and was stopped: an endless loop that prints? " \
               "(last output: %s)" % (OUTPUT_CAP >> 20, where, tail(out))
    if code is None:
        why = "a rank waits for a message that never comes, or" if ranks else "is there"
        return "failed", "no result after %d s%s: %s an endless loop? (last output: %s)" % (
            TASK_TIMEOUT_S, where, why, tail(out))
    if open_cases:
        rank, case = sorted(open_cases.items())[0]
        return "failed", "the program ended in the middle of \"%s\"%s%s (status %s): exit(), abort() or a crash in " \
               "your code? %s" % (case, " on rank " + rank if ranks else "", where, code, first_error(out))
    if code != 0:
        return "failed", "the program stopped (status %s)%s: %s" % (code, where, first_error(out))
    if not cases:
        return "failed", "no test case of this task ran%s: a lab without tests grades nothing" % where
    if checks == 0:
        return "failed", "its test cases ran but checked nothing%s (no CHECK/REQUIRE was reached)" % where
    if empty_cases:
        return "passed", "%d checks%s; but test case \"%s\" checked nothing" % (checks, where, empty_cases[0])
    return "passed", "%d checks%s" % (checks, where)


ERROR_LINE = re.compile(r"Watchdog caught|terminate called|what\(\)|[Ee]rror|Segmentation fault|Aborted|signal \d+|"
                        r"AddressSanitizer|runtime error")


def first_error(out):
    """The first line of the output that says what went wrong, else its last lines."""
    for line in (out or "").splitlines():
        if ERROR_LINE.search(line) and "MPI_ABORT was invoked" not in line:
            return line.strip()
    return tail(out)


def tail(out, n=3):
    lines = [l for l in (out or "").splitlines() if l.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"


def run_lab(name, info, program):
    """[(task, status, detail)] for every task, each on every rank count of the lab."""
    results = []
    rank_counts = info.get("ranks") or [None]
    with tempfile.TemporaryDirectory(prefix="tt-lab-") as tmp:
        for t in task_names(info):
            status, detail = "passed", []
            for np_ in rank_counts:
                s, d = run_task(program, t, np_, tmp, info.get("env"))
                if s != "passed":
                    status, detail = s, [d]
                    break
                detail.append(d)
            results.append((t, status, "; ".join(detail)))
            print_row(*results[-1])
    return results


def print_row(task, status, detail):
    mark = {"passed": "PASS", "failed": "FAIL", "not implemented": "TODO"}.get(status, status)
    print("  %-4s %-18s %s" % (mark, task, " ".join(detail.split())), flush=True)  # one line per task


# ---- check / grade ----------------------------------------------------------------------------

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


GUARD = re.compile(r"^\s*#\s*ifndef\s+TT_LAB_REFERENCE\b", re.M)


def cmd_check(args, grade=False):
    name, info = find_lab(args.lab)
    ws = workspace(args, name)
    if grade and args.json and os.path.isdir(args.json):
        raise LabError("--json %s is a directory; give the score file's path" % args.json)
    missing = [f for f in info["files"] if not os.path.isfile(os.path.join(ws, f))]
    if missing:
        raise LabError("%s has no %s: run `%s` first" % (ws, ", ".join(missing), again(args, name, "start")))
    for f in info["files"]:
        path = os.path.join(ws, f)
        if inside(path, ROOT):
            raise LabError("%s leads into the tinytorch clone (%s): the check grades your own copy"
                           % (path, os.path.realpath(path)))
        with open(path, encoding="utf-8", errors="replace") as fh:
            if GUARD.search(fh.read()):
                raise LabError("%s is a copy of the reference solution (it holds the reference guard "
                               "#ifndef TT_LAB_REFERENCE); the check grades your own code: `%s --force` gives you "
                               "the skeleton" % (path, again(args, name, "start")))
    print("lab %s: %s (%s); your files in %s" % (name, info["title"], info["chapter"], ws), flush=True)
    # One check at a time per workspace: a second one would rebuild the program while the first runs it.
    os.makedirs(os.path.dirname(ws), exist_ok=True)
    with open(os.path.join(os.path.dirname(ws), ".lab-check.lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            print("another check is running in this workspace; waiting for it ...", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        program, errors = configure_and_build(name, info, ws, args.jobs)
        if program is None:
            print(errors)
            results = [(t, "failed", "does not build") for t in task_names(info)]
        else:
            results = run_lab(name, info, program)
    passed = sum(1 for r in results if r[1] == "passed")
    print("lab %s: %d/%d tasks passed" % (name, passed, len(results)))
    if grade:
        out = args.json or os.path.join(ws, "grade.json")
        data = {
            "lab": name,
            "title": info["title"],
            "score": passed,
            "max_score": len(results),
            "tasks": [{"name": t, "status": s, "detail": d} for t, s, d in results],
            "files": {f: sha256(os.path.join(ws, f)) for f in info["files"]},
            "graded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
        write_atomic(out, json.dumps(data, indent=2) + "\n")
        print("score file: %s" % out)
    return 0 if passed == len(results) else 1


# ---- meta (ctest lab_NN) ----------------------------------------------------------------------

def listed_tags(program):
    r = subprocess.run([program, "--list-tags"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return set(re.findall(r"\[task:([^\]]+)\]", r.stdout))


def untagged_cases(program, tasks):
    spec = "".join("~[task:%s]" % t for t in tasks)
    r = subprocess.run([program, "--list-test-names-only", spec], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return [l for l in r.stdout.splitlines() if l.strip()]


def check_program(path):
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise LabError("%s is not a program that can run (not built?)" % path)


def cmd_meta(args):
    name, info = find_lab(args.lab)
    check_program(args.reference)
    check_program(args.skeleton)
    tasks = task_names(info)
    problems = []
    sources = [os.path.join(LABS, name, f) for f in ["lab.json", "lab.hpp"] + info["files"] + info["tests"]]
    newest = max(os.path.getmtime(f) for f in sources if os.path.exists(f))
    for prog in (args.reference, args.skeleton):
        if os.path.getmtime(prog) < newest:
            problems.append("%s is older than the lab's sources: it was not rebuilt (did the build fail?)" % prog)
    tags = listed_tags(args.reference)
    if tags != set(tasks):
        problems.append("the tests' [task:...] tags %s differ from lab.json's tasks %s" % (sorted(tags), sorted(tasks)))
    stray = untagged_cases(args.reference, tasks)
    if stray:
        problems.append("test cases without a task tag of lab.json: %s" % "; ".join(stray))
    print("lab %s, reference solution:" % name, flush=True)
    for t, s, d in run_lab(name, info, args.reference):
        if s != "passed":
            problems.append("reference, task %s: %s (%s)" % (t, s, d))
        elif "checked nothing" in d:
            problems.append("reference, task %s: %s (every test case must check something)" % (t, d))
    print("lab %s, student skeleton:" % name, flush=True)
    for t, s, d in run_lab(name, info, args.skeleton):
        if s != "not implemented":
            problems.append("skeleton, task %s: %s instead of 'not implemented' (%s)" % (t, s, d))
    for p in problems:
        print("lab %s: %s" % (name, p))
    print("lab %s: %s" % (name, "FAILED" if problems else "the reference passes every task, the skeleton none"))
    return 1 if problems else 0


def cmd_run(args):
    name, info = find_lab(args.lab)
    check_program(args.program)
    results = run_lab(name, info, args.program)
    return 0 if all(r[1] == "passed" for r in results) else 1


def cmd_list(args):
    for name in all_labs():
        try:
            info = read_lab_json(name)
        except LabError as e:
            print("%s  (broken: %s)" % (name, e))
            continue
        extra = " (MPI, %s ranks)" % "/".join(str(r) for r in info["ranks"]) if info.get("ranks") else ""
        print("%s  %s%s — %s" % (name, info["title"], extra, info["chapter"]))
        for t in info["tasks"]:
            print("      %-18s %s" % (t["name"], t["summary"]))
    return 0


def main(argv):
    ap = argparse.ArgumentParser(prog="scripts/lab.sh", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the labs and their tasks")
    for c in ("start", "check", "grade"):
        p = sub.add_parser(c)
        p.add_argument("lab")
        p.add_argument("--dir", help="the workspace (default $TT_LAB_WORKSPACE or ~/tinytorch-labs)")
        if c == "start":
            p.add_argument("--force", action="store_true", help="start over; your old files become *.orig")
        else:
            p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
        if c == "grade":
            p.add_argument("--json", nargs="?", const="", default="",
                           help="where to write the score file (default <workspace>/NN-name/grade.json)")
    p = sub.add_parser("skeleton")
    p.add_argument("lab")
    p.add_argument("--out", required=True)
    p = sub.add_parser("meta")
    p.add_argument("lab")
    p.add_argument("--reference", required=True)
    p.add_argument("--skeleton", required=True)
    p = sub.add_parser("run")
    p.add_argument("lab")
    p.add_argument("--program", required=True)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "list":
            return cmd_list(args)
        if args.cmd == "start":
            return cmd_start(args)
        if args.cmd == "check":
            return cmd_check(args)
        if args.cmd == "grade":
            return cmd_check(args, grade=True)
        if args.cmd == "skeleton":
            return cmd_skeleton(args)
        if args.cmd == "meta":
            return cmd_meta(args)
        return cmd_run(args)
    except LabError as e:
        print("lab.sh: %s" % e, file=sys.stderr)
        return 2
    except BrokenPipeError:  # `lab.sh list | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as e:  # an unwritable workspace or score file, a full disk, ...
        print("lab.sh: %s%s" % (e.strerror or e, ": " + e.filename if e.filename else ""), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""scripts/lint_text.py — text says what is: no history in the code, the build files and the docs.

    scripts/lint_text.py                 # every tracked file in scope; exit 1 and a line per finding
    scripts/lint_text.py FILE...         # only these files (ctest lint_text_fails plants one)

The history of the project lives in `git log`. What the code, the scripts, the CMake files, the
README and the reference pages in docs/ say is what is today, so none of them may hold:

  date          an ISO date, YYYY-MM-DD (also inside a file name or a timestamp); other date
                formats are not looked for
  commit        a word of 7 to 40 hex digits, either case, or git describe's g<hex>, that names a
                commit of this repository (asked of `git cat-file`; a 0x literal, a CRC constant
                or a hash of something else passes)
  history       "was <a number>, now ...", "used to be", "until recently", "formerly", and the
                banners of an old cut of a file ("the first batch:", "the second family"; a batch
                of data passes)

Out of scope: the chapters (chapters/**: a chapter may say what a run was measured on, and why a
design changed), data/, generated reference data (*.json, *.txt but CMakeLists.txt), binary
files, and this script and its test (tests/text/lint_text_fails.sh, ctest text_lint_fails: it
plants each kind in a file of its own and checks that the script fails on it).
"""
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = re.compile(r"^(chapters|data)/|\.(png|svg|gz|json|safetensors|ubyte|pdf|ico)$|(?<!CMakeLists)\.txt$"
                  r"|^scripts/lint_text\.py$|^tests/text/lint_text_fails\.sh$")  # these two name what they forbid

DATE = re.compile(r"(?<!\d)(?:19|20)\d\d-[01]\d-[0-3]\d(?!\d)")
HEX = re.compile(r"(?<![0-9A-Za-z_])(?:0x)?g?([0-9A-Fa-f]{7,40})(?![0-9A-Za-z_])")
HISTORY = re.compile(
    r"\bwas\s+[^,;:()\n]{0,30}\d[^,;\n]{0,30}[,;]\s*now\b"
    r"|\bused\s+to\s+be\b"
    r"|\buntil\s+recently\b"
    r"|\bformerly\b"
    r"|\b(?:first|second|third)\s+family\b"
    r"|\bthe\s+(?:first|second|third)\s+batch:",
    re.IGNORECASE)


def git(*args, **kw):
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, **kw)


def tracked_files():
    out = git("ls-files", "-z")
    if out.returncode != 0:
        sys.exit(f"lint_text: {ROOT} is not a git checkout: pass the files to check")
    names = [n.decode("utf-8", "surrogateescape") for n in out.stdout.split(b"\0") if n]
    return [ROOT / n for n in names if not SKIP.search(n)]


def commits(words):
    """The words among `words` that name a commit of this repository (None: no repository)."""
    if git("rev-parse", "--git-dir").returncode != 0:
        return None
    words = sorted(words)
    if not words:
        return set()
    query = "".join(f"{w}^{{commit}}\n" for w in words)
    out = git("cat-file", "--batch-check", input=query, text=True)
    if out.returncode != 0:
        return None
    # Each answer is "<sha> commit <size>", or "<word>^{commit} missing" / "... ambiguous".
    return {w for w, line in zip(words, out.stdout.splitlines()) if line.split()[1:2] == ["commit"]}


def read(path):
    """The file's text, or an error message for what is not a readable regular file."""
    try:
        st = path.stat()
    except OSError as e:
        return None, f"cannot read it ({e.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return None, "not a regular file"
    return path.read_bytes().decode("utf-8", "replace"), None


def main(argv):
    files = [Path(os.path.abspath(a)) for a in argv] if argv else tracked_files()
    findings = []  # (shown path, line number, kind, text)
    errors = []
    hex_words = {}
    for path in files:
        try:
            shown = path.relative_to(ROOT)
        except ValueError:
            shown = path
        text, err = read(path)
        if err:
            if argv or path.exists() or path.is_symlink():  # a tracked file deleted in the work tree is fine
                errors.append(f"{shown}: {err}")
            continue
        for n, line in enumerate(text.split("\n"), 1):
            for m in DATE.finditer(line):
                findings.append((shown, n, "date", m.group(0)))
            for m in HISTORY.finditer(line):
                findings.append((shown, n, "history", m.group(0)))
            for m in HEX.finditer(line):
                if not m.group(0).lower().startswith("0x"):
                    hex_words.setdefault(m.group(1).lower(), []).append((shown, n, m.group(0)))
    found = commits(set(hex_words))
    if found is None:
        print("lint_text: not a git checkout: commit hashes not checked", file=sys.stderr)
        found = set()
    for w in found:
        for shown, n, text in hex_words[w]:
            findings.append((shown, n, "commit", text))
    for shown, n, kind, what in sorted(findings, key=lambda f: (str(f[0]), f[1])):
        print(f"{shown}:{n}: {kind}: '{what}' (history belongs in git log: say what is)")
    for e in errors:
        print(f"lint_text: {e}")
    if errors:
        return 2
    if findings:
        print(f"lint_text: {len(findings)} finding(s) in {len({f[0] for f in findings})} file(s)")
        return 1
    print(f"lint_text: {len(files)} files, no dates, commit hashes or history")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

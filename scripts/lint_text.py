#!/usr/bin/env python3
"""scripts/lint_text.py — text says what is: no history in the code, the build files and the docs.

    scripts/lint_text.py                 # every tracked file in scope; exit 1 and a line per finding
    scripts/lint_text.py FILE...         # only these files (ctest lint_text_fails plants one)

The history of the project lives in `git log`. What the code, the scripts, the CMake files, the
README and the reference pages in docs/ say is what is today, so none of them may hold:

  date          an ISO date (2026-12-05): a measurement says what it was measured on, not when
  commit        a word of 7 to 40 hex digits that names a commit of this repository (asked of
                `git cat-file`; a CRC constant, a hex literal or a hash of something else passes)
  history       "was X, now Y", "used to be", "until recently", and the banners of an old cut of
                a file ("the first batch:", "the second family"; a batch of data passes)

Out of scope: the chapters (chapters/**: a chapter may say what a run was measured on, and why a
design changed), data/, generated reference data (*.json, *.txt but CMakeLists.txt), binary
files, and this script and its test (tests/text/lint_text_fails.sh, ctest text_lint_fails: it
plants each kind in a file of its own and checks that the script fails on it).
"""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = re.compile(r"^(chapters|data)/|\.(png|svg|gz|json|safetensors|ubyte|pdf|ico)$|(?<!CMakeLists)\.txt$"
                  r"|^scripts/lint_text\.py$|^tests/text/lint_text_fails\.sh$")  # these two name what they forbid

DATE = re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b")
HEX = re.compile(r"(?<![0-9A-Za-z_])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![0-9A-Za-z_])")
HISTORY = re.compile(
    r"\bwas\s[^,;:()\n]{1,40}?,\s*now\b"
    r"|\bused to be\b"
    r"|\buntil recently\b"
    r"|\b(?:first|second|third) family\b"
    r"|\bthe (?:first|second|third) batch:",
    re.IGNORECASE)


def tracked_files():
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True)
    return [ROOT / f for f in out.stdout.splitlines() if not SKIP.search(f)]


def commits(words):
    """The words among `words` that name a commit of this repository."""
    if not words:
        return set()
    words = sorted(words)
    query = "".join(f"{w}^{{commit}}\n" for w in words)
    out = subprocess.run(["git", "-C", str(ROOT), "cat-file", "--batch-check"], input=query,
                         capture_output=True, text=True)
    if out.returncode != 0:
        return set()
    return {w for w, line in zip(words, out.stdout.splitlines()) if line.endswith(" commit") or " commit " in line}


def main(argv):
    files = [Path(a).resolve() for a in argv] if argv else tracked_files()
    findings = []  # (path, line number, kind, text)
    hex_words = {}
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        try:
            shown = path.relative_to(ROOT)
        except ValueError:
            shown = path
        for n, line in enumerate(text.splitlines(), 1):
            for m in DATE.finditer(line):
                findings.append((shown, n, "date", m.group(0)))
            for m in HISTORY.finditer(line):
                findings.append((shown, n, "history", m.group(0)))
            for m in HEX.finditer(line):
                hex_words.setdefault(m.group(0), []).append((shown, n))
    for w in commits(set(hex_words)):
        for shown, n in hex_words[w]:
            findings.append((shown, n, "commit", w))
    for shown, n, kind, what in sorted(findings, key=lambda f: (str(f[0]), f[1])):
        print(f"{shown}:{n}: {kind}: '{what}' (history belongs in git log: say what is)")
    if findings:
        print(f"lint_text: {len(findings)} finding(s) in {len({f[0] for f in findings})} file(s)")
        return 1
    print(f"lint_text: {len(files)} files, no dates, commit hashes or history")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

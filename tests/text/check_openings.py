#!/usr/bin/env python3
"""tests/text/check_openings.py — every file of include/tinytorch/ opens with what it implements and
its chapter, briefly (ctest header_openings).

Each .hpp, .ipp, .cuh (and .h, .cu, .inl) starts with a comment (its leading `//` lines, blank
lines between them included) that names its chapter ("Chapter: chapters/NN-name.md", a chapter
that exists) and is at most 30 lines: what the file implements, its math and shapes; the
explanation belongs to the chapter. The files whose opening is still longer are listed below
with their length today: an opening may shrink, never grow, a file that reaches the limit must
leave the list, and an entry that names no header is an error (the check says which), so the
list only gets shorter. A change to a number in LONGER shows in review.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
LIMIT = 30
# A header whose opening must stay longer for now is listed here with its length (it may shrink,
# never grow); the explanation belongs to its chapter. Empty: every header opens in 30 lines.
LONGER: dict = {}


EXTS = ("hpp", "ipp", "cuh", "h", "cu", "inl")
CHAPTER = re.compile(r"Chapters?: (chapters/\d\d-[a-z0-9-]+\.md)(?![\w-]|\.\w)")


def opening(lines):
    """The file's opening: its leading comment lines (blank lines between them included, trailing
    ones not), up to the first line of code."""
    n = 0
    for i, line in enumerate(lines):
        if line.startswith("//"):
            n = i + 1
        elif line.strip():
            break
    return lines[:n]


def main():
    errors = []
    base = ROOT / "include" / "tinytorch"
    files = sorted(p for ext in EXTS for p in base.rglob(f"*.{ext}") if p.is_file())
    if not files:
        print(f"header_openings: no header under {base}")
        return 1
    names = set()
    for path in files:
        rel = path.relative_to(base).as_posix()
        names.add(rel)
        try:
            lines = path.read_bytes().decode("utf-8").lstrip("\ufeff").split("\n")
        except UnicodeDecodeError as e:
            errors.append(f"{rel}: not UTF-8 text ({e})")
            continue
        head = opening(lines)
        n = len(head)
        m = CHAPTER.search("\n".join(head))
        if not m:
            errors.append(f"{rel}: its opening comment names no chapter ('// Chapter: chapters/NN-name.md.')")
        elif not (ROOT / m.group(1)).is_file():
            errors.append(f"{rel}: names {m.group(1)}, which does not exist")
        allowed = LONGER.get(rel, LIMIT)
        if n > allowed:
            errors.append(f"{rel}: its opening is {n} lines, more than {allowed}: say what the file implements "
                          f"and its chapter; the explanation belongs to the chapter")
        elif rel in LONGER and n <= LIMIT:
            errors.append(f"{rel}: its opening is {n} lines now: remove it from LONGER in {Path(__file__).name}")
        elif rel in LONGER and n < LONGER[rel]:
            errors.append(f"{rel}: its opening shrank to {n} lines: write {n} in LONGER in {Path(__file__).name}")
    for rel in sorted(set(LONGER) - names):
        errors.append(f"{rel}: listed in LONGER but not a header: remove it from LONGER in {Path(__file__).name}")
    for e in errors:
        print(e)
    if errors:
        return 1
    print(f"header_openings: {len(files)} files name their chapter; {len(files) - len(LONGER)} open in at most "
          f"{LIMIT} lines, {len(LONGER)} longer ones listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""tests/text/check_openings.py — every file of include/tinytorch/ opens with what it implements and
its chapter, briefly (ctest header_openings).

Each .hpp, .ipp, .cuh (and .h, .cu, .inl) starts with a comment (its leading `//` lines, blank
lines between them included) that names its chapter ("Chapter: chapters/NN-name.md", a chapter
that exists) and is at most 30 lines: what the file implements, its math and shapes; the
explanation belongs to the chapter.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
LIMIT = 30


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
    for path in files:
        rel = path.relative_to(base).as_posix()
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
        if n > LIMIT:
            errors.append(f"{rel}: its opening is {n} lines, more than {LIMIT}: say what the file implements "
                          f"and its chapter; the explanation belongs to the chapter")
    for e in errors:
        print(e)
    if errors:
        return 1
    print(f"header_openings: {len(files)} files name their chapter and open in at most {LIMIT} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())

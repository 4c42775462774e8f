#!/usr/bin/env python3
"""tests/text/check_core_lines.py [README] — the README's "Read in this order" table tells the truth
(ctest readme_core_lines): its rows are numbered 1..N in order, each names a different file of
include/tinytorch/ that has the number of lines the row says (as `wc -l` counts them), the total
row is their sum, and the list is the tiny core it promises (at most 3,500 lines). On a mismatch
it prints the row to write; a table line it cannot read is an error, not a row left out."""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
CORE = (ROOT / "include" / "tinytorch").resolve()
ROW = re.compile(r"^\| (\d+) \| \[`([^`]+)`\]\(([^)\s]+)\) \| (\d+) \| [^|]+ \|$")
TOTAL = re.compile(r"^\| \| total \| (\d+) \| \|$")


def lines_of(path):
    """Newline characters, as `wc -l` counts."""
    return path.read_bytes().count(b"\n")


def main(argv):
    readme = Path(argv[0]) if argv else ROOT / "README.md"
    try:
        text = readme.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        print(f"{readme}: cannot read it as UTF-8 text ({e})")
        return 2
    m = re.search(r"^## Read in this order[ \t]*\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not m:
        print(f"{readme}: no '## Read in this order' section")
        return 1
    table = [l.rstrip() for l in m.group(1).split("\n") if l.startswith("|")]
    errors, seen, counted, rows, total = [], set(), 0, 0, None
    for line in table[2:]:  # after the header and its |---| line
        if (t := TOTAL.match(line)):
            total = int(t.group(1))
            continue
        r = ROW.match(line)
        if not r:
            errors.append(f"a line of the table is not '| N | [`file`](path) | lines | what |': {line}")
            continue
        num, name, link, claimed = int(r.group(1)), r.group(2), r.group(3), int(r.group(4))
        rows += 1
        if num != rows:
            errors.append(f"row {num}: rows are numbered 1, 2, ... in order; this is row {rows}")
        path = (readme.parent / link).resolve()
        if CORE not in path.parents:
            errors.append(f"row {num}: {link} is not a file of include/tinytorch/")
            continue
        if not path.is_file():
            errors.append(f"row {num}: {link} is not a file")
            continue
        if path in seen:
            errors.append(f"row {num}: {link} is listed twice")
        seen.add(path)
        n = lines_of(path)
        counted += n
        if n != claimed:
            errors.append(f"row {num}: {name} has {n} lines, the README says {claimed} (write {n})")
    if rows == 0:
        errors.append("the table has no rows of the form | N | [`file`](path) | lines | what |")
    if total is None:
        errors.append("no '| | total | N | |' row")
    elif total != counted:
        errors.append(f"the total row says {total}, the files have {counted} lines (write {counted})")
    if counted > 3500:
        errors.append(f"the core is {counted} lines: more than the 3,500 a student can read first")
    for e in errors:
        print(f"{readme}: {e}")
    if errors:
        return 1
    print(f"{readme}: {rows} files of the tiny core, {counted} lines, as the table says")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

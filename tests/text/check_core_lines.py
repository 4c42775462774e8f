#!/usr/bin/env python3
"""tests/text/check_core_lines.py [README] — the README's "Read in this order" table tells the truth
(ctest readme_core_lines): every row's file exists and has the number of lines the row says, the
total row is their sum, and the list is the tiny core it promises (at most 3,500 lines). On a
mismatch it prints the row to write."""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
readme = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "README.md"
text = readme.read_text(encoding="utf-8")
m = re.search(r"^## Read in this order\n(.*?)(?=^## )", text, re.S | re.M)
if not m:
    sys.exit(f"{readme}: no '## Read in this order' section")
rows = re.findall(r"^\| (\d+) \| \[`([^`]+)`\]\(([^)]+)\) \| (\d+) \|", m.group(1), re.M)
total = re.search(r"^\| \| total \| (\d+) \|", m.group(1), re.M)
errors = []
counted = 0
for num, name, link, lines in rows:
    path = (readme.parent / link).resolve()
    if not path.is_file():
        errors.append(f"row {num}: {link} does not exist")
        continue
    n = len(path.read_text(encoding="utf-8").splitlines())
    counted += n
    if n != int(lines):
        errors.append(f"row {num}: {name} has {n} lines, the README says {lines} (write {n})")
if not rows:
    errors.append("the table has no rows of the form | N | [`file`](path) | lines | what |")
if not total:
    errors.append("no '| | total | N |' row")
elif int(total.group(1)) != counted:
    errors.append(f"the total row says {total.group(1)}, the files have {counted} lines (write {counted})")
if counted > 3500:
    errors.append(f"the core is {counted} lines: more than the 3,500 a student can read first")
for e in errors:
    print(f"{readme.name}: {e}")
if errors:
    sys.exit(1)
print(f"{readme.name}: {len(rows)} files of the tiny core, {counted} lines, as the table says")

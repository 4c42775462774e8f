#!/usr/bin/env bash
# scripts/docs.sh — build the docs site: the chapters and the API reference, as static HTML.
#
#   scripts/docs.sh [OUT]          # default OUT = build-docs; then open OUT/index.html
#   scripts/docs.sh && xdg-open build-docs/index.html
#
# Needs Debian's doxygen and graphviz (scripts/install-deps.sh installs them) and python3.
# Pages: README.md (the entry page), chapters/**/*.md and every file they link to (headers land
# on their API page, other files on a page that shows them); the API reference comes from the
# headers' docstrings and their opening comment block. docs/prepare.py stages the pages into
# OUT/_stage (links rewritten to land on the site, chapters/**/*.dot rendered to SVG with `dot`),
# then Doxygen (docs/Doxyfile) writes OUT. Nothing is written outside OUT (build-docs/ is
# ignored by git). OUT is emptied first, and only if it holds an earlier site (or nothing).
# Cost: about 4 s of CPU (5 to 10 s on the 2-core machine). ctest docs_site (label "docs") runs
# this into <build>/docs-site, then checks the site in headless Chromium (docs/check_site.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/build-docs}"

for tool in doxygen dot python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "scripts/docs.sh: '$tool' not found (scripts/install-deps.sh installs doxygen and graphviz)" >&2
    exit 2
  fi
done

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
if [[ "$OUT" == "$ROOT" ]]; then
  echo "scripts/docs.sh: refusing to write the site into the source root" >&2
  exit 2
fi
if [[ -n "$(ls -A "$OUT")" ]]; then
  if [[ ! -f "$OUT/.tinytorch-docs" ]]; then
    echo "scripts/docs.sh: $OUT is not empty and holds no earlier site; give an empty or new directory" >&2
    exit 2
  fi
  find "$OUT" -mindepth 1 -delete
fi
touch "$OUT/.tinytorch-docs"

STAGE="$OUT/_stage"
python3 "$ROOT/docs/prepare.py" stage "$ROOT" "$STAGE"

cd "$ROOT"
export TT_DOCS_OUT="$OUT" TT_DOCS_FILTER="$ROOT/docs/header_filter.awk"
cat docs/Doxyfile "$STAGE/Doxyfile.inc" | doxygen - 2> "$STAGE/doxygen-warnings.log"
python3 "$ROOT/docs/prepare.py" finish "$STAGE" "$OUT"
nwarn=$(grep -c 'warning:' "$STAGE/doxygen-warnings.log" || true)
echo "scripts/docs.sh: site in $OUT/index.html ($nwarn Doxygen warnings: $STAGE/doxygen-warnings.log)"

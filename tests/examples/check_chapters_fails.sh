#!/usr/bin/env bash
# tests/examples/check_chapters_fails.sh PYTHON BUILD — ctest chapters_check_fails: proves that
# scripts/check_chapters.py notices a chapter that no longer says what its programs print.
# On a copy of chapters/02-autograd.md (its commands take a second):
#   1. the copy as it is passes;
#   2. one digit changed in a checked block's output (loss=3.3803 -> 3.3804) fails, naming the
#      chapter's line and both numbers;
#   3. one digit changed in the prose (1.775 -> 1.776, a number no block prints) fails, naming it.
#   4. a block's build row taken out fails: the program is built by no line of the chapter.
#   5. timings (a chapter of its own, a printf its block runs): a time and a rate 10x faster than
#      the chapter's pass; 10x slower fail, each named; a ratio 10x off fails both ways.
# Exit 77 (Skipped) when example_single is not built.
set -uo pipefail
python=$1 build=$2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ -x "$build/bin/example_single" ]] || { echo "example_single is not built: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ch="$tmp/02-autograd.md"

check() {  # check WANT_STATUS WANT_TEXT: runs the checker on $ch
  out=$("$python" "$root/scripts/check_chapters.py" --build "$build" "$ch" 2>&1)
  status=$?
  if [[ $status -ne $1 ]] || ! grep -qF -- "$2" <<<"$out"; then
    echo "FAIL: expected exit $1 and '$2'; got exit $status:"
    echo "$out"
    exit 1
  fi
  echo "ok: exit $status, '$2'"
}

cp "$root/chapters/02-autograd.md" "$ch"
check 0 "✓ 02-autograd.md"

sed 's/^epoch 0: loss=3\.3803$/epoch 0: loss=3.3804/' "$root/chapters/02-autograd.md" >"$ch"
grep -q "loss=3.3804" "$ch" || { echo "FAIL: the block's line 'epoch 0: loss=3.3803' is gone"; exit 1; }
line=$(grep -n "^epoch 0: loss=3.3804$" "$ch" | cut -d: -f1)
check 1 "02-autograd.md:$line: "  # the chapter's line that differs, not the block's first
check 1 "differs: the chapter says 3.3804, the program printed 3.3803"

sed 's/db = −1\.9 − 1\.775)/db = −1.9 − 1.776)/' "$root/chapters/02-autograd.md" >"$ch"
grep -q "1.776" "$ch" || { echo "FAIL: the prose's '1.775' is gone"; exit 1; }
check 1 "the number 1.776 is in no checked block"

# a program the chapter runs but none of its build lines builds (scripts/quickstart.sh builds only
# train_mnist): the build row taken out
grep -v "^| Build (after" "$root/chapters/02-autograd.md" >"$ch"
check 1 "runs build/bin/example_single, which no build line of the chapter builds"

# timings: a faster machine passes, a slower one fails; a ratio is held both ways (load=99: always
# compared, however busy the machine)
ch="$tmp/99-timing.md"
timing_chapter() {  # timing_chapter TIME RATE RATIO: what the chapter says
  printf '# Timings\n\n```console check timing=samples/s load=99\n%s\n%s\n```\n' \
    "$ printf 'step 1.0 ms, samples/s=1000, mode / float32 2.00x\\n'" \
    "step ~$1 ms, samples/s=$2, mode / float32 ~$3x" >"$ch"
}
timing_chapter 10.0 100 2.00
check 0 "✓ 99-timing.md"
timing_chapter 0.1 10000 2.00
check 1 "the chapter says 0.1, the program printed 1.0 (x10.00: a time, slower than the block's tol=3 allows)"
check 1 "the chapter says 10000, the program printed 1000 (x0.10: a rate, slower than the block's tol=3 allows)"
timing_chapter 1.0 1000 20.0
check 1 "the chapter says 20.0, the program printed 2.00 (x0.10: a ratio, further off than the block's tol=3 allows)"
timing_chapter 1.0 1000 0.20
check 1 "the chapter says 0.20, the program printed 2.00 (x10.00: a ratio, further off"

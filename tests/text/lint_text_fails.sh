#!/usr/bin/env bash
# tests/text/lint_text_fails.sh PYTHON — scripts/lint_text.py fails on each kind of history it
# forbids (ctest text_lint_fails): a date, a commit hash of this repository, "was X, now Y", a
# banner of an old cut; and passes a file whose hex words and dates are not history (a CRC
# constant, a version, a hash of no commit here, a batch of data).
set -uo pipefail
py=$1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head_hash=$(git -C "$root" rev-parse --short=9 HEAD 2>/dev/null) || { echo "not a git clone: skipped"; exit 77; }
fail=0
expect() {  # expect KIND TEXT: a file holding TEXT fails with KIND
  printf '// %s\n' "$2" >"$tmp/planted.hpp"
  out=$("$py" "$root/scripts/lint_text.py" "$tmp/planted.hpp")
  rc=$?
  if ((rc == 1)) && grep -q ": $1: " <<<"$out"; then
    echo "ok: '$2' fails as $1"
  else
    echo "FAIL: '$2' should fail as $1 (exit $rc): $out"
    fail=1
  fi
}
expect date "measured on 2026-12-05 on the Intel VM"
expect commit "the bucketed reducer (since $head_hash) is faster"
expect history "the step was 1.3 ms, now 0.9 ms"
expect history "0.001 used to be accepted"
expect history "---- the second family: pow, fmod ----"
expect history "---- the first batch: arithmetic ----"
cat >"$tmp/clean.hpp" <<'CLEAN'
// CRC-32's polynomial 0xEDB88320 and its table edb88320; version 1.13.0; deadbeef12 names no commit
// the first batch of data costs a whole t_load; the first batch's sample indices
// the buffer is no longer valid after destroy_process_group
CLEAN
out=$("$py" "$root/scripts/lint_text.py" "$tmp/clean.hpp")
rc=$?
if ((rc == 0)); then echo "ok: a file without history passes"; else echo "FAIL: clean file flagged: $out"; fail=1; fi
((fail == 0)) && echo "PASSED: lint_text fails on each planted kind" || echo "FAILED"
exit "$fail"

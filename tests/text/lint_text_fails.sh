#!/usr/bin/env bash
# tests/text/lint_text_fails.sh PYTHON — scripts/lint_text.py fails on each kind of history it
# forbids (ctest text_lint_fails): dates (also in file names and timestamps), commit hashes of
# this repository (either case, git describe's g<hash>), history wording, banners of an old cut;
# a missing file is an error; and it passes a file whose hex words are not history (a CRC
# constant, a 0x literal, a version, a hash of no commit here, a batch of data).
set -uo pipefail
py=${1:?usage: tests/text/lint_text_fails.sh PYTHON}
command -v "$py" >/dev/null || { echo "FAIL: '$py' not found"; exit 1; }
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
expect date "see bench-2026-12-05_run.log, written 2026-12-05T10:00"
expect commit "the bucketed reducer (since $head_hash) is faster"
expect commit "the bucketed reducer (since ${head_hash^^}) is faster"
expect commit "built from v0.1-3-g$head_hash"
expect history "the step was 1.3 ms, now 0.9 ms"
expect history "the step was 1.3 ms (fp32); now 0.9 ms"
expect history "0.001 used  to be accepted"
expect history "---- the second family: pow, fmod ----"
expect history "---- the first batch: arithmetic ----"
out=$("$py" "$root/scripts/lint_text.py" "$tmp/no-such-file.hpp")
rc=$?
if ((rc == 2)) && grep -q "no-such-file.hpp" <<<"$out"; then
  echo "ok: a missing file is an error naming it"
else
  echo "FAIL: a missing file should exit 2 naming it (exit $rc): $out"
  fail=1
fi
cat >"$tmp/clean.hpp" <<'CLEAN'
// CRC-32's polynomial 0xEDB88320 and its table edb88320; version 1.13.0; deadbeef12 names no commit
// the first batch of data costs a whole t_load; the first batch's sample indices
// the buffer is no longer valid after destroy_process_group
// the gradient that was passed in, now owned by the node; a second batch of data; 0x3142c7c5
CLEAN
out=$("$py" "$root/scripts/lint_text.py" "$tmp/clean.hpp")
rc=$?
if ((rc == 0)) && grep -q "1 files" <<<"$out"; then echo "ok: a file without history passes"; else echo "FAIL: clean file flagged: $out"; fail=1; fi
((fail == 0)) && echo "PASSED: lint_text fails on each planted kind" || echo "FAILED"
exit "$fail"

#!/usr/bin/env bash
# tests/examples/expect_error.sh MESSAGE CMD... — runs a program with a bad option and passes when
# it refuses it: an error exit code (1..123, not 0, not a timeout, not a signal such as a crash)
# within 60 s, and MESSAGE (e.g. the flag and the value) somewhere in its output.
set -uo pipefail
msg="$1"
shift
out=$(timeout 60 "$@" 2>&1 </dev/null)
rc=$?
echo "$out"
if [[ $rc -lt 1 || $rc -gt 123 ]]; then
  echo "FAILED: exit code $rc (expected an error exit: not 0, not a timeout (124), not a signal)"
  exit 1
fi
if ! grep -qF -- "$msg" <<<"$out"; then
  echo "FAILED: the output does not contain: $msg"
  exit 1
fi
echo "PASSED: exit code $rc with: $msg"

#!/usr/bin/env bash
# tests/sim_check/expect.sh — runs one case of planted_bugs and checks what the simulator said.
#
#   expect.sh pass <program> <case>            exit 0, "ok <case>" printed, and no report at all
#   expect.sh fail <program> <case> ERE...     a non-zero exit (an error, a signal or a sanitizer's
#                                              exit code) and every ERE found in stdout+stderr
# The environment (TINYTORCH_SIM_CHECK, TINYTORCH_SIM_HANG_SECONDS, ...) comes from ctest
# (tests/sim_check/tests.cmake). Prints the program's output, then why it failed.
set -uo pipefail
mode=$1 prog=$2 case=$3
shift 3
out=$("$prog" "$case" 2>&1)
rc=$?
printf '%s\n' "$out"
if [[ $mode == pass ]]; then
  if [[ $rc -ne 0 || $out != *"ok $case"* ]]; then
    echo "expect.sh: '$case' (the fixed kernel) should pass; exit $rc" >&2
    exit 1
  fi
  if grep -qE '^(=========|WARNING: ThreadSanitizer|==[0-9]+==ERROR)' <<<"$out"; then
    echo "expect.sh: '$case' (the fixed kernel) was reported" >&2
    exit 1
  fi
  exit 0
fi
if [[ $rc -eq 0 ]]; then
  echo "expect.sh: '$case' (the planted bug) was not reported: exit 0" >&2
  exit 1
fi
for re in "$@"; do
  if ! grep -qE -- "$re" <<<"$out"; then
    echo "expect.sh: '$case': the report lacks /$re/" >&2
    exit 1
  fi
done

#!/usr/bin/env bash
# tests/mpi/ddp_failure_test.sh — a DDP job in which one rank goes wrong ends, with that rank's
# message, instead of hanging (the DDP variant of tests/mpi/failure_test.sh).
#
#   tests/mpi/ddp_failure_test.sh <ddp_failing_rank binary> [np=2]
#
# Runs tests/mpi/ddp_failing_rank.cpp under scripts/mpirun.sh in each mode and asserts that
# mpirun exits non-zero (mode ok: zero), not because our timeout killed it, within
# TT_FAILURE_SECONDS (default 20) seconds, and that the output holds the expected text.
# ctest runs it as mpi_ddp_failure (tests/CMakeLists.txt pairs every tests/mpi/<p>failure_test.sh
# with tests/mpi/<p>failing_rank.cpp). Exit 0 when every check passes, 1 otherwise.
set -uo pipefail

bin="${1:?usage: ddp_failure_test.sh <ddp_failing_rank binary> [np]}"
np="${2:-2}"
limit="${TT_FAILURE_SECONDS:-20}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mpirun_sh="$here/../../scripts/mpirun.sh"
failures=0

run_mode() {  # run_mode <mode> <expected rc: 0|nonzero> <pattern>...
  local mode="$1" want="$2"
  shift 2
  local out start end rc elapsed ok=1 p
  start=$(date +%s.%N)
  out="$(timeout "$((limit + 10))" bash "$mpirun_sh" -np "$np" "$bin" "$mode" 2>&1)"
  rc=$?
  end=$(date +%s.%N)
  elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  if [[ "$want" == 0 && $rc -ne 0 ]]; then ok=0; echo "FAIL [$mode]: expected exit 0, got $rc"; fi
  if [[ "$want" != 0 && $rc -eq 0 ]]; then ok=0; echo "FAIL [$mode]: expected a non-zero exit, got 0"; fi
  if [[ $rc -eq 124 ]]; then ok=0; echo "FAIL [$mode]: the job hung (killed by timeout after $((limit + 10)) s)"; fi
  if awk -v e="$elapsed" -v l="$limit" 'BEGIN { exit !(e > l) }'; then
    ok=0
    echo "FAIL [$mode]: took ${elapsed} s (limit ${limit} s)"
  fi
  for p in "$@"; do
    if ! grep -qF -- "$p" <<<"$out"; then ok=0; echo "FAIL [$mode]: output lacks '$p'"; fi
  done
  if [[ $ok == 1 ]]; then
    echo "ok   [$mode]: exit $rc after ${elapsed} s"
  else
    failures=$((failures + 1))
    echo "----- output of [$mode] -----"
    echo "$out"
    echo "-----------------------------"
  fi
}

run_mode ok 0 "ddp ok: $np ranks"
run_mode mismatch nonzero "DDP expects same model across all ranks" "MPI_Abort"
run_mode unused nonzero "rank 1: " "Expected to have finished reduction in the prior iteration" \
  "fc_b.weight, fc_b.bias" "MPI_Abort"
run_mode throw nonzero "rank 1: rank-local failure between forward and backward" "MPI_Abort"

if [[ $failures -ne 0 ]]; then
  echo "ddp_failure_test: $failures check(s) failed"
  exit 1
fi
echo "ddp_failure_test: all checks passed"

#!/usr/bin/env bash
# tests/mpi/failure_test.sh — a rank that throws ends the whole job; nobody hangs.
#
#   tests/mpi/failure_test.sh <failing_rank binary> [np=2] [<failing_rank built without MPI>]
#
# Runs tests/mpi/failing_rank.cpp under scripts/mpirun.sh in each failure mode and asserts:
#   * mpirun exits non-zero, and not because our timeout killed it (exit 124),
#   * within TT_FAILURE_SECONDS (default 20) seconds,
#   * and the output names the failing rank ("rank 1:") and the error.
# Mode "ok" must exit 0. With a third argument (the same program built without MPI), also checks
# that such a binary refuses to run as one of np ranks ("launched as one of np ranks").
# Exit 0 when every check passes, 1 otherwise. ctest registration: see chapters/07-all-reduce.md.
set -uo pipefail

bin="${1:?usage: failure_test.sh <failing_rank binary> [np] [<no-MPI binary>]}"
np="${2:-2}"
nompi_bin="${3:-}"
limit="${TT_FAILURE_SECONDS:-20}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mpirun_sh="$here/../../scripts/mpirun.sh"
failures=0

run_mode() {  # run_mode <binary> <mode> <expected rc: 0|nonzero> <pattern>...
  local exe="$1" mode="$2" want="$3"
  shift 3
  local out start end rc elapsed
  start=$(date +%s.%N)
  out="$(timeout "$((limit + 10))" bash "$mpirun_sh" -np "$np" "$exe" "$mode" 2>&1)"
  rc=$?
  end=$(date +%s.%N)
  elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  local ok=1
  if [[ "$want" == 0 && $rc -ne 0 ]]; then ok=0; echo "FAIL [$mode]: expected exit 0, got $rc"; fi
  if [[ "$want" != 0 && $rc -eq 0 ]]; then ok=0; echo "FAIL [$mode]: expected a non-zero exit, got 0"; fi
  if [[ $rc -eq 124 ]]; then ok=0; echo "FAIL [$mode]: the job hung (killed by timeout after $((limit + 10)) s)"; fi
  if awk -v e="$elapsed" -v l="$limit" 'BEGIN { exit !(e > l) }'; then
    ok=0
    echo "FAIL [$mode]: took ${elapsed} s (limit ${limit} s)"
  fi
  local p
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

run_mode "$bin" ok 0 "all_reduce done: $np"
run_mode "$bin" uncaught nonzero "rank 1: rank-local failure in mode 'uncaught'" "MPI_Abort"
run_mode "$bin" abort nonzero "rank 1: rank-local failure in mode 'abort'" "MPI_Abort"
run_mode "$bin" unwind nonzero "rank 1: " "broadcast: src rank 99 is outside [0, $np)" "MPI_Abort"
if [[ -n "$nompi_bin" ]]; then
  run_mode "$nompi_bin" launched nonzero "launched as one of $np ranks" "compiled without MPI"
fi

if [[ $failures -ne 0 ]]; then
  echo "failure_test: $failures check(s) failed"
  exit 1
fi
echo "failure_test: all checks passed"

# tests/mpi/failure_lib.sh — sourced by tests/mpi/*failure_test.sh: run a program under
# scripts/mpirun.sh in one failure mode and check how the job ended.
#
# The caller sets: np (ranks), limit (seconds, default TT_FAILURE_SECONDS or 20), and starts
# with failures=0. Then:
#   run_mode <binary> <mode> <expected rc: 0|nonzero> <pattern>...
# asserts that the job exits 0 (or non-zero), not because our timeout killed it (exit 124),
# within `limit` seconds, and that its output holds every pattern (fixed strings); prints one
# "ok"/"FAIL" line per check and the output when one fails; counts failed modes in `failures`;
# leaves the job's output in `out_last` for further checks.
#   finish_checks <name>   exits 1 if any mode failed, 0 otherwise.

limit="${limit:-${TT_FAILURE_SECONDS:-20}}"
mpirun_sh="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../../scripts/mpirun.sh"

run_mode() {
  local exe="$1" mode="$2" want="$3"
  shift 3
  local out start end rc elapsed ok=1 p
  start=$(date +%s.%N)
  # Output goes to a file, not through $(...): a rank left behind after the timeout killed
  # mpirun would hold the pipe open and make this script wait forever instead of failing.
  local log
  log="$(mktemp)"
  timeout -k 5 "$((limit + 10))" bash "$mpirun_sh" -np "$np" "$exe" "$mode" >"$log" 2>&1
  rc=$?
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then pkill -KILL -f -- "$exe $mode" 2>/dev/null; fi
  out="$(cat "$log")"
  rm -f "$log"
  end=$(date +%s.%N)
  elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  out_last="$out"
  if [[ "$want" == 0 && $rc -ne 0 ]]; then ok=0; echo "FAIL [$mode]: expected exit 0, got $rc"; fi
  if [[ "$want" != 0 && $rc -eq 0 ]]; then ok=0; echo "FAIL [$mode]: expected a non-zero exit, got 0"; fi
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then ok=0; echo "FAIL [$mode]: the job hung (killed by timeout after $((limit + 10)) s)"; fi
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

finish_checks() {
  if [[ $failures -ne 0 ]]; then
    echo "$1: $failures check(s) failed"
    exit 1
  fi
  echo "$1: all checks passed"
}

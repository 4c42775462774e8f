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
failures=0
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/failure_lib.sh"  # run_mode, finish_checks

run_mode "$bin" ok 0 "all_reduce done: $np"
run_mode "$bin" uncaught nonzero "rank 1: rank-local failure in mode 'uncaught'" "MPI_Abort"
run_mode "$bin" abort nonzero "rank 1: rank-local failure in mode 'abort'" "MPI_Abort"
run_mode "$bin" unwind nonzero "rank 1: " "broadcast: src rank 99 is outside [0, $np)" "MPI_Abort"
if [[ -n "$nompi_bin" ]]; then
  run_mode "$nompi_bin" launched nonzero "launched as one of $np ranks" "compiled without MPI"
fi

finish_checks failure_test

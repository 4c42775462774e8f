#!/usr/bin/env bash
# tests/mpi/ddp_failure_test.sh — a DDP job in which one rank goes wrong ends, with that rank's
# message, instead of hanging (the DDP variant of tests/mpi/failure_test.sh).
#
#   tests/mpi/ddp_failure_test.sh <ddp_failing_rank binary> [np=2]
#
# Runs tests/mpi/ddp_failing_rank.cpp under scripts/mpirun.sh in each mode and asserts that
# mpirun exits non-zero (mode ok: zero), not because our timeout killed it, within
# TT_FAILURE_SECONDS (default 20) seconds, and that the output holds the expected text. Mode
# unused_last runs with a 3-second collective timeout (TINYTORCH_DIST_TIMEOUT=3) and expects
# both ranks' watchdog reports; skip_backward runs without DETAIL (rank 1's own error, at once);
# unequal_steps and skip_backward run with TINYTORCH_DISTRIBUTED_DEBUG=DETAIL and expect the
# mismatch error on both ranks.
# ctest runs it as mpi_ddp_failure (tests/mpi/tests.cmake pairs every tests/mpi/<p>failure_test.sh
# with tests/mpi/<p>failing_rank.cpp). Exit 0 when every check passes, 1 otherwise.
set -uo pipefail

bin="${1:?usage: ddp_failure_test.sh <ddp_failing_rank binary> [np]}"
np="${2:-2}"
failures=0
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/failure_lib.sh"  # run_mode, finish_checks

run_mode "$bin" ok 0 "ddp ok: $np ranks"
# The smallest timeout (1 s, kMinTimeout) lets a correct job finish, its MPI_Finalize included
# (watched with kFinalizeTimeout, 60 s, not the group's timeout); a smaller one is refused at
# init (0.001 would abort correct jobs in MPI_Finalize).
TINYTORCH_DIST_TIMEOUT=1 run_mode "$bin" ok 0 "ddp ok: $np ranks"
TINYTORCH_DIST_TIMEOUT=0.001 run_mode "$bin" ok nonzero \
  "init_process_group: TINYTORCH_DIST_TIMEOUT='0.001' is not a number of seconds in [1, 1e9]"
run_mode "$bin" mismatch nonzero "DDP expects same model across all ranks" "MPI_Abort"
run_mode "$bin" unused nonzero "rank 1: " "Expected to have finished reduction in the prior iteration" \
  "fc_b.weight, fc_b.bias" "MPI_Abort"
run_mode "$bin" throw nonzero "rank 1: rank-local failure between forward and backward" "MPI_Abort"
TINYTORCH_DIST_TIMEOUT=3 run_mode "$bin" unused_last nonzero \
  "rank 0: Watchdog caught collective operation timeout: all_reduce (sequence number 3, 20 torch.float32 elements, SUM) on group \"DistributedDataParallel buckets\"" \
  "rank 1: Watchdog caught collective operation timeout: barrier (sequence number" "called as barrier in destroy_process_group"
ddp_mismatch="collective mismatch across ranks on group \"DistributedDataParallel buckets\" (found by TINYTORCH_DISTRIBUTED_DEBUG=DETAIL)"
TINYTORCH_DISTRIBUTED_DEBUG=DETAIL run_mode "$bin" unequal_steps nonzero "rank 0: $ddp_mismatch" "rank 1: $ddp_mismatch" \
  "iteration 3) but rank 1 is running the end of a DistributedDataParallel (sequence number" "after 2 iterations)"
run_mode "$bin" skip_backward nonzero "rank 1: DistributedDataParallel: Expected to have finished reduction in the prior iteration" \
  "Rank 1 ran no backward after its previous forward" "MPI_Abort"
TINYTORCH_DISTRIBUTED_DEBUG=DETAIL run_mode "$bin" skip_backward nonzero "rank 0: $ddp_mismatch" "rank 1: $ddp_mismatch" \
  "rank 0 is running all_reduce (sequence number" "but rank 1 is running DistributedDataParallel forward (sequence number"

finish_checks ddp_failure_test

#!/usr/bin/env bash
# tests/mpi/hang_failure_test.sh — what used to hang forever (or return garbage with exit 0)
# now ends within seconds, with a message on every rank.
#
#   tests/mpi/hang_failure_test.sh <hang_failing_rank binary> [np=2]
#
# Runs tests/mpi/hang_failing_rank.cpp under scripts/mpirun.sh with a 3-second collective timeout
# (TINYTORCH_DIST_TIMEOUT=3) and asserts, per mode, that the job exits non-zero within
# TT_FAILURE_SECONDS (default 20) and prints:
#   stopped        rank 0's watchdog report naming the all_reduce and its sequence number;
#   unequal_steps  rank 0's watchdog report naming the all_reduce rank 1 never joined, and
#                  rank 1's "done": without DETAIL rank 1's destroy barrier matches the arrival
#                  barrier of rank 0's all_reduce, so rank 1 waits in MPI_Finalize, which is
#                  watched with kFinalizeTimeout (60 s: a correct shutdown may take over a
#                  second), and rank 0's abort ends the job before that (rank 1 then prints no
#                  report of its own);
#   send_unmatched rank 0's watchdog report naming the send, the peer (rank 1) and the tag;
#   recv_size      rank 1's error naming both sizes, the peer and the tag;
#   order, dtype, op, root, count (with TINYTORCH_DISTRIBUTED_DEBUG=DETAIL): the mismatch error,
#                  naming both sides, on rank 0 and on rank 1.
# Mode "slow" (rank 1 joins a barrier 3 s late) must exit 0 with rank 0 using under half a core
# while it waited. Exit 0 when every check passes, 1 otherwise.
# Chapter: chapters/07-all-reduce.md ("Timeouts and the watchdog").
set -uo pipefail

bin="${1:?usage: hang_failure_test.sh <hang_failing_rank binary> [np]}"
np="${2:-2}"
failures=0
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/failure_lib.sh"  # run_mode, finish_checks

export TINYTORCH_DIST_TIMEOUT=3
export TINYTORCH_DISTRIBUTED_DEBUG=OFF
run_mode "$bin" stopped nonzero "rank 0: Watchdog caught collective operation timeout: all_reduce (sequence number 1, 1 torch.float32 elements, SUM) on group \"default\"" "longer than the timeout of 3000 ms"
run_mode "$bin" unequal_steps nonzero \
  "rank 0: Watchdog caught collective operation timeout: all_reduce (sequence number 5, 1 torch.float32 elements, SUM)" \
  "rank 1: unequal_steps done"
run_mode "$bin" send_unmatched nonzero \
  "rank 0: Watchdog caught point-to-point operation timeout: send to rank 1 (tag 7, 1048576 torch.float32 elements) on group \"default\"" \
  "The peer never posted the matching operation"
run_mode "$bin" recv_size nonzero \
  "rank 1: recv from rank 0 (tag 2, group \"default\"): the message holds 12 bytes but 4 torch.float32 elements (16 bytes) were posted"

export TINYTORCH_DISTRIBUTED_DEBUG=DETAIL
mismatch="collective mismatch across ranks on group \"default\" (found by TINYTORCH_DISTRIBUTED_DEBUG=DETAIL)"
run_mode "$bin" order nonzero "rank 1: $mismatch: rank 0 is running all_reduce (sequence number 1, 4 torch.float32 elements, SUM) but rank 1 is running broadcast (sequence number 1, 4 torch.float32 elements, src 0)" "rank 0: $mismatch"
run_mode "$bin" dtype nonzero "rank 0: $mismatch: rank 0 is running all_reduce (sequence number 1, 4 torch.float64 elements, SUM) but rank 1 is running all_reduce (sequence number 1, 4 torch.int64 elements, SUM)" "rank 1: $mismatch"
run_mode "$bin" op nonzero "rank 0: $mismatch: rank 0 is running all_reduce (sequence number 1, 4 torch.float32 elements, SUM) but rank 1 is running all_reduce (sequence number 1, 4 torch.float32 elements, MAX)" "rank 1: $mismatch"
run_mode "$bin" root nonzero "rank 0: $mismatch: rank 0 is running broadcast (sequence number 1, 4 torch.float32 elements, src 0) but rank 1 is running broadcast (sequence number 1, 4 torch.float32 elements, src 1)" "rank 1: $mismatch"
run_mode "$bin" count nonzero "rank 0: $mismatch: rank 0 is running all_reduce (sequence number 1, 4 torch.float32 elements, SUM) but rank 1 is running all_reduce (sequence number 1, 5 torch.float32 elements, SUM)" "rank 1: $mismatch"

export TINYTORCH_DISTRIBUTED_DEBUG=OFF
run_mode "$bin" slow 0 "rank 0: slow done" "rank 1: slow done"
cpu_line="$(grep -o 'waited [0-9.]* s, cpu [0-9.]* s' <<<"$out_last" || true)"
if [[ -z "$cpu_line" ]]; then
  echo "FAIL [slow]: no 'waited W s, cpu C s' line"
  failures=$((failures + 1))
else
  read -r wall cpu < <(awk '{ print $2, $5 }' <<<"$cpu_line")
  if awk -v w="$wall" -v c="$cpu" 'BEGIN { exit !(w >= 2.5 && c < 0.5 * w) }'; then
    echo "ok   [slow]: $cpu_line (under half a core)"
  else
    echo "FAIL [slow]: $cpu_line: a waiting rank must not burn a core"
    failures=$((failures + 1))
  fi
fi

finish_checks hang_failure_test

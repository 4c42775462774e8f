#!/usr/bin/env bash
# tests/gdb/run_gdb_sim_test.sh — ctest gdb_sim_kernel (labels gdb, ch10): chapter 10's recipe for
# stepping one GPU thread in the kernel simulator works.
#
#   bash tests/gdb/run_gdb_sim_test.sh build/bin/gdb_sim_demo
#
# Runs tests/gdb/sim_session.gdb in gdb -batch on gdb_sim_demo (tests/gdb/gdb_sim_demo.cpp: the tiled
# matmul of backend/cuda/gemm.cuh, simulator build, -O0 -g) and checks what gdb printed: the
# conditional breakpoint stops in gemm_tiled_kernel<float, 32> in thread (5,0,0) of block (1,0,0),
# `next` steps that thread's own source lines (also across __syncthreads(), where the other 1023
# fibers of the block run), and the locals hold the values the math gives: row 0, col 37, acc after
# the first K tile = sum_{k<32} k (k - 37) = -7936, C[0, 37] = -7936 + 32 * (32 - 37) = -8096.
# Skipped (77) like gdb_pretty_printer: no gdb, or ptrace not permitted. sim_session.gdb names line
# 146 of gemm.cuh (the store of C): if that file changes, update the line there and in chapter 10.
set -euo pipefail
demo="${1:?usage: run_gdb_sim_test.sh <gdb_sim_demo executable>}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
GDB="${GDB:-gdb}"

if ! command -v "$GDB" >/dev/null 2>&1; then
  echo "gdb_sim_kernel: SKIPPED: $GDB not found (scripts/install-deps.sh installs it)"
  exit 77
fi
probe="$("$GDB" -batch -nx -ex run --args /bin/true 2>&1 || true)"
if ! grep -q "exited normally" <<<"$probe"; then
  echo "gdb_sim_kernel: SKIPPED: gdb cannot run a program here (ptrace not permitted?):"
  echo "$probe" | tail -3
  exit 77
fi

# The session runs `until <line>` to the store of C in gemm.cuh: that line must still be the store
# (an edit above it in gemm.cuh moves it; then update sim_session.gdb and chapter 10's transcript).
until_line=$(sed -n 's/^until \([0-9][0-9]*\)$/\1/p' "$root/tests/gdb/sim_session.gdb")
if ! sed -n "${until_line}p" "$root/include/tinytorch/backend/cuda/gemm.cuh" | grep -qF 'c = static_cast<T>(beta == T(0)'; then
  echo "gdb_sim_kernel: FAIL: line $until_line of gemm.cuh (sim_session.gdb's 'until $until_line') is not the store of C;"
  echo "  it is now line $(grep -nF 'c = static_cast<T>(beta == T(0)' "$root/include/tinytorch/backend/cuda/gemm.cuh" | head -1 | cut -d: -f1)"
  exit 1
fi
out="$("$GDB" -batch -nx -x "$root/tests/gdb/sim_session.gdb" "$demo" 2>&1)" || true
echo "$out"
fail=0
expect() {  # expect <description> <fixed string that must be a line of the output, or part of one>
  if ! grep -qF -- "$2" <<<"$out"; then
    echo "gdb_sim_kernel: FAIL: $1: no line with '$2'"
    fail=1
  fi
}
expect "stopped in the tiled kernel" "Breakpoint 1, tinytorch::sim_abi::backend::cuda::gemm_tiled_kernel<float, 32> (M=40, N=70, K=33"
expect "threadIdx of the stopped fiber" '$1 = {x = 5, y = 0, z = 0}'
expect "blockIdx of the stopped fiber" '$2 = {x = 1, y = 0, z = 0}'
expect "row = blockIdx.y * 32 + threadIdx.y" '$3 = 0'
expect "col = blockIdx.x * 32 + threadIdx.x" '$4 = 37'
expect "As[0][5] = A[0, 5], written by this thread" '$5 = 5'
expect "Bs[0][5] not written yet: shared memory starts every block as 0xFF bytes" '$6 = -nan(0x7fffff)'
expect "Bs[0][5] = B[0, 37], written by this thread" '$7 = -37'
expect "acc after the first K tile" '$8 = -7936'
expect "acc at the store of C" '$9 = -8096'
expect "C[0, 37] written" '$10 = -8096'
# The condition names one thread: gdb must not have stopped a second time at the breakpoint.
if [ "$(grep -c '^Breakpoint 1, ' <<<"$out")" != 1 ]; then
  echo "gdb_sim_kernel: FAIL: the breakpoint was hit $(grep -c '^Breakpoint 1, ' <<<"$out") times, expected once"
  fail=1
fi
if [ "$fail" = 0 ]; then echo "gdb_sim_kernel: ok"; fi
exit "$fail"

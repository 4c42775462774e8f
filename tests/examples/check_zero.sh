#!/usr/bin/env bash
# tests/examples/check_zero.sh [LAUNCHER...] -- TRAIN_MNIST [ARGS...] — train_mnist --zero 1 (ZeRO
# stage 1, distributed::ZeroRedundancyOptimizer), --zero 2 and --zero 3 (FullyShardedDataParallel)
# train exactly as without them
# (chapters/13-sharding.md):
#   (1) TRAIN_MNIST ARGS --epochs 2 --save A                          DDP + SGD
#   (2) TRAIN_MNIST ARGS --epochs 2 --save B --zero 1                 DDP + ZeroRedundancyOptimizer<SGD>
#   (3) TRAIN_MNIST ARGS --epochs 2 --save C --zero 1 --stop-after 1  ... stopped after epoch 1
#   (4) TRAIN_MNIST ARGS --epochs 2 --save C --zero 1 --resume C      ... and resumed
#   (5) TRAIN_MNIST ARGS --epochs 2 --zero 2                          FSDP SHARD_GRAD_OP (ZeRO-2) + SGD
#   (6) TRAIN_MNIST ARGS --epochs 2 --zero 3                          FSDP FULL_SHARD, a unit per Linear
#   (7) TRAIN_MNIST ARGS --epochs 2 --amp fp16                        DDP + GradScaler
#   (8) TRAIN_MNIST ARGS --epochs 2 --amp fp16 --zero 3               FSDP + ShardedGradScaler
# Passes when the epoch lines (timings removed) and test_accuracy of (2), of (3)+(4), of (5) and
# of (6) equal those of (1), those of (8) those of (7), and the checkpoints A, B and C (the
# optimizer's shards consolidated on rank 0) are byte for byte the same. Exits 77 (ctest: Skipped) when Fashion-MNIST is not installed.
set -uo pipefail
source "$(dirname "$0")/train_mnist_runs.sh"  # launcher, work, run, results; exits 77 without the data
run ddp "$@" --epochs 2 --save "$work/A.tt"
run zero "$@" --epochs 2 --save "$work/B.tt" --zero 1
run first "$@" --epochs 2 --save "$work/C.tt" --zero 1 --stop-after 1
run resumed "$@" --epochs 2 --save "$work/C.tt" --zero 1 --resume "$work/C.tt"
run zero2 "$@" --epochs 2 --zero 2
run zero3 "$@" --epochs 2 --zero 3
run amp "$@" --epochs 2 --amp fp16
run amp_zero3 "$@" --epochs 2 --amp fp16 --zero 3
want=$(results "$work/ddp.out")
zero=$(results "$work/zero.out")
resumed=$(results "$work/first.out" | grep '^epoch'; results "$work/resumed.out")
echo "--- without --zero:"; echo "$want"
echo "--- --zero 1:"; echo "$zero"
echo "--- --zero 1, stopped after epoch 1, then resumed:"; echo "$resumed"
[[ -n "$want" && $(echo "$want" | grep -c '^epoch') -eq 2 ]] || { echo "FAILED: no epoch lines"; exit 1; }
[[ "$want" == "$zero" ]] || { echo "FAILED: --zero 1 printed other numbers"; exit 1; }
[[ "$want" == "$resumed" ]] || { echo "FAILED: --zero 1 resumed printed other numbers"; exit 1; }
echo "--- --zero 2:"; results "$work/zero2.out"
echo "--- --zero 3:"; results "$work/zero3.out"
[[ "$want" == "$(results "$work/zero2.out")" ]] || { echo "FAILED: --zero 2 printed other numbers"; exit 1; }
[[ "$want" == "$(results "$work/zero3.out")" ]] || { echo "FAILED: --zero 3 printed other numbers"; exit 1; }
echo "--- --amp fp16:"; results "$work/amp.out"
echo "--- --amp fp16 --zero 3:"; results "$work/amp_zero3.out"
[[ -n "$(results "$work/amp.out")" && "$(results "$work/amp.out")" == "$(results "$work/amp_zero3.out")" ]] ||
  { echo "FAILED: --amp fp16 --zero 3 (ShardedGradScaler) printed other numbers than --amp fp16"; exit 1; }
grep -q '^ZeRO-1: ' "$work/zero.out" || { echo "FAILED: no 'ZeRO-1:' line"; exit 1; }
grep -q '^ZeRO-3: ' "$work/zero3.out" || { echo "FAILED: no 'ZeRO-3:' line"; exit 1; }
cmp "$work/A.tt" "$work/B.tt" || { echo "FAILED: the checkpoints of --zero 1 and of DDP differ"; exit 1; }
cmp "$work/A.tt" "$work/C.tt" || { echo "FAILED: the resumed --zero 1 run's checkpoint differs"; exit 1; }
echo "PASSED: --zero 1 = DDP (same lines, byte-identical checkpoints), also stopped and resumed; --zero 2 and 3 = DDP, also with --amp fp16"

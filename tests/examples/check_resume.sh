#!/usr/bin/env bash
# tests/examples/check_resume.sh [LAUNCHER...] -- TRAIN_MNIST [ARGS...] — train_mnist --save/--resume
# continues exactly where it stopped (chapters/03-optimizers.md, "Resuming"):
#   (1) TRAIN_MNIST ARGS --epochs 2 --save A                 two epochs without a break
#   (2) TRAIN_MNIST ARGS --epochs 2 --save B --stop-after 1  stopped after epoch 1 ...
#   (3) TRAIN_MNIST ARGS --epochs 2 --save B --resume B      ... and resumed for epoch 2
# Passes when the epoch lines (loss, train_acc, test_acc; the timings removed) and the
# test_accuracy line of (1) equal those of (2) followed by (3), and the final checkpoints A and B
# are byte for byte the same. LAUNCHER (e.g. `bash scripts/mpirun.sh -np 2`) runs every command
# under mpirun. Exits 77 (ctest: Skipped) when Fashion-MNIST is not installed.
set -uo pipefail
source "$(dirname "$0")/train_mnist_runs.sh"  # launcher, work, run, results; exits 77 without the data
run straight "$@" --epochs 2 --save "$work/A.tt"
run first "$@" --epochs 2 --save "$work/B.tt" --stop-after 1
run resumed "$@" --epochs 2 --save "$work/B.tt" --resume "$work/B.tt"
want=$(results "$work/straight.out")
got=$(results "$work/first.out" | grep '^epoch'; results "$work/resumed.out")
echo "--- uninterrupted:"; echo "$want"
echo "--- stopped after epoch 1, then resumed:"; echo "$got"
[[ -n "$want" && $(echo "$want" | grep -c '^epoch') -eq 2 ]] || { echo "FAILED: no epoch lines"; exit 1; }
[[ "$want" == "$got" ]] || { echo "FAILED: the resumed run printed other numbers"; exit 1; }
grep -q '^resumed: ' "$work/resumed.out" || { echo "FAILED: no 'resumed:' line"; exit 1; }
cmp "$work/A.tt" "$work/B.tt" || { echo "FAILED: the final checkpoints differ"; exit 1; }
echo "PASSED: stopped after epoch 1 and resumed = uninterrupted (same lines, byte-identical checkpoints)"

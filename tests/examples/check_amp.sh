#!/usr/bin/env bash
# tests/examples/check_amp.sh [LAUNCHER...] -- TRAIN_MNIST [ARGS...] — train_mnist --amp (mixed
# precision, chapters/11-mixed-precision.md) trains as float32 does, and an fp16 run resumes exactly:
#   (1) TRAIN_MNIST ARGS --epochs 2                                   float32
#   (2) TRAIN_MNIST ARGS --epochs 2 --amp bf16                        autocast to bfloat16
#   (3) TRAIN_MNIST ARGS --epochs 2 --amp fp16 --save A               autocast to float16 + GradScaler
#   (4) TRAIN_MNIST ARGS --epochs 2 --amp fp16 --save B --stop-after 1, then --resume B
# Passes when the test accuracies of (2) and (3) are within 0.03 of (1)'s (a short run on few
# images: the full runs in the chapter agree to 0.001), and (4)'s epoch lines and checkpoint
# (GradScaler's scale and growth tracker included) equal (3)'s exactly. Exits 77 (ctest: Skipped)
# when Fashion-MNIST is not installed.
set -uo pipefail
source "$(dirname "$0")/train_mnist_runs.sh"  # launcher, work, run, results; exits 77 without the data
run f32 "$@" --epochs 2
run bf16 "$@" --epochs 2 --amp bf16
run fp16 "$@" --epochs 2 --amp fp16 --save "$work/A.tt"
run first "$@" --epochs 2 --amp fp16 --save "$work/B.tt" --stop-after 1
run resumed "$@" --epochs 2 --amp fp16 --save "$work/B.tt" --resume "$work/B.tt"
acc() { sed -n 's/^test_accuracy=//p' "$work/$1.out"; }
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 0.03) }'; }
echo "--- test accuracy: float32 $(acc f32), bf16 $(acc bf16), fp16 $(acc fp16)"
close "$(acc f32)" "$(acc bf16)" || { echo "FAILED: --amp bf16 is more than 0.03 from float32"; exit 1; }
close "$(acc f32)" "$(acc fp16)" || { echo "FAILED: --amp fp16 is more than 0.03 from float32"; exit 1; }
want=$(results "$work/fp16.out")
resumed=$(results "$work/first.out" | grep '^epoch'; results "$work/resumed.out")
[[ -n "$want" && "$want" == "$resumed" ]] || { echo "FAILED: --amp fp16 stopped and resumed printed other numbers"; exit 1; }
cmp "$work/A.tt" "$work/B.tt" || { echo "FAILED: the resumed --amp fp16 run's checkpoint differs"; exit 1; }
echo "PASSED: --amp bf16 and fp16 train as float32 does; fp16 stopped and resumed = uninterrupted"

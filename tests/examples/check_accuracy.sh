#!/usr/bin/env bash
# tests/examples/check_accuracy.sh MIN CMD... — runs a training example (e.g. train_mnist with
# --limit, or scripts/mpirun.sh -np 2 train_mnist ...) and passes when its last line
# `test_accuracy=X` has X >= MIN. Exits 77 (ctest: Skipped) when Fashion-MNIST is not installed,
# so a machine without the dataset reports the test as skipped, never as passed.
set -uo pipefail
min="$1"
shift
dir="${TINYTORCH_DATA:-/usr/share/datasets/fashion-mnist}"
if ! ls "$dir"/train-images-idx3-ubyte* >/dev/null 2>&1; then
  echo "SKIPPED: Fashion-MNIST not found in $dir (apt-get install dataset-fashion-mnist)"
  exit 77
fi
out=$("$@" 2>&1)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || { echo "FAILED: exit code $rc"; exit 1; }
acc=$(echo "$out" | sed -n 's/^test_accuracy=\([0-9.]*\)$/\1/p' | tail -1)
[[ -n "$acc" ]] || { echo "FAILED: no test_accuracy= line"; exit 1; }
if awk -v a="$acc" -v m="$min" 'BEGIN { exit !(a >= m) }'; then
  echo "PASSED: test_accuracy=$acc >= $min"
else
  echo "FAILED: test_accuracy=$acc < $min"
  exit 1
fi

#!/usr/bin/env bash
# tests/examples/compare_device_losses.sh TOL CMD... — runs CMD --device cpu and CMD --device cuda
# (train_mnist_sim --max-steps N: lines "step k: loss=X") and passes when both print the same
# steps with |loss_cpu - loss_cuda| <= TOL each. Exits 77 (ctest: Skipped) when Fashion-MNIST is
# not installed, as tests/examples/check_accuracy.sh, and when CMD is an nvcc build on a machine
# without a GPU that refuses --device cuda with exit 1 and "... out of range (0 device(s) here)"
# (any other failure of the CUDA run, a crash included, fails).
set -uo pipefail
tol="$1"
shift
dir="${TINYTORCH_DATA:-/usr/share/datasets/fashion-mnist}"
if ! ls "$dir"/train-images-idx3-ubyte* >/dev/null 2>&1; then
  echo "SKIPPED: Fashion-MNIST not found in $dir (apt-get install dataset-fashion-mnist)"
  exit 77
fi
cpu=$("$@" --device cpu 2>&1) || { echo "$cpu"; echo "FAILED: the CPU run"; exit 1; }
cuda=$("$@" --device cuda 2>&1); rc=$?
if [ $rc = 1 ] && grep -qF -- "--device cuda: CUDA device index 0 out of range (0 device(s) here)" <<<"$cuda"; then
  echo "$cuda"; echo "SKIPPED: no CUDA device (the nvcc build refused --device cuda with the message above, exit 1)"
  exit 77  # a real GPU build without a GPU: the clear refusal is the pass condition here
fi
[ $rc = 0 ] || { echo "$cuda"; echo "FAILED: the CUDA run (exit $rc)"; exit 1; }
echo "--- cpu:"; echo "$cpu"; echo "--- cuda:"; echo "$cuda"
a=$(echo "$cpu" | sed -n 's/^step \([0-9]*\): loss=\([-0-9.eE+naif]*\)$/\1 \2/p')
b=$(echo "$cuda" | sed -n 's/^step \([0-9]*\): loss=\([-0-9.eE+naif]*\)$/\1 \2/p')
[[ -n "$a" ]] || { echo "FAILED: no 'step k: loss=' lines"; exit 1; }
if paste -d' ' <(echo "$a") <(echo "$b") | awk -v tol="$tol" '
    { n++; if ($1 != $3) { print "step numbers differ: " $1 " vs " $3; bad = 1; next }
      d = $2 - $4; if (d < 0) d = -d; if (!(d <= tol)) { print "step " $1 ": " $2 " vs " $4; bad = 1 } }
    END { exit bad || n == 0 }'; then
  echo "PASSED: the same losses on cpu and cuda to $tol"
else
  echo "FAILED: the losses differ"
  exit 1
fi

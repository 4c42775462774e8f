#!/usr/bin/env bash
# tests/examples/compare_binaries_losses.sh TOL BIN_A BIN_B ARGS... — runs BIN_A ARGS and BIN_B ARGS
# (train_mnist builds with --max-steps N: lines "step k: loss=X") and passes when both print the
# same steps with |loss_a - loss_b| <= TOL each: e.g. the g++ train_mnist and the nvcc
# train_mnist_cuda on --device cpu (the same CPU code, two compilers). Exits 77 (ctest: Skipped)
# when Fashion-MNIST is not installed, as tests/examples/compare_device_losses.sh.
set -uo pipefail
tol="$1" bin_a="$2" bin_b="$3"
shift 3
dir="${TINYTORCH_DATA:-/usr/share/datasets/fashion-mnist}"
if ! ls "$dir"/train-images-idx3-ubyte* >/dev/null 2>&1; then
  echo "SKIPPED: Fashion-MNIST not found in $dir (apt-get install dataset-fashion-mnist)"
  exit 77
fi
out_a=$("$bin_a" "$@" 2>&1) || { echo "$out_a"; echo "FAILED: $bin_a $*"; exit 1; }
out_b=$("$bin_b" "$@" 2>&1) || { echo "$out_b"; echo "FAILED: $bin_b $*"; exit 1; }
echo "--- $bin_a:"; echo "$out_a"; echo "--- $bin_b:"; echo "$out_b"
a=$(echo "$out_a" | sed -n 's/^step \([0-9]*\): loss=\([-0-9.eE+naif]*\)$/\1 \2/p')
b=$(echo "$out_b" | sed -n 's/^step \([0-9]*\): loss=\([-0-9.eE+naif]*\)$/\1 \2/p')
[[ -n "$a" ]] || { echo "FAILED: no 'step k: loss=' lines"; exit 1; }
[ "$(echo "$a" | wc -l)" = "$(echo "$b" | wc -l)" ] || { echo "FAILED: different numbers of steps"; exit 1; }
if paste -d' ' <(echo "$a") <(echo "$b") | awk -v tol="$tol" '
    { n++; if ($1 != $3) { print "step numbers differ: " $1 " vs " $3; bad = 1; next }
      d = $2 - $4; if (d < 0) d = -d; if (!(d <= tol)) { print "step " $1 ": " $2 " vs " $4; bad = 1 } }
    END { exit bad || n == 0 }'; then
  echo "PASSED: the same losses from both binaries to $tol"
else
  echo "FAILED: the losses differ"
  exit 1
fi

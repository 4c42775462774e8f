# tests/examples/train_mnist_runs.sh — what check_resume.sh, check_zero.sh and check_amp.sh share; sourced, not run.
# Call: source it with the script's arguments "[LAUNCHER...] -- TRAIN_MNIST [ARGS...]"; it sets
#   launcher   the words before "--" (e.g. bash scripts/mpirun.sh -np 2), empty for one process
#   work       a scratch directory, removed on exit
# and shifts the launcher and "--" off "$@" (so "$@" is TRAIN_MNIST ARGS), after exiting 77 (ctest:
# Skipped) when Fashion-MNIST is not installed. Then:
#   run NAME ARGS...   runs LAUNCHER ARGS into $work/NAME.out, prints it, fails the test on a non-zero exit
#   results FILE...    the summary lines without timings: "epoch 1/2 loss=... test_acc=...", "test_accuracy=..."
launcher=()
while [[ $# -gt 0 && "$1" != "--" ]]; do launcher+=("$1"); shift; done
[[ $# -gt 0 ]] && shift  # the "--"
dir="${TINYTORCH_DATA:-/usr/share/datasets/fashion-mnist}"
if ! ls "$dir"/train-images-idx3-ubyte* >/dev/null 2>&1; then
  echo "SKIPPED: Fashion-MNIST not found in $dir (apt-get install dataset-fashion-mnist)"
  exit 77
fi
work=$(mktemp -d /tmp/tt_train_mnist.XXXXXX)
trap 'rm -rf "$work"' EXIT
run() {
  local name="$1"; shift
  "${launcher[@]}" "$@" >"$work/$name.out" 2>&1
  local rc=$?
  cat "$work/$name.out"
  [[ $rc -eq 0 ]] || { echo "FAILED: '$name' exited with $rc"; exit 1; }
}
results() { sed -n -e 's/ samples\/s=.*//p' -e '/^test_accuracy=/p' "$@" | grep -v '^epoch .*\[' ; }

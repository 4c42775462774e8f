#!/usr/bin/env bash
# tests/examples/check_portable.sh PROGRAM ARGS... — the numbers a chapter program prints do not
# depend on the number of threads: PROGRAM ARGS runs with --threads 1 and with --threads 2, and
# every loss and accuracy it prints must be the same, digit for digit, in the same order. ctest chapter_numbers_portable
# runs it on train_mnist and train_gpt (examples/CMakeLists.txt); the other half of portability,
# Eigen's blocking pinned whatever cache sizes the CPU reports, is tests/test_threads.cpp's.
set -uo pipefail
numbers() {  # each loss and accuracy, e.g. "loss 4.1998", "test_accuracy=0.8963", "loss=-1.25"
  grep -oiE '[a-z_]*(loss|acc|accuracy)[=: ]+-?[0-9][0-9.]*([eE][-+]?[0-9]+)?'
}
one=$("$@" --threads 1 2>&1)
rc=$?
((rc == 0)) || { echo "$one"; echo "FAILED: --threads 1 exited with $rc"; exit 1; }
two=$("$@" --threads 2 2>&1)
rc=$?
((rc == 0)) || { echo "$two"; echo "FAILED: --threads 2 exited with $rc"; exit 1; }
a=$(numbers <<<"$one")
b=$(numbers <<<"$two")
[[ -n "$a" ]] || { echo "$one"; echo "FAILED: no loss or accuracy in the output"; exit 1; }
if [[ "$a" != "$b" ]]; then
  diff <(echo "$a") <(echo "$b")
  echo "FAILED: the numbers differ between 1 and 2 threads"
  exit 1
fi
echo "$a"
echo "PASSED: $(wc -l <<<"$a") numbers the same on 1 and 2 threads"

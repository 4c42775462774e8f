#!/usr/bin/env bash
# tests/examples/compare_gpt_losses.sh TOL MPIRUN_SH TRAIN_GPT DATA NP [FLAGS...] — runs a short
# train_gpt on one process and the same under `MPIRUN_SH -np NP ... FLAGS` (e.g. --tp 2), and
# passes when both print the same "iter k: loss X" and "step k: train loss A, val loss B" lines to
# TOL each (the numbers are printed with 4 decimals: TOL 2e-4 allows one rounding step). A model
# split over ranks computes the same sums in another order, so the losses agree to about 1e-6.
set -uo pipefail
tol="$1"; mpirun_sh="$2"; exe="$3"; data="$4"; np="$5"
shift 5
args=(--data "$data" --iters 20 --eval-interval 10 --eval-iters 2 --log-interval 5)
one=$("$exe" "${args[@]}" 2>&1) || { echo "$one"; echo "FAILED: the one-process run"; exit 1; }
many=$(bash "$mpirun_sh" -np "$np" "$exe" "${args[@]}" "$@" 2>&1) || { echo "$many"; echo "FAILED: the $np-rank run"; exit 1; }
echo "--- one process:"; echo "$one"; echo "--- $np ranks, $*:"; echo "$many"
numbers() { sed -n -e 's/^iter \([0-9]*\): loss \([0-9.]*\),.*/iter\1 \2/p' \
                   -e 's/^step \([0-9]*\): train loss \([0-9.]*\), val loss \([0-9.]*\)$/train\1 \2\nval\1 \3/p'; }
a=$(numbers <<<"$one"); b=$(numbers <<<"$many")
[[ -n "$a" ]] || { echo "FAILED: no loss lines"; exit 1; }
if paste -d' ' <(echo "$a") <(echo "$b") | awk -v tol="$tol" '
    { n++; if ($1 != $3) { print "lines differ: " $1 " vs " $3; bad = 1; next }
      d = $2 - $4; if (d < 0) d = -d; if (!(d <= tol)) { print $1 ": " $2 " vs " $4; bad = 1 } }
    END { exit bad || n == 0 }'; then
  echo "PASSED: the same losses on one process and on $np ranks ($*) to $tol"
else
  echo "FAILED: the losses differ"
  exit 1
fi

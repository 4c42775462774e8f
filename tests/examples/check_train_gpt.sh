#!/usr/bin/env bash
# tests/examples/check_train_gpt.sh MAX TRAIN_GPT DATA — a short train_gpt run on Tiny Shakespeare
# (DATA: data/tinyshakespeare/input.txt of the source tree) that must bring the validation loss
# from ln 65 = 4.17 to at most MAX, save its model, and then generate 200 characters from that
# checkpoint with --sample: all printable text of the corpus's alphabet.
set -uo pipefail
max="$1"
exe="$2"
data="$3"
ck="$(mktemp -d)/gpt.tt"
trap 'rm -rf "$(dirname "$ck")"' EXIT
out=$("$exe" --data "$data" --iters 150 --eval-interval 75 --eval-iters 10 --log-interval 25 --save "$ck" 2>&1)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || { echo "FAILED: exit code $rc"; exit 1; }
loss=$(echo "$out" | sed -n 's/^val_loss=\([0-9.]*\)$/\1/p' | tail -1)
[[ -n "$loss" ]] || { echo "FAILED: no val_loss= line"; exit 1; }
awk -v a="$loss" -v m="$max" 'BEGIN { exit !(a <= m) }' || { echo "FAILED: val_loss=$loss > $max"; exit 1; }
echo "PASSED: val_loss=$loss <= $max"
text=$("$exe" --resume "$ck" --sample 200 2>&1)
rc=$?
echo "$text"
[[ $rc -eq 0 ]] || { echo "FAILED: --sample exit code $rc"; exit 1; }
chars=$(printf '%s' "$text" | tr -d '\n' | wc -c)
[[ $chars -ge 150 ]] || { echo "FAILED: --sample printed $chars characters"; exit 1; }
if printf '%s' "$text" | LC_ALL=C grep -q '[^[:print:][:space:]]'; then
  echo "FAILED: --sample printed a character outside the corpus's alphabet"
  exit 1
fi
echo "PASSED: --sample printed $chars characters"

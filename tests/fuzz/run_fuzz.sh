#!/usr/bin/env bash
# tests/fuzz/run_fuzz.sh — one bounded libFuzzer run, as ctest's fuzz_<x> runs it.
#
#   bash tests/fuzz/run_fuzz.sh <fuzzer> <work-dir> <seconds> <seed-dir>...
#   e.g. bash tests/fuzz/run_fuzz.sh build-asan/bin/fuzz_idx build-asan/fuzz_idx.work 30 \
#          tests/fuzz/corpus/idx tests/fuzz/regressions/idx
#
# Empties <work-dir>, copies every seed directory's files into <work-dir>/corpus (libFuzzer adds
# the new inputs it finds to its first corpus directory: the committed ones are never written),
# and runs the fuzzer there for <seconds>. The fuzz target's
# scratch files go to a fresh directory on /dev/shm when possible (tinytorch::save's fsync costs
# nothing there), else under <work-dir>. libFuzzer options: -timeout=10 (one input may take 10 s
# under ASan), -rss_limit_mb=2048 (also the largest single allocation), -max_len 4096 or the
# largest seed. Exit status: libFuzzer's (0: no finding in the time given). On a finding the
# input that caused it is in <work-dir>/artifacts/; this script prints how to keep it as a
# regression test.
set -euo pipefail
if (($# < 4)); then
  echo "usage: $0 <fuzzer> <work-dir> <seconds> <seed-dir>..." >&2
  exit 2
fi
fuzzer="$1" work="$2" seconds="$3"
shift 3

rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
n=0
for dir in "$@"; do
  [[ -d "$dir" ]] || continue
  for f in "$dir"/*; do
    [[ -f "$f" ]] || continue
    cp -- "$f" "$work/corpus/$(basename "$dir")_$(basename "$f")"
    n=$((n + 1))
  done
done
echo "run_fuzz: $(basename "$fuzzer") for ${seconds}s from $n seed input(s)"

scratch="$(mktemp -d /dev/shm/tt_fuzz.XXXXXX 2>/dev/null || mktemp -d "$work/scratch.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

rc=0
TMPDIR="$scratch" "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" || rc=$?
if ((rc != 0)); then
  name="$(basename "$fuzzer")"
  echo "run_fuzz: $name found a problem (exit status $rc); the input that caused it:" >&2
  ls -l "$work/artifacts/" >&2 || true
  echo "run_fuzz: replay it with $(dirname "$fuzzer")/${name}_replay <file>; fix the reader, then keep" \
       "the input as a regression test: cp <file> tests/fuzz/regressions/${name#fuzz_}/<what-it-was>" >&2
fi
exit "$rc"

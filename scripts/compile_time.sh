#!/usr/bin/env bash
# scripts/compile_time.sh — how long a one-file program takes to compile with tinytorch, beside
# the same program against libtorch and a framework-free Eigen floor (issue 11 §6).
#
#   scripts/compile_time.sh [repetitions]      (default 3; prints the median of each, g++ -O2 -c)
#
# Programs: tests/oneline/prog.cpp (the README's first program: Linear(2,1), MSE, SGD, 5 steps),
# scripts/compile_time/libtorch_prog.cpp (the same, line for line, against libtorch; Debian's
# libtorch-dev, skipped when /usr/include/torch is missing), scripts/compile_time/eigen_prog.cpp
# (the same arithmetic by hand with Eigen). Compile only (-c), no link: the linker's time depends
# on the libraries' sizes, not on what the program instantiates. The runs are interleaved (one
# of each in turn) because the development machine is shared; quote the ratios.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
reps="${1:-3}"
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "compile_time.sh: expected a positive number of repetitions, got '$reps'" >&2; exit 2; }
CXX="${CXX:-g++}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

names=(tinytorch eigen)
declare -A cmd
cmd[tinytorch]="$CXX -std=c++17 -O2 -I include -I /usr/include/eigen3 -c tests/oneline/prog.cpp -o $tmp/t.o"
cmd[eigen]="$CXX -std=c++17 -O2 -I /usr/include/eigen3 -c scripts/compile_time/eigen_prog.cpp -o $tmp/e.o"
if [[ -d /usr/include/torch/csrc/api/include ]]; then
  names+=(libtorch)
  cmd[libtorch]="$CXX -std=c++17 -O2 -I /usr/include/torch/csrc/api/include -c scripts/compile_time/libtorch_prog.cpp -o $tmp/l.o"
else
  echo "compile_time.sh: libtorch headers not found (apt-get install libtorch-dev): libtorch skipped" >&2
fi

declare -A times
for ((r = 0; r < reps; ++r)); do
  for n in "${names[@]}"; do
    t0=$(date +%s.%N)
    ${cmd[$n]}
    t1=$(date +%s.%N)
    times[$n]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') "
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
echo "compile time, $CXX -O2 -c, median of $reps (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
declare -A med
for n in "${names[@]}"; do
  med[$n]=$(echo "${times[$n]}" | median)
  printf '  %-10s %7.2f s   (runs: %s)\n' "$n" "${med[$n]}" "${times[$n]}"
done
if [[ -n "${med[libtorch]:-}" ]]; then
  awk -v t="${med[tinytorch]}" -v l="${med[libtorch]}" 'BEGIN { printf "  tinytorch / libtorch: %.2fx\n", t / l }'
fi

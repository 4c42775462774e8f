#!/usr/bin/env bash
# scripts/compile_time.sh — how long a one-file program takes to compile with tinytorch, in both
# build modes, beside the same program against libtorch and a framework-free Eigen floor.
#
#   scripts/compile_time.sh [repetitions]      (default 3; prints the median CPU seconds of each)
#
# Programs: tests/oneline/prog.cpp (the README's first program: Linear(2,1), MSE, SGD, 5 steps),
# scripts/compile_time/libtorch_prog.cpp (the same, line for line, against libtorch; Debian's
# libtorch-dev, skipped when /usr/include/torch is missing), scripts/compile_time/eigen_prog.cpp
# (the same arithmetic by hand with Eigen). Rows:
#   header-only -O2 / -O0   the README's one g++ line (compile only)
#   separate -O2 / -O0      the same file with -DTINYTORCH_SEPARATE_COMPILATION (no Eigen on the
#                           include path: the user's TU does not see it); the library is compiled
#                           apart, once, and linked (tinytorch::compiled)
#   library TU -O2          src/tinytorch.cpp, the library itself (<tinytorch/src.hpp>)
#   libtorch -O2, Eigen -O2 the references
# Compile only (-c), no link: the linker's time depends on the libraries' sizes, not on what the
# program instantiates. CPU seconds (user + sys of the compiler), so other work on the machine
# costs less than in wall time; the runs are interleaved (one of each in turn) all the same.
# The last line counts the symbols each mode's object file defines (nm --defined-only).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
reps="${1:-3}"
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "compile_time.sh: expected a positive number of repetitions, got '$reps'" >&2; exit 2; }
CXX="${CXX:-g++}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

inc="-I include -I /usr/include/eigen3"
names=(ho_O2 ho_O0 sep_O2 sep_O0 lib_O2 eigen)
declare -A cmd label
cmd[ho_O2]="$CXX -std=c++17 -O2 $inc -c tests/oneline/prog.cpp -o $tmp/ho2.o"
cmd[ho_O0]="$CXX -std=c++17 -O0 $inc -c tests/oneline/prog.cpp -o $tmp/ho0.o"
cmd[sep_O2]="$CXX -std=c++17 -O2 -DTINYTORCH_SEPARATE_COMPILATION -I include -c tests/oneline/prog.cpp -o $tmp/sep2.o"
cmd[sep_O0]="$CXX -std=c++17 -O0 -DTINYTORCH_SEPARATE_COMPILATION -I include -c tests/oneline/prog.cpp -o $tmp/sep0.o"
cmd[lib_O2]="$CXX -std=c++17 -O2 -DTINYTORCH_SEPARATE_COMPILATION $inc -c src/tinytorch.cpp -o $tmp/lib.o"
cmd[eigen]="$CXX -std=c++17 -O2 -I /usr/include/eigen3 -c scripts/compile_time/eigen_prog.cpp -o $tmp/e.o"
label[ho_O2]="header-only -O2"; label[ho_O0]="header-only -O0"
label[sep_O2]="separate -O2"; label[sep_O0]="separate -O0"
label[lib_O2]="library TU -O2"; label[eigen]="Eigen -O2"; label[libtorch]="libtorch -O2"
if [[ -d /usr/include/torch/csrc/api/include ]]; then
  names+=(libtorch)
  cmd[libtorch]="$CXX -std=c++17 -O2 -I /usr/include/torch/csrc/api/include -c scripts/compile_time/libtorch_prog.cpp -o $tmp/l.o"
else
  echo "compile_time.sh: libtorch headers not found (apt-get install libtorch-dev): libtorch skipped" >&2
fi

declare -A times
TIMEFORMAT='%U %S'
for ((r = 0; r < reps; ++r)); do
  for n in "${names[@]}"; do
    t=$({ time ${cmd[$n]} >/dev/null; } 2>&1 | tail -1)
    times[$n]+="$(awk -v t="$t" 'BEGIN { split(t, a, " "); printf "%.2f", a[1] + a[2] }') "
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
echo "compile CPU seconds ($CXX, compile only), median of $reps (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
declare -A med
for n in "${names[@]}"; do
  med[$n]=$(echo "${times[$n]}" | median)
  printf '  %-16s %7.2f s   (runs: %s)\n' "${label[$n]}" "${med[$n]}" "${times[$n]}"
done
if [[ -n "${med[libtorch]:-}" ]]; then
  awk -v t="${med[ho_O2]}" -v l="${med[libtorch]}" 'BEGIN { printf "  header-only / libtorch: %.2fx\n", t / l }'
fi
echo "  symbols defined: header-only -O2 $(nm --defined-only "$tmp/ho2.o" | wc -l), separate -O2 $(nm --defined-only "$tmp/sep2.o" | wc -l)"

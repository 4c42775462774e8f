#!/usr/bin/env bash
# scripts/compile_log.sh LOG COMMAND... — a compiler launcher that runs COMMAND (the compile, with
# the build's own launcher, ccache, inside it) and appends one line to LOG: the CPU seconds the
# compile took (user + system of its processes) and the object file it wrote. A cache hit shows as
# a few hundredths of a second. CMakeLists.txt puts it first when TINYTORCH_COMPILE_LOG names a
# file (scripts/test.sh does: build*/compile-log.tsv); scripts/test_cost.py reads it.
log=$1
shift
out="" prev=""
for a in "$@"; do
  if [[ $prev == -o ]]; then out=$a; elif [[ $a == -o?* ]]; then out=${a#-o}; fi
  prev=$a
done
"$@"
rc=$?
# `times` (a builtin: no subshell, which would count only its own children) prints the children's
# user and system time as XmY.YYYs on its second line.
tmp=$(TMPDIR=/tmp mktemp)
LC_ALL=C times >"$tmp"
cpu=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; ++i) { split($i, p, "m"); sub("s", "", p[2]); t += p[1] * 60 + p[2] } printf "%.2f", t }' "$tmp")
rm -f "$tmp"
printf '%s\t%s\n' "$cpu" "$out" >> "$log"
exit $rc

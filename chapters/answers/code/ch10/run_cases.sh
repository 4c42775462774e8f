# ch10 exercise 7: every case of tests/sim_check/tests.cmake (listed in cases.txt) under its check.
# runs every planted_bugs case under the check its ctest row names (tests/sim_check/tests.cmake);
# prints the exit code and the first diagnostic line
while read -r case mode kind env; do
  bin=build/bin/planted_bugs; [ "$kind" = tsan ] && bin=build-tsan/bin/planted_bugs   # run from the repository root
  out=$(env TINYTORCH_SIM_HANG_SECONDS=20 $env timeout 60 $bin $case 2>&1 </dev/null); rc=$?
  first=$(echo "$out" | grep -m1 -E "memcheck|racecheck|initcheck|synccheck|WARNING: ThreadSanitizer|hang:|stack overflow|__shared__|^ok " | cut -c1-150)
  printf "%-24s expect %-4s rc=%-3s [%s] %s\n" "$case" "$mode" "$rc" "${env:-no env}" "$first"
done < "$(dirname "$0")/cases.txt"

#!/usr/bin/env bash
# tests/examples/expect_output.sh EXPECTED CMD... — runs a program and passes when it exits 0 and
# its output (stdout and stderr) holds the lines of the file EXPECTED, consecutively and in order.
#
# Lines are compared after squeezing runs of spaces to one and dropping trailing spaces, so a table
# keeps its columns readable in EXPECTED without depending on their padding. The expected outputs
# live beside the tests in tests/examples/expected/<name>.txt (ctest *_output, examples/CMakeLists.txt);
# a chapter that quotes an example's output quotes the same lines.
set -uo pipefail
expected="$1"
shift
[[ -f "$expected" ]] || { echo "expect_output.sh: no expected-output file $expected"; exit 2; }
out=$("$@" 2>&1 </dev/null)
rc=$?
echo "$out"
if [[ $rc -ne 0 ]]; then
  echo "FAILED: exit code $rc (expected 0)"
  exit 1
fi
squeeze() { sed -e 's/  */ /g' -e 's/ *$//'; }
want=$(squeeze <"$expected")
got=$(squeeze <<<"$out")
# The expected block must appear as consecutive lines: compare it with every window of the output.
if ! python3 - "$want" "$got" <<'PY'
import sys
want = [l for l in sys.argv[1].split("\n")]
while want and want[-1] == "":
    want.pop()
got = sys.argv[2].split("\n")
n = len(want)
ok = any(got[i:i + n] == want for i in range(len(got) - n + 1))
if not ok:
    # name the first expected line that is missing, or the first one out of place
    for w in want:
        if w not in got:
            print("FAILED: the output has no line: " + w)
            break
    else:
        print("FAILED: the output has the expected lines, but not consecutively in this order:")
        print("\n".join("  " + w for w in want))
sys.exit(0 if ok else 1)
PY
then
  exit 1
fi
echo "PASSED: the output holds the $(grep -c '' "$expected") lines of ${expected##*/}"

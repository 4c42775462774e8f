#!/usr/bin/env bash
# tests/gdb/run_gdb_test.sh — ctest gdb_pretty_printer (labels gdb, ch01).
#
#   bash tests/gdb/run_gdb_test.sh build/bin/gdb_demo
#
# Runs tests/gdb/check_session.py inside gdb on gdb_demo (tests/gdb/gdb_demo.cpp, built at -O0 -g)
# with the pretty-printers loaded the documented way (-x tools/gdb/tinytorch.py), in batch mode,
# from the current directory (ctest: the build directory, where the session writes and removes
# gdb_demo.core). Exits 77 (ctest: Skipped) when gdb is not installed, has no Python, or may not
# run a program here (ptrace not permitted, e.g. in a container without CAP_SYS_PTRACE);
# scripts/install-deps.sh installs Debian's gdb.
set -euo pipefail
demo="${1:?usage: run_gdb_test.sh <gdb_demo executable>}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
GDB="${GDB:-gdb}"

if ! command -v "$GDB" >/dev/null 2>&1; then
  echo "gdb_pretty_printer: SKIPPED: $GDB not found (scripts/install-deps.sh installs it)"
  exit 77
fi
if ! "$GDB" -batch -nx -ex 'python print("python ok")' 2>/dev/null | grep -q "python ok"; then
  echo "gdb_pretty_printer: SKIPPED: $GDB has no Python support"
  exit 77
fi
# Can gdb start and trace a program here? (ptrace may be forbidden: Yama, seccomp, a container.)
probe="$("$GDB" -batch -nx -ex run --args /bin/true 2>&1 || true)"
if ! grep -q "exited normally" <<<"$probe"; then
  echo "gdb_pretty_printer: SKIPPED: gdb cannot run a program here (ptrace not permitted?):"
  echo "$probe" | tail -3
  exit 77
fi

exec "$GDB" -batch -nx -x "$root/tools/gdb/tinytorch.py" -x "$root/tests/gdb/check_session.py" "$demo"

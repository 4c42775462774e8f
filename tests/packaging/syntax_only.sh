#!/bin/sh
# tests/packaging/syntax_only.sh [LAUNCHER...] COMPILER ARGS... — the compiler launcher of the header checks
# (tests/packaging/tests.cmake, header_compiles): runs the compile with -fsyntax-only (the header is
# parsed, checked and its used templates instantiated, but no code is generated: the objects are
# thrown away anyway; about a quarter less CPU, e.g. 4.1 s instead of 5.4 s for distributed/ddp.hpp)
# and then creates the empty object file the build rule expects. The dependency file (-MD -MF) is
# still written, so an edited header is rechecked. A launcher before the compiler (ccache) runs the
# -fsyntax-only compile, and caches it.
out="" prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out="$a"
  prev="$a"
done
"$@" -fsyntax-only || exit $?
if [ -n "$out" ]; then : > "$out"; fi

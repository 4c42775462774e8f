#!/usr/bin/env bash
# scripts/test.sh — build everything and run every test (the README's test command; CI runs it).
#
#   scripts/test.sh                      # install missing packages, configure, build, ctest
#   TT_SKIP_DEPS=1 scripts/test.sh       # skip the package step
#   BUILD_DIR=build-dbg CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Debug" scripts/test.sh
#
# Steps: scripts/install-deps.sh; cmake -S . -B build -DCMAKE_BUILD_TYPE=Release;
# cmake --build build -j$(nproc); ctest --test-dir build --output-on-failure -j2.
# MPI tests are RUN_SERIAL, so -j2 never runs two mpiruns at once. GPU tests that find no GPU
# show as "Skipped" (exit 77). Exits non-zero when any step fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ "${TT_SKIP_DEPS:-0}" == "0" ]]; then
  bash scripts/install-deps.sh
fi

BUILD_DIR="${BUILD_DIR:-build}"
read -r -a cmake_args <<<"${CMAKE_ARGS:-}"

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}"
cmake --build "$BUILD_DIR" -j"$(nproc)"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2

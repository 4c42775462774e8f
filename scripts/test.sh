#!/usr/bin/env bash
# scripts/test.sh — build everything and run every test (the README's test command; CI runs it).
#
#   scripts/test.sh                      # install missing packages, configure, build, ctest
#   TT_SKIP_DEPS=1 scripts/test.sh       # skip the package step
#   BUILD_DIR=build-dbg CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Debug" scripts/test.sh
#
# Steps: scripts/install-deps.sh; cmake -S . -B build -DCMAKE_BUILD_TYPE=Release;
# cmake --build build -j$(nproc); the tests labelled "threads" (DataParallel's replicas run in
# threads) under ThreadSanitizer, in a second build directory ($BUILD_DIR-tsan:
# -DTINYTORCH_SANITIZER=thread, only target tt_thread_tests; a race report fails the test;
# TT_SKIP_TSAN=1 skips it); last, ctest --test-dir build --output-on-failure -j2.
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

if [[ "${TT_SKIP_TSAN:-0}" == "0" ]]; then
  TSAN_DIR="${BUILD_DIR}-tsan"
  cmake -S . -B "$TSAN_DIR" -DCMAKE_BUILD_TYPE=Release -DTINYTORCH_SANITIZER=thread \
    -DTINYTORCH_BUILD_EXAMPLES=OFF -DTINYTORCH_BUILD_BENCH=OFF -DTINYTORCH_ENABLE_CUDA=OFF "${cmake_args[@]}"
  cmake --build "$TSAN_DIR" -j"$(nproc)" --target tt_thread_tests
  ctest --test-dir "$TSAN_DIR" --output-on-failure -L threads
fi

ctest --test-dir "$BUILD_DIR" --output-on-failure -j2

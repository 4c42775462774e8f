#!/usr/bin/env bash
# scripts/test.sh — build everything and run every test (the README's test command; CI runs it).
#
#   scripts/test.sh                      # install missing packages, three builds, every test
#   scripts/test.sh -L ch13              # the inner loop: the main build, then only these tests
#   scripts/test.sh -R 'test_zero|ddp'   #   (any ctest selection: -L label, -R regex, -E ...)
#   TT_SKIP_DEPS=1 scripts/test.sh       # skip the package step
#   TT_SKIP_TSAN=1 TT_SKIP_ASAN=1 TT_SKIP_FUZZ=1 scripts/test.sh   # only the main build
#   TT_FUZZ_SECONDS=300 scripts/test.sh  # fuzz longer (default 30 s per target)
#   BUILD_DIR=build-dbg CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Debug" scripts/test.sh
#
# Stages (docs/testing.md has the current time of each, what runs where and why):
#   1. deps   scripts/install-deps.sh (Debian packages, ccache among them).
#   2. main   cmake -S . -B build (Release); cmake --build build.
#   3. tsan   ThreadSanitizer ($BUILD_DIR-tsan, target tt_thread_tests): the tests labelled
#             "threads" and the kernel simulator's racecheck. TT_SKIP_TSAN=1 skips it.
#   4. asan   AddressSanitizer + UndefinedBehaviorSanitizer ($BUILD_DIR-asan, clang++ when
#             installed, target tt_sanitizer_tests): ctest -L sanitizer (every Catch2 executable,
#             the MPI tests on 2 ranks, the fuzz replays). TT_SKIP_ASAN=1 skips it.
#   5. fuzz   libFuzzer on the IDX reader and the checkpoint loader, TT_FUZZ_SECONDS each, in the
#             same build directory and the same ctest as stage 4 (clang++ only; without it a ✗
#             line says so and only the replays run). TT_SKIP_FUZZ=1 skips it.
#   6. ctest  ctest --test-dir build -j2: everything else (the MPI tests on 3 and 4 ranks, the
#             chapters' checks, the labs' meta-tests, the docs site, ...).
# With ctest arguments (-L, -R, ...) only stages 1, 2 and 6 run, the ctest with those arguments
# (TT_SKIP_TSAN=0 / TT_SKIP_ASAN=0 add stages 3 / 4 with their own fixed labels); a selection
# that matches no test is an error (--no-tests=error).
# Every compile goes through ccache when it is installed (CMakeLists.txt): an unchanged file is
# not compiled again, in this clone or another. At the end scripts/test_cost.py prints each
# stage's wall time, the cache's hit rate, the costliest compiles and tests, and how many tests
# and Catch2 assertions ran. Tests that run 2 busy ranks hold ctest's lock "mpirun" and tests on
# 3 or 4 ranks are RUN_SERIAL, so -j2 never runs two busy mpiruns at once, while a one-process
# test may run beside a 2-rank one (the failure tests and mpi_multihost, which mostly wait for
# timeouts, take no lock). GPU tests that find no GPU show as "Skipped" (exit 77). A failed stage
# does not stop the run (a build that failed skips its own tests); the run exits non-zero when any
# stage failed, naming them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

BUILD_DIR="${BUILD_DIR:-build}"
read -r -a cmake_args <<<"${CMAKE_ARGS:-}"
ctest_select=("$@")
if ((${#ctest_select[@]})); then  # the inner loop: the main build and the selected tests only
  TT_SKIP_TSAN="${TT_SKIP_TSAN:-1}" TT_SKIP_ASAN="${TT_SKIP_ASAN:-1}" TT_SKIP_FUZZ="${TT_SKIP_FUZZ:-1}"
fi

mkdir -p "$BUILD_DIR"
STAGES="$BUILD_DIR/test-stages.tsv"
: >"$STAGES"
# What an earlier run left for the summary is not this run's.
for d in "$BUILD_DIR" "$BUILD_DIR-tsan" "$BUILD_DIR-asan"; do
  rm -f "$d/ctest-output.log" "$d/Testing/Temporary/LastTest.log" "$d/ccache-before.tsv" "$d/ccache-after.tsv"
done
builds=("$BUILD_DIR")
have_ccache=$(command -v ccache >/dev/null 2>&1 && echo 1 || echo 0)
summary() {
  local rc=$?
  if ((rc == 0 && ${#failed_stages[@]})); then rc=1; fi
  if ((have_ccache)); then ccache --print-stats >"$BUILD_DIR/ccache-after.tsv" 2>/dev/null || true; fi
  echo
  echo "scripts/test.sh: cost of this run (scripts/test_cost.py; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
  python3 scripts/test_cost.py --stages "$STAGES" --ccache-before "$BUILD_DIR/ccache-before.tsv" \
    --ccache-after "$BUILD_DIR/ccache-after.tsv" "${builds[@]}" || true
  if ((${#failed_stages[@]})); then echo "scripts/test.sh: ✗ failed stages: ${failed_stages[*]}"; fi
  exit "$rc"
}
# stage NAME COMMAND...: runs COMMAND and records its wall time for the summary. A failed stage
# is remembered (the run goes on, so that one run shows every failure) and fails the run at exit.
failed_stages=()
stage() {
  local name=$1 t0 rc=0
  shift
  t0=$(date +%s.%N)
  "$@" || rc=$?
  printf '%s\t%s\t%s\n' "$name" "$t0" "$(date +%s.%N)" >>"$STAGES"
  if ((rc != 0)); then
    failed_stages+=("$name")
    echo "scripts/test.sh: ✗ stage $name failed (exit $rc)" >&2
  fi
  return 0
}
# built NAME: whether stage NAME (a build) succeeded, i.e. its tests can run.
built() { [[ " ${failed_stages[*]} " != *" $1 "* ]]; }
# configure DIR ARGS...: cmake with a fresh compile log (scripts/compile_log.sh) in DIR.
configure() {
  local dir=$1
  shift
  mkdir -p "$dir" || return
  : >"$dir/compile-log.tsv"
  cmake -S . -B "$dir" -DTINYTORCH_COMPILE_LOG="$ROOT/$dir/compile-log.tsv" "$@"
}
# run_ctest DIR ARGS...: ctest, its output also in DIR/ctest-output.log (read by test_cost.py).
# ctest starts the longest tests first when it knows each test's time (DIR/Testing/Temporary/
# CTestCostData.txt, which every run updates); a fresh clone has none and would start them in the
# order they are declared, the long chapter checks last. So the times of the last run on this
# machine are kept beside the compiler cache (TT_CTEST_COSTS, one file per build folder name) and
# given to a build that has none: they order the tests, never decide a result.
costs_dir="${TT_CTEST_COSTS:-${XDG_CACHE_HOME:-$HOME/.cache}/tinytorch/ctest-costs}"
run_ctest() {
  local dir=$1 rc
  shift
  local costs="$dir/Testing/Temporary/CTestCostData.txt" kept="$costs_dir/$(basename "$dir").txt"
  if [[ ! -s "$costs" && -s "$kept" ]]; then mkdir -p "$(dirname "$costs")" && cp "$kept" "$costs"; fi
  ctest --test-dir "$dir" --output-on-failure --no-tests=error "$@" 2>&1 | tee "$dir/ctest-output.log"
  rc=${PIPESTATUS[0]}
  if [[ -s "$costs" ]] && mkdir -p "$costs_dir" 2>/dev/null; then
    cp "$costs" "$kept.tmp.$$" 2>/dev/null && mv -f "$kept.tmp.$$" "$kept" || rm -f "$kept.tmp.$$"
  fi
  return "$rc"
}

if [[ "${TT_SKIP_DEPS:-0}" == "0" ]]; then
  stage deps bash scripts/install-deps.sh
  have_ccache=$(command -v ccache >/dev/null 2>&1 && echo 1 || echo 0)
fi
if ((have_ccache)); then ccache --print-stats >"$BUILD_DIR/ccache-before.tsv" 2>/dev/null || true; fi
trap summary EXIT

# Without a GPU the nvcc translation units (tinytorch.cu, test_cuda_nvcc, test_nccl_allreduce) are
# only compiled, never run (their tests report Skipped): nvcc then emits PTX only (no ptxas) with the
# host side at -O0, a third of the CPU of sm_90 at -O3. With a GPU, or when CMAKE_ARGS sets either
# variable, the defaults (sm_90, -O3) stay.
nvcc_args=()
if ! nvidia-smi -L >/dev/null 2>&1 && [[ "${CMAKE_ARGS:-}" != *CMAKE_CUDA_* ]]; then
  nvcc_args=(-DCMAKE_CUDA_ARCHITECTURES=90-virtual "-DCMAKE_CUDA_FLAGS_RELEASE=-O0 -DNDEBUG")
fi

main_build() {
  configure "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DTINYTORCH_BUILD_CUDA_PROGRAMS=OFF "${nvcc_args[@]}" "${cmake_args[@]}" &&
    cmake --build "$BUILD_DIR" -j"$(nproc)"
}
stage main-build main_build

if [[ "${TT_SKIP_TSAN:-0}" == "0" ]]; then
  TSAN_DIR="${BUILD_DIR}-tsan"
  builds+=("$TSAN_DIR")
  tsan_build() {
    configure "$TSAN_DIR" -DCMAKE_BUILD_TYPE=Release -DTINYTORCH_SANITIZER=thread \
      -DTINYTORCH_BUILD_EXAMPLES=OFF -DTINYTORCH_BUILD_BENCH=OFF -DTINYTORCH_ENABLE_CUDA=OFF "${cmake_args[@]}" &&
      cmake --build "$TSAN_DIR" -j"$(nproc)" --target tt_thread_tests
  }
  stage tsan-build tsan_build
  if built tsan-build; then stage tsan-ctest run_ctest "$TSAN_DIR" -j2 -L threads; fi
fi

# Stages 4 and 5 share one build directory. clang++ builds both when it is there (one compiler
# for the instrumented tests and the fuzzers: one configure, one build); else g++ builds the
# ASan tests and CMake prints "✗ libFuzzer".
run_asan=$([[ "${TT_SKIP_ASAN:-0}" == "0" ]] && echo 1 || echo 0)
run_fuzz=$([[ "${TT_SKIP_FUZZ:-0}" == "0" ]] && echo 1 || echo 0)
if ((run_asan || run_fuzz)); then
  ASAN_DIR="${BUILD_DIR}-asan"
  builds+=("$ASAN_DIR")
  asan_cxx=()
  if command -v clang++ >/dev/null 2>&1; then
    asan_cxx=(-DCMAKE_CXX_COMPILER=clang++)
  elif ((run_fuzz)); then
    echo "scripts/test.sh: ✗ fuzzing: clang++ not found (scripts/install-deps.sh installs it); only the replays run" >&2
  fi
  targets=() labels=()
  if ((run_asan)); then targets+=(tt_sanitizer_tests); labels+=(sanitizer); fi
  if ((run_fuzz)); then targets+=(tt_fuzz_targets); labels+=(fuzz); fi
  asan_build() {
    configure "$ASAN_DIR" -DCMAKE_BUILD_TYPE=Release -DTINYTORCH_SANITIZER=address,undefined \
      "${asan_cxx[@]}" -DTINYTORCH_FUZZ_SECONDS="${TT_FUZZ_SECONDS:-30}" \
      -DTINYTORCH_BUILD_EXAMPLES=OFF -DTINYTORCH_BUILD_BENCH=OFF -DTINYTORCH_ENABLE_CUDA=OFF "${cmake_args[@]}" &&
      cmake --build "$ASAN_DIR" -j"$(nproc)" --target "${targets[@]}"
  }
  stage asan-build asan_build
  label_re="^($(IFS='|'; echo "${labels[*]}"))\$"
  if built asan-build; then stage asan-ctest run_ctest "$ASAN_DIR" -j2 -L "$label_re"; fi
fi

if built main-build; then stage main-ctest run_ctest "$BUILD_DIR" -j2 "${ctest_select[@]}"; fi

#!/usr/bin/env bash
# scripts/test.sh — build everything and run every test (the README's test command; CI runs it).
#
#   scripts/test.sh                      # install missing packages, configure, build, ctest
#   TT_SKIP_DEPS=1 scripts/test.sh       # skip the package step
#   TT_SKIP_TSAN=1 TT_SKIP_ASAN=1 TT_SKIP_FUZZ=1 scripts/test.sh   # only the main build
#   TT_FUZZ_SECONDS=300 scripts/test.sh  # fuzz longer (default 30 s per target)
#   BUILD_DIR=build-dbg CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Debug" scripts/test.sh
#
# Steps (CI: 2 cores, budget 45 min from a clean clone):
#   1. scripts/install-deps.sh (Debian packages).
#   2. cmake -S . -B build -DCMAKE_BUILD_TYPE=Release; cmake --build build -j$(nproc).
#   3. ThreadSanitizer ($BUILD_DIR-tsan, -DTINYTORCH_SANITIZER=thread, only target
#      tt_thread_tests): the tests labelled "threads" (DataParallel's replicas run in threads), and
#      the kernel simulator's racecheck: the simulator suite (every shipped kernel) and the planted
#      races of tests/sim_check, each CUDA thread a TSan fiber; a race report fails the test.
#      ctest -j2 (none of them is an MPI test). TT_SKIP_TSAN=1 skips it.
#   4. AddressSanitizer + UndefinedBehaviorSanitizer ($BUILD_DIR-asan, clang++ when installed,
#      else g++; -DTINYTORCH_SANITIZER=address,undefined: -O0 (the MPI tests -O1),
#      -fno-sanitize-recover=all; only target tt_sanitizer_tests, i.e. every Catch2 executable,
#      unit and MPI, and the fuzz replays): ctest -L sanitizer. Any ASan, LSan or UBSan report
#      fails its test (ASAN_OPTIONS / UBSAN_OPTIONS in cmake/TinytorchTesting.cmake). The MPI tests run
#      under mpirun on 2, 3 and 4 ranks like in the main build and end with
#      destroy_process_group (tests/mpi/mpi_main.cpp); Open MPI's own never-freed allocations
#      are suppressed by library in tests/sanitizers/lsan_mpi.supp (leak checking stays on).
#      Tests must therefore also compile with clang++ 14 in C++17 mode. Not instrumented: the
#      *failure_test.sh jobs (they kill ranks on purpose, MPI_Abort skips LeakSanitizer),
#      mpi_multihost, examples, benches, header checks. TT_SKIP_ASAN=1 skips it.
#   5. Fuzzing, in the same build directory (configured with clang++ when it is installed: GCC
#      has no libFuzzer): fuzz_idx (the IDX reader) and fuzz_checkpoint (tinytorch::load), built
#      with -fsanitize=fuzzer,address,undefined, each run for TT_FUZZ_SECONDS (default 30) from a
#      scratch copy of tests/fuzz/corpus/<x> (ctest -L fuzz, in parallel with step 4's tests).
#      A crash fails the step; tests/fuzz/CMakeLists.txt says how it becomes a regression test.
#      Without clang++ a ✗ line says so and only the replays run. TT_SKIP_FUZZ=1 skips it.
#   6. ctest --test-dir build --output-on-failure -j2 (everything, incl. the fuzz replays,
#      docs_site: scripts/docs.sh builds the docs site into build/docs-site, then headless
#      Chromium checks it; about 5 s + 30 s of CPU, skipped without doxygen/chromium; and the
#      chapters, label chapters: scripts/check_chapters.py runs every chapter's `console check`
#      blocks against the programs of this build, about 2 minutes; the --full runs are not here;
#      and the labs, label labs: for every labs/NN-name, its reference solution passes every task
#      and its generated student skeleton fails every one as "not implemented", scripts/lab.py meta).
# MPI tests are RUN_SERIAL, so -j2 never runs two mpiruns at once. GPU tests that find no GPU
# show as "Skipped" (exit 77). Exits non-zero when any step fails.
# Cost (fresh clone of b75424f, 2026-12-04, packages installed, 2 cores): 30 min 1 s wall, 42 min of
# user CPU, about 6 min more than before the simulator's checks (the TSan stage builds and runs the
# simulator suite); 1d0d4ca (initcheck runs checked launches twice): 31 min 23 s wall; 845559d (with
# the chapter checks, about 2 min of them): 28 min 8 s wall, 39 min of user CPU; d0b8466 (with the
# ten labs: 20 more programs to compile, 45 s of meta-tests; on another CPU, an Intel Xeon VM):
# 31 min 30 s wall, 45 min of user CPU; 9398445 (eleven labs, chapter 12's GPT: test_gpt,
# test_transformer, train_gpt_short, the simulator's embedding kernels): 35 min 36 s wall, 52 min of
# user CPU; 04a94a5 (chapter 12.7: test_model_parallel on 2-4 ranks, 80 s each under ASan at -O0;
# the train_gpt --tp / --pp comparisons): 40 min 27 s wall, 60 min of user CPU; 7203a2b (the fused
# attention, MultiheadAttention, test_cuda_transformer_sim: a GPT trained on the simulated GPU):
# 40 min 9 s wall, 58 min of user CPU; d6b5630 (ZeRO-1: test_zero on 2-4 ranks in both builds,
# zero_memory and zero_calculator with their header-only twins, bench_zero, chapter 13's checks):
# 42 min 44 s wall, 63 min of user CPU: 2 min 16 s under the 45-minute budget; 0cff8f0 (chapter
# 11: float16/bfloat16, autocast, GradScaler, train_mnist --amp on 1 and 2 ranks, bench_amp in
# chapter 11's checks; the examples' header-only twins cut from 13 to 3, about 2.5 min of CPU
# saved): 44 min 52 s wall, 64 min 46 s of user CPU, TSan 25/25, ASan+fuzz 68/68, main 264/264,
# with about a minute of another compile of mine on the cores meanwhile: at the budget. Then, with
# each TU's CPU measured by a compiler launcher (the largest: the simulator's library, 208 s at
# -O3; tinytorch.cu under nvcc 134 s; test_cuda_nvcc 82 s; the consumer projects' -O2 builds
# inside ctest, about 130 s), time was taken out: the simulator's library at -O1, nvcc without a
# GPU PTX-only with the host side at -O0 (nvcc_args below), the consumers at -O0. 12eaf4c (chapter
# 11.7: 16-bit collectives, DDP comm hooks, 5 more MPI test cases): 41 min 54 s wall, 59 min 38 s
# of user CPU, TSan 25/25, ASan+fuzz 69/69, main 267/267 (a nice'd helper compiled about 3 min of
# CPU alongside); 4949849 (also: the header checks with -fsyntax-only, three errors PyTorch raises):
# 40 min 56 s wall, 59 min 16 s of user CPU, TSan 25/25, ASan+fuzz 69/69, main 267/267, idle
# machine; a0d4c31 (FSDP FULL_SHARD): 45 min 20 s; e7dd3a5 (FSDP prefetch; TSan's ctest -j2, the
# sanitizer builds without gemm's 129^3 case): 46 min 19 s wall, 67 min 3 s of user CPU, the tests
# 969 s (was 1064 s), the builds 154 s longer; c380c7c then took about 180 s of CPU out of the ASan
# stage (its simulator tests without detect_stack_use_after_return: tests/cuda/tests.cmake), not
# yet timed in a full run. Earlier, eb019c8 (load about 2):
# 25 min 7 s wall, 37 min of user CPU (8552c01 earlier that day: 24 min 30 s). Steps 2-3: the
# main build and TSan in ~13 min; steps 4+5 ~4 min of build and a 3.6-min ctest; step 6's ctest
# 4.1 min. What keeps it there: the library's bodies are compiled once per build mode
# (src/tinytorch.cpp: tinytorch::compiled for the tests, compiled_sim for the simulator tests and
# examples, compiled_cuda (src/tinytorch.cu) for the nvcc tests, tt_programs_compiled with
# -march=native for the examples and benches), each test file is its own TU at -O0 against it
# (tests/CMakeLists.txt), the CUDA test files are compiled as one TU per mode
# (test_cuda_sim_suite, test_cuda_nvcc: they call the inline internals), and
# train_mnist_cuda/bench_cuda are not built here (-DTINYTORCH_BUILD_CUDA_PROGRAMS=OFF below).
# Earlier: 28-45 min with one generated unit-test TU and header-only programs; past 63 min
# before that (stop 17's CI). TT_SKIP_ASAN=1 TT_SKIP_FUZZ=1 save about a quarter of the whole.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ "${TT_SKIP_DEPS:-0}" == "0" ]]; then
  bash scripts/install-deps.sh
fi

BUILD_DIR="${BUILD_DIR:-build}"
read -r -a cmake_args <<<"${CMAKE_ARGS:-}"

# Without a GPU the nvcc translation units (tinytorch.cu, test_cuda_nvcc, test_nccl_allreduce) are
# only compiled, never run (their tests report Skipped): nvcc then emits PTX only (no ptxas) with the
# host side at -O0, 45 s of CPU for tinytorch.cu instead of 134 s (2026-12-05). With a GPU, or
# when CMAKE_ARGS sets either variable, the defaults (sm_90, -O3) stay.
nvcc_args=()
if ! nvidia-smi -L >/dev/null 2>&1 && [[ "${CMAKE_ARGS:-}" != *CMAKE_CUDA_* ]]; then
  nvcc_args=(-DCMAKE_CUDA_ARCHITECTURES=90-virtual "-DCMAKE_CUDA_FLAGS_RELEASE=-O0 -DNDEBUG")
fi

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DTINYTORCH_BUILD_CUDA_PROGRAMS=OFF "${nvcc_args[@]}" "${cmake_args[@]}"
cmake --build "$BUILD_DIR" -j"$(nproc)"

if [[ "${TT_SKIP_TSAN:-0}" == "0" ]]; then
  TSAN_DIR="${BUILD_DIR}-tsan"
  cmake -S . -B "$TSAN_DIR" -DCMAKE_BUILD_TYPE=Release -DTINYTORCH_SANITIZER=thread \
    -DTINYTORCH_BUILD_EXAMPLES=OFF -DTINYTORCH_BUILD_BENCH=OFF -DTINYTORCH_ENABLE_CUDA=OFF "${cmake_args[@]}"
  cmake --build "$TSAN_DIR" -j"$(nproc)" --target tt_thread_tests
  ctest --test-dir "$TSAN_DIR" --output-on-failure -j2 -L threads
fi

# Steps 4 and 5 share one build directory. clang++ builds both when it is there (one compiler
# for the instrumented tests and the fuzzers: one configure, one build); else g++ builds the
# ASan tests and CMake prints "✗ libFuzzer".
run_asan=$([[ "${TT_SKIP_ASAN:-0}" == "0" ]] && echo 1 || echo 0)
run_fuzz=$([[ "${TT_SKIP_FUZZ:-0}" == "0" ]] && echo 1 || echo 0)
if ((run_asan || run_fuzz)); then
  ASAN_DIR="${BUILD_DIR}-asan"
  asan_cxx=()
  if command -v clang++ >/dev/null 2>&1; then
    asan_cxx=(-DCMAKE_CXX_COMPILER=clang++)
  elif ((run_fuzz)); then
    echo "scripts/test.sh: ✗ fuzzing: clang++ not found (scripts/install-deps.sh installs it); only the replays run" >&2
  fi
  cmake -S . -B "$ASAN_DIR" -DCMAKE_BUILD_TYPE=Release -DTINYTORCH_SANITIZER=address,undefined \
    "${asan_cxx[@]}" -DTINYTORCH_FUZZ_SECONDS="${TT_FUZZ_SECONDS:-30}" \
    -DTINYTORCH_BUILD_EXAMPLES=OFF -DTINYTORCH_BUILD_BENCH=OFF -DTINYTORCH_ENABLE_CUDA=OFF "${cmake_args[@]}"
  targets=() labels=()
  if ((run_asan)); then targets+=(tt_sanitizer_tests); labels+=(sanitizer); fi
  if ((run_fuzz)); then targets+=(tt_fuzz_targets); labels+=(fuzz); fi
  cmake --build "$ASAN_DIR" -j"$(nproc)" --target "${targets[@]}"
  label_re="^($(IFS='|'; echo "${labels[*]}"))\$"
  ctest --test-dir "$ASAN_DIR" --output-on-failure -j2 -L "$label_re"
fi

ctest --test-dir "$BUILD_DIR" --output-on-failure -j2

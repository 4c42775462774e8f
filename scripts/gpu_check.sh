#!/usr/bin/env bash
# scripts/gpu_check.sh — issue 7's one-call GPU check: everything that needs a real GPU, in one run.
#
# Two halves, because the lent GPU machine is bare (no Eigen, Catch2 or Google Benchmark there;
# /work/.library/device/KINDS.md) and its minutes are scarce:
#   here (no GPU):   scripts/gpu_check.sh --build-only [--build-dir DIR] [--stage DIR]
#       configures DIR (default build-gpu) with nvcc, -DTINYTORCH_MARCH_NATIVE=OFF (the binaries run on
#       another CPU), builds test_cuda_nvcc, test_nccl_allreduce, bench_cuda and train_mnist_cuda
#       (examples/train_mnist.cpp by nvcc), and copies them with the shared libraries the GPU machine
#       may lack (libbenchmark, Open MPI; not glibc/libstdc++ nor CUDA's own) and Fashion-MNIST
#       ($TINYTORCH_DATA, else /usr/share/datasets/fashion-mnist: 30 MB of .gz, into .gpu/data; only
#       the first N training images that fit, when all would push the stage over 60 MiB) into the
#       stage (default .gpu/, git-ignored, < 64 MiB).
#       Then it looks for a GPU and, finding none, says "no GPU" and exits 0. About 5 min of CPU
#       (the one nvcc test TU) on a 2-core machine; seconds when the targets are already built.
#   there (one `run` call from the repo root, carry [".gpu"], timeout_s 540):
#       bash scripts/gpu_check.sh          # logs and the summary in $OUT (at most 8 files come back)
#       Steps, each capped with `timeout` (caps add up to 420 s; ~3-4 min expected):
#         1. nvidia-smi -L, driver, compute-sanitizer version                      env.txt
#         2. test_cuda_nvcc, once per tests/cuda/test_cuda_<x>.cpp (= ctest -L cuda)  tests.txt
#         3. compute-sanitizer memcheck on test_cuda_nvcc, racecheck on the
#            shared-memory kernels' tests (gemm, reduce, softmax)                  sanitizer.txt
#         4. train_mnist_cuda --device cuda --epochs 1 (the MLP on cuda:0: test_accuracy= line);
#            test_nccl_allreduce at world size 1; DDP through the NCCL buckets at world size 1:
#            mpirun -np 1 train_mnist_cuda --device cuda --backend nccl --epochs 1 (with --backend
#            nccl DDP all-reduces its buckets even on one rank, as PyTorch's)       train_nccl.txt
#         5. bench/mlp_step_torch.py: PyTorch eager's MLP step (784-256-128-10, batch 64, SGD) on the
#            same GPU (median ms; the machine's python3 has torch)                 bench.txt
#         6. bench_cuda --markdown [--torch-mlp-ms MS]: the ratios against cuBLAS / cudaMemcpy / PyTorch
#            and the targets (elementwise >= 0.8x copy, matmul >= 0.5x cuBLAS at 4096, MLP step no
#            slower than PyTorch eager)                 bench.txt, gpu-<date>.md (also bench/results/)
#       summary.txt: one PASS / FAIL / SKIP / TIMEOUT line per step. Exit 0 iff nothing FAILed.
#   --dry-run: print the steps and the stage's contents, run nothing.
#   --no-configure (with --build-only): build DIR as it is configured (ctest gpu_check_build uses it
#       on its own build tree, which it must not reconfigure); the stage then has DIR's -march.
# Without a GPU the run half prints "gpu_check: no GPU (...)" and exits 77 (ctest's "skipped").
# Reference: CUDA.md §9 "One-shot GPU script"; /work/.library/device/README.md (limits: 8 files back).
# Chapter: chapters/10-gpu-kernels.md ("Measuring on a GPU").
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode=run build="$root/build-gpu" stage="$root/.gpu" configure=1
while (($#)); do
  case "$1" in
    --build-only) mode=build ;;
    --dry-run) mode=dry ;;
    --no-configure) configure=0 ;;
    --build-dir) build="$(realpath -m "$2")"; shift ;;
    --stage) stage="$(realpath -m "$2")"; shift ;;
    *) echo "gpu_check: unknown option '$1' (--build-only, --dry-run, --build-dir DIR, --stage DIR)"; exit 2 ;;
  esac
  shift
done
bins=(test_cuda_nvcc test_nccl_allreduce bench_cuda train_mnist_cuda)

gpu_present() {  # sets gpu_why
  if ! command -v nvidia-smi >/dev/null 2>&1; then gpu_why="nvidia-smi not found"; return 1; fi
  if ! gpu_why="$(nvidia-smi -L 2>&1)" || ! grep -q "^GPU " <<<"$gpu_why"; then return 1; fi
}

# ---- here: build and stage ------------------------------------------------------------------------
if [ "$mode" = build ]; then
  set -e
  if ((configure)); then
    mkdir -p "$build"
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTINYTORCH_ENABLE_CUDA=ON -DTINYTORCH_BUILD_BENCH=ON -DTINYTORCH_BUILD_CUDA_PROGRAMS=ON \
          -DTINYTORCH_MARCH_NATIVE=OFF >"$build/gpu_check.configure.log" 2>&1 || { cat "$build/gpu_check.configure.log"; exit 1; }
    grep -q "✓ nvcc CUDA" "$build/gpu_check.configure.log" || { echo "gpu_check: no nvcc: $(grep 'nvcc CUDA' "$build/gpu_check.configure.log")"; exit 1; }
  fi
  targets=() known="$(cmake --build "$build" --target help)"  # Makefile generators: lines "... <target>"
  for b in "${bins[@]}"; do
    if grep -qx "\.\.\. $b" <<<"$known"; then targets+=("$b"); fi
  done
  [[ " ${targets[*]} " == *" test_cuda_nvcc "* ]] || { echo "gpu_check: $build has no target test_cuda_nvcc (CUDA and Catch2 v2 found?)"; exit 1; }
  echo "gpu_check: building ${targets[*]} in $build (-j${JOBS:-1})"
  cmake --build "$build" --target "${targets[@]}" -j"${JOBS:-1}"
  rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib"
  for b in "${targets[@]}"; do cp "$build/bin/$b" "$stage/bin/"; done
  # Shared libraries to take along: whatever ldd resolves outside glibc, the compiler runtime and
  # CUDA (the GPU machine has its own driver, toolkit and NCCL, and they must match its driver).
  for b in "$stage"/bin/*; do
    ldd "$b" | awk '/=> \//{print $3}'
  done | sort -u | grep -Ev '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|ld-linux[^/]*|libcuda|libcudart|libcublas[^/]*|libnccl|libnvidia[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
  # Fashion-MNIST for train_mnist_cuda there (the machine is bare), if the stage has room for it.
  data="${TINYTORCH_DATA:-/usr/share/datasets/fashion-mnist}"
  if ! ls "$data"/train-images-idx3-ubyte* >/dev/null 2>&1; then
    echo "gpu_check: no Fashion-MNIST in $data: the train_mnist_cuda steps will be skipped there"
  elif (($(du -smc "$stage" "$data"/*-ubyte* | tail -1 | cut -f1) <= 60)); then
    mkdir -p "$stage/data" && cp "$data"/*-ubyte* "$stage/data/"
  elif n=$(( (59 - $(du -sm "$stage" | cut -f1) - 5) * 2000 )); ((n < 1000)); then  # ~2300 images per MB of .gz
    echo "gpu_check: no room for Fashion-MNIST in the 60 MiB stage: the train_mnist_cuda steps will be skipped there"
  else  # no room for all 60000 training images (26 MB): the first n that fit, and the whole test set (5 MB)
    mkdir -p "$stage/data" && cp "$data"/t10k-*-ubyte* "$stage/data/"
    python3 - "$data" "$stage/data" "$n" <<'PY' || { echo "gpu_check: could not cut Fashion-MNIST down"; rm -rf "$stage/data"; }
import glob, gzip, os, struct, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for name, item in (("train-images-idx3-ubyte", 28 * 28), ("train-labels-idx1-ubyte", 1)):
    path = glob.glob(os.path.join(src, name + "*"))[0]
    raw = (gzip.open if path.endswith(".gz") else open)(path, "rb").read()
    dims = raw[3]                                   # IDX: magic (0, 0, type, ndims), then ndims big-endian counts
    head = raw[:4] + struct.pack(">I", n) + raw[8:4 + 4 * dims]
    body = raw[4 + 4 * dims:4 + 4 * dims + n * item]
    with gzip.open(os.path.join(dst, name + ".gz"), "wb") as f:
        f.write(head + body)
PY
    echo "gpu_check: the stage holds the first $n Fashion-MNIST training images (all 60000 do not fit in 60 MiB)"
  fi
  set +e
  echo "gpu_check: staged $(du -sh "$stage" | cut -f1) in $stage: $(ls "$stage/bin" | tr '\n' ' ')+ $(ls "$stage/lib" | wc -l) libraries"
  if (($(du -sm "$stage" | cut -f1) > 60)); then echo "gpu_check: FAIL: the stage is over 60 MiB (the run tool carries 64 MiB)"; exit 1; fi
  if gpu_present; then
    echo "gpu_check: a GPU is here; run: bash scripts/gpu_check.sh"
  else
    echo "gpu_check: no GPU ($gpu_why); build done. On a GPU machine: bash scripts/gpu_check.sh (carry .gpu)"
  fi
  exit 0
fi

if [ "$mode" = dry ]; then
  echo "gpu_check: dry run; stage $stage: $(ls "$stage/bin" 2>/dev/null | tr '\n' ' ')"
  sed -n '/^#       Steps/,/^#       summary/p' "$0" | sed 's/^#//'
  exit 0
fi

# ---- there: run the checks ------------------------------------------------------------------------
out="${OUT:-$root/gpu-check-out}"
mkdir -p "$out"
if ! gpu_present; then
  echo "gpu_check: no GPU ($gpu_why): nothing to run. Build with --build-only here, run this on a GPU machine."
  exit 77
fi
[ -x "$stage/bin/test_cuda_nvcc" ] || { echo "gpu_check: no $stage/bin/test_cuda_nvcc: run --build-only first and carry $stage"; exit 1; }
bin="$stage/bin"
export LD_LIBRARY_PATH="$stage/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TINYTORCH_CUDA_LAUNCH_BLOCKING=1  # a failing launch is reported by the launch that failed
# Libraries still missing (libnccl lives in Python's nvidia-nccl package on the lent image): find them.
for so in $(for b in "$bin"/*; do ldd "$b"; done | awk '/not found/{print $1}' | sort -u); do
  found="$(find /usr/local /opt /usr/lib -name "$so" 2>/dev/null | head -1)"
  [ -n "$found" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$found")"
done
summary="$out/summary.txt"
: >"$summary"
status=0
step() {  # step <name> <seconds> <log> <command...>: run, log, one summary line
  local name="$1" secs="$2" logname="$3" log="$out/$3"; shift 3
  echo "=== $name: $* (cap ${secs}s)" >>"$log"
  local t0=$SECONDS rc
  timeout --kill-after=5 "$secs" "$@" >>"$log" 2>&1; rc=$?
  local verdict=PASS
  case $rc in 0) ;; 77) verdict=SKIP ;; 124|137) verdict=TIMEOUT; status=1 ;; *) verdict="FAIL (exit $rc)"; status=1 ;; esac
  printf '%-34s %-16s %4ds  %s\n' "$name" "$verdict" $((SECONDS - t0)) "$logname" >>"$summary"
  echo "$name: $verdict"
}
skip() { printf '%-34s %-16s        %s\n' "$1" SKIP "$2" >>"$summary"; echo "$1: SKIP ($2)"; }

step "nvidia-smi" 10 env.txt nvidia-smi -L
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nvcc --version | tail -1
  compute-sanitizer --version | head -2; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; for b in "$bin"/*; do ldd "$b" | grep -i "not found" | sed "s|^|$(basename "$b"): |"; done; } >>"$out/env.txt" 2>&1
# As ctest -L cuda: one process per tests/cuda/test_cuda_<x>.cpp (a sticky CUDA error, e.g. an illegal
# address, poisons the process's context, so files must not share one).
per_file() {
  local rc=0 skipped=0 n=0 t r
  for t in "$@"; do
    echo "--- $t"; "$bin/test_cuda_nvcc" -# "[#$t]"; r=$?; n=$((n + 1))
    if [ $r = 77 ]; then skipped=$((skipped + 1)); elif [ $r != 0 ]; then rc=$r; echo "--- $t: FAILED (exit $r)"; fi
  done
  if [ $rc = 0 ] && [ $skipped = $n ]; then return 77; fi
  return $rc
}
export -f per_file; export bin
step "cuda tests (ctest -L cuda)" 60 tests.txt bash -c 'per_file "$@"' _ \
     $(cd "$root/tests/cuda" && ls test_cuda_*.cpp | sed 's/\.cpp$//')
if command -v compute-sanitizer >/dev/null 2>&1; then
  step "memcheck test_cuda_nvcc" 60 sanitizer.txt compute-sanitizer --tool memcheck --error-exitcode 1 "$bin/test_cuda_nvcc"
  step "racecheck gemm/reduce/softmax" 60 sanitizer.txt compute-sanitizer --tool racecheck --error-exitcode 1 \
       "$bin/test_cuda_nvcc" -# "[#test_cuda_gemm],[#test_cuda_reduce],[#test_cuda_softmax]"
else
  skip "compute-sanitizer" "not installed here"
fi
have_data=0
if ls "$stage/data"/train-images-idx3-ubyte* >/dev/null 2>&1; then export TINYTORCH_DATA="$stage/data"; have_data=1; fi
if [ -x "$bin/train_mnist_cuda" ] && ((have_data)); then
  step "train_mnist_cuda --device cuda, 1 epoch" 60 train_nccl.txt "$bin/train_mnist_cuda" --device cuda --epochs 1
else
  skip "train_mnist_cuda --device cuda" "no $bin/train_mnist_cuda or no Fashion-MNIST in $stage/data"
fi
if [ -x "$bin/test_nccl_allreduce" ]; then
  step "test_nccl_allreduce (world 1)" 20 train_nccl.txt "$bin/test_nccl_allreduce"
else
  skip "test_nccl_allreduce" "not built (needs MPI and NCCL where --build-only ran)"
fi
# DDP's NCCL bucket path on one GPU: --backend nccl wraps the model in DDP with its buckets on, also at
# world size 1 (examples/train_mnist.cpp). Runs as root there: mpirun needs --allow-run-as-root.
mpirun_bin="$(command -v mpirun || true)"
if [ -x "$bin/train_mnist_cuda" ] && ((have_data)) && [ -n "$mpirun_bin" ]; then
  step "DDP over NCCL, mpirun -np 1, 1 epoch" 60 train_nccl.txt "$mpirun_bin" --allow-run-as-root --oversubscribe \
       -x LD_LIBRARY_PATH -x TINYTORCH_DATA -np 1 "$bin/train_mnist_cuda" --device cuda --backend nccl --epochs 1
elif [ -x "$bin/train_mnist_cuda" ] && ((have_data)); then
  # no mpirun there: the binary alone is world size 1 with the same NCCL group of one (process_group.hpp)
  step "DDP over NCCL, world 1 (no mpirun)" 60 train_nccl.txt "$bin/train_mnist_cuda" --device cuda --backend nccl --epochs 1
else
  skip "DDP over NCCL through the buckets" "no $bin/train_mnist_cuda or no Fashion-MNIST"
fi
# PyTorch eager's MLP step on the same GPU, for bench_cuda's third target.
torch_ms=""
py="$(command -v python3 || true)"
if [ -n "$py" ]; then
  step "PyTorch eager MLP step" 30 bench.txt "$py" "$root/bench/mlp_step_torch.py"
  torch_ms="$(sed -n 's/^mlp_step_torch: median_ms=\([0-9.]*\) .*/\1/p' "$out/bench.txt" | tail -1)"
else
  skip "PyTorch eager MLP step" "no python3 here"
fi
md="gpu-$(date -u +%Y-%m-%d).md"
# Launch-blocking would put a host sync inside every timed region: off for the bench.
step "bench_cuda" 60 bench.txt env -u TINYTORCH_CUDA_LAUNCH_BLOCKING "$bin/bench_cuda" --markdown "$out/$md" \
     ${torch_ms:+--torch-mlp-ms "$torch_ms"}
if [ -f "$out/$md" ]; then
  mkdir -p "$root/bench/results" && cp "$out/$md" "$root/bench/results/$md"
  grep -E "^\| (elementwise|register-blocked|MLP)" "$out/$md" >>"$summary"
  grep -q "| FAIL |" "$out/$md" && status=1
fi
echo "--- $summary"; cat "$summary"
exit $status

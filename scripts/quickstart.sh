#!/usr/bin/env bash
# scripts/quickstart.sh — from a fresh Debian machine to a trained model in one command.
#
#   scripts/quickstart.sh
#
# 1. scripts/install-deps.sh            (missing Debian packages only; Fashion-MNIST included)
# 2. cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build --target train_mnist
#    (only what it runs: the whole build, every test and bench, is scripts/test.sh's job)
# 3. build/bin/train_mnist              one process
# 4. scripts/mpirun.sh -np 2 build/bin/train_mnist   the same binary, DistributedDataParallel on 2 ranks
# Extra arguments are passed to both train_mnist runs, e.g. scripts/quickstart.sh --epochs 1
# (-h / --help prints this and exits, before installing or building anything; TT_JOBS=1 builds
# with one compiler at a time instead of one per core).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
for a in "$@"; do
  if [[ "$a" == "-h" || "$a" == "--help" ]]; then
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    echo "train_mnist's own options: build/bin/train_mnist --help (after a first run)"
    exit 0
  fi
done

bash scripts/install-deps.sh

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"${TT_JOBS:-$(nproc)}" --target train_mnist

if [[ ! -x build/bin/train_mnist ]]; then
  echo "quickstart: build/bin/train_mnist was not built (is examples/train_mnist.cpp there?)" >&2
  exit 1
fi

echo "== quickstart: train_mnist, one process =="
build/bin/train_mnist "$@"

echo "== quickstart: train_mnist, 2 ranks (scripts/mpirun.sh -np 2) =="
bash scripts/mpirun.sh -np 2 build/bin/train_mnist "$@"

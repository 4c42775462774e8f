#!/usr/bin/env bash
# scripts/install-deps.sh — install the Debian packages tinytorch builds and tests with.
#
#   scripts/install-deps.sh          # called by scripts/test.sh and scripts/quickstart.sh
#
# Does nothing when every package is already installed (checked with dpkg). Otherwise installs
# the missing ones with apt-get (through sudo when not root), running `apt-get update` only if
# the package lists are empty or the first install attempt fails. Never installs libtorch or
# OpenBLAS: tinytorch does not need them (benches use libtorch only if it happens to be there).
# Packages:
#   g++ cmake make            compiler and build (CMake >= 3.24)
#   libeigen3-dev zlib1g-dev  the two required dependencies (CPU GEMM, gzip'd MNIST files)
#   catch2                    unit tests (Catch2 v2, <catch2/catch.hpp>)
#   libbenchmark-dev          bench/ (Google Benchmark)
#   libcli11-dev              examples' command-line options
#   openmpi-bin libopenmpi-dev  distributed training, tests/mpi
#   clang libclang-rt-14-dev  scripts/test.sh's build-asan: clang++ and its sanitizer/libFuzzer
#                             runtimes (tests/fuzz; the -rt package is only a Recommends of clang,
#                             which --no-install-recommends skips). 14 = Debian 12's clang.
#   dataset-fashion-mnist     /usr/share/datasets/fashion-mnist, used by train_mnist
#   gdb                       the debugger tools/gdb/tinytorch.py extends; ctest gdb_pretty_printer
#   ccache                    compiler launcher: a second build of unchanged sources (another clone
#                             too) reuses the objects (CMakeLists.txt, scripts/test.sh)
#   python3-numpy python3-matplotlib   what the chapters' scripts import (scripts/plot_busbw.py)
#   doxygen graphviz          scripts/docs.sh: the docs site (Doxygen), the chapters' pictures (dot)
#   chromium chromium-driver python3-selenium   ctest docs_site: the site checked in headless
#                             Chromium (docs/check_site.py; skipped when any is missing)
set -euo pipefail

TT_DEBIAN_PACKAGES=(
  g++ cmake make
  libeigen3-dev zlib1g-dev
  catch2 libbenchmark-dev libcli11-dev
  openmpi-bin libopenmpi-dev
  clang libclang-rt-14-dev
  dataset-fashion-mnist
  gdb ccache
  python3-numpy python3-matplotlib
  doxygen graphviz chromium chromium-driver python3-selenium
)

missing=()
for pkg in "${TT_DEBIAN_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#TT_DEBIAN_PACKAGES[@]} Debian packages are installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: apt-get not found; please install: ${missing[*]}" >&2
  exit 1
fi
SUDO=()
if [[ "$(id -u)" != "0" ]]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "install-deps: not root and no sudo; please install: ${missing[*]}" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
apt_install() {
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
}
if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then  # never updated (fresh image)
  "${SUDO[@]}" apt-get update
  apt_install
elif ! apt_install; then
  echo "install-deps: install failed; refreshing package lists and retrying" >&2
  "${SUDO[@]}" apt-get update
  apt_install
fi

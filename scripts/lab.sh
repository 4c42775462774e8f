#!/usr/bin/env bash
# scripts/lab.sh — the labs: `lab.sh start 07`, `lab.sh check 07`, `lab.sh grade 07 --json`,
# `lab.sh list`. The work is done by scripts/lab.py (its docstring is the manual; needs only
# python3, cmake and a C++17 compiler, plus Open MPI for the MPI labs). labs/README.md explains
# the labs; each chapter names its lab.
set -euo pipefail
exec python3 "$(dirname "${BASH_SOURCE[0]}")/lab.py" "$@"

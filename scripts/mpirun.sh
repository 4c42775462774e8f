#!/usr/bin/env bash
# scripts/mpirun.sh — run a tinytorch program on N local ranks with Open MPI, anywhere.
#
#   scripts/mpirun.sh -np 4 build/bin/train_mnist [program args...]
#   scripts/mpirun.sh -np 2 -H a,b build/bin/train_mnist     # other mpirun options pass through
#
# A thin wrapper around `mpirun` (or $MPIRUN) that adds what a laptop, a CI runner or a
# container needs, and nothing else:
#   --bind-to none        always: N ranks plus their threads must not be pinned to one core each
#   --oversubscribe       only when N > nproc (e.g. -np 4 on a 2-core machine)
#   --allow-run-as-root   only when running as root (containers, CI)
#   OMPI_MCA_btl_vader_single_copy_mechanism=none   unless already set: shared-memory transfers
#                         without CMA/ptrace, which containers usually forbid
#   OMPI_MCA_mpi_yield_when_idle=1  unless already set: a rank waiting in MPI yields its core
#                         instead of spinning. With DDP's communication thread, 2 ranks on 2 cores
#                         run 4 threads; spinning waits made train_mnist 5x slower here.
#   OMPI_MCA_btl=^openib  unless OMPI_MCA_btl is set: no InfiniBand "openib" warnings on
#                         machines without it
# ctest runs every tests/mpi/test_* through this script with -np 2, 3 and 4; scripts/quickstart.sh
# uses it too. Set TT_MPIRUN_VERBOSE=1 to print the final command line.
set -euo pipefail

MPIRUN="${MPIRUN:-mpirun}"
if ! command -v "$MPIRUN" >/dev/null 2>&1; then
  echo "scripts/mpirun.sh: '$MPIRUN' not found (apt install openmpi-bin, or set MPIRUN=...)" >&2
  exit 127
fi

# Find the rank count (-np N, -n N, --np N, -np=N) without consuming any argument.
np=1
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    -np | -n | --np | --n)
      if ((i + 1 < ${#args[@]})); then np="${args[$((i + 1))]}"; fi
      break
      ;;
    -np=* | --np=* | -n=*)
      np="${args[$i]#*=}"
      break
      ;;
  esac
done

# Options the caller already gave are not added a second time.
has() {
  local a
  for a in "${args[@]}"; do [[ "$a" == "$1" || "$a" == "$1="* ]] && return 0; done
  return 1
}
extra=()
if ! has --bind-to && ! has -bind-to; then
  extra+=(--bind-to none)
fi
if [[ "$np" =~ ^[0-9]+$ ]] && ((np > $(nproc))) && ! has --oversubscribe && ! has -oversubscribe; then
  extra+=(--oversubscribe)
fi
if [[ "$(id -u)" == "0" ]] && ! has --allow-run-as-root && ! has -allow-run-as-root; then
  extra+=(--allow-run-as-root)
fi

export OMPI_MCA_btl_vader_single_copy_mechanism="${OMPI_MCA_btl_vader_single_copy_mechanism:-none}"
export OMPI_MCA_btl="${OMPI_MCA_btl:-^openib}"
export OMPI_MCA_mpi_yield_when_idle="${OMPI_MCA_mpi_yield_when_idle:-1}"

if [[ "${TT_MPIRUN_VERBOSE:-0}" != "0" ]]; then
  echo "+ $MPIRUN ${extra[*]} $*" >&2
fi
exec "$MPIRUN" "${extra[@]}" "$@"

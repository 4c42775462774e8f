#!/usr/bin/env bash
# tests/interop/safetensors_test.sh TEST_SERIALIZATION — ctest safetensors_python: a checkpoint
# written by tinytorch::save must be read by the reference reader, the Python `safetensors`
# package. Runs TEST_SERIALIZATION "[safetensors-export]" (tests/test_serialization.cpp), which
# saves a state dict to $TT_SAFETENSORS_EXPORT, then tests/interop/check_safetensors.py on it.
#
# The Python: $TT_PYTHON if set, else the first of python3, /usr/bin/python3 that imports numpy and
# safetensors. None: exit 77, which ctest reports as Skipped (SKIP_RETURN_CODE 77). Debian 12 has
# no python3-safetensors, so CI skips this test; to run it:
#   python3 -m venv --system-site-packages /tmp/st && /tmp/st/bin/pip install safetensors
#   TT_PYTHON=/tmp/st/bin/python ctest --test-dir build -R safetensors_python --output-on-failure
set -euo pipefail
exe=${1:?usage: safetensors_test.sh TEST_SERIALIZATION}
here=$(cd "$(dirname "$0")" && pwd)
py=""
for cand in ${TT_PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import numpy, safetensors.numpy' >/dev/null 2>&1; then
    py=$cand
    break
  fi
done
if [[ -z $py ]]; then
  echo "safetensors_test.sh: SKIPPED: no Python with numpy and safetensors (set TT_PYTHON; see this file's header)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
TT_SAFETENSORS_EXPORT="$work/tinytorch.safetensors" "$exe" "[safetensors-export]"
"$py" "$here/check_safetensors.py" "$work/tinytorch.safetensors"

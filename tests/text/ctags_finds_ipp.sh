#!/usr/bin/env bash
# tests/text/ctags_finds_ipp.sh — Universal Ctags, run as a contributor runs it (`ctags -R include`
# from the repository root, which reads .ctags.d/tinytorch.ctags), tags the definitions that live
# in .ipp files: Tensor::register_post_accumulate_grad_hook (autograd/variable.ipp) among them.
# ctest ctags_finds_ipp; Skipped (77) without Universal Ctags.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ctags_bin=$(command -v ctags-universal || command -v ctags || true)
if [[ -z "$ctags_bin" ]] || ! "$ctags_bin" --version 2>/dev/null | grep -q "Universal Ctags"; then
  echo "no Universal Ctags: skipped"
  exit 77
fi
tags=$(mktemp)
trap 'rm -f "$tags"' EXIT
(cd "$root" && "$ctags_bin" -R -f "$tags" include) || { echo "FAIL: ctags failed"; exit 1; }
n=$(grep -cP '\tinclude/tinytorch/[^\t]*\.ipp\t' "$tags")
if grep -qP '^register_post_accumulate_grad_hook\tinclude/tinytorch/autograd/variable\.ipp\t' "$tags"; then
  echo "PASSED: $n tags in .ipp files, register_post_accumulate_grad_hook among them"
else
  echo "FAIL: no tag for register_post_accumulate_grad_hook in autograd/variable.ipp ($n tags in .ipp files):"
  echo "      .ctags.d/tinytorch.ctags must map .ipp to C++"
  exit 1
fi

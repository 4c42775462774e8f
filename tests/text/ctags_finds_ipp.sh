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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A contributor's own ~/.ctags.d must neither make this pass nor fail: an empty home.
if ! (cd "$root" && HOME="$tmp" XDG_CONFIG_HOME="$tmp" "$ctags_bin" -R --fields=+l -f "$tmp/tags" include \
      2>"$tmp/err"); then
  echo "FAIL: ctags failed (is .ctags.d/tinytorch.ctags valid?):"
  cat "$tmp/err"
  exit 1
fi
tags="$tmp/tags"
n=$(grep -cP '\tinclude/tinytorch/[^\t]*\.ipp\t.*\tlanguage:C\+\+' "$tags")
if grep -qP '^register_post_accumulate_grad_hook\tinclude/tinytorch/autograd/variable\.ipp\t.*\tlanguage:C\+\+' "$tags"; then
  echo "PASSED: $n C++ tags in .ipp files, register_post_accumulate_grad_hook among them"
else
  echo "FAIL: no C++ tag for register_post_accumulate_grad_hook in autograd/variable.ipp ($n in .ipp files):"
  echo "      .ctags.d/tinytorch.ctags must map .ipp to C++"
  exit 1
fi

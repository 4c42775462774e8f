#!/usr/bin/python3
"""scripts/abi_namespace.py — put tinytorch's headers inside the inline ABI namespace.

Every declaration of tinytorch lives in `namespace tinytorch { inline namespace <mode>_abi { ... } }`
(core/config.hpp: cpu_abi for g++/clang++, cuda_abi under nvcc, sim_abi in the kernel simulator),
so that a program whose translation units were compiled in different modes fails to link
("undefined reference to `f(tinytorch::cpu_abi::Tensor const&)'") instead of silently running one
mode's inline function bodies in the other (design/CUDA.md §2, "ODR"). C++17 has no
`namespace tinytorch::inline cpu_abi`, so headers open and close it with two macros:

    namespace tinytorch {                 ->  TT_NAMESPACE_BEGIN
    }  // namespace tinytorch             ->  TT_NAMESPACE_END  // namespace tinytorch
    namespace tinytorch::nn::init {       ->  TT_NAMESPACE_BEGIN namespace nn::init {
    }  // namespace tinytorch::nn::init   ->  }  TT_NAMESPACE_END  // namespace tinytorch::nn::init

The closing lines are found by their `// namespace tinytorch...` comment (the project's style);
a file whose opening and closing lines do not pair up is reported and left unchanged. A converted
file that does not include core/config.hpp (which defines the macros) itself gets that include.

Idempotent: already converted lines do not match again, so after merging new headers run it again:

    /usr/bin/python3 scripts/abi_namespace.py            # include/ tests/ examples/ bench/
    /usr/bin/python3 scripts/abi_namespace.py FILE...    # only these files
    /usr/bin/python3 scripts/abi_namespace.py --check    # exit 1 if any file still needs it (CI)

Files outside include/tinytorch include config.hpp as <tinytorch/core/config.hpp>.
Reference: design/CUDA.md §0.1 and §2; libc++'s _LIBCPP_BEGIN_NAMESPACE_STD does the same.
"""
import argparse
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
INCLUDE = os.path.join(ROOT, "include", "tinytorch")
DEFAULT_DIRS = ["include", "tests", "examples", "bench"]
EXTENSIONS = (".hpp", ".ipp", ".h", ".cuh", ".cpp", ".cu")

OPEN_RE = re.compile(r"^(\s*)namespace\s+tinytorch(::[\w:]+)?\s*\{(.*)$")
CLOSE_RE = re.compile(r"^(\s*)\}(\s*)//\s*namespace\s+tinytorch(::[\w:]+)?\s*$")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def config_include(path):
    """The #include line that brings core/config.hpp into `path`."""
    path = os.path.abspath(path)
    if path.startswith(INCLUDE + os.sep):
        rel = os.path.relpath(os.path.join(INCLUDE, "core", "config.hpp"), os.path.dirname(path))
        return '#include "%s"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END' % rel
    return "#include <tinytorch/core/config.hpp>  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END"


def convert(path, text):
    """Returns (new_text, error or None). new_text == text when there is nothing to do."""
    if os.path.abspath(path) == os.path.join(INCLUDE, "core", "config.hpp"):
        return text, None  # defines the macros
    lines = text.split("\n")
    opens = [i for i, l in enumerate(lines) if OPEN_RE.match(l)]
    closes = [i for i, l in enumerate(lines) if CLOSE_RE.match(l)]
    if not opens and not closes:
        return text, None
    if len(opens) != len(closes):
        return text, "%d `namespace tinytorch...{` lines but %d `}  // namespace tinytorch...` lines" % (
            len(opens), len(closes))
    # Pair them in order (blocks of tinytorch are never nested in each other) and check the names.
    for o, c in zip(opens, closes):
        if not o < c or OPEN_RE.match(lines[o]).group(2) != CLOSE_RE.match(lines[c]).group(3):
            return text, "line %d `%s` does not pair with line %d `%s`" % (
                o + 1, lines[o].strip(), c + 1, lines[c].strip())
    for o, c in zip(opens, closes):
        m = OPEN_RE.match(lines[o])
        indent, sub, rest = m.group(1), m.group(2), m.group(3)
        if sub:
            lines[o] = "%sTT_NAMESPACE_BEGIN namespace %s {%s" % (indent, sub[2:], rest)
        else:
            lines[o] = "%sTT_NAMESPACE_BEGIN%s" % (indent, rest)
        m = CLOSE_RE.match(lines[c])
        comment = "// namespace tinytorch%s" % (m.group(3) or "")
        if m.group(3):
            lines[c] = "%s}  TT_NAMESPACE_END  %s" % (m.group(1), comment)
        else:
            lines[c] = "%sTT_NAMESPACE_END  %s" % (m.group(1), comment)
    # The macros come from core/config.hpp: include it unless the file does itself.
    if os.path.basename(path) != "config.hpp" and not any(
            (m := INCLUDE_RE.match(l)) and m.group(1).endswith("core/config.hpp") for l in lines):
        first = opens[0]
        includes = [i for i in range(first) if INCLUDE_RE.match(lines[i])]
        local = [i for i in includes if '"' in lines[i]]
        if local:
            at = local[-1] + 1
        elif includes:
            at = includes[-1] + 1
        else:
            pragma = [i for i in range(first) if lines[i].strip() == "#pragma once"]
            at = pragma[0] + 1 if pragma else first
        new = [config_include(path)]
        if not includes:  # a block of its own
            new = [""] + new
        lines[at:at] = new
    return "\n".join(lines), None


def files_under(dirs):
    for d in dirs:
        d = os.path.join(ROOT, d) if not os.path.isabs(d) else d
        for dirpath, dirnames, filenames in os.walk(d):
            dirnames[:] = sorted(x for x in dirnames if not x.startswith("build"))
            for f in sorted(filenames):
                if f.endswith(EXTENSIONS):
                    yield os.path.join(dirpath, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", help="files to convert (default: every source under %s)" %
                    ", ".join(DEFAULT_DIRS))
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file needs converting")
    args = ap.parse_args()
    paths = args.files or list(files_under(DEFAULT_DIRS))
    changed, errors = [], []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new, err = convert(path, text)
        if err:
            errors.append("%s: %s" % (os.path.relpath(path, ROOT), err))
            continue
        if new != text:
            changed.append(os.path.relpath(path, ROOT))
            if not args.check:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)
    for e in errors:
        print("abi_namespace.py: not converted: " + e, file=sys.stderr)
    verb = "needs converting" if args.check else "converted"
    for c in changed:
        print("%s %s" % (verb, c))
    print("abi_namespace.py: %d file(s) %s, %d error(s)" % (len(changed), verb, len(errors)))
    return 1 if errors or (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""scripts/test_cost.py — where the time of a test run goes: each stage's wall time, the compiler
cache's hit rate, the translation units that took the most CPU and the tests that took longest.

    scripts/test_cost.py [--top 20] [--stages FILE] [--ccache-before F --ccache-after F] BUILD_DIR...
    scripts/test.sh                 # prints this at its end, for build, build-tsan and build-asan

Reads, in each BUILD_DIR:
  compile-log.tsv   one line per compile, "<CPU seconds>\\t<object>", appended by
                    scripts/compile_log.sh (the compiler launcher of a build configured with
                    -DTINYTORCH_COMPILE_LOG=<that file>; scripts/test.sh does it and empties the
                    file first); a cache hit costs a few hundredths of a second
  ctest-output.log  what `ctest` printed (scripts/test.sh tees it there): the number of tests run,
                    passed, failed and skipped, and each test's seconds
  Testing/Temporary/LastTest.log   every test's output: the Catch2 assertion counts
--stages FILE: lines "<stage>\\t<start epoch s>\\t<end epoch s>" (scripts/test.sh writes them).
--ccache-before/--ccache-after: `ccache --print-stats` before and after the run; the difference
is this run's hits and misses.
Prints plain text tables; exits 0 (it reports, it does not judge).
"""
import argparse
import math
import os
import re
import sys


def read_compile_log(build):
    rows = []
    path = os.path.join(build, "compile-log.tsv")
    if not os.path.exists(path):
        return rows
    with open(path, errors="replace") as f:
        for line in f:
            cpu, _, obj = line.rstrip("\n").partition("\t")
            try:
                c = float(cpu)
            except ValueError:
                continue
            if math.isfinite(c) and c >= 0:
                rows.append((c, os.path.basename(build.rstrip("/")), obj))
    return rows


TEST_LINE = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (\S+) \.*\s*(.*?)\s+([\d.]+) sec\s*$")
SUMMARY = re.compile(r"(\d+)% tests passed, (\d+) tests? failed out of (\d+)")


def read_ctest(build):
    tests, summary = [], None
    path = os.path.join(build, "ctest-output.log")
    if not os.path.exists(path):
        return tests, summary
    skipped = 0
    with open(path, errors="replace") as f:
        for line in f:
            m = TEST_LINE.match(line)
            if m:
                tests.append((float(m.group(3)), os.path.basename(build.rstrip("/")), m.group(1), m.group(2).strip()))
                if "Skipped" in m.group(2):
                    skipped += 1
            m = SUMMARY.search(line)
            if m:
                summary = (int(m.group(3)), int(m.group(2)), skipped)
    return tests, summary


CATCH_PASSED = re.compile(r"All tests passed \((\d+) assertions? in (\d+) test cases?\)")
CATCH_FAILED = re.compile(r"assertions:\s+(\d+)")


def catch2_assertions(build):
    """Assertions counted by Catch2 in every test's output (each MPI rank counts its own)."""
    path = os.path.join(build, "Testing", "Temporary", "LastTest.log")
    total = 0
    if not os.path.exists(path):
        return total
    with open(path, errors="replace") as f:
        for line in f:
            m = CATCH_PASSED.search(line) or CATCH_FAILED.search(line)
            if m:
                total += int(m.group(1))
    return total


def read_stats(path):
    stats = {}
    if path and os.path.exists(path):
        with open(path, errors="replace") as f:
            for line in f:
                k, _, v = line.strip().partition("\t")
                if v.isdigit():
                    stats[k] = int(v)
    return stats


def fmt_s(s):
    return f"{int(s // 60)} min {s % 60:4.1f} s" if s >= 60 else f"{s:.1f} s"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("builds", nargs="+")
    ap.add_argument("--top", type=lambda v: max(1, int(v)), default=20)
    ap.add_argument("--stages")
    ap.add_argument("--ccache-before")
    ap.add_argument("--ccache-after")
    args = ap.parse_args()
    for b in args.builds:
        if not os.path.isdir(b):
            print(f"test_cost.py: {b}: no such build directory")

    if args.stages and os.path.exists(args.stages):
        print("stage                     wall time")
        total = 0.0
        with open(args.stages, errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                try:
                    name, t0, t1 = parts[0], float(parts[1]), float(parts[2])
                except (IndexError, ValueError):
                    continue
                if not (math.isfinite(t0) and math.isfinite(t1)):
                    continue
                total += t1 - t0
                print(f"  {name:24s}{fmt_s(t1 - t0):>14s}")
        print(f"  {'all stages':24s}{fmt_s(total):>14s}")

    before, after = read_stats(args.ccache_before), read_stats(args.ccache_after)
    if after:
        d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        hits = d.get("direct_cache_hit", 0) + d.get("preprocessed_cache_hit", 0)
        misses = d.get("cache_miss", 0)
        calls = hits + misses
        rate = f"{100.0 * hits / calls:.1f}%" if calls > 0 else "n/a"
        if hits < 0 or misses < 0:
            print("compiler cache (ccache): its statistics were reset during the run; no hit rate")
        else:
            since = "" if before else " (no statistics from before the run: the cache's whole life)"
            print(f"compiler cache (ccache): {hits} hits, {misses} misses of {calls} cacheable compiles: "
                  f"hit rate {rate}{since}")

    compiles = [r for b in args.builds for r in read_compile_log(b)]
    if compiles:
        cpu = sum(r[0] for r in compiles)
        hits = sum(1 for r in compiles if r[0] < 0.2)
        print(f"\ncompiles: {len(compiles)}, {fmt_s(cpu)} of CPU ({hits} took under 0.2 s: cache hits, mostly)")
        print(f"top {args.top} translation units (CPU s)")
        for c, b, obj in sorted(compiles, reverse=True)[: args.top]:
            print(f"  {c:7.1f}  {b}: {obj}")

    tests, counted = [], []
    for b in args.builds:
        t, summary = read_ctest(b)
        tests += t
        if summary:
            counted.append((os.path.basename(b.rstrip("/")), summary, catch2_assertions(b)))
    if counted:
        print()
        for b, (n, failed, skipped), assertions in counted:
            print(f"ctest {b}: {n} tests, {failed} failed, {skipped} skipped; Catch2 assertions: {assertions}")
        n_all = sum(s[0] for _, s, _ in counted)
        print(f"ctest, all builds: {n_all} tests, {sum(a for _, _, a in counted)} Catch2 assertions")
    if tests:
        print(f"top {args.top} tests (s)")
        for s, b, name, status in sorted(tests, reverse=True)[: args.top]:
            print(f"  {s:7.1f}  {b}: {name}" + ("" if status == "Passed" else f"  ({status})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Where the extra instructions of one server go, against a baseline.

Reads two callgrind files of bench/server_rejection_cost_bench (the same
number of measured calls each), takes every function's own instructions
(callgrind_annotate --inclusive=no), divides them by the calls and prints the
functions whose cost differs most, then the difference by component (our
library, gRPC, Abseil, protobuf, the allocator and libc, the rest).

  bench/callgrind_diff.py CALLGRIND_FILE BASELINE_FILE --calls=2000 [--top=25]
"""

import argparse
import re
import subprocess
import sys
from collections import defaultdict

LINE = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$")


def self_costs(path):
    """function -> own instructions, every function callgrind saw."""
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--auto=no", "--threshold=100", path],
        check=True, capture_output=True, text=True).stdout
    costs = defaultdict(int)
    for line in out.splitlines():
        m = LINE.match(line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        rest = m.group(2)
        obj = ""
        if rest.endswith("]") and " [" in rest:
            rest, obj = rest.rsplit(" [", 1)
            obj = obj[:-1]
        # "file:function": the file part holds no ':'; the build folder and
        # recursion marks ('2) differ between runs, the function does not.
        name = rest.split(":", 1)[1] if ":" in rest else rest
        name = re.sub(r"'\d+$", "", name)
        if name.startswith("0x"):
            name = "(no symbol) " + obj.rsplit("/", 1)[-1]
        costs[(name, component(name, obj))] += int(m.group(1).replace(",", ""))
    return costs


def component(name, obj):
    if "resilience::" in name:
        return "grpc-resilience"
    if "libabsl" in obj or name.startswith("absl::"):
        return "abseil"
    if "libprotobuf" in obj or name.startswith("google::protobuf"):
        return "protobuf"
    if "libgrpc" in obj or "libgpr" in obj or "libaddress_sorting" in obj or "grpc" in name:
        return "gRPC"
    if "libc.so" in obj or "libstdc++" in obj or "ld-linux" in obj or "malloc" in name:
        return "libc, libstdc++, allocator"
    return "other"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("measured")
    parser.add_argument("baseline")
    parser.add_argument("--calls", type=int, required=True)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    a, b = self_costs(args.measured), self_costs(args.baseline)
    diff = {k: (a.get(k, 0) - b.get(k, 0)) / args.calls for k in set(a) | set(b)}
    total_a, total_b = sum(a.values()) / args.calls, sum(b.values()) / args.calls
    print(f"{args.measured}: {total_a:.0f} instructions/call; {args.baseline}: "
          f"{total_b:.0f}; difference {total_a - total_b:+.0f}")
    print("\nBy component (instructions/call, measured - baseline):")
    by = defaultdict(float)
    for (name, comp), d in diff.items():
        by[comp] += d
    for comp, d in sorted(by.items(), key=lambda kv: -abs(kv[1])):
        print(f"  {d:+9.0f}  {comp}")
    print(f"\nTop {args.top} functions by |difference| (own instructions/call):")
    for (name, comp), d in sorted(diff.items(), key=lambda kv: -abs(kv[1]))[:args.top]:
        print(f"  {d:+9.0f}  {a.get((name, comp), 0) / args.calls:9.0f}  {name[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

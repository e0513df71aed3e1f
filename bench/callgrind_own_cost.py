#!/usr/bin/env python3
"""What grpc-resilience's own code costs a server call, from a callgrind file.

Every function of the library (a name in namespace resilience::) counts its
own instructions and those of what it calls outside the library (allocator,
Abseil, gRPC's metadata calls...), except the calls by which it hands the call
on to gRPC (Proceed(), the RunInterceptors() behind it, the user's or gRPC's
handler: RunHandler(), Deserialize(); a reactor's Finish()), which run the
rest of the call. Each
entry point is listed with that cost per call: deterministic (no lock
spinning or scheduling of gRPC's threads in it), unlike the process totals.

  bench/callgrind_own_cost.py CALLGRIND_FILE --calls=2000 [--top=20]
"""

import argparse
import re
import sys
from collections import defaultdict

# Calls by which the library hands the call on (or finishes it, as any handler
# does): their cost is gRPC's path, which the baselines pay too.
HAND_ON = re.compile(r"InterceptorBatchMethodsImpl::(Proceed|RunInterceptors)|"
                     r"::RunHandler\(|::Deserialize\(|_M_invoke|"
                     r"Reactor::Finish\(grpc::Status\)|UnaryImpl::Finish\(grpc::Status\)")
NAMED = re.compile(r"^\((\d+)\)(?: (.*))?$")


def parse(path):
    """(self cost by function, {(caller, callee): inclusive cost of the calls})"""
    names, self_cost, calls = {}, defaultdict(int), defaultdict(int)
    fn, pending = None, None

    def name_of(value):
        m = NAMED.match(value)
        if not m:
            return value
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), value)

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            head = line[0]
            if head.isdigit() or head in "+-*":
                parts = line.split()
                cost = int(parts[1]) if len(parts) > 1 else 0
                if pending is not None:
                    calls[(fn, pending)] += cost
                    pending = None
                elif fn is not None:
                    self_cost[fn] += cost
            elif line.startswith("fn="):
                fn = name_of(line[3:])
            elif line.startswith("cfn="):
                pending_name = name_of(line[4:])
            elif line.startswith("calls="):
                pending = pending_name
    return self_cost, calls


def ours(name):
    return "resilience::" in name and "resilience::bench::" not in name


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("callgrind_file")
    parser.add_argument("--calls", type=int, required=True)
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    self_cost, calls = parse(args.callgrind_file)
    own = defaultdict(float)
    for name, cost in self_cost.items():
        if ours(name):
            own[name] += cost
    for (caller, callee), cost in calls.items():
        if ours(caller) and not ours(callee) and not HAND_ON.search(callee):
            own[caller] += cost
    total = sum(own.values()) / args.calls
    print(f"{args.callgrind_file}: the library's own code {total:.0f} instructions/call")
    for name, cost in sorted(own.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {cost / args.calls:7.0f}  {name[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

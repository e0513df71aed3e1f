#!/usr/bin/env bash
# Builds and runs bench/breaker_bench and prints, for each breaker, ns per
# Allow()+Record() and its ratio to the floor measured in the same run
# (1 thread), and the 2-thread / 1-thread throughput ratio.
#
#   bench/run_breaker_bench.sh [--benchmark_min_time=1]
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
ensure_packages "${REQUIRED_PACKAGES[@]}" python3
configure_and_build "$REPO_ROOT/build" breaker_bench
out="$(mktemp)"
"$REPO_ROOT/build/bench/breaker_bench" --benchmark_min_time=1 --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_format=json "$@" > "$out"
python3 - "$out" <<'PY'
import json, sys
rows = {b["name"]: b for b in json.load(open(sys.argv[1]))["benchmarks"]
        if b.get("aggregate_name") == "median"}
def get(name, threads):
    b = rows[f"{name}/real_time/threads:{threads}_median"]
    return b["real_time"], b["items_per_second"]
floor_ns, floor_ips = get("BM_Floor", 1)
print(f"floor (clock read + 2 relaxed atomic increments): {floor_ns:.1f} ns/op")
print(f"{'breaker':<22}{'ns/op':>8}{'x floor':>9}{'2-thread/1-thread':>20}")
for name in ("BM_SreBreaker", "BM_ThreeStateBreaker"):
    ns1, ips1 = get(name, 1)
    ns2, ips2 = get(name, 2)
    print(f"{name[3:]:<22}{ns1:>8.1f}{ns1 / floor_ns:>9.2f}{ips2 / ips1:>20.2f}")
ns, _ = get("BM_SreBreakerDropping", 1)
print(f"{'SreBreaker (dropping)':<22}{ns:>8.1f}{ns / floor_ns:>9.2f}")
PY
rm -f "$out"

#!/usr/bin/env bash
# Builds and runs bench/breaker_bench and prints, for each breaker and for
# the endpoint picker, ns per Allow()+Record() (Pick()+Started()+Ended())
# and its ratio to the floor measured in the same run (1 thread), and the
# 2-thread / 1-thread throughput ratio; then, under callgrind, instructions
# per operation of the fixed-count variants (200,000 iterations each, only
# the benchmark's own function counted) and their ratios.
#
#   bench/run_breaker_bench.sh [--benchmark_min_time=1]
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
ensure_packages "${REQUIRED_PACKAGES[@]}" python3 valgrind
configure_and_build "$REPO_ROOT/build" breaker_bench
bench="$REPO_ROOT/build/bench/breaker_bench"
out="$(mktemp)"
work="$(mktemp -d)"
trap 'rm -rf "$out" "$work"' EXIT
"$bench" --benchmark_filter=real_time --benchmark_min_time=1 --benchmark_repetitions=3 \
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
print(f"{'operation':<22}{'ns/op':>8}{'x floor':>9}{'2-thread/1-thread':>20}")
for name in ("BM_SreBreaker", "BM_ThreeStateBreaker", "BM_EndpointPicker"):
    ns1, ips1 = get(name, 1)
    ns2, ips2 = get(name, 2)
    print(f"{name[3:]:<22}{ns1:>8.1f}{ns1 / floor_ns:>9.2f}{ips2 / ips1:>20.2f}")
ns, _ = get("BM_SreBreakerDropping", 1)
print(f"{'SreBreaker (dropping)':<22}{ns:>8.1f}{ns / floor_ns:>9.2f}")
PY

# Instructions per operation: the benchmark function's own instructions
# (callgrind --toggle-collect), over its fixed iteration count.
iterations=200000
declare -A ir
for name in BM_Floor BM_ThreeStateBreaker BM_EndpointPicker; do
  cg="$work/callgrind.$name.out"
  valgrind --tool=callgrind --toggle-collect="*${name}(*" --callgrind-out-file="$cg" \
    "$bench" --benchmark_filter="^${name}/iterations:${iterations}\$" > "$work/$name.log" 2>&1 ||
    { cat "$work/$name.log" >&2; echo "callgrind run of $name failed" >&2; exit 1; }
  ir[$name]="$(awk '/^(summary|totals):/ {print $2; exit}' "$cg")"
done
echo "instructions per operation (callgrind, $iterations iterations, 1 thread):"
for name in BM_Floor BM_ThreeStateBreaker BM_EndpointPicker; do
  python3 -c "import sys; n=int(sys.argv[2])/int(sys.argv[4]); f=int(sys.argv[3])/int(sys.argv[4]); \
print(f'  {sys.argv[1][3:]:<20}{n:>8.0f} Ir{n / f:>8.2f} x floor')" \
    "$name" "${ir[$name]}" "${ir[BM_Floor]}" "$iterations"
done

#!/usr/bin/env bash
# Builds and runs bench/retry_cost_bench (the client chain's retry cost,
# server in its own process), then counts the client's instructions per call
# of bare, builtin_retry, hijack_floor, breaker_timeout and full_chain under callgrind and
# prints them with their ratios to bare and builtin_retry.
#
#   bench/run_retry_cost_bench.sh [BUILD_DIR] [retry_cost_bench flags...]
#
# BUILD_DIR defaults to build-bench (configured Release if new). The JSON of
# the main run goes to BUILD_DIR/retry_cost_bench.json. CALLS (3000) and
# WARMUP_CALLS (200) set the callgrind runs' lengths.
#
# Callgrind runs with --instr-atstart=no and collection left on: the bench
# switches instrumentation on (CALLGRIND_START_INSTRUMENTATION, then
# CALLGRIND_ZERO_STATS) only around its measured loop, so start-up, channel
# set-up and the warm-up calls are not counted, and every thread of the
# client (gRPC's executor and pollers, the retry interceptor's completion
# queue thread) is counted while the loop runs. Not --collect-atstart=no:
# START_INSTRUMENTATION does not switch collection on (the count is 0), and
# CALLGRIND_TOGGLE_COLLECT would switch it on for the calling thread only,
# missing the work the chain hands to other threads. The cache_server the
# bench spawns is exec()ed and, with valgrind's default
# --trace-children=no, runs natively, uncounted.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

build_dir="$REPO_ROOT/build-bench"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
  build_dir="$1"
  shift
fi
calls="${CALLS:-3000}"
warmup_calls="${WARMUP_CALLS:-200}"

ensure_packages valgrind
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  log "configuring $build_dir (Release)"
  cmake -S "$REPO_ROOT" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release
fi
log "building retry_cost_bench and cache_server in $build_dir"
cmake --build "$build_dir" -j "$JOBS" \
  --target grpc_resilience_retry_cost_bench grpc_resilience_cache_server
bench="$build_dir/bench/retry_cost_bench"

log "main run"
"$bench" --json_file="$build_dir/retry_cost_bench.json" "$@"

log "instructions per call (callgrind, $calls calls after $warmup_calls warm-up calls, 1 caller)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
declare -A ir_per_call
configs=(bare builtin_retry hijack_floor breaker_timeout full_chain)
for config in "${configs[@]}"; do
  out="$work/callgrind.$config.out"
  if ! valgrind --tool=callgrind --instr-atstart=no --trace-children=no \
      --callgrind-out-file="$out" \
      "$bench" --only="$config" --calls="$calls" --warmup_calls="$warmup_calls" \
      > "$work/$config.log" 2>&1; then
    cat "$work/$config.log" >&2
    echo "callgrind run of $config failed" >&2
    exit 1
  fi
  if ! grep -q "callgrind_markers=yes" "$work/$config.log"; then
    echo "retry_cost_bench was built without valgrind/callgrind.h: no markers" >&2
    exit 1
  fi
  # "totals: N": every thread's Ir while the loop was instrumented.
  total="$(awk '/^totals:/ {print $2}' "$out")"
  if [ -z "$total" ] || [ "$total" -eq 0 ]; then
    echo "no instructions counted for $config (see $work/$config.log)" >&2
    exit 1
  fi
  ir_per_call[$config]="$(awk -v t="$total" -v n="$calls" 'BEGIN {printf "%.0f", t / n}')"
done

echo
echo "| config | instructions/call | vs bare | vs builtin_retry |"
echo "|---|---|---|---|"
for config in "${configs[@]}"; do
  awk -v c="$config" -v x="${ir_per_call[$config]}" -v bare="${ir_per_call[bare]}" \
      -v builtin="${ir_per_call[builtin_retry]}" \
      'BEGIN {printf "| %s | %.1fk | %.3f | %.3f |\n", c, x / 1000, x / bare, x / builtin}'
done

#!/usr/bin/env bash
# Builds and runs bench/retry_cost_bench (the client chain's retry cost,
# server in its own process), then counts the client's instructions per call
# under callgrind and prints them with their ratios:
#  - success path (every call succeeds): bare, builtin_retry, hijack_floor,
#    hijack_floor_reused_cq, breaker_timeout, full_chain; per call, against
#    bare, builtin_retry and hijack_floor_reused_cq;
#  - failures (--only_failing: the server aborts 20% of the Gets):
#    builtin_retry, retry_floor, retry_floor_reused_cq, full_chain; per
#    *successful* call, against builtin_retry and retry_floor_reused_cq;
#  - the same for an async and a callback caller (async_*, callback_*),
#    against their bare channel (builtin_retry under failures) and both
#    non-blocking floors (..._callback_api, ..._own_cq_thread);
#  - with BULKHEAD=1 only a non-binding bulkhead's cost: bare,
#    bare_retry_filter (gRPC's default channel), passthrough_floor (the
#    floor of any client interceptor), bulkhead, full_chain,
#    full_chain_bulkhead.
#
#   bench/run_retry_cost_bench.sh [BUILD_DIR] [retry_cost_bench flags...]
#
# BUILD_DIR defaults to build-bench (configured Release if new). The JSON of
# the main run goes to BUILD_DIR/retry_cost_bench.json (MAIN_RUN=0 skips the
# main run). CALLS (3000) and WARMUP_CALLS (200) set the callgrind runs'
# lengths; CONFIGS ("sync async callback") which callers' configs they count.
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
# Under callgrind the Gets' deadlines and the chain's timeouts are this many
# times longer (retry_cost_bench --timeout_scale), so that valgrind's
# slowness on a loaded machine ends no attempt: a timed-out attempt's retry,
# or a failed call, is not the chain's cost. The same deadlines are armed.
timeout_scale="${TIMEOUT_SCALE:-10}"
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

if [ "${MAIN_RUN:-1}" != 0 ]; then
  log "main run"
  "$bench" --json_file="$build_dir/retry_cost_bench.json" "$@"
fi

log "instructions per call (callgrind, $calls calls after $warmup_calls warm-up calls, 1 caller)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
declare -A ir_per_call

# count NAME CONFIG [FLAGS...]: the instructions of CONFIG's measured loop
# per successful call (every call succeeds on the success path), as
# ir_per_call[NAME].
count() {
  local name="$1" config="$2"
  shift 2
  local out="$work/callgrind.$name.out"
  if ! valgrind --tool=callgrind --instr-atstart=no --trace-children=no \
      --callgrind-out-file="$out" \
      "$bench" --only="$config" --calls="$calls" --warmup_calls="$warmup_calls" \
      --timeout_scale="$timeout_scale" "$@" \
      > "$work/$name.log" 2>&1; then
    cat "$work/$name.log" >&2
    echo "callgrind run of $name failed" >&2
    exit 1
  fi
  if ! grep -q "callgrind_markers=yes" "$work/$name.log"; then
    echo "retry_cost_bench was built without valgrind/callgrind.h: no markers" >&2
    exit 1
  fi
  # "totals: N": every thread's Ir while the loop was instrumented.
  local total ok
  total="$(awk '/^totals:/ {print $2}' "$out")"
  ok="$(sed -n 's/.* ok=\([0-9]*\) .*/\1/p' "$work/$name.log")"
  if [ -z "$total" ] || [ "$total" -eq 0 ] || [ -z "$ok" ] || [ "$ok" -eq 0 ]; then
    echo "no instructions or no successful call counted for $name (see $work/$name.log)" >&2
    exit 1
  fi
  ir_per_call[$name]="$(awk -v t="$total" -v n="$ok" 'BEGIN {printf "%.0f", t / n}')"
}

# table "REF..." NAME...: a Markdown table of NAME's figures and their ratios
# to each REF.
table() {
  local -a refs
  read -r -a refs <<< "$1"
  shift
  local header="| config | instructions/successful call |" rule="|---|---|"
  for ref in "${refs[@]}"; do
    header+=" vs $ref |"
    rule+="---|"
  done
  echo "$header"
  echo "$rule"
  for name in "$@"; do
    local row
    row="$(awk -v c="$name" -v x="${ir_per_call[$name]}" 'BEGIN {printf "| %s | %.1fk |", c, x / 1000}')"
    for ref in "${refs[@]}"; do
      row+="$(awk -v x="${ir_per_call[$name]}" -v r="${ir_per_call[$ref]}" \
        'BEGIN {printf " %.3f |", x / r}')"
    done
    echo "$row"
  done
}

# CONFIGS (default: all) limits the runs to one caller kind: sync, async or
# callback (space-separated).
kinds="${CONFIGS:-sync async callback}"
success=(bare builtin_retry hijack_floor hijack_floor_reused_cq breaker_timeout full_chain)
failing=(builtin_retry retry_floor retry_floor_reused_cq full_chain)
# The async and callback callers' configs: the floors are non-blocking ones
# (hijack_once_interceptor.h), attempts completing on gRPC's callback threads
# or on a completion queue with a thread of its own.
nb_success=(bare hijack_floor_callback_api hijack_floor_own_cq_thread full_chain)
nb_failing=(builtin_retry retry_floor_callback_api retry_floor_own_cq_thread full_chain)

# BULKHEAD=1: only what a non-binding bulkhead costs: bare (gRPC's retry
# filter off), bare_retry_filter (on, as gRPC makes a channel by default and
# as CreateResilientChannel() keeps it), passthrough_floor (that channel
# with one interceptor that calls Proceed() at every hook: what any
# interceptor costs), bulkhead (a policy with only a bulkhead), full_chain
# and full_chain_bulkhead, for each caller kind of CONFIGS, with their
# ratios to bare, bare_retry_filter, passthrough_floor and full_chain.
if [ "${BULKHEAD:-0}" = 1 ]; then
  for kind in $kinds; do
    prefix=""
    [ "$kind" = sync ] || prefix="${kind}_"
    configs=(bare bare_retry_filter passthrough_floor bulkhead full_chain full_chain_bulkhead)
    for config in "${configs[@]}"; do count "$prefix$config" "$prefix$config"; done
    echo
    echo "### non-binding bulkhead, $kind caller"
    table "${prefix}bare ${prefix}bare_retry_filter ${prefix}passthrough_floor ${prefix}full_chain" \
      "${configs[@]/#/$prefix}"
  done
  exit 0
fi

for kind in $kinds; do
  if [ "$kind" = sync ]; then
    for config in "${success[@]}"; do count "$config" "$config"; done
    for config in "${failing[@]}"; do count "failing_$config" "$config" --only_failing; done
  else
    for config in "${nb_success[@]}"; do count "${kind}_$config" "${kind}_$config"; done
    for config in "${nb_failing[@]}"; do
      count "failing_${kind}_$config" "${kind}_$config" --only_failing
    done
  fi
done

for kind in $kinds; do
  if [ "$kind" = sync ]; then
    echo
    echo "Success path (every Get succeeds):"
    echo
    table "bare hijack_floor_reused_cq" "${success[@]}"
    echo
    echo "Failures (the server aborts 20% of the Gets; per successful call):"
    echo
    table "failing_builtin_retry failing_retry_floor_reused_cq" "${failing[@]/#/failing_}"
  else
    echo
    echo "Success path, $kind caller (every Get succeeds):"
    echo
    table "${kind}_bare ${kind}_hijack_floor_callback_api ${kind}_hijack_floor_own_cq_thread" \
      "${nb_success[@]/#/${kind}_}"
    echo
    echo "Failures, $kind caller (the server aborts 20% of the Gets; per successful call):"
    echo
    table "failing_${kind}_builtin_retry failing_${kind}_retry_floor_callback_api failing_${kind}_retry_floor_own_cq_thread" \
      "${nb_failing[@]/#/failing_${kind}_}"
  fi
done

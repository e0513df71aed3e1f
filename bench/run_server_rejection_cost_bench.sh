#!/usr/bin/env bash
# Builds and runs bench/server_rejection_cost_bench: the server's
# instructions per call (callgrind, the server process only; the client runs
# natively in the bench's own process) on the callback and the sync API:
#   - a served Get: no interceptor, one pass-through interceptor, our
#     interceptors with a throttle that never binds (target: <= 1.05x the
#     pass-through);
#   - every call rejected by the throttle, against a handler answering the
#     same status and trailers at once, without and with one pass-through
#     interceptor (target: <= 1.10x the handler without);
# each the median of --repeats runs. Then where the extra instructions go, from
# the round-0 callgrind files: the library's own code per entry point
# (bench/callgrind_own_cost.py) and the difference per function against the
# baseline (bench/callgrind_diff.py). With --save the whole output also goes to
# docs/results/server-cost.txt.
#
#   bench/run_server_rejection_cost_bench.sh [BUILD_DIR] [--save] [--calls=2000]
#       [--warmup_calls=200] [--repeats=3] [--one_cpu=true] [--apis=callback,sync] [--modes=...]
#
# BUILD_DIR defaults to build. docs/server-rejection.md ("What the library costs the
# server") discusses the figures.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
build_dir="$REPO_ROOT/build"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
  build_dir="$1"
  shift
fi
save=""
args=(--calls=2000 --warmup_calls=200 --repeats=3)
for a in "$@"; do
  if [ "$a" = "--save" ]; then save=1; else args+=("$a"); fi
done
ensure_packages valgrind
cmake --build "$build_dir" -j 2 --target grpc_resilience_server_rejection_cost_bench
out_dir="$(mktemp -d /tmp/server_cost.XXXXXX)"
report="$out_dir/report.txt"
calls=2000
for a in "${args[@]}"; do
  case "$a" in --calls=*) calls="${a#--calls=}" ;; esac
done
{
  echo "# bench/run_server_rejection_cost_bench.sh ${*}"
  echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, commit $(git -C "$REPO_ROOT" rev-parse --short HEAD)"
  "$build_dir/bench/server_rejection_cost_bench" "${args[@]}" --out_dir="$out_dir"
  for api in callback sync; do
    f() { echo "$out_dir/callgrind.$api.$1.0"; }
    for mode in served_throttle rejected; do
      if [ -f "$(f $mode)" ]; then
        echo
        python3 "$REPO_ROOT/bench/callgrind_own_cost.py" "$(f $mode)" --calls="$calls" --top=15
      fi
    done
    for pair in served_throttle:served_passthrough rejected:floor rejected:floor_passthrough; do
      if [ -f "$(f "${pair%%:*}")" ] && [ -f "$(f "${pair##*:}")" ]; then
        echo
        python3 "$REPO_ROOT/bench/callgrind_diff.py" "$(f "${pair%%:*}")" "$(f "${pair##*:}")" \
          --calls="$calls" --top=15
      fi
    done
  done
} 2>&1 | tee "$report"
if [ -n "$save" ]; then
  cp "$report" "$REPO_ROOT/docs/results/server-cost.txt"
  echo "saved to docs/results/server-cost.txt"
fi

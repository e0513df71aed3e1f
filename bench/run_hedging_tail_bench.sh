#!/usr/bin/env bash
# Builds and runs bench/hedging_tail_bench: p50, p99, p99.9 and attempts per
# call of unary Get without hedging, with a fixed hedgingDelay and with the
# adaptive delay, against a long-tailed backend and then an overloaded one
# (about 25 s with the default 4 s per configuration).
#
#   bench/run_hedging_tail_bench.sh [BUILD_DIR] [hedging_tail_bench flags...]
#
# BUILD_DIR defaults to build-bench (configured Release if new).
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

build_dir="$REPO_ROOT/build-bench"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
  build_dir="$1"
  shift
fi
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  log "configuring $build_dir (Release)"
  cmake -S "$REPO_ROOT" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release
fi
log "building hedging_tail_bench in $build_dir"
cmake --build "$build_dir" -j "$JOBS" --target grpc_resilience_hedging_tail_bench
"$build_dir/bench/hedging_tail_bench" "$@"

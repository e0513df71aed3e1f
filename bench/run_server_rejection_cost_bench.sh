#!/usr/bin/env bash
# Builds and runs bench/server_rejection_cost_bench: the server's
# instructions per call (callgrind) of a served Get, of one behind a throttle
# that never binds, of a call the throttle rejects, and of the floor (a
# handler that answers the rejection's status and trailers at once), with the
# ratios; and what the load report adds to a throttled call (the same throttle
# with "loadReport": false, and one pass-through interceptor:
# docs/routing.md, "Load reports").
#
#   bench/run_server_rejection_cost_bench.sh [BUILD_DIR] [--calls=2000] [--warmup_calls=200]
#
# BUILD_DIR defaults to build.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
build_dir="$REPO_ROOT/build"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
  build_dir="$1"
  shift
fi
ensure_packages valgrind
cmake --build "$build_dir" -j "$JOBS" --target grpc_resilience_server_rejection_cost_bench
"$build_dir/bench/server_rejection_cost_bench" "$@"

#!/usr/bin/env bash
# Builds and runs bench/server_throttle_bench: throughput through a
# non-binding throttle vs no interceptor (and a pass-through interceptor), and
# admitted-call latency under 4x overload, all as ratios within one run.
#
#   bench/run_server_throttle_bench.sh [--seconds=3]
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
ensure_packages "${REQUIRED_PACKAGES[@]}"
configure_and_build "$REPO_ROOT/build" server_throttle_bench
"$REPO_ROOT/build/bench/server_throttle_bench" "$@"

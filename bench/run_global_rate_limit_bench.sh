#!/usr/bin/env bash
# Builds bench/global_rate_limit_bench, starts Debian's redis-server on a free
# loopback port (no persistence), runs the bench against it, and stops it.
#
#   bench/run_global_rate_limit_bench.sh [--seconds=2]
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
ensure_packages "${REQUIRED_PACKAGES[@]}"
configure_and_build "$REPO_ROOT/build" global_rate_limit_bench
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --logfile /dev/null &
redis_pid=$!
trap 'kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null' EXIT
for _ in $(seq 100); do
  if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then break; fi
  sleep 0.05
done
redis-cli -p "$port" ping | grep -q PONG || { log "redis-server did not answer on port $port"; exit 1; }
"$REPO_ROOT/build/bench/global_rate_limit_bench" --redis="127.0.0.1:$port" "$@"

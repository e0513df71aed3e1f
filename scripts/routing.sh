#!/usr/bin/env bash
# The routing experiment (docs/replicas.md, "Routing around a bad replica"):
# three cache_server replicas, one cache_client load channel over them, one
# bad replica per scenario (failing from the start or after 10 s, 10x slow,
# black-holed, flapping, at half capacity, a rolling restart, a forced-open
# endpoint), for gRPC's own channel, the README's replica file and the
# library's picker. Writes docs/results/routing.{md,json}.
#
#   scripts/routing.sh [--configs=grpc,readme,picker] [--scenarios=...]
#                      [--seconds=10] [--runs=3]
#   scripts/routing.sh --quick                 # 3 s cells, a temporary --out
#   scripts/routing.sh --cell=slow/picker      # one cell
#
# The full run takes about 10 minutes. A configuration cache_client refuses
# (the picker on a build without it) is skipped with cache_client's message.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
configure_and_build "$REPO_ROOT/build" grpc_resilience_cache_server
configure_and_build "$REPO_ROOT/build" grpc_resilience_cache_client
log "running the routing experiment"
cd "$REPO_ROOT"
python3 "$REPO_ROOT/experiments/replicas/routing.py" \
  --bin="$REPO_ROOT/build/examples/cache_service" "$@"

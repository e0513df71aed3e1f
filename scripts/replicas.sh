#!/usr/bin/env bash
# The replicas experiment (docs/replicas.md): three cache_server processes,
# one cache_client load channel to all three, one bad replica per scenario,
# each client configuration. Writes docs/results/replicas.{md,json,svg}.
#
#   scripts/replicas.sh [--configs=grpc_rr,grpc_od,lib_channel,lib_ep,lib_od,lib_health_od,lib_health,lib_health_od_probe]
#                       [--scenarios=failing,blackhole,slow,flapping,all_failing,rolling_restart]
#                       [--seconds=8]
#
# The default run (8 configurations x 6 scenarios x 8 s) takes about 8
# minutes. More configurations: experiments/replicas/replicas.py, CONFIGS.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
configure_and_build "$REPO_ROOT/build" grpc_resilience_cache_server
configure_and_build "$REPO_ROOT/build" grpc_resilience_cache_client
log "running the replicas experiment"
python3 "$REPO_ROOT/experiments/replicas/replicas.py" \
  --bin="$REPO_ROOT/build/examples/cache_service" --out="$REPO_ROOT/docs/results" "$@"

#!/usr/bin/env bash
# Recovery after every replica was down (docs/endpoint-breakers.md, "A probe
# waits for the connection"): three cache_server processes behind one
# cache_client load channel with the README's replica file, all three killed
# and started again 3 s later, 12 trials; prints the time from the first
# replica back to the first call it answers, and exits 1 unless every trial
# is within 2 s.
#
#   scripts/replicas_recovery.sh [--trials=12] [--down=3] [--target_s=2]
#
# About 12 s per trial.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
configure_and_build "$REPO_ROOT/build" grpc_resilience_cache_server
configure_and_build "$REPO_ROOT/build" grpc_resilience_cache_client
log "running the recovery trials"
python3 "$REPO_ROOT/experiments/replicas/recovery.py" \
  --bin="$REPO_ROOT/build/examples/cache_service" "$@"

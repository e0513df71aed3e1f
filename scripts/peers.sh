#!/usr/bin/env bash
# The goodput experiment's peers (docs/breaker-quality.md): exports the
# per-call fates of the breaker-quality suite from the C++ experiment, runs
# opossum and cockatiel (pinned in experiments/peers/package-lock.json,
# installed with `npm ci`) on simulated time against the same calls, checks
# that the no-breaker run is identical call for call in both languages, and
# writes docs/results/peers.txt and docs/results/peers.json.
#
#   scripts/peers.sh [SUITE FLAGS...]    e.g. --families=outage --rates=100 --seeds=1
#
# Node and npm: whatever is on the PATH; Debian's nodejs and npm are
# installed only when npm is missing (Debian's npm conflicts with a
# nodesource node).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
if ! command -v npm >/dev/null 2>&1; then ensure_packages nodejs npm; fi
configure_and_build "$REPO_ROOT/build" grpc_resilience_goodput_experiment
peers="$REPO_ROOT/experiments/peers"
(cd "$peers" && npm ci --no-audit --no-fund --loglevel=error)
fates="$(mktemp -d)"
trap 'rm -rf "$fates"' EXIT
log "exporting the fates"
"$REPO_ROOT/build/experiments/goodput/goodput_experiment" --suite --export_fates="$fates" "$@"
log "running the peers (a few minutes)"
node "$peers/run.js" "$fates" --json="$REPO_ROOT/docs/results/peers.json" | tee "$REPO_ROOT/docs/results/peers.txt"

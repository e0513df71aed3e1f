#!/usr/bin/env bash
# Runs the fleet simulator (issue 33) and writes its report into docs/results/:
#   1. the sweep: 1,000 clients x 10 servers (C = 8,000 calls/s), every
#      trigger x configuration x offered load 0.1 .. 0.9 C, 10 s before the
#      trigger and 40 s after it: fleet.txt (table and metastability
#      boundary), fleet.json (every run with its time series),
#      fleet_goodput_<trigger>.svg (goodput over time at 0.5 C) and
#      fleet_boundary.svg (recovered or not, per load);
#   2. the scale run: the same fleet for 10 minutes of simulated time (an
#      outage at 60 s, load 0.9 C, recommended+pushback): fleet_scale.txt,
#      with the real time it took;
#   3. the small case of the ctest (30 clients x 3 servers) at 0.5 C:
#      fleet_small.txt.
# Deterministic for the seed: the same figures on every machine.
#
#   scripts/fleet.sh [--seed=1]
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
configure_and_build "$REPO_ROOT/build" grpc_resilience_fleet_experiment
out="$REPO_ROOT/docs/results"
mkdir -p "$out"
fleet="$REPO_ROOT/build/experiments/fleet/fleet_experiment"
policies="none,naive,grpc-throttled,recommended,recommended+pushback,recommended+adaptive,recommended-window-4s,recommended-method-breaker,recommended-bucket-only"
log "sweep: 4 triggers x 9 configurations x 9 loads"
"$fleet" --mode=sweep --policies="$policies" --out_dir="$out" "$@" > /dev/null
log "scale: 1,000 clients x 10 servers x 10 minutes"
"$fleet" --mode=single --trigger=outage --load=0.9 --policies=recommended+pushback \
  --warmup_s=60 --after_s=535 --bin_s=5 "$@" > "$out/fleet_scale.txt"
tail -n 1 "$out/fleet_scale.txt"
log "small case: 30 clients x 3 servers"
"$fleet" --mode=sweep --clients=30 --servers=3 --workers=4 --loads=0.5 --after_s=20 \
  --policies="$policies" "$@" > "$out/fleet_small.txt"
log "wrote $out/fleet.{txt,json}, fleet_*.svg, fleet_scale.txt, fleet_small.txt"

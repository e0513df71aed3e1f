#!/usr/bin/env bash
# The fleet simulator checked against real gRPC (docs/fleet.md, "Check
# against real gRPC"): the small case (30 clients, 3 in-process servers of
# 4 workers x 20 ms, C = 600 calls/s) at 0.6 C, capacity halved for 10 s,
# simulated (seeds 1-5) and run over real gRPC (--repeat runs, real time,
# about 45 s each) for recommended, recommended-method-breaker and
# naive-budget-1000: docs/results/fleet_real.{txt,json} and
# fleet_real_goodput.svg. Real-time figures depend on the machine: each run
# notes the load average beside it; run it on a quiet machine.
#
#   scripts/fleet_real.sh [--repeat=2] [--load=0.6] [...fleet_real flags]
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
configure_and_build "$REPO_ROOT/build" grpc_resilience_fleet_real
out="$REPO_ROOT/docs/results"
mkdir -p "$out"
log "load average before: $(cat /proc/loadavg)"
"$REPO_ROOT/build/experiments/fleet/fleet_real" --load=0.6 --repeat=2 \
  --policies=recommended,recommended-method-breaker,naive-budget-1000 --out_dir="$out" "$@"
log "wrote $out/fleet_real.{txt,json}, fleet_real_goodput.svg"

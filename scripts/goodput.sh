#!/usr/bin/env bash
# Runs the goodput experiment and draws a chart per schedule into docs/results/: the
# per-second success rate of each policy, backend failures shaded.
#   1. simulated mode (the breakers against a simulated backend, 300 s
#      schedules): docs/results/goodput.txt, goodput.json, the charts and CSVs;
#   2. the breaker-quality suite (docs/breaker-quality.md): every scenario
#      family at 1000, 100 and 10 calls/s, seeds 1-3: docs/results/breaker-quality.{txt,json};
#      and the best probe schedule any breaker learning only from its calls
#      can have on outages at 10 and 100 calls/s: docs/results/probe-bound.txt;
#   3. gRPC mode (the client interceptors over real gRPC to a CacheServer
#      with scheduled faults, 90 s schedules, about a minute on 2 cores):
#      docs/results/goodput_grpc.txt, goodput_grpc.json;
#   4. live mode (several concurrent callers per policy in real time, real
#      latencies, a compressed outage schedule; 60 s): docs/results/goodput_live.{txt,json}.
#
#   scripts/goodput.sh [--seed=1]
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ensure_packages "${REQUIRED_PACKAGES[@]}" gnuplot-nox
configure_and_build "$REPO_ROOT/build" grpc_resilience_goodput_experiment
out="$REPO_ROOT/docs/results"
mkdir -p "$out"
experiment="$REPO_ROOT/build/experiments/goodput/goodput_experiment"
"$experiment" --out="$out" --json_file="$out/goodput.json" "$@" | tee "$out/goodput.txt"
for schedule in outage mixed; do
  gnuplot <<GP
set datafile separator ","
set terminal pngcairo size 1400,520 font "sans,11"
set output "$out/goodput_${schedule}.png"
set title "Goodput experiment, schedule '${schedule}': share of calls that succeeded, per second (backend failing: shaded)"
set xlabel "simulated seconds"
set ylabel "successful calls / offered calls"
set yrange [0:1.08]
set xrange [0:*]
set key outside right top
set style fill solid 0.18 noborder
set boxwidth 1 absolute
plot "$out/${schedule}.csv" using 1:(strcol(2) eq "healthy" ? 1/0 : 1.08) with boxes lc rgb "#d62728" title "backend failing", \
     for [i=3:8] "" using 1:i with lines lw 1.6 title columnheader(i)
GP
done
log "breaker-quality suite: every family at 1000/100/10 calls/s, seeds 1-3 (seconds)"
"$experiment" --suite --json_file="$out/breaker-quality.json" |
  tee "$out/breaker-quality.txt"
log "probe-schedule bound: outage family at 10 and 100 calls/s (seconds)"
"$experiment" --probe_bound --rates=10,100 | tee "$out/probe-bound.txt"
log "gRPC mode, 90 s schedules (about a minute)"
"$experiment" --mode=grpc --seconds=90 --json_file="$out/goodput_grpc.json" "$@" |
  tee "$out/goodput_grpc.txt"
log "live mode: concurrent callers in real time, 60 s"
"$experiment" --mode=live --json_file="$out/goodput_live.json" "$@" | tee "$out/goodput_live.txt"
log "wrote $out/goodput_outage.png, $out/goodput_mixed.png, $out/goodput.txt, $out/goodput.json, $out/goodput_grpc.{txt,json}"

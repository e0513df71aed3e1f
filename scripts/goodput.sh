#!/usr/bin/env bash
# Runs the goodput experiment (simulated mode: the real breakers on a
# simulated clock, 300 s schedules) and draws a chart per schedule into
# docs/: the per-second success rate of each policy, backend failures shaded.
#
#   scripts/goodput.sh [--seed=1] [--seconds=300]
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ensure_packages "${REQUIRED_PACKAGES[@]}" gnuplot-nox
configure_and_build "$REPO_ROOT/build" goodput_experiment
out="$REPO_ROOT/docs"
mkdir -p "$out"
"$REPO_ROOT/build/examples/cache_service/goodput_experiment" --out="$out" "$@" | tee "$out/goodput.txt"
"$REPO_ROOT/build/examples/cache_service/goodput_experiment" --json "$@" > "$out/goodput.json"
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
     for [i=3:7] "" using 1:i with lines lw 1.6 title columnheader(i)
GP
done
log "wrote $out/goodput_outage.png, $out/goodput_mixed.png, $out/goodput.txt, $out/goodput.json"

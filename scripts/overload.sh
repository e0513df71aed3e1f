#!/usr/bin/env bash
# Runs the overload experiment (issue 19) and draws its chart into docs/results/:
# goodput per phase of each policy (none, fixed limits, adaptive) while the
# backend's capacity goes C, C/2, 2C and the load steps 0.5C .. 5C.
#   1. simulated mode (16 workers x 16 ms, 4 s phases, under a second):
#      docs/results/overload.txt, overload.json, overload.csv, overload.png;
#   2. gRPC mode (real servers and channels, 8 workers x 20 ms, 2 s phases,
#      about 2.5 minutes): docs/results/overload_grpc.txt, overload_grpc.json;
#   3. the criticality mix, both modes (docs/criticality.md):
#      docs/results/criticality{,_grpc}.{txt,json,svg}.
#   4. one tenant at 10x its share among nine (docs/per-caller-limits.md),
#      simulated: docs/results/tenants.{txt,json,svg}; over real gRPC (8
#      workers x 40 ms, three repetitions of about 35 s each, the machine's
#      load averages in the notes): docs/results/tenants_grpc.{txt,json,svg}.
#   5. deadline-aware admission at 3x capacity with mixed deadlines, over real gRPC
#      (about 20 s): docs/results/deadline_admission_grpc.{txt,json}.
#
#   5. naive gRPC retryPolicy clients at 2x capacity against servers without and
#      with throttle.retryShedding (docs/criticality.md), seeds 1 to 3, 10 runs of
#      10 s each (about 6 minutes): docs/results/retries_grpc.{md,json}.
#
#   scripts/overload.sh [--seed=1]
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ensure_packages "${REQUIRED_PACKAGES[@]}" gnuplot-nox
configure_and_build "$REPO_ROOT/build" grpc_resilience_overload_experiment
out="$REPO_ROOT/docs/results"
mkdir -p "$out"
experiment="$REPO_ROOT/build/experiments/overload/overload_experiment"
"$experiment" --json_file="$out/overload.json" --csv_file="$out/overload.csv" "$@" |
  tee "$out/overload.txt"
gnuplot <<GP
set datafile separator ","
set terminal pngcairo size 1400,600 font "sans,11" noenhanced
set output "$out/overload.png"
set bmargin 6
set title "Overload experiment (simulated): goodput per phase, calls within the deadline per second (load C @ capacity C, C = 1000/s)"
set xlabel "phase: offered load @ backend capacity"
set ylabel "goodput (calls/s)"
set yrange [0:*]
set xtics rotate by -35
set key outside right top
set style data linespoints
plot for [i=3:8] "$out/overload.csv" using 1:i:xtic(2) lw 1.8 title columnheader(i)
GP
# All policies in one process. A run in which the load generator stalled
# (the machine did not give the process the CPU) is made again, and the
# output says so; see "Over real gRPC" in docs/adaptive-concurrency.md.
log "gRPC mode, 2 s phases (about 2.5 minutes)"
"$experiment" --mode=grpc --json_file="$out/overload_grpc.json" "$@" | tee "$out/overload_grpc.txt"
# Criticality at 3x capacity, 20% CRITICAL / 80% SHEDDABLE (docs/criticality.md).
"$experiment" --scenario=criticality --json_file="$out/criticality.json" \
  --svg_file="$out/criticality.svg" "$@" | tee "$out/criticality.txt"
"$experiment" --scenario=criticality --mode=grpc --json_file="$out/criticality_grpc.json" \
  --svg_file="$out/criticality_grpc.svg" "$@" | tee "$out/criticality_grpc.txt"
# One tenant at 10x its share among nine (docs/per-caller-limits.md).
"$experiment" --scenario=tenants --json_file="$out/tenants.json" \
  --svg_file="$out/tenants.svg" "$@" | tee "$out/tenants.txt"
log "tenants over real gRPC, 3 runs (about 2 minutes)"
"$experiment" --scenario=tenants --mode=grpc --out_prefix="$out/tenants_grpc" "$@"
log "naive retries over real gRPC, 3 seeds (about 6 minutes)"
printf '# Naive retries at 2x capacity over real gRPC\n\n%s\n\n' \
  "scripts/overload.sh; read with docs/criticality.md, \"Retries shed first\"." \
  > "$out/retries_grpc.md"
echo "[" > "$out/retries_grpc.json"
for seed in 1 2 3; do
  { echo '```'; echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"; } \
    >> "$out/retries_grpc.md"
  "$experiment" --scenario=retries --mode=grpc --seed=$seed --json_file="$out/retries_seed.json" |
    tee -a "$out/retries_grpc.md"
  printf '```\n\n' >> "$out/retries_grpc.md"
  cat "$out/retries_seed.json" >> "$out/retries_grpc.json"
  [ "$seed" = 3 ] || echo "," >> "$out/retries_grpc.json"
done
echo "]" >> "$out/retries_grpc.json"
rm -f "$out/retries_seed.json"
# Deadline-aware admission at 3x capacity, mixed deadlines (docs/deadline-admission.md).
"$experiment" --scenario=deadline --mode=grpc --json_file="$out/deadline_admission_grpc.json" \
  "$@" | tee "$out/deadline_admission_grpc.txt"
log "wrote $out/overload.{txt,json,csv,png}, $out/overload_grpc.{txt,json}," \
  "$out/criticality{,_grpc}.{txt,json,svg}, $out/tenants{,_grpc}.{txt,json,svg}," \
  "$out/retries_grpc.{md,json}, $out/deadline_admission_grpc.{txt,json}"

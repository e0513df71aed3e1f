#!/usr/bin/env bash
# A short cross-check of the peers' harness (experiments/peers/run.js)
# against the C++ experiment: one minute of the outage and slow families at
# 100 calls/s, seed 1. run.js exits 1 unless its no-breaker run equals the
# C++ one call for call and the C++ recommended run's metrics recompute
# exactly; then the peers must run. Skips (77) when npm is missing or the
# pinned packages cannot be installed (no registry).
#   peers_crosscheck_test.sh GOODPUT_EXPERIMENT PEERS_DIR
set -euo pipefail
experiment="$1"
peers="$2"
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { echo "no node/npm"; exit 77; }
if [ ! -d "$peers/node_modules/opossum" ] || [ ! -d "$peers/node_modules/cockatiel" ]; then
  (cd "$peers" && timeout 120 npm ci --no-audit --no-fund --loglevel=error) ||
    { echo "npm ci failed (no registry?)"; exit 77; }
fi
fates="$(mktemp -d)"
trap 'rm -rf "$fates"' EXIT
"$experiment" --suite --export_fates="$fates" --families=outage,slow,mixed --rates=100 --seeds=1 \
  --seconds=60
out="$(node "$peers/run.js" "$fates")"
echo "$out"
grep -q "identical\|equals C++ call for call" <<<"$out"
grep -q "^opossum-default" <<<"$out"
grep -q "^cockatiel-consecutive " <<<"$out"
# jitter.js (the mixed family's open-period schedules) runs on the same fates.
jitter="$(node "$peers/jitter.js" "$fates" --draws=2)"
echo "$jitter"
grep -q "^mixed @ 100 calls/s" <<<"$jitter"
grep -q "^  fixed " <<<"$jitter"

#!/usr/bin/env bash
# Checks that the library reads time only through Clock (src/core/clock.h):
# no absl::Now(), std::chrono::*_clock::now(), clock_gettime() or time()
# anywhere in src/, outside src/core/clock.cc (the real clock itself).
# docs/architecture.md, "Time", says why.
#
#   scripts/check_clock_reads.sh [REPO_ROOT]
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"
# Files still reading a clock directly, each with the reason; empty when the
# core is clean.
allowed=()
pattern='absl::Now\(\)|_clock::now\(\)|clock_gettime\(|[^_a-zA-Z.>:]time\(nullptr\)|absl::GetCurrentTimeNanos\(\)'
found=0
while IFS= read -r hit; do
  file="${hit%%:*}"
  [[ "$file" == src/core/clock.cc ]] && continue
  skip=0
  for a in "${allowed[@]+"${allowed[@]}"}"; do [[ "$file" == "$a" ]] && skip=1; done
  ((skip)) && continue
  # Comments may mention the calls.
  code="${hit#*:*:}"
  [[ "$code" =~ ^[[:space:]]*// ]] && continue
  echo "direct clock read (take a Clock& instead): $hit" >&2
  found=1
done < <(grep -rnE "$pattern" src \
           --include='*.h' --include='*.cc' || true)
if ((found)); then exit 1; fi
echo "check_clock_reads: the library reads time only through Clock"

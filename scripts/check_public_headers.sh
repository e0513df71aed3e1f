#!/usr/bin/env bash
# Checks that every public header compiles on its own, with only the given
# include folder and the system's headers (no -I of the library's sources),
# without warnings: what a user who includes just that one header gets.
#
#   scripts/check_public_headers.sh [INCLUDE_DIR]   default: include/ of the repository
#
# INCLUDE_DIR is the folder that holds grpc_resilience/ (the source tree's
# include/, or an install prefix's include/). PUBLIC_HEADERS_PENDING lists
# headers reported but not failed (none by default). The optional component's
# header prometheus_collectable.h needs prometheus-cpp's (prometheus-cpp-dev):
# without them it is skipped, with a line saying so.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$repo/include}"
pending="${PUBLIC_HEADERS_PENDING-}"
cxx="${CXX:-c++}"
[ -d "$dir/grpc_resilience" ] || { echo "check_public_headers: no $dir/grpc_resilience" >&2; exit 1; }
status=0
checked=0
skip=""
if ! echo '#include "prometheus/collectable.h"' |
     "$cxx" -std=c++17 -fsyntax-only -x c++ - > /dev/null 2>&1; then
  skip="prometheus_collectable.h"
  echo "check_public_headers: skipping grpc_resilience/$skip: no prometheus-cpp headers" \
       "(Debian: prometheus-cpp-dev)" >&2
fi
# The headers compile at once, one per core (serially this took 34 s of the
# normal ctest run); their results are read in order below.
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
results="$(mktemp -d)"
trap 'rm -rf "$results"' EXIT
for header in "$dir"/grpc_resilience/*.h; do
  name="$(basename "$header")"
  [ "$name" != "$skip" ] || continue
  (
    if "$cxx" -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I "$dir" -x c++ "$header" \
         > "$results/$name.out" 2>&1; then
      : > "$results/$name.ok"
    fi
  ) &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
done
wait
for header in "$dir"/grpc_resilience/*.h; do
  name="$(basename "$header")"
  [ "$name" != "$skip" ] || continue
  out="$(cat "$results/$name.out")"
  if [ -f "$results/$name.ok" ]; then
    checked=$((checked + 1))
  elif [[ " $pending " == *" $name "* ]]; then
    echo "check_public_headers: grpc_resilience/$name does not compile alone (pending: $(
      grep -o '"src/[^"]*"' <<<"$out" | head -n 1 || echo "see the compiler"))" >&2
  else
    echo "$out" >&2
    echo "check_public_headers: grpc_resilience/$name does not compile on its own" >&2
    status=1
  fi
done
if [ "$status" -eq 0 ]; then
  echo "check_public_headers: $checked header(s) of $dir/grpc_resilience compile on their own"
fi
exit "$status"

#!/usr/bin/env bash
# Builds examples/ as a project of its own against an installed package, as
# a user of the library would: find_package(grpc_resilience) from PREFIX, the
# public headers only (an example that includes a header of src/ does not
# compile: src/ is in no include path), warnings as errors. Then runs the
# built cache_server and cache_client once: a Store and a Get over loopback,
# and a SIGTERM that the server answers by exiting 0.
#
#   scripts/examples_consumer.sh [PREFIX]
#
# PREFIX: the install prefix (default build-consumer-prefix/, which
# scripts/consumer.sh installs and then runs this script with). The build
# folder is build-examples-consumer/ (from scratch). EXAMPLES_JOBS (default
# 2) is the build parallelism. Exits non-zero on any failure.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

prefix="$(cd "${1:-$REPO_ROOT/build-consumer-prefix}" 2>/dev/null && pwd)" || {
  log "examples: no install prefix ${1:-$REPO_ROOT/build-consumer-prefix} (run scripts/consumer.sh)"
  exit 1
}
if [ -z "$(find "$prefix" -name grpc_resilienceConfig.cmake -print -quit)" ]; then
  log "examples: $prefix holds no grpc_resilienceConfig.cmake"
  exit 1
fi
dir="$REPO_ROOT/build-examples-consumer"
rm -rf "$dir"
mkdir -p "$dir"
log "examples: configuring and building $dir against $prefix"
if ! cmake -S "$REPO_ROOT/examples" -B "$dir" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
       -DRESILIENCE_WERROR=ON ${compiler_launcher[@]+"${compiler_launcher[@]}"} \
       > "$dir/log" 2>&1 ||
   ! cmake --build "$dir" -j "${EXAMPLES_JOBS:-2}" >> "$dir/log" 2>&1; then
  cat "$dir/log" >&2
  log "examples: FAILED to build against the install (log above)"
  exit 1
fi
grep -m 1 'grpc_resilience .* from' "$dir/log" >&2 || true
# The examples link the installed libraries, not those of a build folder.
link="$(ninja -C "$dir" -t commands grpc_resilience_cache_server | tail -n 1)"
for library in client server redis_limits; do
  if ! grep -qE "(^| )$prefix/lib[^ ]*/libgrpc_resilience_$library\.a( |$)" <<<"$link"; then
    log "examples: cache_server does not link $prefix's grpc_resilience::$library: $link"
    exit 1
  fi
done

# One round over loopback: the server's first line names its address.
server_out="$dir/cache_server.out"
"$dir/cache_service/cache_server" --port=0 --grace_period=1s > "$server_out" 2> "$dir/cache_server.err" &
server_pid=$!
target=""
for _ in $(seq 1 100); do
  target="$(sed -n 's/^listening on //p' "$server_out")"
  [ -n "$target" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
status=0
if [ -z "$target" ]; then
  log "examples: cache_server did not say where it listens"; cat "$dir/cache_server.err" >&2
  status=1
else
  client="$dir/cache_service/cache_client"
  if ! timeout 30 "$client" --target="$target" --deadline=10s store greeting hello ||
     [ "$(timeout 30 "$client" --target="$target" --deadline=10s get greeting)" != "hello" ]; then
    log "examples: cache_client's store and get against cache_server FAILED"
    status=1
  fi
fi
kill -TERM "$server_pid" 2>/dev/null || true
if ! timeout 30 tail --pid="$server_pid" -f /dev/null; then
  kill -KILL "$server_pid" 2>/dev/null || true
fi
if ! wait "$server_pid"; then
  log "examples: cache_server did not exit 0 after SIGTERM"; cat "$dir/cache_server.err" >&2
  status=1
fi
[ "$status" -eq 0 ] && log "examples: built against the install; cache_server and cache_client work"
exit "$status"

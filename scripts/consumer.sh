#!/usr/bin/env bash
# Checks that another project can adopt the library: installs it, checks that
# every installed public header compiles on its own, then builds and runs
# tests/consumer (a project of its own with its own service: inventory_check,
# client and server; client_only_check, which links grpc_resilience::client
# alone; server_only_check, which links grpc_resilience::server alone, without
# hiredis; redis_limits_check, which links grpc_resilience::redis_limits;
# prometheus_cpp_check, which links grpc_resilience::prometheus_cpp) the
# three CMake ways, find_package against the install, add_subdirectory and
# FetchContent, then the same programs with the installed pkg-config files'
# flags alone (grpc_resilience_client.pc, _server.pc, _redis_limits.pc and
# _prometheus_cpp.pc; a metrics endpoint program with
# grpc_resilience_metrics_http.pc), compiles
# the C++ snippets of the README and the guide against the install, and
# builds examples/ against the install and runs its server and client once
# (scripts/examples_consumer.sh; build folder build-examples-consumer/).
#
#   scripts/consumer.sh              builds the libraries in build-consumer-lib/
#                                    (no tests, benchmarks or examples)
#   scripts/consumer.sh build        reuses build/ (CI: after scripts/test.sh)
#
# Install prefix: build-consumer-prefix/; the consumer's build folders:
# build-consumer-find_package/, -subdirectory/, -fetchcontent/, -pkg-config/
# (each from scratch). Prints the timings; exits non-zero on any failure.
# CONSUMER_JOBS (default 2) is the build parallelism. CONSUMER_MODES (default
# "find_package subdirectory fetchcontent") picks the CMake ways to run (the
# pkg-config way always runs): the other two build the libraries again from
# source each.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

jobs="${CONSUMER_JOBS:-2}"
# What building and consuming the libraries takes; no GoogleTest, no Google
# Benchmark.
ensure_packages cmake ninja-build g++ pkg-config libgrpc++-dev protobuf-compiler-grpc \
  libprotobuf-dev protobuf-compiler libabsl-dev libhiredis-dev prometheus-cpp-dev

prefix="$REPO_ROOT/build-consumer-prefix"
timings=()
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# 1. The libraries, installed.
t0="$(now)"
if [ $# -ge 1 ]; then
  lib_build="$(cd "$1" && pwd)"
  [ -f "$lib_build/build.ninja" ] || { log "$lib_build: not a configured build folder"; exit 1; }
  # Re-runs CMake if the sources changed, so the install rules are current;
  # nothing to do after scripts/test.sh.
  log "bringing $lib_build up to date"
  cmake --build "$lib_build" -j "$jobs"
else
  lib_build="$REPO_ROOT/build-consumer-lib"
  if [ ! -f "$lib_build/build.ninja" ]; then
    log "configuring $lib_build"
    # shellcheck disable=SC2086  # RESILIENCE_CMAKE_ARGS is a list, as in common.sh
    cmake -S "$REPO_ROOT" -B "$lib_build" -G Ninja ${RESILIENCE_CMAKE_ARGS:-} \
      -DRESILIENCE_BUILD_TESTS=OFF -DRESILIENCE_BUILD_BENCH=OFF \
      -DRESILIENCE_BUILD_EXAMPLES=OFF -DRESILIENCE_INSTALL=ON
  fi
  log "building the libraries in $lib_build"
  cmake --build "$lib_build" -j "$jobs"
fi
if ! grep -q grpc_resilienceTargets "$lib_build/cmake_install.cmake"; then
  log "$lib_build has no install rules (configured with RESILIENCE_INSTALL=OFF?)"
  exit 1
fi
rm -rf "$prefix"
log "installing into $prefix"
cmake --install "$lib_build" --prefix "$prefix" > /dev/null
timings+=("library build and install: $(since "$t0") s")
# The exported targets name system libraries by target, never by the path
# they have on this machine (only our own, under ${_IMPORT_PREFIX}).
if grep -nE '"/[^"]*\.(so|a)[";]|;/[^";]*\.(so|a)[";]' \
     "$(find "$prefix" -name grpc_resilienceTargets.cmake | head -n 1)" \
     "$(dirname "$(find "$prefix" -name grpc_resilienceTargets.cmake | head -n 1)")"/grpc_resilienceTargets-*.cmake; then
  log "the exported targets name a library by its absolute path (above)"
  exit 1
fi

# 2. Each installed public header on its own, then the C++ snippets of the README and the guide
#    against the installed headers.
status=0
t0="$(now)"
if bash "$REPO_ROOT/scripts/check_public_headers.sh" "$prefix/include"; then
  timings+=("installed public headers alone: $(since "$t0") s")
else
  timings+=("installed public headers alone: FAILED")
  status=1
fi
t0="$(now)"
if bash "$REPO_ROOT/scripts/check_readme_snippets.sh" "$prefix"; then
  timings+=("README snippets: $(since "$t0") s")
else
  timings+=("README snippets: FAILED")
  status=1
fi

# 2b. The examples (examples/, a project of its own) against the install:
#     the public headers and targets only.
t0="$(now)"
if EXAMPLES_JOBS="$jobs" bash "$REPO_ROOT/scripts/examples_consumer.sh" "$prefix"; then
  timings+=("examples against the install: $(since "$t0") s")
else
  timings+=("examples against the install: FAILED")
  status=1
fi

# 3. The consumer, three ways.
# expect_built DIR NAME...: the libraries and programs DIR's `all` built are
# exactly NAME... (by file name): with add_subdirectory or FetchContent, no
# test, benchmark or example of ours, and no library the consumer does not
# link.
expect_built() {
  local dir="$1"; shift
  local built expected
  # Every library and program the build folder knows of, kept if the build of
  # `all` (from scratch) made it.
  built="$(ninja -C "$dir" -t targets all | sed -n 's/^\([^:]*\): CXX_[A-Z_]*LINKER.*/\1/p' |
    while read -r file; do if [ -e "$dir/$file" ]; then basename "$file"; fi; done | sort)"
  expected="$(printf '%s\n' "$@" | sort)"
  if [ "$built" != "$expected" ]; then
    local extra missing
    extra="$(comm -13 <(echo "$expected") <(echo "$built") | tr '\n' ' ')"
    missing="$(comm -23 <(echo "$expected") <(echo "$built") | tr '\n' ' ')"
    log "$(basename "$dir"): 'all' builds what the consumer does not link: ${extra:-none};" \
        "does not build: ${missing:-none}"
    return 1
  fi
}

# Our libraries that grpc_resilience::client, ::server, ::redis_limits and
# ::prometheus_cpp link, by file name:
# their closure over the installed export's INTERFACE_LINK_LIBRARIES.
linked_libraries() {
  local export_file
  export_file="$(find "$prefix" -name grpc_resilienceTargets.cmake | head -n 1)"
  awk '
    /^set_target_properties\(grpc_resilience::/ {
      target = $1; sub(/^set_target_properties\(grpc_resilience::/, "", target)
    }
    /INTERFACE_LINK_LIBRARIES/ && target != "" {
      line = $0; sub(/^[^"]*"/, "", line); sub(/".*$/, "", line)
      n = split(line, deps, ";")
      for (i = 1; i <= n; i++) {
        sub(/^\\\$<LINK_ONLY:/, "", deps[i]); sub(/>$/, "", deps[i])  # private deps
        # (grpc_resilience::civetweb is the imported system library, not ours)
        if (deps[i] ~ /^grpc_resilience::/ && deps[i] != "grpc_resilience::civetweb") {
          sub(/^grpc_resilience::/, "", deps[i]); edges[target] = edges[target] " " deps[i]
        }
      }
    }
    /^\)/ { target = "" }
    END {
      queue[1] = "client"; queue[2] = "server"; queue[3] = "redis_limits"
      queue[4] = "prometheus_cpp"; tail = 4
      for (head = 1; head <= tail; head++) {
        t = queue[head]
        if (t in seen) continue
        seen[t] = 1
        print "libgrpc_resilience_" t ".a"
        n = split(edges[t], next_ones, " ")
        for (i = 1; i <= n; i++) queue[++tail] = next_ones[i]
      }
    }
  ' "$export_file"
}
consumer_libs=(libshop_proto.a inventory_check client_only_check server_only_check
  redis_limits_check prometheus_cpp_check)
consumer_programs=(inventory_check client_only_check server_only_check redis_limits_check
  prometheus_cpp_check)
mapfile -t our_libs < <(linked_libraries)
log "grpc_resilience::client, ::server, ::redis_limits and ::prometheus_cpp link: ${our_libs[*]}"

# server_only_ok PROGRAM LINK_LINE: server_only_check links neither the Redis
# library nor hiredis, nor the client or civetweb: not on its link line, not
# among the shared libraries it loads (ldd).
server_only_ok() {
  local program="$1" link="$2"
  if grep -qE 'grpc_resilience_(client|redis_limits|metrics_http)|hiredis|civetweb' <<<"$link"; then
    log "$program links more than the server: $link"
    return 1
  fi
  if ldd "$program" | grep -qE 'hiredis|civetweb'; then
    log "$program loads hiredis or civetweb: $(ldd "$program" | grep -E 'hiredis|civetweb')"
    return 1
  fi
}

for mode in ${CONSUMER_MODES:-find_package subdirectory fetchcontent}; do
  dir="$REPO_ROOT/build-consumer-$mode"
  rm -rf "$dir"
  mkdir -p "$dir"
  args=(-DCONSUME="$mode")
  case "$mode" in
    find_package) args+=(-DCMAKE_PREFIX_PATH="$prefix") ;;
    # GoogleTest and Google Benchmark must not even be looked for.
    subdirectory|fetchcontent)
      args+=(-DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON
        -DFETCHCONTENT_FULLY_DISCONNECTED=ON) ;;
  esac
  log "consumer ($mode): configuring and building $dir"
  t0="$(now)"
  if ! cmake -S "$REPO_ROOT/tests/consumer" -B "$dir" -G Ninja "${args[@]}" > "$dir/log" 2>&1 ||
     ! cmake --build "$dir" -j "$jobs" >> "$dir/log" 2>&1; then
    cat "$dir/log" >&2
    log "consumer ($mode): build FAILED"
    timings+=("consumer $mode: build FAILED")
    status=1
    continue
  fi
  build_time="$(since "$t0")"
  case "$mode" in
    find_package) expected=("${consumer_libs[@]}") ;;
    *) expected=("${consumer_libs[@]}" "${our_libs[@]}") ;;
  esac
  checks_ok=1
  expect_built "$dir" "${expected[@]}" || checks_ok=0
  if grep -qE '^(GTest|GTEST|benchmark)_' "$dir/CMakeCache.txt"; then
    log "consumer ($mode): GoogleTest or Google Benchmark was looked up"
    checks_ok=0
  fi
  if ! (cd "$dir" && ctest -N | grep -q "Total Tests: ${#consumer_programs[@]}$"); then
    log "consumer ($mode): tests other than the consumer's own are registered"
    checks_ok=0
  fi
  # client_only_check links grpc_resilience::client alone: none of the
  # server's libraries, no hiredis, no civetweb on its link line.
  client_link="$(ninja -C "$dir" -t commands client_only_check | tail -n 1)"
  if grep -qE 'grpc_resilience_(server|global_limits|redis|metrics_http|prometheus_cpp)|prometheus-cpp|hiredis|civetweb' \
       <<<"$client_link"; then
    log "consumer ($mode): client_only_check links more than the client: $client_link"
    checks_ok=0
  fi
  server_link="$(ninja -C "$dir" -t commands server_only_check | tail -n 1)"
  server_only_ok "$dir/server_only_check" "$server_link" || checks_ok=0
  if [ "$mode" = find_package ]; then
    log "consumer ($mode): server_only_check's link line: $server_link"
    log "consumer ($mode): redis_limits_check's link line:" \
        "$(ninja -C "$dir" -t commands redis_limits_check | tail -n 1)"
  fi
  t0="$(now)"
  for program in "${consumer_programs[@]}"; do
    log "consumer ($mode): running $program"
    if ! timeout 120 "$dir/$program"; then
      log "consumer ($mode): $program FAILED"
      checks_ok=0
    fi
  done
  timings+=("consumer $mode: build $build_time s, run $(since "$t0") s$(
    [ "$checks_ok" -eq 1 ] || echo ", FAILED")")
  [ "$checks_ok" -eq 1 ] || status=1
done

# 4. The installed pkg-config files, as a build system other than CMake uses
#    them: the same programs compiled and linked with their flags alone
#    (inventory_check with grpc_resilience_client and _server,
#    client_only_check with grpc_resilience_client only, which must name
#    neither hiredis nor civetweb), and a program that serves /metrics (and a
#    ResilienceRegistry) with grpc_resilience_metrics_http.
dir="$REPO_ROOT/build-consumer-pkg-config"
rm -rf "$dir"
mkdir -p "$dir"
log "consumer (pkg-config): compiling and linking in $dir"
t0="$(now)"
pc_file="$(find "$prefix" -name grpc_resilience_client.pc | head -n 1)"
PKG_CONFIG_PATH="$(dirname "$pc_file")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
pc_ok=1
pc_includedir="$(pkg-config --variable=includedir grpc_resilience_client 2>&1)" || pc_ok=0
if [ "$pc_ok" -eq 1 ] && [ ! -f "$pc_includedir/grpc_resilience/client.h" ]; then
  log "consumer (pkg-config): includedir is '$pc_includedir', which has no" \
      "grpc_resilience/client.h (installed under $prefix)"
  pc_ok=0
fi
if [ "$pc_ok" -eq 1 ]; then
  client_flags="$(pkg-config --libs grpc_resilience_client)"
  if grep -qE 'hiredis|civetweb|grpc_resilience_server' <<<"$client_flags"; then
    log "consumer (pkg-config): grpc_resilience_client.pc names more than the client: $client_flags"
    pc_ok=0
  fi
  # The server's file names no Redis (its Requires, recursively, included);
  # the Redis library's requires hiredis. No file names a library by path.
  server_flags="$(pkg-config --libs grpc_resilience_server)"
  server_requires="$(pkg-config --print-requires grpc_resilience_server | tr '\n' ' ')"
  log "consumer (pkg-config): grpc_resilience_server: Requires: $server_requires"
  if grep -qE 'hiredis|civetweb|redis_limits|grpc_resilience_client' \
       <<<"$server_flags $server_requires"; then
    log "consumer (pkg-config): grpc_resilience_server.pc names more than the server:" \
        "$server_flags; requires $server_requires"
    pc_ok=0
  fi
  redis_requires="$(pkg-config --print-requires grpc_resilience_redis_limits | tr '\n' ' ')"
  log "consumer (pkg-config): grpc_resilience_redis_limits: Requires: $redis_requires;" \
      "Libs: $(pkg-config --libs grpc_resilience_redis_limits | grep -oE -- '-lgrpc_resilience_[a-z_]+|-lhiredis' | tr '\n' ' ')"
  if ! grep -qw hiredis <<<"$redis_requires"; then
    log "consumer (pkg-config): grpc_resilience_redis_limits.pc does not require hiredis"
    pc_ok=0
  fi
  if grep -lE '(^|[ =])/[^ ]*\.(so|a)([ .]|$)' "$(dirname "$pc_file")"/grpc_resilience*.pc; then
    log "consumer (pkg-config): a .pc file names a library by its absolute path"
    pc_ok=0
  fi
fi
# pc_build OUT SOURCE MODULE...: compiles SOURCE with the service's generated
# code and the MODULEs' flags alone.
pc_build() {
  local out="$1" source="$2"; shift 2
  # shellcheck disable=SC2046  # pkg-config's output is a list of flags
  g++ -std=c++17 -o "$dir/$out" -I "$dir" "$source" \
    "$dir/shop/v1/inventory.pb.cc" "$dir/shop/v1/inventory.grpc.pb.cc" \
    $(pkg-config --cflags --libs "$@") >> "$dir/log" 2>&1
}
if [ "$pc_ok" -eq 1 ]; then
  protoc -I "$REPO_ROOT/tests/consumer" --cpp_out="$dir" --grpc_out="$dir" \
    --plugin=protoc-gen-grpc="$(command -v grpc_cpp_plugin)" \
    "$REPO_ROOT/tests/consumer/shop/v1/inventory.proto"
  pc_build inventory_check "$REPO_ROOT/tests/consumer/inventory_check.cc" \
    grpc_resilience_client grpc_resilience_server || pc_ok=0
  pc_build client_only_check "$REPO_ROOT/tests/consumer/client_only_check.cc" \
    grpc_resilience_client || pc_ok=0
  pc_build server_only_check "$REPO_ROOT/tests/consumer/server_only_check.cc" \
    grpc_resilience_server || pc_ok=0
  if [ "$pc_ok" -eq 1 ]; then
    server_only_ok "$dir/server_only_check" "$(pkg-config --libs grpc_resilience_server)" ||
      pc_ok=0
  fi
  pc_build redis_limits_check "$REPO_ROOT/tests/consumer/redis_limits_check.cc" \
    grpc_resilience_redis_limits grpc_resilience_server || pc_ok=0
  pc_build prometheus_cpp_check "$REPO_ROOT/tests/consumer/prometheus_cpp_check.cc" \
    grpc_resilience_prometheus_cpp grpc_resilience_client prometheus-cpp-pull || pc_ok=0
  if pkg-config --exists grpc_resilience_metrics_http; then
    cat > "$dir/metrics_endpoint.cc" <<'CC'
#include <cstdio>
#include "grpc_resilience/metrics.h"
#include "grpc_resilience/metrics_http.h"
#include "grpc_resilience/resilience_registry.h"
int main() {
  auto server = resilience::MetricsHttpServer::Start({}, [] {
    resilience::PrometheusText text;
    text.Gauge("up", "Whether the program runs.").Sample({}, 1);
    return text.Finish();
  });
  if (!server.ok() || (*server)->port() <= 0) return 1;
  std::printf("metrics endpoint on port %d\n", (*server)->port());
  // The process's objects on one endpoint (none registered here).
  resilience::ResilienceRegistry registry;
  auto served = registry.Serve({});
  if (!served.ok() || !registry.ChannelNames().empty()) return 1;
  return 0;
}
CC
    # shellcheck disable=SC2046
    g++ -std=c++17 -o "$dir/metrics_endpoint" "$dir/metrics_endpoint.cc" \
      $(pkg-config --cflags --libs grpc_resilience_metrics_http) >> "$dir/log" 2>&1 || pc_ok=0
  else
    log "consumer (pkg-config): no grpc_resilience_metrics_http.pc (built without RESILIENCE_METRICS_HTTP)"
  fi
  [ "$pc_ok" -eq 1 ] || cat "$dir/log" >&2
fi
build_time="$(since "$t0")"
t0="$(now)"
if [ "$pc_ok" -eq 1 ]; then
  for program in "${consumer_programs[@]}" metrics_endpoint; do
    [ -x "$dir/$program" ] || continue
    timeout 120 "$dir/$program" || { log "consumer (pkg-config): $program FAILED"; pc_ok=0; }
  done
fi
if [ "$pc_ok" -eq 1 ]; then
  timings+=("consumer pkg-config: build $build_time s, run $(since "$t0") s")
else
  log "consumer (pkg-config): FAILED"
  timings+=("consumer pkg-config: FAILED")
  status=1
fi

log "timings"
printf '  %s\n' "${timings[@]}" >&2
if [ "$status" -eq 0 ]; then
  log "consumer: every way run builds and passes (${CONSUMER_MODES:-find_package subdirectory fetchcontent} pkg-config)"
else
  log "consumer: FAILED"
fi
exit "$status"

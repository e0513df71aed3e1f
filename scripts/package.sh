#!/usr/bin/env bash
# Builds the Debian package and checks it as a user would use it: the shared
# library (BUILD_SHARED_LIBS=ON, Release, the libraries only) in
# build-package/, `cpack -G DEB` making build-package/grpc-resilience-dev_<version>_<arch>.deb,
# its dynamic symbols against the public headers
# (scripts/check_exported_symbols.sh), then `apt-get install ./<the .deb>`,
# tests/consumer built against it with find_package(grpc_resilience 0.3) from
# /usr (build-package-consumer/) and run, and a program built with the
# installed pkg-config files alone.
#
#   scripts/package.sh            build, check, install, consume, uninstall
#   scripts/package.sh --build    only build the .deb and check its symbols
#
# The package is removed again at the end when it was not installed before
# (PACKAGE_KEEP_INSTALLED=1 keeps it). Prints the timings; exits non-zero on
# any failure. PACKAGE_JOBS (default: the cores) is the build parallelism;
# ccache is used when present (scripts/common.sh).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

jobs="${PACKAGE_JOBS:-$JOBS}"
build_only=0
if [ "${1:-}" = "--build" ]; then build_only=1; fi
ensure_packages cmake ninja-build g++ pkg-config dpkg-dev libgrpc++-dev protobuf-compiler-grpc \
  libprotobuf-dev protobuf-compiler libabsl-dev libhiredis-dev prometheus-cpp-dev

build="$REPO_ROOT/build-package"
consumer="$REPO_ROOT/build-package-consumer"
timings=()
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

# 1. The shared libraries and the .deb.
t0="$(now)"
if [ ! -f "$build/build.ninja" ]; then
  log "configuring $build"
  mkdir -p "$build"
  # shellcheck disable=SC2086  # RESILIENCE_CMAKE_ARGS is a list, as in common.sh
  cmake -S "$REPO_ROOT" -B "$build" -G Ninja ${RESILIENCE_CMAKE_ARGS:-} \
    ${compiler_launcher[@]+"${compiler_launcher[@]}"} \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX=/usr \
    -DRESILIENCE_BUILD_TESTS=OFF -DRESILIENCE_BUILD_BENCH=OFF \
    -DRESILIENCE_BUILD_EXAMPLES=OFF -DRESILIENCE_INSTALL=ON > "$build/configure.log" 2>&1 ||
    { cat "$build/configure.log" >&2; exit 1; }
fi
log "building the shared libraries in $build"
cmake --build "$build" -j "$jobs"
rm -f "$build"/*.deb
log "making the .deb"
(cd "$build" && cpack -G DEB > "$build/cpack.log" 2>&1) || { cat "$build/cpack.log" >&2; exit 1; }
deb="$(find "$build" -maxdepth 1 -name 'grpc-resilience-dev_*.deb' | head -n 1)"
[ -n "$deb" ] || { log "cpack made no grpc-resilience-dev_*.deb"; exit 1; }
timings+=("shared library build and .deb: $(since "$t0") s")
log "$(basename "$deb"): $(dpkg-deb -f "$deb" Depends)"

status=0
# The SONAME carries the minor version: 0.x minors may break the ABI.
version="$(dpkg-deb -f "$deb" Version)"
soname="$(readelf -d "$build/libgrpc_resilience.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')"
expected_soname="libgrpc_resilience.so.$(cut -d. -f1,2 <<<"$version")"
if [ "$soname" != "$expected_soname" ]; then
  log "libgrpc_resilience.so's SONAME is '$soname', not $expected_soname"
  status=1
fi
# The exact libgrpc++ the library was built against.
grpc_version="$(dpkg-query -W -f='${Version}' libgrpc++-dev)"
if ! dpkg-deb -f "$deb" Depends | grep -qF "libgrpc++1.51 (= $grpc_version)"; then
  log "$(basename "$deb") does not depend on libgrpc++1.51 (= $grpc_version)"
  status=1
fi
t0="$(now)"
if bash "$REPO_ROOT/scripts/check_exported_symbols.sh" "$build"; then
  timings+=("exported symbols: $(since "$t0") s")
else
  timings+=("exported symbols: FAILED")
  status=1
fi
if [ "$build_only" -eq 1 ]; then
  log "timings"; printf '  %s\n' "${timings[@]}" >&2
  exit "$status"
fi

# 2. Installed with apt-get, as a user does (it pulls the dependencies).
installed_before=0
if dpkg-query -W -f='${Status}' grpc-resilience-dev 2>/dev/null | grep -q "install ok installed"; then
  installed_before=1
fi
uninstall() {
  if [ "$installed_before" -eq 0 ] && [ "${PACKAGE_KEEP_INSTALLED:-0}" != "1" ]; then
    log "removing grpc-resilience-dev again"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get purge -y -qq grpc-resilience-dev > /dev/null || true
  fi
}
trap uninstall EXIT
t0="$(now)"
log "apt-get install $deb"
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
  --allow-downgrades "$deb" > "$build/apt.log" 2>&1 || { cat "$build/apt.log" >&2; exit 1; }
timings+=("apt-get install: $(since "$t0") s")
libdir="$(dirname "$(dpkg -L grpc-resilience-dev | grep '/libgrpc_resilience\.so\.[0-9.]*$' | head -n 1)")"
log "installed: $(dpkg -L grpc-resilience-dev | grep -c .) paths, the libraries in $libdir"

# 3. tests/consumer against the package, found in /usr by find_package alone.
t0="$(now)"
rm -rf "$consumer"
mkdir -p "$consumer"
programs=(inventory_check client_only_check server_only_check redis_limits_check
  prometheus_cpp_check)
if cmake -S "$REPO_ROOT/tests/consumer" -B "$consumer" -G Ninja -DCONSUME=find_package \
     -DCMAKE_BUILD_TYPE=Release ${compiler_launcher[@]+"${compiler_launcher[@]}"} \
     > "$consumer/log" 2>&1 && cmake --build "$consumer" -j "$jobs" >> "$consumer/log" 2>&1; then
  build_time="$(since "$t0")"
  grep -m1 'grpc_resilience 0\.' "$consumer/log" | sed 's/^-- /  /' >&2 || true
  t0="$(now)"
  for program in "${programs[@]}"; do
    if [ ! -x "$consumer/$program" ]; then
      log "consumer (package): $program was not built"
      status=1
      continue
    fi
    # Linked to the installed shared library, and no static library of ours.
    # (/lib is /usr/lib on Debian 12: compared as real paths.)
    loaded="$(ldd "$consumer/$program" | sed -n "s/^[[:space:]]*$soname => \([^ ]*\) .*/\1/p")"
    if [ -z "$loaded" ] || [ "$(readlink -f "$loaded")" != "$(readlink -f "$libdir/$soname")" ]; then
      log "consumer (package): $program does not load $libdir/$soname (ldd: '${loaded:-none}')"
      status=1
    fi
    if ninja -C "$consumer" -t commands "$program" | tail -n 1 | grep -q 'libgrpc_resilience_[a-z_]*\.a'; then
      log "consumer (package): $program links a static library of ours"
      status=1
    fi
    log "consumer (package): running $program"
    timeout 120 "$consumer/$program" || { log "consumer (package): $program FAILED"; status=1; }
  done
  timings+=("consumer against the package: build $build_time s, run $(since "$t0") s")
else
  cat "$consumer/log" >&2
  log "consumer (package): build FAILED"
  timings+=("consumer against the package: build FAILED")
  status=1
fi

# 4. The installed pkg-config files: client_only_check with
#    grpc_resilience_client's flags alone.
t0="$(now)"
pc_dir="$consumer/pkg-config"
mkdir -p "$pc_dir"
if protoc -I "$REPO_ROOT/tests/consumer" --cpp_out="$pc_dir" --grpc_out="$pc_dir" \
     --plugin=protoc-gen-grpc="$(command -v grpc_cpp_plugin)" \
     "$REPO_ROOT/tests/consumer/shop/v1/inventory.proto" &&
   # shellcheck disable=SC2046  # pkg-config's output is a list of flags
   g++ -std=c++17 -O1 -o "$pc_dir/client_only_check" -I "$pc_dir" \
     "$REPO_ROOT/tests/consumer/client_only_check.cc" \
     "$pc_dir/shop/v1/inventory.pb.cc" "$pc_dir/shop/v1/inventory.grpc.pb.cc" \
     $(pkg-config --cflags --libs grpc_resilience_client) > "$pc_dir/log" 2>&1 &&
   timeout 120 "$pc_dir/client_only_check"; then
  timings+=("pkg-config client_only_check: $(since "$t0") s")
else
  cat "$pc_dir/log" >&2 || true
  log "consumer (package, pkg-config): FAILED"
  timings+=("pkg-config client_only_check: FAILED")
  status=1
fi

log "timings"
printf '  %s\n' "${timings[@]}" >&2
if [ "$status" -eq 0 ]; then
  log "package: $(basename "$deb") installs, exports the public API only, and the consumer builds and runs against it"
else
  log "package: FAILED"
fi
exit "$status"

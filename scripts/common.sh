# Shared by scripts/demo.sh and scripts/test.sh: install what is missing,
# configure and build. Sourced, not run.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="$(nproc 2>/dev/null || echo 2)"

# Debian 12 packages the build needs (gRPC 1.51, protobuf 3.21, Abseil 20220623,
# GoogleTest 1.12, Google Benchmark), and the tests' tools (doxygen: the API
# reference, scripts/api_reference.sh).
REQUIRED_PACKAGES=(
  cmake ninja-build g++ pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  python3-grpcio nginx
  prometheus prometheus-cpp-dev
  libhiredis-dev redis-server
  chromium
  doxygen
)

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

ensure_packages() {
  local missing=()
  local pkg
  for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then return 0; fi
  log "installing missing packages: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  # nginx and prometheus come with daemons; the tests start their own on free
  # ports, so keep the packages' from starting (Debian's policy-rc.d hook).
  local guard=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    guard=1
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
    $sudo chmod +x /usr/sbin/policy-rc.d
  fi
  local status=0
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" || status=$?
  if [ -n "$guard" ]; then $sudo rm -f /usr/sbin/policy-rc.d; fi
  return "$status"
}

# ccache, when installed (it is not required): a machine that builds the
# project again (a developer's, or CI on the machine a session used) compiles
# only what changed, across build folders and checkouts. Paths are hashed
# relative to the checkout (CCACHE_BASEDIR) and not the build folder
# (CCACHE_NOHASHDIR), so another clone in another folder hits the same
# entries; a clean machine without ccache builds exactly as before
# (docs/ci-time.md). RESILIENCE_NO_CCACHE=1 turns it off.
compiler_launcher=()
if [ "${RESILIENCE_NO_CCACHE:-0}" != "1" ] && command -v ccache >/dev/null 2>&1; then
  compiler_launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$REPO_ROOT}"
  export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
fi

# configure_and_build BUILD_DIR [TARGET] [-- CMAKE_ARGS...]
# Configures once (re-runs are incremental) and builds TARGET (default: all).
configure_and_build() {
  local build_dir="$1"; shift
  local target="all"
  if [ $# -gt 0 ] && [ "$1" != "--" ]; then target="$1"; shift; fi
  if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi
  if [ ! -f "$build_dir/build.ninja" ]; then
    log "configuring $build_dir"
    # shellcheck disable=SC2086  # RESILIENCE_CMAKE_ARGS is a list
    cmake -S "$REPO_ROOT" -B "$build_dir" -G Ninja ${RESILIENCE_CMAKE_ARGS:-} \
      ${compiler_launcher[@]+"${compiler_launcher[@]}"} "$@"
  fi
  log "building $target in $build_dir"
  cmake --build "$build_dir" --target "$target" -j "$JOBS"
}

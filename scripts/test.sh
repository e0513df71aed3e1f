#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine (as root: installs missing
# packages), builds, and runs the test suite with ctest.
#
#   scripts/test.sh          all tests, normal build in build/
#   scripts/test.sh --asan   all tests, AddressSanitizer + UBSan build in build-asan/
#   scripts/test.sh --tsan   the tests of our own concurrent code ("core" label),
#                            ThreadSanitizer build in build-tsan/ (see README:
#                            Debian's gRPC is not built with TSAN)
#   Extra arguments after the mode go to ctest (e.g. -R Breaker).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

mode="normal"
case "${1:-}" in
  --asan) mode="asan"; shift ;;
  --tsan) mode="tsan"; shift ;;
  --normal) shift ;;
esac

ensure_packages "${REQUIRED_PACKAGES[@]}"

case "$mode" in
  normal)
    build_dir="$REPO_ROOT/build"
    configure_and_build "$build_dir" all
    labels=()
    ;;
  asan)
    build_dir="$REPO_ROOT/build-asan"
    configure_and_build "$build_dir" all -- -DCMAKE_BUILD_TYPE=Debug \
      -DRESILIENCE_SANITIZE=address,undefined -DRESILIENCE_BUILD_BENCH=OFF
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
    export LSAN_OPTIONS="suppressions=$REPO_ROOT/tests/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    labels=()
    ;;
  tsan)
    build_dir="$REPO_ROOT/build-tsan"
    configure_and_build "$build_dir" grpc_resilience_core_tests -- -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DRESILIENCE_SANITIZE=thread -DRESILIENCE_BUILD_BENCH=OFF
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
    labels=(-L core)
    ;;
esac

log "running tests ($mode)"
cd "$build_dir"
ctest --output-on-failure -j "$JOBS" "${labels[@]}" "$@"

#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine (as root: installs missing
# packages), builds, and runs the test suite with ctest.
#
#   scripts/test.sh          all tests, normal build in build/
#   scripts/test.sh --asan   all tests, AddressSanitizer + UBSan build in build-asan/
#   scripts/test.sh --tsan   the tests of our own concurrent code ("core" label),
#                            ThreadSanitizer build in build-tsan/ (see docs/development.md:
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

# RESILIENCE_CI=1 (.ci/run: a clean machine that builds each folder once and
# debugs nothing in place) cuts debug info, the largest part of compiling
# after the code itself (hedging_test.cc, -O2: 30.9 s of CPU with -g,
# 23.7 s without): the normal build gets none, the sanitizer builds line
# tables only (-g1: their reports still name function, file and line).
# Same code, same tests; only what a debugger could show is gone.
normal_flags=()
asan_flags=()
tsan_flags=()
# The test programs' own files are compiled without optimisation there
# (breaker_control_test.cc: 16.5 CPU-s at -O2, 12.9 at -O0); the library and
# the programs the tests run keep -O2.
if [ "${RESILIENCE_CI:-0}" = "1" ]; then
  normal_flags=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" "-DRESILIENCE_TEST_COMPILE_OPTIONS=-O0")
  asan_flags=("-DCMAKE_CXX_FLAGS_DEBUG=-g1")
  tsan_flags=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
fi

case "$mode" in
  normal)
    build_dir="$REPO_ROOT/build"
    configure_and_build "$build_dir" all -- ${normal_flags[@]+"${normal_flags[@]}"}
    labels=()
    ;;
  asan)
    build_dir="$REPO_ROOT/build-asan"
    configure_and_build "$build_dir" all -- -DCMAKE_BUILD_TYPE=Debug \
      -DRESILIENCE_SANITIZE=address,undefined -DRESILIENCE_BUILD_BENCH=OFF \
      ${asan_flags[@]+"${asan_flags[@]}"}
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
    export LSAN_OPTIONS="suppressions=$REPO_ROOT/tests/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    labels=()
    ;;
  tsan)
    build_dir="$REPO_ROOT/build-tsan"
    configure_and_build "$build_dir" grpc_resilience_core_tests -- -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DRESILIENCE_SANITIZE=thread -DRESILIENCE_BUILD_BENCH=OFF \
      ${tsan_flags[@]+"${tsan_flags[@]}"}
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
    labels=(-L core)
    ;;
esac

log "running tests ($mode)"
cd "$build_dir"
output="$build_dir/Testing/ctest-output.txt"
mkdir -p "$build_dir/Testing"
# No earlier run's failures may be taken for this one's.
rm -f "$build_dir/flaky-tests.txt" "$build_dir/Testing/Temporary/LastTestsFailed.log"
status=0
ctest --output-on-failure -j "$JOBS" ${labels[@]+"${labels[@]}"} "$@" 2>&1 | tee "$output" ||
  status=${PIPESTATUS[0]}
# A test that runs real gRPC on the wall clock and fails on an assertion is
# run once more, alone; if it passes then, the run passes and the test is
# named as flaky, here and in flaky-tests.txt: a timing assumption to fix.
# Tests on simulated time, crashes, hangs and sanitizer reports get no second
# run (scripts/real_time_failures.py says why).
if [ "$status" -ne 0 ]; then
  if rerun=$(python3 "$REPO_ROOT/scripts/real_time_failures.py" "$build_dir" "$output"); then
    log "running the real-time tests that failed once more, alone:"
    sed 's/^/  /' <<<"$rerun" >&2
    if ctest --output-on-failure -j 1 --rerun-failed; then
      printf '%s\n' "$rerun" > "$build_dir/flaky-tests.txt"
      log "FLAKY: these failed, then passed alone (listed in $build_dir/flaky-tests.txt):"
      sed 's/^/  /' <<<"$rerun" >&2
      status=0
    fi
  else
    printf '%s\n' "$rerun" >&2
  fi
fi
exit "$status"

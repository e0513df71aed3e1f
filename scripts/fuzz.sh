#!/usr/bin/env bash
# Builds the policy loader's libFuzzer target with clang (ASan + UBSan +
# libFuzzer, in build-fuzz/) and runs it for a while on the seed corpus.
#
#   scripts/fuzz.sh [SECONDS]      default 60
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
seconds="${1:-60}"
ensure_packages "${REQUIRED_PACKAGES[@]}" clang-14 libclang-rt-14-dev
# RESILIENCE_CI=1 (.ci/run): line tables only, as in scripts/test.sh's
# sanitizer builds (a crash report still names function, file and line).
ci_flags=()
if [ "${RESILIENCE_CI:-0}" = "1" ]; then
  ci_flags=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
fi
CC=clang-14 CXX=clang++-14 configure_and_build "$REPO_ROOT/build-fuzz" grpc_resilience_policy_fuzzer -- \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRESILIENCE_SANITIZE=address,undefined \
  -DRESILIENCE_BUILD_FUZZERS=ON -DRESILIENCE_BUILD_BENCH=OFF ${ci_flags[@]+"${ci_flags[@]}"}
corpus="$(mktemp -d)"
cp "$REPO_ROOT"/tests/policy/fuzz_corpus/* "$corpus"/
log "fuzzing the policy loader for ${seconds}s"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export LSAN_OPTIONS="suppressions=$REPO_ROOT/tests/lsan.supp:print_suppressions=0"
"$REPO_ROOT/build-fuzz/tests/policy_fuzzer" -max_total_time="$seconds" -max_len=8192 \
  -timeout=10 -rss_limit_mb=2048 -dict="$REPO_ROOT/tests/policy/fuzz.dict" "$corpus"
rm -rf "$corpus"

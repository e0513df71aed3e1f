#!/usr/bin/env bash
# Compiles our own locking code with clang's -Wthread-safety -Werror, so that
# every ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED annotation is checked.
# (gcc ignores the annotations.)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ensure_packages clang-14 libabsl-dev libgrpc++-dev libhiredis-dev
# Generated headers some sources include (the policy's in build/proto, the cache
# example's in build/examples/proto).
configure_and_build "$REPO_ROOT/build" grpc_resilience_policy_proto
configure_and_build "$REPO_ROOT/build" grpc_resilience_cache_proto
cd "$REPO_ROOT"
# One clang per core ($JOBS at once; it was one file at a time, ~80 files):
# xargs exits non-zero if any file fails, and each failure prints its own
# diagnostics.
status=0
printf '%s\0' src/*/*.cc examples/cache_service/cache_store.cc \
    examples/cache_service/bounded_capacity_service.cc experiments/overload/grpc_run.cc \
    experiments/overload/criticality_mix_grpc.cc experiments/overload/tenant_mix_grpc.cc \
    experiments/overload/deadline_mix_grpc.cc \
    experiments/goodput/scheduled_faults.cc |
  xargs -0 -n 1 -P "$JOBS" clang++-14 -std=c++17 -fsyntax-only -Wthread-safety -Werror \
    -I. -I build/include -I include -I build/proto -I build/examples/proto || status=1
[ "$status" -eq 0 ] && log "thread-safety analysis: clean"
exit "$status"

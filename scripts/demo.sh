#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine (as root: installs missing
# packages), builds into build/, and runs the cache service demo.
#
#   scripts/demo.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ensure_packages "${REQUIRED_PACKAGES[@]}"
configure_and_build "$REPO_ROOT/build" grpc_resilience_cache_demo
log "running cache_demo"
exec "$REPO_ROOT/build/examples/cache_service/cache_demo"

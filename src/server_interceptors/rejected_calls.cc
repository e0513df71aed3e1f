#include "src/server_interceptors/rejected_calls.h"

#include <cstdint>

namespace resilience {

RejectedCalls::Shard& RejectedCalls::ShardOf(const void* call) const {
  // Contexts are heap objects: the low bits carry no information.
  const uintptr_t bits = reinterpret_cast<uintptr_t>(call);
  return shards_[(bits >> 6 ^ bits >> 12) % shards_.size()];
}

void RejectedCalls::Add(const void* call) {
  Shard& shard = ShardOf(call);
  MutexLock lock(&shard.mu);
  if (shard.calls.insert(call).second) size_.fetch_add(1, std::memory_order_release);
}

bool RejectedCalls::Contains(const void* call) const {
  if (size_.load(std::memory_order_acquire) == 0) return false;
  Shard& shard = ShardOf(call);
  MutexLock lock(&shard.mu);
  return shard.calls.contains(call);
}

bool RejectedCalls::Take(const void* call) {
  // An Add() of this very call happened before, on the same call's
  // interceptor path, so the acquire load sees it.
  if (size_.load(std::memory_order_acquire) == 0) return false;
  Shard& shard = ShardOf(call);
  MutexLock lock(&shard.mu);
  if (shard.calls.erase(call) == 0) return false;
  size_.fetch_sub(1, std::memory_order_release);
  return true;
}

}  // namespace resilience

// File: src/grpc_common/method_cache.h
//
// Per-method state for interceptor factories, which gRPC calls once per call
// with the method's name as a `const char*`.

#ifndef GRPC_RESILIENCE_SRC_GRPC_COMMON_METHOD_CACHE_H_
#define GRPC_RESILIENCE_SRC_GRPC_COMMON_METHOD_CACHE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "src/breaker/mutex.h"

namespace resilience {

// MethodCache
//
// Maps a method name to a `State`, made once per name by the resolver given
// to Find() (which may return null: "nothing to do for this method").
//
// Locking: the states live in a map under `mu_`. In front of it, a small
// lock-free cache keyed by the *address* of the name answers most calls
// without a lock: for generated stubs and registered server methods gRPC
// passes the same address on every call. A hit is confirmed by comparing the
// names, so a reused address can never return another method's state. A
// slot is taken by the first name that lands in it, so the cache holds at
// most kSlots entries and a colliding name simply stays on the locked path.
//
// Bounded: names come from clients (unimplemented methods reach the
// interceptors too), so past kMaxNames distinct names new names get null.
// This class is thread-safe.
template <typename State>
class MethodCache {
 public:
  static constexpr size_t kSlots = 64;
  static constexpr size_t kMaxNames = 4096;

  // Find()
  //
  // The state of `method`; `resolve(method)` makes it (a
  // std::unique_ptr<State>, possibly null) the first time.
  template <typename Resolve>
  State* Find(const char* method, Resolve&& resolve) ABSL_LOCKS_EXCLUDED(mu_) {
    const size_t slot = (reinterpret_cast<uintptr_t>(method) >> 3) % kSlots;
    const Entry* entry = slots_[slot].load(std::memory_order_acquire);
    if (entry != nullptr && entry->key == method && entry->name == method) return entry->state;
    MutexLock lock(&mu_);
    State* state = nullptr;
    auto it = states_.find(method);
    if (it != states_.end()) {
      state = it->second.get();
    } else if (states_.size() < kMaxNames) {
      std::unique_ptr<State> made = resolve(method);
      state = made.get();
      states_.emplace(method, std::move(made));  // null too: resolved once
    }
    if (entry == nullptr && slots_[slot].load(std::memory_order_relaxed) == nullptr) {
      entries_.push_back(std::make_unique<Entry>(Entry{method, method, state}));
      slots_[slot].store(entries_.back().get(), std::memory_order_release);
    }
    return state;
  }

  // Get()
  //
  // The state of `method` if it was made, else null. Takes the lock.
  State* Get(const std::string& method) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    auto it = states_.find(method);
    return it == states_.end() ? nullptr : it->second.get();
  }

 private:
  struct Entry {
    const char* key;   // the address gRPC passed
    std::string name;  // its text, to confirm a hit
    State* state;
  };

  std::array<std::atomic<const Entry*>, kSlots> slots_{};
  Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<State>> states_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_GRPC_COMMON_METHOD_CACHE_H_

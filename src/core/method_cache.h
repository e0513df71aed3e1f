// File: src/core/method_cache.h
//
// Per-method state for interceptor factories, which gRPC calls once per call
// with the method's name as a `const char*`.

#ifndef GRPC_RESILIENCE_SRC_CORE_METHOD_CACHE_H_
#define GRPC_RESILIENCE_SRC_CORE_METHOD_CACHE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "src/core/mutex.h"

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
// Bounded where it must be: on a server, names come from clients
// (unimplemented methods reach the interceptors too), so names the resolver
// does not vouch for count against kMaxUnvouchedNames, past which new ones
// get null without being kept. Names it vouches for (a method the policy
// names exactly, or one linked into the process) are always kept, however
// many there are: each configured method gets its policy.
// This class is thread-safe.
template <typename State>
class MethodCache {
 public:
  static constexpr size_t kSlots = 64;
  static constexpr size_t kMaxUnvouchedNames = 4096;

  // What a resolver returns for a name.
  struct Resolution {
    std::unique_ptr<State> state;  // null: nothing to do for this method
    // The name is known to the program (not made up by a peer): kept even
    // past kMaxUnvouchedNames.
    bool vouched = false;
  };

  // Find()
  //
  // The state of `method`; `resolve(method)` makes it (a Resolution) the
  // first time.
  template <typename Resolve>
  State* Find(const char* method, Resolve&& resolve) ABSL_LOCKS_EXCLUDED(mu_) {
    const size_t slot = (reinterpret_cast<uintptr_t>(method) >> 3) % kSlots;
    const Entry* entry = slots_[slot].load(std::memory_order_acquire);
    if (entry != nullptr && entry->key == method && entry->name == method) return entry->state;
    MutexLock lock(&mu_);
    State* const state = FindLocked(method, resolve);
    if (entry == nullptr && slots_[slot].load(std::memory_order_relaxed) == nullptr) {
      entries_.push_back(std::make_unique<Entry>(Entry{method, method, state}));
      slots_[slot].store(entries_.back().get(), std::memory_order_release);
    }
    return state;
  }

  // FindByName()
  //
  // Find() for a name that does not come from gRPC (e.g. an operator's): the
  // lock-free cache is left to gRPC's addresses. The name is copied.
  template <typename Resolve>
  State* FindByName(absl::string_view method, Resolve&& resolve) ABSL_LOCKS_EXCLUDED(mu_) {
    const std::string name(method);
    MutexLock lock(&mu_);
    return FindLocked(name.c_str(), resolve);
  }

  // Get()
  //
  // The state of `method` if it was made, else null. Takes the lock.
  State* Get(absl::string_view method) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    auto it = states_.find(method);
    return it == states_.end() ? nullptr : it->second.get();
  }

  // States()
  //
  // Every state made so far (not the names resolved to null), in no
  // particular order. Takes the lock. A state lives as long as the cache, so
  // the pointers stay valid after the lock is released.
  std::vector<State*> States() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    std::vector<State*> states;
    states.reserve(states_.size());
    for (const auto& [name, state] : states_) {
      if (state != nullptr) states.push_back(state.get());
    }
    return states;
  }

 private:
  // The state of `method` under the lock, resolved and kept the first time
  // (a null state too: resolved once), within kMaxUnvouchedNames.
  template <typename Resolve>
  State* FindLocked(const char* method, Resolve& resolve) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = states_.find(method);
    if (it != states_.end()) return it->second.get();
    Resolution made = resolve(method);
    if (!made.vouched && unvouched_ >= kMaxUnvouchedNames) return nullptr;
    if (!made.vouched) ++unvouched_;
    State* const state = made.state.get();
    states_.emplace(method, std::move(made.state));
    return state;
  }

  struct Entry {
    const char* key;   // the address gRPC passed
    std::string name;  // its text, to confirm a hit
    State* state;
  };

  std::array<std::atomic<const Entry*>, kSlots> slots_{};
  Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<State>> states_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  size_t unvouched_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CORE_METHOD_CACHE_H_

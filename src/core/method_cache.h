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
// to Find() (which may return null: "nothing to do for this method"), and
// replaced whole by Replace() (a policy update).
//
// A call holds the state it found (a shared_ptr) until it ends: a state
// replaced while calls use it lives on until the last of them is done, and
// each call sees one state from start to end, never half of two.
//
// Locking: each name has a Holder (made once, never freed before the
// cache) whose `current` state is swapped under the holder's own short lock
// (a pointer copy; never held across anything else). The holders live in a
// map under `mu_`. In front of it, a small cache keyed by the *address* of
// the name answers most calls without `mu_`: for generated stubs and
// registered server methods gRPC passes the same address on every call. A
// hit is confirmed by comparing the names, so a reused address can never
// return another method's state. A slot is taken by the first name that
// lands in it, so the cache holds at most kSlots entries and a colliding
// name simply stays on the locked path.
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
    std::shared_ptr<State> state;  // null: nothing to do for this method
    // The name is known to the program (not made up by a peer): kept even
    // past kMaxUnvouchedNames.
    bool vouched = false;
  };

  // Find()
  //
  // The state of `method`; `resolve(method)` makes it (a Resolution) the
  // first time.
  template <typename Resolve>
  std::shared_ptr<State> Find(const char* method, Resolve&& resolve) ABSL_LOCKS_EXCLUDED(mu_) {
    const size_t slot = (reinterpret_cast<uintptr_t>(method) >> 3) % kSlots;
    const Entry* entry = slots_[slot].load(std::memory_order_acquire);
    if (entry != nullptr && entry->key == method && entry->name == method) {
      return entry->holder->Current();
    }
    MutexLock lock(&mu_);
    Holder* const holder = FindLocked(method, resolve);
    if (holder != nullptr && entry == nullptr &&
        slots_[slot].load(std::memory_order_relaxed) == nullptr) {
      entries_.push_back(std::make_unique<Entry>(Entry{method, method, holder}));
      slots_[slot].store(entries_.back().get(), std::memory_order_release);
    }
    return holder == nullptr ? nullptr : holder->Current();
  }

  // FindByName()
  //
  // Find() for a name that does not come from gRPC (e.g. an operator's): the
  // lock-free cache is left to gRPC's addresses. The name is copied.
  template <typename Resolve>
  std::shared_ptr<State> FindByName(absl::string_view method, Resolve&& resolve)
      ABSL_LOCKS_EXCLUDED(mu_) {
    const std::string name(method);
    MutexLock lock(&mu_);
    Holder* const holder = FindLocked(name.c_str(), resolve);
    return holder == nullptr ? nullptr : holder->Current();
  }

  // Get()
  //
  // The state of `method` if it was made, else null. Takes the lock.
  std::shared_ptr<State> Get(absl::string_view method) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    auto it = holders_.find(method);
    return it == holders_.end() ? nullptr : it->second->Current();
  }

  // States()
  //
  // Every state there is now (not the names resolved to null), in no
  // particular order. Takes the lock.
  std::vector<std::shared_ptr<State>> States() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    std::vector<std::shared_ptr<State>> states;
    states.reserve(holders_.size());
    for (const auto& [name, holder] : holders_) {
      std::shared_ptr<State> state = holder->Current();
      if (state != nullptr) states.push_back(std::move(state));
    }
    return states;
  }

  // Replace()
  //
  // Gives every name resolved so far the state `rebuild(name, current)`
  // returns (`current` may be null; returning `current` keeps it whole), one
  // name after the other, under the lock, so that no name is resolved
  // meanwhile. Calls that found the old state keep it until they end; calls
  // after the swap find the new one. `rebuild` must not call the cache.
  template <typename Rebuild>
  void Replace(Rebuild&& rebuild) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    for (auto& [name, holder] : holders_) {
      holder->Set(rebuild(name, holder->Current()));
    }
  }

 private:
  // The current state of one name; swapped whole by Replace().
  class Holder {
   public:
    explicit Holder(std::shared_ptr<State> state) : current_(std::move(state)) {}
    std::shared_ptr<State> Current() ABSL_LOCKS_EXCLUDED(mu_) {
      MutexLock lock(&mu_);
      return current_;
    }
    void Set(std::shared_ptr<State> state) ABSL_LOCKS_EXCLUDED(mu_) {
      // The old state is released outside the lock (its destructor may
      // run here, when no call holds it).
      {
        MutexLock lock(&mu_);
        current_.swap(state);
      }
    }

   private:
    Mutex mu_;
    std::shared_ptr<State> current_ ABSL_GUARDED_BY(mu_);
  };

  // The holder of `method` under the lock, resolved and kept the first time
  // (a null state too: resolved once), within kMaxUnvouchedNames; null past
  // that bound.
  template <typename Resolve>
  Holder* FindLocked(const char* method, Resolve& resolve) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = holders_.find(method);
    if (it != holders_.end()) return it->second.get();
    Resolution made = resolve(method);
    if (!made.vouched && unvouched_ >= kMaxUnvouchedNames) return nullptr;
    if (!made.vouched) ++unvouched_;
    auto holder = std::make_unique<Holder>(std::move(made.state));
    Holder* const raw = holder.get();
    holders_.emplace(method, std::move(holder));
    return raw;
  }

  struct Entry {
    const char* key;   // the address gRPC passed
    std::string name;  // its text, to confirm a hit
    Holder* holder;
  };

  std::array<std::atomic<const Entry*>, kSlots> slots_{};
  Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<Holder>> holders_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  size_t unvouched_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CORE_METHOD_CACHE_H_

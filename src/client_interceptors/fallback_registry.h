// File: src/client_interceptors/fallback_registry.h
//
// The fallbacks registered from code (grpc_resilience/fallback.h) for the
// methods of one channel.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_FALLBACK_REGISTRY_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_FALLBACK_REGISTRY_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "grpc_resilience/fallback.h"
#include "src/core/mutex.h"

namespace resilience {

// FallbackRegistry
//
// Method -> its fallback and options. Set() replaces; a null fallback
// removes. Find() is asked only when a call ended without success (or was
// refused), never on a call's way out, so a lock is cheap enough; `empty()`
// spares even that while no fallback is registered. Thread-safe.
class FallbackRegistry {
 public:
  struct Entry {
    Fallback fallback;
    FallbackOptions options;
  };

  void Set(absl::string_view method, Fallback fallback, FallbackOptions options)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Null when `method` has none registered.
  std::shared_ptr<const Entry> Find(absl::string_view method) const ABSL_LOCKS_EXCLUDED(mu_);
  bool empty() const { return size_.load(std::memory_order_acquire) == 0; }

 private:
  mutable Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const Entry>> entries_ ABSL_GUARDED_BY(mu_);
  std::atomic<size_t> size_{0};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_FALLBACK_REGISTRY_H_

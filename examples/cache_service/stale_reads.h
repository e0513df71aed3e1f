// File: examples/cache_service/stale_reads.h
//
// The cache client's small copy of the values it last stored or read, and
// the fallback that answers a Get from it when the client chain refuses the
// call (breaker, retry budget) or it fails after its retries.

#ifndef GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_STALE_READS_H_
#define GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_STALE_READS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "cache/v1/cache.grpc.pb.h"
#include "examples/common/mutex.h"
#include "grpc_resilience/client_resilience.h"
#include "grpc_resilience/fallback.h"

namespace cache_service {

// StaleReads
//
// At most `capacity` keys, the least recently used dropped first. Install()
// registers the fallback of /cache.v1.CacheService/Get on a channel: a Get
// of a key in the copy answers its value with OK (a stale read), a miss
// keeps the call's failure. Remember() is the caller's: after a Store or a
// fresh Get that succeeded (StoreRemembering(), GetRemembering()).
// Thread-safe.
class StaleReads {
 public:
  explicit StaleReads(size_t capacity = 1024) : capacity_(capacity) {}

  absl::Status Install(resilience::ClientResilience& resilience,
                       resilience::FallbackOptions options = {});

  void Remember(const std::string& key, const std::string& value) ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<std::string> Find(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);

  // Gets the fallback answered from the copy, and those it could not.
  int64_t served() const { return served_.load(); }
  int64_t misses() const { return misses_.load(); }

 private:
  const size_t capacity_;
  example_sync::Mutex mu_;
  // Most recently used first.
  std::list<std::pair<std::string, std::string>> entries_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::list<std::pair<std::string, std::string>>::iterator>
      index_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> served_{0};
  std::atomic<int64_t> misses_{0};
};

// A Store that the copy remembers when it succeeds.
grpc::Status StoreRemembering(cache::v1::CacheService::StubInterface& stub, StaleReads& copy,
                              const std::string& key, const std::string& value,
                              absl::Duration timeout);
// A Get whose fresh answer the copy remembers; `*stale` says whether the
// fallback answered it instead (FellBack()).
grpc::Status GetRemembering(cache::v1::CacheService::StubInterface& stub, StaleReads& copy,
                            const std::string& key, std::string* value, bool* stale,
                            absl::Duration timeout);

}  // namespace cache_service

#endif  // GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_STALE_READS_H_

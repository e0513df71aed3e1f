// File: examples/cache_service/cache_store.h
//
// The storage behind the example cache service: an in-memory, thread-safe,
// bounded key/value map with least-recently-used eviction. It knows nothing
// about gRPC; errors are absl::Status and the service maps them to gRPC codes.

#ifndef GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_CACHE_STORE_H_
#define GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_CACHE_STORE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "examples/common/mutex.h"

namespace cache_service {

// CacheStore
//
// A bounded LRU map from byte-string keys to byte-string values.
//
// Bounds: at most `max_entries` entries and at most `max_total_bytes` of keys
// plus values; storing past either evicts least-recently-used entries (a Get
// or a Store makes an entry most recently used). A single value larger than
// `max_value_bytes` is refused, never truncated.
//
// Keys are any non-empty byte strings (not necessarily UTF-8); the order is
// that of their bytes, compared as unsigned chars (std::string's order).
//
// Locking: one mutex guards the map and the LRU list. EntriesAfter() copies
// one bounded run of entries while holding it, never the whole store, so a
// caller that walks the store (the service's Dump) holds no lock between
// runs and keeps only one run in memory. This class is thread-safe.
class CacheStore {
 public:
  struct Options {
    // Most entries kept before the least recently used is evicted. > 0.
    // Defaults to 100000.
    size_t max_entries = 100000;
    // Largest value accepted, in bytes. Defaults to 1 MiB.
    size_t max_value_bytes = 1 << 20;
    // Most bytes (keys + values) kept before evicting. Must be at least
    // max_value_bytes. Defaults to 256 MiB.
    size_t max_total_bytes = size_t{256} << 20;
  };

  struct Stats {
    size_t entries = 0;
    size_t total_bytes = 0;
    uint64_t evictions = 0;
  };

  // Validate()
  //
  // OK, or InvalidArgument naming the bad field and its value.
  static absl::Status Validate(const Options& options);

  // Options must pass Validate(); the constructor assumes they do.
  explicit CacheStore(const Options& options);

  CacheStore(const CacheStore&) = delete;
  CacheStore& operator=(const CacheStore&) = delete;

  // Get()
  //
  // The value of `key`; NotFound naming the key; InvalidArgument for an empty
  // key.
  absl::StatusOr<std::string> Get(absl::string_view key) ABSL_LOCKS_EXCLUDED(mu_);

  // Store()
  //
  // Inserts or replaces `key`. InvalidArgument for an empty key or for a value
  // over max_value_bytes (the message names the size and the limit).
  absl::Status Store(absl::string_view key, std::string value)
      ABSL_LOCKS_EXCLUDED(mu_);

  // EntriesAfter()
  //
  // A copy of the entries whose keys sort after `after`, in key order: as
  // many as fit in `max_entries` entries and `max_bytes` bytes of keys plus
  // values, but at least one if any is left, however large it is. Empty once
  // no key sorts after `after`. Since keys are never empty, `after` = ""
  // starts at the first key; `after` need not be a stored key. Does not change
  // the LRU order.
  //
  // Walking the store, each call resuming after the last key it returned,
  // gives a cursor over the keys. Each run is copied under the lock, so it is
  // consistent in itself, but the store may change between runs: every key
  // present for the whole walk is returned exactly once, with the value it
  // had when its run was copied; a key stored or evicted during the walk may
  // or may not appear; keys come in strictly increasing order, never twice.
  //
  // Example, for all entries 64 KiB at a time:
  //   std::string cursor;
  //   for (auto run = store.EntriesAfter(cursor, 1000, 64 << 10); !run.empty();
  //        run = store.EntriesAfter(cursor, 1000, 64 << 10)) {
  //     cursor = run.back().first;
  //     for (auto& [key, value] : run) { ... }
  //   }
  std::vector<std::pair<std::string, std::string>> EntriesAfter(absl::string_view after,
                                                                size_t max_entries,
                                                                size_t max_bytes) const
      ABSL_LOCKS_EXCLUDED(mu_);

  Stats GetStats() const ABSL_LOCKS_EXCLUDED(mu_);

  const Options& options() const { return options_; }

 private:
  struct Entry;
  using Map = std::map<std::string, Entry, std::less<>>;
  struct Entry {
    std::string value;
    std::list<Map::iterator>::iterator lru_position;
  };

  void Touch(Map::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EvictWhileOverBounds() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable example_sync::Mutex mu_;
  Map map_ ABSL_GUARDED_BY(mu_);
  // Most recently used at the front. std::map iterators stay valid across
  // inserts and erases of other elements, so the list can hold them.
  std::list<Map::iterator> lru_ ABSL_GUARDED_BY(mu_);
  size_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace cache_service

#endif  // GRPC_RESILIENCE_EXAMPLES_CACHE_SERVICE_CACHE_STORE_H_

// File: src/limits/per_caller_limits.h
//
// Limits per caller (a tenant id, an authenticated peer): each caller key
// gets the same concurrency and rate limit, so that one noisy caller cannot
// take a method's whole limit (docs/per-caller-limits.md).

#ifndef GRPC_RESILIENCE_SRC_LIMITS_PER_CALLER_LIMITS_H_
#define GRPC_RESILIENCE_SRC_LIMITS_PER_CALLER_LIMITS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpc_resilience/criticality_level.h"
#include "src/core/clock.h"
#include "src/core/mutex.h"
#include "src/limits/criticality_shares.h"
#include "src/limits/global_rate_limiter.h"
#include "src/limits/keyed_lease.h"
#include "src/limits/lease_queue.h"

namespace resilience {

// PerCallerLimits
//
// One bucket per caller key, each with the same limits: at most
// `max_concurrency` calls in flight and `rate_per_second` calls per second
// (GCRA, as TokenBucket, holding `burst`). The fair share of a key is its
// own bucket: a caller at ten times its share is refused beyond it while
// the others keep theirs.
//
// Memory is bounded:
//   - keys: a key of printable ASCII (0x21 to 0x7E) of at most kMaxKeyBytes
//     bytes, not starting with '#', is kept as it is; any other non-empty key
//     (longer, binary, spaces, starting with '#') is replaced by
//     HashedKey(): "#" and the 16 hex digits of its 64-bit FNV-1a hash
//     (counted: hashed()). A stored key is at most kMaxKeyBytes bytes, and a
//     stored key starting with '#' is always a hash;
//   - buckets: at most `max_keys` keys are tracked, in least-recently-used
//     order. A new key when the table is full evicts the least recently used
//     key with no call in flight (counted: evicted()), looking at most
//     kEvictionScan keys from the least recent end; when all of those have
//     calls in flight, the new key's call goes to the default bucket
//     (counted: overflowed()). Evicting a key forgets its rate: a caller
//     that comes back starts with a full bucket.
// The empty key (no header, no identity) and keys that found the table full
// share ONE default bucket, with the same limits as any key.
//
// Fleet-wide per key (`fleet`): each tracked key, and the default bucket,
// also has a bucket the fleet shares in a store (a KeyedLease, created with
// the key and dropped with it), named fleet_prefix ':' the stored key (the
// default bucket: fleet_prefix ":#default", which no stored key can be).
// All keys lease through one LeaseQueue (fleet_queue(), whose worker the
// server attaches: the one of its Redis). A key seen for the first time admits its
// local share (rate / expected_replicas) until its first lease returns; an
// evicted key's leased, unused tokens are dropped with it (at most one lease,
// MaxLease(), over-admitted per eviction).
//
// Criticality: each bucket sheds the less critical first as the other
// limits do (CriticalityShares::ConcurrencyCap(), BucketCapacity()).
// This class is thread-safe: a mutex guards the table and the admission
// decisions; a Slot gives its concurrency back with one atomic decrement.
class PerCallerLimits {
 public:
  static constexpr size_t kMaxKeyBytes = 128;
  static constexpr int64_t kMaxKeys = 1'000'000;
  static constexpr int kEvictionScan = 16;

  struct Options {
    // 0: no concurrency limit per key; else in [1, 1e6].
    int64_t max_concurrency = 0;
    // 0: no rate limit per key; else TokenBucket::Validate(rate, burst).
    double rate_per_second = 0;
    int64_t burst = 0;
    // A fleet-wide rate per key (GlobalRateLimiter::Validate() accepts it;
    // its `log` is not used: the queue logs for all keys); none: per server
    // only.
    std::optional<GlobalRateLimiter::Options> fleet;
    // The start of each key's name in the store.
    std::string fleet_prefix;
    // Keys tracked at most (the default bucket aside), in [1, kMaxKeys].
    int64_t max_keys = 1000;
  };

  // Validate()
  //
  // OK when at least one limit (concurrency, rate, fleet) is set and each is
  // in its bounds;
  // InvalidArgument naming the field and the value otherwise
  // ("max_keys: must be in [1, 1000000], got 0").
  static absl::Status Validate(const Options& options);

  // Create()
  //
  // Limits for options Validate() accepts; its error otherwise. `clock`
  // must outlive the object.
  static absl::StatusOr<std::unique_ptr<PerCallerLimits>> Create(const Options& options,
                                                                 Clock& clock);

  // StoredKey()
  //
  // The key `raw` is tracked under: `raw` itself when it is kept as it is
  // (see above), else HashedKey(raw); "" for "". `*hashed` (if given) says
  // whether it was hashed.
  static std::string StoredKey(absl::string_view raw, bool* hashed = nullptr);
  static std::string HashedKey(absl::string_view raw);

  // The state of one key (internal; a Slot holds it alive).
  struct Bucket {
    explicit Bucket(std::string k) : key(std::move(k)) {}
    const std::string key;
    std::atomic<int64_t> in_flight{0};
    std::atomic<int64_t> tat_ns{0};  // GCRA's theoretical arrival time
    // The key's fleet-wide bucket; null without Options::fleet.
    std::shared_ptr<KeyedLease> fleet;
  };

  // Slot
  //
  // The concurrency an admitted call holds in its key's bucket, given back
  // by Release() or the destructor. Move-only.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept = default;
    Slot& operator=(Slot&& other) noexcept;
    ~Slot() { Release(); }
    void Release();
    bool held() const { return bucket_ != nullptr; }

   private:
    friend class PerCallerLimits;
    explicit Slot(std::shared_ptr<Bucket> bucket) : bucket_(std::move(bucket)) {}
    std::shared_ptr<Bucket> bucket_;
  };

  // kFleetRate: the key's fleet-wide rate (its leased tokens, or its local
  // share without the store).
  enum class Verdict { kAdmitted, kConcurrency, kRate, kFleetRate };

  struct Admission {
    Verdict verdict = Verdict::kAdmitted;
    // Held when admitted with a concurrency limit.
    Slot slot;
    // A rate refusal: how long until the key's next token (fleet: until its
    // fleet bucket has one, or its local share).
    absl::Duration retry_after = absl::ZeroDuration();
    // A refused call's key (StoredKey(); "" for the default bucket),
    // printable, for its message; an admitted call's is not copied.
    std::string key;
    bool default_bucket = false;
    // The limit at the call's level (concurrency: slots; for messages).
    int64_t cap = 0;
  };

  // TryAcquire()
  //
  // Judges a call of `level` from caller `raw_key` ("" for none) in its
  // key's bucket: admitted while the key has fewer calls in flight than
  // shares.ConcurrencyCap(max_concurrency, level) and a token at the level's
  // share of the burst; then the token is taken and the slot held.
  Admission TryAcquire(absl::string_view raw_key, const CriticalityShares& shares,
                       Criticality level);

  const Options& options() const { return options_; }
  // Keys tracked now (the default bucket aside), at most max_keys.
  int64_t keys_tracked() const;
  // Counters since creation: keys evicted, keys hashed, calls sent to the
  // default bucket because the table was full, calls refused by a key's
  // concurrency or rate limit.
  int64_t evicted() const { return evicted_.load(std::memory_order_relaxed); }
  int64_t hashed() const { return hashed_.load(std::memory_order_relaxed); }
  int64_t overflowed() const { return overflowed_.load(std::memory_order_relaxed); }
  int64_t rejected_concurrency() const {
    return rejected_concurrency_.load(std::memory_order_relaxed);
  }
  int64_t rejected_rate() const { return rejected_rate_.load(std::memory_order_relaxed); }
  int64_t rejected_fleet_rate() const {
    return rejected_fleet_rate_.load(std::memory_order_relaxed);
  }

  // The queue every key's fleet bucket leases through; null without
  // Options::fleet.
  LeaseQueue* fleet_queue() { return fleet_queue_.get(); }
  // The fleet buckets' counters summed over every key ever tracked (evicted
  // keys' included) and the default bucket.
  GlobalRateLimiterStats FleetStats() const ABSL_LOCKS_EXCLUDED(mu_);
  // The store name of the key stored as `key` ("" for the default bucket).
  std::string FleetKey(absl::string_view key) const;

 private:
  PerCallerLimits(const Options& options, Clock& clock);

  // A bucket for `key` (a stored key), with its fleet bucket when there is
  // a fleet-wide limit.
  std::shared_ptr<Bucket> NewBucket(std::string key);

  // The bucket of `key` (a stored key), made (evicting if needed) when new;
  // the default bucket for "" or when the table is full of busy keys.
  std::shared_ptr<Bucket> BucketFor(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  const int64_t interval_ns_;  // T of the rate; 0 without one
  const int64_t capacity_ns_;  // burst x T
  Clock& clock_;
  mutable Mutex mu_;
  // Most recently used first.
  std::list<std::shared_ptr<Bucket>> lru_ ABSL_GUARDED_BY(mu_);
  // Views of each bucket's own key.
  absl::flat_hash_map<absl::string_view, std::list<std::shared_ptr<Bucket>>::iterator> index_
      ABSL_GUARDED_BY(mu_);
  // Before the buckets: their fleet buckets wake it.
  std::unique_ptr<LeaseQueue> fleet_queue_;
  // The fleet counters of the keys evicted so far.
  GlobalRateLimiterStats evicted_fleet_ ABSL_GUARDED_BY(mu_);
  const std::shared_ptr<Bucket> default_bucket_;
  std::atomic<int64_t> evicted_{0};
  std::atomic<int64_t> hashed_{0};
  std::atomic<int64_t> overflowed_{0};
  std::atomic<int64_t> rejected_concurrency_{0};
  std::atomic<int64_t> rejected_rate_{0};
  std::atomic<int64_t> rejected_fleet_rate_{0};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_PER_CALLER_LIMITS_H_

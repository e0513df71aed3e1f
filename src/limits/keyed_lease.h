// File: src/limits/keyed_lease.h
//
// One caller key's fleet-wide rate limit: a GlobalRateLimiter whose leases
// come through a LeaseQueue shared by every key of a scope
// (docs/per-caller-limits.md, "Fleet-wide per key").

#ifndef GRPC_RESILIENCE_SRC_LIMITS_KEYED_LEASE_H_
#define GRPC_RESILIENCE_SRC_LIMITS_KEYED_LEASE_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "src/core/clock.h"
#include "src/limits/global_rate_limiter.h"
#include "src/limits/lease_source.h"

namespace resilience {

class LeaseQueue;

// KeyedLease
//
// The limiter of one key (its store key: the bucket's name in the store)
// and the LeaseSource it wakes: Wake() puts the key in its LeaseQueue once
// (a key already waiting is not queued again), and the queue's one worker
// leases for it. Until its first lease the key admits its local share
// (GlobalRateLimiter's kStarting), so a key seen for the first time never
// waits for the store. Made by PerCallerLimits for each tracked key and
// dropped with it: the queue holds keys weakly, so an evicted key's pending
// lease is skipped, and tokens it held unused are dropped (at most one
// lease, GlobalRateLimiter::MaxLease()).
//
// Thread-safe: Wake() and the limiter's call path from any thread, the
// queued flag between them and the queue's worker.
class KeyedLease final : public LeaseSource, public std::enable_shared_from_this<KeyedLease> {
 public:
  // A key named `store_key` with limiter `options` (whose `log` should be
  // null: the queue logs for all its keys), leasing through `queue`, which
  // must outlive every call of Wake() (PerCallerLimits owns both).
  static absl::StatusOr<std::shared_ptr<KeyedLease>> Create(std::string store_key,
                                                            GlobalRateLimiter::Options options,
                                                            Clock& clock, LeaseQueue& queue);
  ~KeyedLease() override;

  void Wake() override;

  GlobalRateLimiter& limiter() { return *limiter_; }
  const GlobalRateLimiter& limiter() const { return *limiter_; }
  const std::string& store_key() const { return store_key_; }

  // For the queue's worker. Whether a lease from the store ever succeeded
  // (a key missing from the store is then a lost one).
  bool leased_before() const { return leased_before_.load(std::memory_order_relaxed); }
  void set_leased_before() { leased_before_.store(true, std::memory_order_relaxed); }
  // Taken off the queue: a Wake() from now on queues it again.
  void Dequeued() { queued_.store(false, std::memory_order_release); }

 private:
  KeyedLease(std::string store_key, std::unique_ptr<GlobalRateLimiter> limiter,
             LeaseQueue& queue);

  const std::string store_key_;
  const std::unique_ptr<GlobalRateLimiter> limiter_;
  LeaseQueue& queue_;
  std::atomic<bool> queued_{false};
  std::atomic<bool> leased_before_{false};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_KEYED_LEASE_H_

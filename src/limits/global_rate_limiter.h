// File: src/limits/global_rate_limiter.h
//
// A rate limit shared by a fleet of servers, admitted locally from tokens
// leased in batches from a shared store (docs/global-rate-limit.md).

#ifndef GRPC_RESILIENCE_SRC_LIMITS_GLOBAL_RATE_LIMITER_H_
#define GRPC_RESILIENCE_SRC_LIMITS_GLOBAL_RATE_LIMITER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/core/clock.h"
#include "src/core/mutex.h"
#include "src/limits/criticality_shares.h"
#include "src/limits/lease_source.h"
#include "src/core/counter_list.h"

namespace resilience {

// The counters of a GlobalRateLimiter, declared once (counter_list.h).
#define GRPC_RESILIENCE_GLOBAL_LIMIT_COUNTERS(X)                                    \
  /* Calls admitted with a leased token. */                                        \
  X(admitted_leased)                                                               \
  /* Calls admitted by the local share (Redis unreachable, or not yet reached). */ \
  X(admitted_local)                                                                \
  X(rejected)                                                                      \
  /* Round trips to the store that answered, and the tokens they granted. */     \
  X(leases)                                                                        \
  X(tokens_leased)                                                                 \
  /* Leased tokens dropped unused after leaseLifetime. */                          \
  X(tokens_expired)                                                                \
  /* Round trips that failed (connect, timeout, error reply). */                   \
  X(lease_failures)                                                                \
  /* Transitions to the local share, and back to the global limit. */             \
  X(fallbacks)                                                                     \
  X(recoveries)                                                                    \
  /* The store's bucket found lost (started again full), holding values out of */  \
  /* range (clamped), or a timestamp ahead of the store's clock (taken as now). */ \
  X(keys_lost)                                                                     \
  X(bad_values)                                                                    \
  X(clock_steps)

struct GlobalRateLimiterStats {
  GRPC_RESILIENCE_GLOBAL_LIMIT_COUNTERS(GRPC_RESILIENCE_COUNTER_FIELD)
};

// GlobalRateLimiter
//
// The fleet's limit is a token bucket (`rate_per_second`, `burst`) kept in a
// shared store. The call path never talks to the store: TryAcquire() takes a
// token from the batch this server leased last (an atomic decrement), and
// when the batch runs low it wakes the LeaseSource, whose own thread asks
// LeaseWanted() how many tokens to take, takes them from the store in one
// atomic step, and hands them over with OnLease().
//
// Lease size: the local demand (TryAcquire() calls per second, smoothed:
// up at once, and before the interval ends when the calls already exceed
// a lease; down by halves) times `lease_interval`, in [1, MaxLease()], MaxLease() being the fleet's
// rate times `lease_interval` (at most the burst). A new lease is asked for
// when the batch is down to half a lease. Unused tokens are dropped
// `lease_lifetime` after the last lease, so a quiet server does not sit on
// tokens others need.
//
// Over-admission: every token admitted was granted by the store, so over
// any stretch of time the fleet admits at most rate * time + burst plus the
// tokens its servers held at the start, at most MaxLease() per server.
//
// Without the store (before its first answer, or after OnFailure()), calls
// are admitted by a local token bucket at this server's share of the rate:
// the share it was observed to take while the store answered (when the
// fleet was using the whole rate), else rate / expected_replicas (or the
// observed share when larger), never below 1% of the rate. Each change
// between the two is logged with one line (`log`) and counted.
//
// This class is thread-safe. TryAcquire() is lock-free; LeaseWanted(),
// OnLease() and OnFailure() are for the one LeaseSource thread.
class GlobalRateLimiter {
 public:
  struct Options {
    // The fleet's limit.
    double rate_per_second = 0;
    int64_t burst = 0;
    // How many servers share the limit: the local share without the store.
    int expected_replicas = 1;
    // A lease is about this much of the local demand.
    absl::Duration lease_interval = absl::Milliseconds(100);
    // Leased tokens unused this long after the last lease are dropped.
    absl::Duration lease_lifetime = absl::Seconds(1);
    // Where the one line per transition goes (the source's thread); null:
    // nowhere.
    std::function<void(const std::string&)> log;
    // Names the limit in log lines ("key 'cache' at 127.0.0.1:6379").
    std::string name;
  };

  enum class Mode { kStarting, kGlobal, kLocal };

  // What the store found wrong with the fleet's bucket, and repaired.
  enum class Anomaly {
    kKeyLost,    // gone though this server had leased from it: started again full
    kBadValue,   // not a number in range, or not a bucket: clamped
    kClockBack,  // last refill ahead of the store's clock: taken as now
  };

  // Validate()
  //
  // OK when Create() would accept `options`: rate and burst as TokenBucket
  // takes them, expected_replicas in [1, 10000], lease_interval in [1ms,
  // 10s], lease_lifetime in [lease_interval, 1h]. InvalidArgument naming
  // the field and value otherwise.
  static absl::Status Validate(const Options& options);

  // A limiter for options Validate() accepts. `clock` must outlive it. It
  // starts in kStarting, admitting with the local share.
  static absl::StatusOr<std::unique_ptr<GlobalRateLimiter>> Create(Options options, Clock& clock);

  // Attach()
  //
  // The source Wake() calls go to; null detaches. Attach before calls come,
  // detach before destroying the source.
  void Attach(LeaseSource* source) { source_.store(source, std::memory_order_release); }

  // TryAcquire()
  //
  // Admits a call or not, never waiting. On false, `*retry_after` (if given)
  // is when to try again.
  bool TryAcquire(absl::Duration* retry_after = nullptr) {
    return TryAcquire(CriticalityShares(), Criticality::kCritical, retry_after);
  }

  // The same for a call of `level`: it leaves shares.LeaseReserve(MaxLease(),
  // level) leased tokens to the more critical, and on the local share sees
  // the bucket as TokenBucket does (shares.BucketCapacity()). For a level
  // whose share is 1, exactly TryAcquire(retry_after).
  bool TryAcquire(const CriticalityShares& shares, Criticality level,
                  absl::Duration* retry_after = nullptr);

  // For the LeaseSource thread.

  // LeaseWanted()
  //
  // How many tokens to lease now: 0 while the leased batch holds more than
  // half a lease. Drops tokens past their lifetime.
  int64_t LeaseWanted() ABSL_LOCKS_EXCLUDED(mu_);

  // OnLease()
  //
  // The store answered a request for `requested` tokens with `granted` of
  // them, `remaining` (fractional) tokens being left in the fleet's bucket.
  // Back to the global limit if it was not in use.
  void OnLease(int64_t requested, int64_t granted, double remaining) ABSL_LOCKS_EXCLUDED(mu_);

  // OnFailure()
  //
  // The store could not be reached or answered with an error (`why`): the
  // local share takes over, and any leased tokens stay usable. Logged at
  // the transition; while on the local share, each new reason once (up to
  // 8 per outage), so a refused password after a reset is not silent.
  void OnFailure(absl::string_view why) ABSL_LOCKS_EXCLUDED(mu_);

  // OnAnomaly()
  //
  // The store found its bucket as `kind` says and repaired it (the lease
  // went on). Counted; logged at most once per kAnomalyLogInterval per kind
  // (with the count of the others).
  void OnAnomaly(Anomaly kind) ABSL_LOCKS_EXCLUDED(mu_);
  static constexpr absl::Duration kAnomalyLogInterval = absl::Seconds(10);

  // The pause before asking again after a lease smaller than asked for
  // (the fleet's bucket is dry): until the bucket holds a token again, in
  // [1ms, lease_interval].
  absl::Duration DryWait() const;

  Mode mode() const { return mode_.load(std::memory_order_acquire); }
  // The local share's rate now (per second), used in kStarting and kLocal.
  double local_rate() const;
  // The largest lease: max(1, min(burst, ceil(rate * lease_interval))).
  int64_t MaxLease() const { return max_lease_; }
  const Options& options() const { return options_; }
  GlobalRateLimiterStats Stats() const;

 private:
  GlobalRateLimiter(Options options, Clock& clock);

  bool LocalAcquire(int64_t now_ns, const CriticalityShares& shares, Criticality level,
                    absl::Duration* retry_after);
  // Sets the local bucket to `rate` per second.
  void SetLocalRate(double rate);
  void Log(const std::string& line) const;
  // The local share to fall back to.
  double ShareRate() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NoteDemand(int64_t now_ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  Clock& clock_;
  const int64_t max_lease_;
  std::atomic<LeaseSource*> source_{nullptr};
  std::atomic<Mode> mode_{Mode::kStarting};

  // The call path's state.
  std::atomic<int64_t> tokens_{0};          // leased, unused
  std::atomic<int64_t> low_watermark_{0};   // Wake() at or below this
  std::atomic<int64_t> demand_{0};          // TryAcquire() calls, ever
  // DryWait(), the pushback of a call that finds no token.
  std::atomic<int64_t> retry_after_ns_{1'000'000};
  // The local bucket (GCRA, as TokenBucket): interval and capacity change
  // when the share does.
  std::atomic<int64_t> local_interval_ns_{0};
  std::atomic<int64_t> local_capacity_ns_{0};
  std::atomic<int64_t> local_tat_ns_{0};

  // The source thread's state.
  mutable Mutex mu_;
  int64_t demand_seen_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t demand_since_ns_ ABSL_GUARDED_BY(mu_) = 0;
  double demand_rate_ ABSL_GUARDED_BY(mu_) = 0;  // per second, smoothed
  int64_t last_lease_ns_ ABSL_GUARDED_BY(mu_) = 0;
  // The share observed: tokens granted in the current window, whether
  // any lease in it came back short; the last complete window's rate.
  int64_t window_start_ns_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t window_granted_ ABSL_GUARDED_BY(mu_) = 0;
  bool window_short_ ABSL_GUARDED_BY(mu_) = false;
  double observed_rate_ ABSL_GUARDED_BY(mu_) = -1;  // < 0: none yet
  bool observed_short_ ABSL_GUARDED_BY(mu_) = false;
  // The failure reasons logged since the last fallback.
  std::vector<std::string> failures_logged_ ABSL_GUARDED_BY(mu_);
  // Per Anomaly: when it was last logged (0: never), and how many since.
  int64_t anomaly_logged_ns_[3] ABSL_GUARDED_BY(mu_) = {0, 0, 0};
  int64_t anomalies_unlogged_[3] ABSL_GUARDED_BY(mu_) = {0, 0, 0};

  GRPC_RESILIENCE_GLOBAL_LIMIT_COUNTERS(GRPC_RESILIENCE_ATOMIC_COUNTER)
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_GLOBAL_RATE_LIMITER_H_

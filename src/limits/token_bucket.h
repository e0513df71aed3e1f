// File: src/limits/token_bucket.h
//
// A rate limiter: `rate` calls per second on average, up to `burst` at once
// after a quiet period.

#ifndef GRPC_RESILIENCE_SRC_LIMITS_TOKEN_BUCKET_H_
#define GRPC_RESILIENCE_SRC_LIMITS_TOKEN_BUCKET_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/core/clock.h"
#include "src/limits/criticality_shares.h"

namespace resilience {

// TokenBucket
//
// The algorithm: GCRA, the "virtual scheduling" form of a token bucket. Each
// admitted call moves a theoretical arrival time (TAT) forward by one
// emission interval T = 1 / rate; a call at time `now` is admitted while
//   max(TAT, now) + T - now <= burst * T,
// i.e. while the bucket, refilled continuously at `rate`, holds a token. The
// whole state is the one TAT, an atomic integer of nanoseconds, so
// TryAcquire() is a compare-and-swap loop: lock-free, no background refill.
//
// Bounds (docs/bounds.md): T is a whole number of nanoseconds, so the rate is
// at most 1e9/s; below 1e-3/s (one call per 1000 s) a rate is more likely a
// typo than a limit, and T would no longer be small next to the bucket's
// lifetime. burst * T, the time an empty bucket takes to refill, is at most
// kMaxRefillNanos (about 31.7 years), so that it and every TAT stay far from
// the int64 limit. The arithmetic is overflow-checked all the same: a clock
// past what int64 nanoseconds can hold (after 2262) refuses every call
// instead of wrapping around.
// This class is thread-safe.
class TokenBucket {
 public:
  static constexpr double kMinRatePerSecond = 1e-3;
  static constexpr double kMaxRatePerSecond = 1e9;
  static constexpr int64_t kMaxBurst = 1'000'000'000;
  // Largest burst * T: 1e9 s.
  static constexpr int64_t kMaxRefillNanos = 1'000'000'000'000'000'000;

  // Validate()
  //
  // OK when Create() would accept `rate_per_second` and `burst`: the rate in
  // [1e-3, 1e9], the burst in [1, 1e9] and at most MaxBurst(rate). Otherwise
  // InvalidArgument naming the field and the value.
  static absl::Status Validate(double rate_per_second, int64_t burst);

  // IntervalNanos()
  //
  // T in nanoseconds for a rate in [kMinRatePerSecond, kMaxRatePerSecond]:
  // 1e9 / rate rounded, in [1, 1e12].
  static int64_t IntervalNanos(double rate_per_second);

  // MaxBurst()
  //
  // The largest burst Validate() accepts at a rate in [kMinRatePerSecond,
  // kMaxRatePerSecond]: min(kMaxBurst, kMaxRefillNanos / T). Only rates
  // under 1/s are limited by the refill time (1e6 at 1e-3/s).
  static int64_t MaxBurst(double rate_per_second);

  // DefaultBurst()
  //
  // The burst of a limit that sets only its rate: one second's worth of
  // calls, floored, at least 1 and at most kMaxBurst. Any rate, NaN included
  // (1), so the caller may validate the pair afterwards.
  static int64_t DefaultBurst(double rate_per_second);

  // Create()
  //
  // A bucket for settings Validate() accepts; its error otherwise. `clock`
  // must outlive the bucket. The bucket starts full.
  static absl::StatusOr<std::unique_ptr<TokenBucket>> Create(double rate_per_second,
                                                            int64_t burst, Clock& clock);

  // TryAcquire()
  //
  // Takes a token if there is one. On false, `*retry_after` (if given) is set
  // to how long until a token will be there (InfiniteDuration() when the
  // clock is past the end of int64 nanoseconds).
  bool TryAcquire(absl::Duration* retry_after = nullptr);

  // The same for a call of `level`: the bucket as the level sees it holds
  // shares.BucketCapacity() (CriticalityShares), so a less critical call
  // finds it empty while the more critical still find tokens. For a level
  // whose share is 1, exactly TryAcquire(retry_after).
  bool TryAcquire(const CriticalityShares& shares, Criticality level,
                  absl::Duration* retry_after = nullptr);

  // HasToken()
  //
  // Whether TryAcquire() (the whole bucket) would find a token now; takes
  // nothing (a shadow share's refusal is told from the bucket's own).
  bool HasToken() const;

  // TakeToken()
  //
  // The GCRA step on a bucket kept elsewhere: takes a token from the bucket
  // whose TAT is `tat_ns` (Unix nanoseconds), with T = `interval_ns` and
  // burst * T = `capacity_ns` (both within the bounds above), at `now_ns`.
  // TryAcquire() is this on the bucket's own state; a limiter whose rate
  // changes while it runs keeps T and the capacity itself.
  static bool TakeToken(std::atomic<int64_t>& tat_ns, int64_t now_ns, int64_t interval_ns,
                        int64_t capacity_ns, absl::Duration* retry_after);

  double rate_per_second() const { return rate_per_second_; }
  int64_t burst() const { return burst_; }

 private:
  TokenBucket(double rate_per_second, int64_t burst, Clock& clock);

  const double rate_per_second_;
  const int64_t burst_;
  const int64_t interval_ns_;  // T, in [1, 1e12]
  const int64_t capacity_ns_;  // burst * T, in [T, kMaxRefillNanos]
  Clock& clock_;
  // Theoretical arrival time, Unix nanoseconds.
  std::atomic<int64_t> tat_ns_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_TOKEN_BUCKET_H_

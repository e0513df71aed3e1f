// File: src/breaker/token_bucket.h
//
// A rate limiter: `rate` calls per second on average, up to `burst` at once
// after a quiet period.

#ifndef GRPC_RESILIENCE_SRC_BREAKER_TOKEN_BUCKET_H_
#define GRPC_RESILIENCE_SRC_BREAKER_TOKEN_BUCKET_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/breaker/clock.h"

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
// This class is thread-safe.
class TokenBucket {
 public:
  // Create()
  //
  // `rate_per_second` > 0 (at most 1e9), `burst` >= 1; InvalidArgument
  // naming the field otherwise. `clock` must outlive the bucket. The bucket
  // starts full.
  static absl::StatusOr<std::unique_ptr<TokenBucket>> Create(double rate_per_second,
                                                            int64_t burst, Clock& clock);

  // TryAcquire()
  //
  // Takes a token if there is one. On false, `*retry_after` (if given) is set
  // to how long until a token will be there.
  bool TryAcquire(absl::Duration* retry_after = nullptr);

  double rate_per_second() const { return rate_per_second_; }
  int64_t burst() const { return burst_; }

 private:
  TokenBucket(double rate_per_second, int64_t burst, Clock& clock);

  const double rate_per_second_;
  const int64_t burst_;
  const int64_t interval_ns_;  // T
  const int64_t capacity_ns_;  // burst * T
  Clock& clock_;
  // Theoretical arrival time, Unix nanoseconds.
  std::atomic<int64_t> tat_ns_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_BREAKER_TOKEN_BUCKET_H_

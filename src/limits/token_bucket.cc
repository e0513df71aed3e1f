#include "src/limits/token_bucket.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace resilience {

absl::Status TokenBucket::Validate(double rate_per_second, int64_t burst) {
  // Written so that NaN fails.
  if (!(rate_per_second >= kMinRatePerSecond && rate_per_second <= kMaxRatePerSecond)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rate_per_second: must be in [1e-3, 1e9], got ", rate_per_second));
  }
  if (burst < 1 || burst > kMaxBurst) {
    return absl::InvalidArgumentError(absl::StrCat("burst: must be in [1, 1e9], got ", burst));
  }
  if (burst > MaxBurst(rate_per_second)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "burst: must be <= ", MaxBurst(rate_per_second), " at rate_per_second ",
        rate_per_second, " (an empty bucket must refill within 1e9s), got ", burst));
  }
  return absl::OkStatus();
}

int64_t TokenBucket::IntervalNanos(double rate_per_second) {
  // Clamped (NaN to the minimum), 1e9 / rate is in [1, 1e12]: llround
  // cannot overflow.
  double rate = rate_per_second;
  if (!(rate >= kMinRatePerSecond)) rate = kMinRatePerSecond;
  if (rate > kMaxRatePerSecond) rate = kMaxRatePerSecond;
  return std::max<int64_t>(1, std::llround(1e9 / rate));
}

int64_t TokenBucket::MaxBurst(double rate_per_second) {
  return std::min(kMaxBurst, kMaxRefillNanos / IntervalNanos(rate_per_second));
}

int64_t TokenBucket::DefaultBurst(double rate_per_second) {
  // The comparisons keep NaN and rates under 1/s out of the conversion.
  if (rate_per_second >= static_cast<double>(kMaxBurst)) return kMaxBurst;
  if (rate_per_second >= 1.0) return static_cast<int64_t>(rate_per_second);
  return 1;
}

absl::StatusOr<std::unique_ptr<TokenBucket>> TokenBucket::Create(double rate_per_second,
                                                                 int64_t burst, Clock& clock) {
  if (absl::Status s = Validate(rate_per_second, burst); !s.ok()) return s;
  return std::unique_ptr<TokenBucket>(new TokenBucket(rate_per_second, burst, clock));
}

TokenBucket::TokenBucket(double rate_per_second, int64_t burst, Clock& clock)
    : rate_per_second_(rate_per_second),
      burst_(burst),
      interval_ns_(IntervalNanos(rate_per_second)),
      // Validate() bounds the product by kMaxRefillNanos.
      capacity_ns_(burst * interval_ns_),
      clock_(clock),
      tat_ns_(absl::ToUnixNanos(clock.Now())) {}

bool TokenBucket::TryAcquire(absl::Duration* retry_after) {
  // ToUnixNanos saturates, so `now` is any int64 at all.
  return TakeToken(tat_ns_, absl::ToUnixNanos(clock_.Now()), interval_ns_, capacity_ns_,
                   retry_after);
}

bool TokenBucket::TryAcquire(const CriticalityShares& shares, Criticality level,
                             absl::Duration* retry_after) {
  return TakeToken(tat_ns_, absl::ToUnixNanos(clock_.Now()), interval_ns_,
                   shares.BucketCapacity(capacity_ns_, interval_ns_, level), retry_after);
}

bool TokenBucket::HasToken() const {
  const int64_t now_ns = absl::ToUnixNanos(clock_.Now());
  int64_t next;
  int64_t ahead;
  return !__builtin_add_overflow(std::max(tat_ns_.load(std::memory_order_relaxed), now_ns),
                                 interval_ns_, &next) &&
         !__builtin_sub_overflow(next, now_ns, &ahead) && ahead <= capacity_ns_;
}

bool TokenBucket::TakeToken(std::atomic<int64_t>& tat_ns, int64_t now_ns, int64_t interval_ns,
                            int64_t capacity_ns, absl::Duration* retry_after) {
  int64_t tat = tat_ns.load(std::memory_order_relaxed);
  while (true) {
    int64_t next;   // the TAT after this call
    int64_t ahead;  // next - now
    if (__builtin_add_overflow(std::max(tat, now_ns), interval_ns, &next) ||
        __builtin_sub_overflow(next, now_ns, &ahead)) {
      // Only a clock at the ends of int64 nanoseconds gets here.
      if (retry_after != nullptr) *retry_after = absl::InfiniteDuration();
      return false;
    }
    if (ahead > capacity_ns) {
      // The bucket is empty; a token comes when next - capacity == now.
      if (retry_after != nullptr) *retry_after = absl::Nanoseconds(ahead - capacity_ns);
      return false;
    }
    if (tat_ns.compare_exchange_weak(tat, next, std::memory_order_acq_rel,
                                     std::memory_order_relaxed)) {
      return true;
    }
  }
}

}  // namespace resilience

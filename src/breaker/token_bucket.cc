#include "src/breaker/token_bucket.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace resilience {

absl::StatusOr<std::unique_ptr<TokenBucket>> TokenBucket::Create(double rate_per_second,
                                                                 int64_t burst, Clock& clock) {
  if (!(rate_per_second > 0.0 && rate_per_second <= 1e9)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rate_per_second: must be in (0, 1e9], got ", rate_per_second));
  }
  if (burst < 1 || burst > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(
        absl::StrCat("burst: must be in [1, 2^30], got ", burst));
  }
  return std::unique_ptr<TokenBucket>(new TokenBucket(rate_per_second, burst, clock));
}

TokenBucket::TokenBucket(double rate_per_second, int64_t burst, Clock& clock)
    : rate_per_second_(rate_per_second),
      burst_(burst),
      interval_ns_(std::max<int64_t>(1, std::llround(1e9 / rate_per_second))),
      capacity_ns_(burst * interval_ns_),
      clock_(clock),
      tat_ns_(absl::ToUnixNanos(clock.Now())) {}

bool TokenBucket::TryAcquire(absl::Duration* retry_after) {
  const int64_t now = absl::ToUnixNanos(clock_.Now());
  int64_t tat = tat_ns_.load(std::memory_order_relaxed);
  while (true) {
    const int64_t next = std::max(tat, now) + interval_ns_;
    if (next - now > capacity_ns_) {
      // The bucket is empty; a token comes when next - capacity_ns_ == now.
      if (retry_after != nullptr) *retry_after = absl::Nanoseconds(next - capacity_ns_ - now);
      return false;
    }
    if (tat_ns_.compare_exchange_weak(tat, next, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
      return true;
    }
  }
}

}  // namespace resilience

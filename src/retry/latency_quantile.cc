#include "src/retry/latency_quantile.h"

#include <algorithm>
#include <cmath>

namespace resilience {

int LatencyQuantile::BucketOf(absl::Duration latency) {
  if (latency <= kFirstBound) return 0;
  // bucket = ceil(4 * log2(latency / kFirstBound)), so that latency lies in
  // (UpperBound(bucket - 1), UpperBound(bucket)].
  const double ratio = absl::FDivDuration(latency, kFirstBound);
  if (!std::isfinite(ratio)) return kBuckets - 1;
  int bucket = static_cast<int>(std::ceil(4.0 * std::log2(ratio)));
  // Guard the bounds against floating-point rounding at an exact bound.
  while (bucket > 0 && latency <= UpperBound(bucket - 1)) --bucket;
  while (bucket < kBuckets - 1 && latency > UpperBound(bucket)) ++bucket;
  return std::clamp(bucket, 0, kBuckets - 1);
}

absl::Duration LatencyQuantile::UpperBound(int bucket) {
  if (bucket >= kBuckets - 1) return absl::InfiniteDuration();
  return kFirstBound * std::exp2(bucket / 4.0);
}

void LatencyQuantile::Record(absl::Duration latency) {
  const int bucket = BucketOf(std::max(latency, absl::ZeroDuration()));
  MutexLock lock(&mu_);
  if (current_count_ >= kGeneration) {
    previous_ = current_;
    previous_count_ = current_count_;
    current_.fill(0);
    current_count_ = 0;
  }
  ++current_[bucket];
  ++current_count_;
}

std::optional<absl::Duration> LatencyQuantile::Quantile(double percentile,
                                                        int64_t min_samples) const {
  if (!(percentile >= 0.0)) percentile = 0.0;  // NaN too
  percentile = std::min(percentile, 100.0);
  MutexLock lock(&mu_);
  const int64_t total = current_count_ + previous_count_;
  if (total < std::max<int64_t>(1, min_samples)) return std::nullopt;
  // The rank of the sample at `percentile` (1-based), at least 1.
  const auto rank = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(percentile / 100.0 * static_cast<double>(total))));
  int64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += current_[i] + previous_[i];
    if (seen >= rank) return UpperBound(i);
  }
  return UpperBound(kBuckets - 1);
}

int64_t LatencyQuantile::samples() const {
  MutexLock lock(&mu_);
  return current_count_ + previous_count_;
}

}  // namespace resilience

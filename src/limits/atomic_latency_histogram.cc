#include "src/limits/atomic_latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace resilience {

int AtomicLatencyHistogram::BucketOf(int64_t ns) {
  if (ns < kSubBuckets) return static_cast<int>(std::max<int64_t>(0, ns));
  const int octave = 63 - __builtin_clzll(static_cast<uint64_t>(ns));  // >= 4
  if (octave > kMaxOctave) return kBuckets - 1;
  // The four bits after the leading one.
  const int sub = static_cast<int>((ns >> (octave - 4)) & (kSubBuckets - 1));
  return kSubBuckets + (octave - 4) * kSubBuckets + sub;
}

absl::Duration AtomicLatencyHistogram::Middle(int bucket) {
  if (bucket < kSubBuckets) return absl::Nanoseconds(bucket);
  const int octave = (bucket - kSubBuckets) / kSubBuckets + 4;
  const int sub = (bucket - kSubBuckets) % kSubBuckets;
  const int64_t width = int64_t{1} << (octave - 4);
  return absl::Nanoseconds((kSubBuckets + sub) * width + width / 2);
}

absl::Duration AtomicLatencyHistogram::TakeQuantile(double q) {
  std::array<int64_t, kBuckets> counts;
  int64_t total = 0;
  for (int i = 0; i < kBuckets; ++i) {
    counts[i] = buckets_[i].exchange(0, std::memory_order_relaxed);
    total += counts[i];
  }
  if (total == 0) return absl::ZeroDuration();
  // The smallest bucket at or below which at least ceil(q * total) samples
  // lie (at least one).
  const int64_t rank =
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * total)));
  int64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts[i];
    if (seen >= rank) return Middle(i);
  }
  return Middle(kBuckets - 1);
}

}  // namespace resilience

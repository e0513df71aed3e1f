// File: src/limits/atomic_latency_histogram.h
//
// Latencies counted into fine logarithmic buckets with relaxed atomic
// additions, for a quantile of a sample window read and reset by one thread
// (AdaptiveConcurrencyLimiter's window close) while others keep adding.

#ifndef GRPC_RESILIENCE_SRC_LIMITS_ATOMIC_LATENCY_HISTOGRAM_H_
#define GRPC_RESILIENCE_SRC_LIMITS_ATOMIC_LATENCY_HISTOGRAM_H_

#include <array>
#include <atomic>
#include <cstdint>

#include "absl/time/time.h"

namespace resilience {

// AtomicLatencyHistogram
//
// Buckets: latencies below 16 ns each have their own; above, every power of
// two is cut into 16 equal buckets, so a bucket is at most 1/16 (6.25%) of
// its lower bound wide, up to 2^42 ns (73 min; longer latencies go to the
// last bucket). A quantile is reported as the middle of its bucket: within
// 3.2% of the true value, far below the tolerances it is compared with.
//
// Add() is one relaxed fetch_add. TakeQuantile() reads and zeroes every
// bucket (one exchange each; a sample added meanwhile lands in this read or
// the next) and must not run on two threads at once. Thread-safe otherwise.
class AtomicLatencyHistogram {
 public:
  static constexpr int kSubBuckets = 16;
  static constexpr int kMaxOctave = 41;  // 2^42 ns and above: the last bucket
  static constexpr int kBuckets = kSubBuckets + (kMaxOctave - 3) * kSubBuckets;

  void Add(absl::Duration latency) {
    buckets_[BucketOf(absl::ToInt64Nanoseconds(latency))].fetch_add(1, std::memory_order_relaxed);
  }

  // TakeQuantile()
  //
  // The `q`-quantile (q in [0, 1]) of the samples added since the last
  // call, which it forgets; ZeroDuration() without samples.
  absl::Duration TakeQuantile(double q);

  // The bucket of a latency of `ns` nanoseconds (negative counts as 0), and
  // the middle of a bucket (exposed for tests).
  static int BucketOf(int64_t ns);
  static absl::Duration Middle(int bucket);

 private:
  std::array<std::atomic<int64_t>, kBuckets> buckets_{};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_ATOMIC_LATENCY_HISTOGRAM_H_

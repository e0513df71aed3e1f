// File: src/retry/latency_quantile.h
//
// A method's recent attempt latencies, summarised well enough to answer
// "what is the p95 now?" for adaptive hedging (hedging_decider.h). No gRPC,
// no clock: the caller passes each latency.

#ifndef GRPC_RESILIENCE_SRC_RETRY_LATENCY_QUANTILE_H_
#define GRPC_RESILIENCE_SRC_RETRY_LATENCY_QUANTILE_H_

#include <array>
#include <cstdint>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "src/core/mutex.h"

namespace resilience {

// LatencyQuantile
//
// Latencies fall into logarithmic buckets: bucket 0 holds everything up to
// kFirstBound (50us), bucket i (i >= 1) holds (kFirstBound * 2^((i-1)/4),
// kFirstBound * 2^(i/4)], the last bucket everything above ~14 min. A bucket
// is at most 19% wide, so a quantile is known to within 19%, and it is
// reported as its bucket's upper bound (never below the true value by more
// than the bucket's width: hedging a little late, never early).
//
// Window: two generations of counts. Samples go into the current one; when
// it holds kGeneration samples it becomes the previous one (the older
// previous is dropped). Quantile() reads both, i.e. the last kGeneration to
// 2 * kGeneration samples: the estimate follows a change of the method's
// latency within ~kGeneration calls, whatever the call rate, and needs no
// clock.
//
// Thread-safety: thread-safe; Record() and Quantile() take one short lock
// (a few hundred nanoseconds at most: Quantile() sums kBuckets counters).
class LatencyQuantile {
 public:
  static constexpr int kBuckets = 96;
  static constexpr absl::Duration kFirstBound = absl::Microseconds(50);
  static constexpr int64_t kGeneration = 1000;
  // Quantile() answers once the window holds this many samples.
  static constexpr int64_t kMinSamples = 100;

  LatencyQuantile() = default;
  LatencyQuantile(const LatencyQuantile&) = delete;
  LatencyQuantile& operator=(const LatencyQuantile&) = delete;

  // Record()
  //
  // One observed latency (negative counts as zero).
  void Record(absl::Duration latency) ABSL_LOCKS_EXCLUDED(mu_);

  // Quantile()
  //
  // The smallest bucket bound below or at which at least `percentile`
  // percent of the window's samples lie; nullopt while the window holds
  // fewer than kMinSamples. `percentile` is clamped into [0, 100].
  std::optional<absl::Duration> Quantile(double percentile) const ABSL_LOCKS_EXCLUDED(mu_) {
    return Quantile(percentile, kMinSamples);
  }
  // The same, answering once the window holds `min_samples` (at least 1).
  std::optional<absl::Duration> Quantile(double percentile, int64_t min_samples) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Samples in the window now.
  int64_t samples() const ABSL_LOCKS_EXCLUDED(mu_);

  // The bucket of `latency`, and a bucket's upper bound (exposed for tests).
  static int BucketOf(absl::Duration latency);
  static absl::Duration UpperBound(int bucket);

 private:
  using Counts = std::array<int64_t, kBuckets>;

  mutable Mutex mu_;
  Counts current_ ABSL_GUARDED_BY(mu_) = {};
  Counts previous_ ABSL_GUARDED_BY(mu_) = {};
  int64_t current_count_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t previous_count_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_RETRY_LATENCY_QUANTILE_H_

// File: src/metrics/latency_histogram.h
//
// A fixed-bucket latency histogram for RPC durations, cheap enough to observe
// every call: one relaxed atomic increment of a bucket and one of the sum.

#ifndef GRPC_RESILIENCE_SRC_METRICS_LATENCY_HISTOGRAM_H_
#define GRPC_RESILIENCE_SRC_METRICS_LATENCY_HISTOGRAM_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "grpc_resilience/metric_snapshots.h"

namespace resilience {

// LatencyHistogram
//
// Counts latencies into the fixed buckets of UpperBounds(): 0.5 ms to 10 s in
// 1-2.5-5 steps (each bound 2 or 2.5 times the one before), and +Inf: the
// common RPC latency buckets from 5 ms up, extended down to 0.5 ms for
// calls within a datacenter. Fixed bounds keep Observe() free of
// configuration and make the histograms of different methods and processes
// add up.
//
// Observe() is lock-free and wait-free: the bucket is found with a
// branch-free binary search over the bounds in integer nanoseconds, then one
// relaxed fetch_add on the bucket and one on the sum. Snapshot() reads every
// counter once; observations made meanwhile may be in the buckets and not
// yet in the sum or the other way round (never counted twice or lost), which
// is what a scrape needs. The count is the sum of the buckets, so the two
// always agree.
//
// Latencies are taken at face value: negative ones count as 0, infinite ones
// in the +Inf bucket. The sum is kept in whole microseconds (each
// observation rounded to the nearest, at most a day counted), so it wraps
// only after half a million years of summed latency.
//
// This class is thread-safe.
//
// Example:
//   LatencyHistogram histogram;
//   histogram.Observe(clock.Now() - start);  // monotonic: Clock::Now()
//   LatencyHistogramSnapshot s = histogram.Snapshot();
class LatencyHistogram {
 public:
  static constexpr size_t kNumBounds = LatencyHistogramSnapshot::kNumBounds;
  static constexpr size_t kNumBuckets = LatencyHistogramSnapshot::kNumBuckets;  // with +Inf

  LatencyHistogram() = default;
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  // UpperBounds()
  //
  // The finite bucket bounds in seconds, ascending:
  // 0.0005 0.001 0.0025 0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10.
  static absl::Span<const double> UpperBounds() { return LatencyHistogramSnapshot::UpperBounds(); }

  // BucketIndex()
  //
  // The bucket of a latency of `nanoseconds`: the first i with
  // nanoseconds <= bound[i] (Prometheus' "le"), kNumBounds when above all.
  static size_t BucketIndex(int64_t nanoseconds);

  // Observe()
  //
  // Counts one latency.
  void Observe(absl::Duration latency);

  // Snapshot()
  //
  // The counts and the sum now.
  LatencyHistogramSnapshot Snapshot() const;

 private:
  std::array<std::atomic<uint64_t>, kNumBuckets> buckets_{};
  std::atomic<uint64_t> sum_micros_{0};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_METRICS_LATENCY_HISTOGRAM_H_

// AtomicLatencyHistogram: bucket bounds, quantiles within a bucket's width,
// and that taking a quantile forgets the samples.

#include "src/limits/atomic_latency_histogram.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace resilience {
namespace {

// Every latency lands in a bucket whose middle is within 3.2% of it, and
// buckets grow with the latency, up to the last one.
TEST(AtomicLatencyHistogramTest, BucketsAreNarrowAndOrdered) {
  int previous = -1;
  for (int64_t ns = 1; ns < (int64_t{1} << 42); ns = ns * 21 / 20 + 1) {
    const int bucket = AtomicLatencyHistogram::BucketOf(ns);
    EXPECT_GE(bucket, previous);
    previous = bucket;
    const double middle = absl::ToDoubleNanoseconds(AtomicLatencyHistogram::Middle(bucket));
    EXPECT_NEAR(middle, static_cast<double>(ns), 0.032 * static_cast<double>(ns) + 0.5) << ns;
  }
  EXPECT_EQ(AtomicLatencyHistogram::BucketOf(-5), 0);
  EXPECT_EQ(AtomicLatencyHistogram::BucketOf(INT64_MAX), AtomicLatencyHistogram::kBuckets - 1);
}

// 90 calls of 1 ms and 10 of 100 ms: the median is 1 ms, the 95th
// percentile 100 ms; taking a quantile empties the histogram.
TEST(AtomicLatencyHistogramTest, QuantileOfAMixtureAndForgetting) {
  AtomicLatencyHistogram h;
  for (int i = 0; i < 90; ++i) h.Add(absl::Milliseconds(1));
  for (int i = 0; i < 10; ++i) h.Add(absl::Milliseconds(100));
  EXPECT_NEAR(absl::ToDoubleMilliseconds(h.TakeQuantile(0.5)), 1, 0.032);
  EXPECT_EQ(h.TakeQuantile(0.5), absl::ZeroDuration());
  for (int i = 0; i < 90; ++i) h.Add(absl::Milliseconds(1));
  for (int i = 0; i < 10; ++i) h.Add(absl::Milliseconds(100));
  EXPECT_NEAR(absl::ToDoubleMilliseconds(h.TakeQuantile(0.95)), 100, 3.2);
}

}  // namespace
}  // namespace resilience

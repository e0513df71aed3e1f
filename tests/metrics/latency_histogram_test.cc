// LatencyHistogram and StatusCodeCounters.

#include "src/metrics/latency_histogram.h"

#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "src/metrics/status_code_counters.h"
#include "gtest/gtest.h"

namespace resilience {
namespace {

TEST(LatencyHistogramTest, BoundsAreFixedAndAscending) {
  const std::vector<double> expected = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                        0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  const absl::Span<const double> bounds = LatencyHistogram::UpperBounds();
  EXPECT_EQ(std::vector<double>(bounds.begin(), bounds.end()), expected);
  EXPECT_EQ(bounds.size(), LatencyHistogram::kNumBounds);
}

// A latency equal to a bound belongs to that bound's bucket (le: less than or
// equal); one nanosecond more to the next.
TEST(LatencyHistogramTest, BucketIndexAtEveryBound) {
  const absl::Span<const double> bounds = LatencyHistogram::UpperBounds();
  EXPECT_EQ(LatencyHistogram::BucketIndex(0), 0u);
  for (size_t i = 0; i < bounds.size(); ++i) {
    const int64_t nanos = static_cast<int64_t>(bounds[i] * 1e9 + 0.5);
    EXPECT_EQ(LatencyHistogram::BucketIndex(nanos - 1), i) << bounds[i];
    EXPECT_EQ(LatencyHistogram::BucketIndex(nanos), i) << bounds[i];
    EXPECT_EQ(LatencyHistogram::BucketIndex(nanos + 1), i + 1) << bounds[i];
  }
  EXPECT_EQ(LatencyHistogram::BucketIndex(std::numeric_limits<int64_t>::max()),
            LatencyHistogram::kNumBounds);
}

// The search agrees with the definition for latencies all over the range.
TEST(LatencyHistogramTest, BucketIndexMatchesALinearScan) {
  const absl::Span<const double> bounds = LatencyHistogram::UpperBounds();
  for (int64_t nanos = 1; nanos < int64_t{100} * 1'000'000'000; nanos = nanos * 11 / 10 + 7) {
    size_t expected = 0;
    while (expected < bounds.size() && static_cast<double>(nanos) > bounds[expected] * 1e9) {
      ++expected;
    }
    ASSERT_EQ(LatencyHistogram::BucketIndex(nanos), expected) << nanos;
  }
}

TEST(LatencyHistogramTest, ObservePlacesLatenciesAndSums) {
  LatencyHistogram histogram;
  histogram.Observe(absl::Microseconds(100));  // <= 0.5 ms
  histogram.Observe(absl::Microseconds(500));  // <= 0.5 ms (on the bound)
  histogram.Observe(absl::Milliseconds(3));    // <= 5 ms
  histogram.Observe(absl::Milliseconds(3));    // <= 5 ms
  histogram.Observe(absl::Milliseconds(700));  // <= 1 s
  histogram.Observe(absl::Seconds(30));        // +Inf
  const LatencyHistogramSnapshot s = histogram.Snapshot();
  std::array<uint64_t, LatencyHistogram::kNumBuckets> expected{};
  expected[0] = 2;
  expected[3] = 2;
  expected[10] = 1;
  expected[14] = 1;
  EXPECT_EQ(s.bucket_counts, expected);
  EXPECT_EQ(s.count, 6u);
  EXPECT_NEAR(s.sum_seconds, 30.7066, 1e-9);
}

TEST(LatencyHistogramTest, OddLatencies) {
  LatencyHistogram histogram;
  histogram.Observe(-absl::Seconds(1));         // counts as 0
  histogram.Observe(absl::InfiniteDuration());  // +Inf bucket, a day in the sum
  histogram.Observe(absl::Nanoseconds(1499));   // sum rounds to 1 us
  histogram.Observe(absl::Nanoseconds(1500));   // sum rounds to 2 us
  const LatencyHistogramSnapshot s = histogram.Snapshot();
  EXPECT_EQ(s.bucket_counts[0], 3u);
  EXPECT_EQ(s.bucket_counts[LatencyHistogram::kNumBounds], 1u);
  EXPECT_EQ(s.count, 4u);
  EXPECT_NEAR(s.sum_seconds, 86400.000003, 1e-9);
}

TEST(LatencyHistogramTest, EmptySnapshot) {
  LatencyHistogram histogram;
  const LatencyHistogramSnapshot s = histogram.Snapshot();
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.sum_seconds, 0);
  for (uint64_t count : s.bucket_counts) EXPECT_EQ(count, 0u);
}

// Concurrent observers lose nothing.
TEST(LatencyHistogramTest, ConcurrentObserveCountsEverything) {
  LatencyHistogram histogram;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&histogram, t] {
      for (int i = 0; i < kPerThread; ++i) {
        histogram.Observe(absl::Milliseconds(t == 0 ? 1 : 20));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const LatencyHistogramSnapshot s = histogram.Snapshot();
  EXPECT_EQ(s.count, uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(s.bucket_counts[1], uint64_t{kPerThread});                 // <= 1 ms
  EXPECT_EQ(s.bucket_counts[5], uint64_t{kThreads - 1} * kPerThread);  // <= 25 ms
  EXPECT_NEAR(s.sum_seconds, kPerThread * (0.001 + 3 * 0.020), 1e-6);
}

TEST(StatusCodeCountersTest, CountsPerCodeAndOther) {
  StatusCodeCounters counters;
  counters.Increment(0);
  counters.Increment(0);
  counters.Increment(4);   // DEADLINE_EXCEEDED
  counters.Increment(14);  // UNAVAILABLE
  counters.Increment(16);  // UNAUTHENTICATED
  counters.Increment(17);  // other
  counters.Increment(-1);  // other
  counters.Increment(1000);
  EXPECT_EQ(counters.Get(0), 2u);
  EXPECT_EQ(counters.Get(4), 1u);
  EXPECT_EQ(counters.Get(14), 1u);
  EXPECT_EQ(counters.Get(16), 1u);
  EXPECT_EQ(counters.Get(99), 3u);  // the other slot
  EXPECT_EQ(counters.Get(2), 0u);
  const StatusCodeCountsSnapshot s = counters.Snapshot();
  EXPECT_EQ(s.counts[0], 2u);
  EXPECT_EQ(s.counts[StatusCodeCounters::kOtherSlot], 3u);
  EXPECT_EQ(s.total(), 8u);
}

TEST(StatusCodeCountersTest, SlotNames) {
  EXPECT_EQ(StatusCodeCounters::SlotName(0), "OK");
  EXPECT_EQ(StatusCodeCounters::SlotName(1), "CANCELLED");
  EXPECT_EQ(StatusCodeCounters::SlotName(4), "DEADLINE_EXCEEDED");
  EXPECT_EQ(StatusCodeCounters::SlotName(8), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(StatusCodeCounters::SlotName(14), "UNAVAILABLE");
  EXPECT_EQ(StatusCodeCounters::SlotName(16), "UNAUTHENTICATED");
  EXPECT_EQ(StatusCodeCounters::SlotName(StatusCodeCounters::kOtherSlot), "OTHER");
  EXPECT_EQ(StatusCodeCounters::SlotName(StatusCodeCounters::kNumSlots), "");
  EXPECT_EQ(StatusCodeCounters::Slot(-5), StatusCodeCounters::kOtherSlot);
  EXPECT_EQ(StatusCodeCounters::Slot(12), 12u);
}

TEST(StatusCodeCountersTest, ConcurrentIncrementsCountEverything) {
  StatusCodeCounters counters;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&counters, t] {
      for (int i = 0; i < kPerThread; ++i) counters.Increment(t % 2 == 0 ? 0 : 14);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counters.Get(0), 2u * kPerThread);
  EXPECT_EQ(counters.Get(14), 2u * kPerThread);
}

}  // namespace
}  // namespace resilience

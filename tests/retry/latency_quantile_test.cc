// LatencyQuantile: bucket bounds, the percentile it reports, the sample
// minimum, and a window that follows a change of latency.

#include "src/retry/latency_quantile.h"

#include <random>

#include "gtest/gtest.h"

namespace resilience {
namespace {

TEST(LatencyQuantileTest, BucketsCoverEveryLatencyWithin19Percent) {
  EXPECT_EQ(LatencyQuantile::BucketOf(absl::ZeroDuration()), 0);
  EXPECT_EQ(LatencyQuantile::BucketOf(LatencyQuantile::kFirstBound), 0);
  for (absl::Duration d : {absl::Microseconds(51), absl::Microseconds(900), absl::Milliseconds(1),
                           absl::Milliseconds(7), absl::Milliseconds(95), absl::Seconds(3)}) {
    const int b = LatencyQuantile::BucketOf(d);
    ASSERT_GT(b, 0) << d;
    EXPECT_LE(d, LatencyQuantile::UpperBound(b)) << d;
    EXPECT_GT(d, LatencyQuantile::UpperBound(b - 1)) << d;
    EXPECT_LE(LatencyQuantile::UpperBound(b), d * 1.19) << d;
  }
  // An exact bound belongs to its own bucket.
  EXPECT_EQ(LatencyQuantile::BucketOf(LatencyQuantile::UpperBound(20)), 20);
  EXPECT_EQ(LatencyQuantile::BucketOf(absl::Hours(10)), LatencyQuantile::kBuckets - 1);
  EXPECT_EQ(LatencyQuantile::UpperBound(LatencyQuantile::kBuckets - 1), absl::InfiniteDuration());
}

TEST(LatencyQuantileTest, NoAnswerBeforeEnoughSamples) {
  LatencyQuantile q;
  for (int i = 0; i < LatencyQuantile::kMinSamples - 1; ++i) q.Record(absl::Milliseconds(1));
  EXPECT_FALSE(q.Quantile(95).has_value());
  q.Record(absl::Milliseconds(1));
  ASSERT_TRUE(q.Quantile(95).has_value());
}

// A long tail: 95 % of calls at 1 ms, 5 % at 80 ms. p90 and p95 are the
// fast calls' bucket, p96 and above the slow ones'.
TEST(LatencyQuantileTest, ReportsThePercentileOfATailedDistribution) {
  LatencyQuantile q;
  for (int i = 0; i < 1000; ++i) {
    q.Record(i % 20 == 0 ? absl::Milliseconds(80) : absl::Milliseconds(1));
  }
  const absl::Duration fast = LatencyQuantile::UpperBound(LatencyQuantile::BucketOf(absl::Milliseconds(1)));
  const absl::Duration slow = LatencyQuantile::UpperBound(LatencyQuantile::BucketOf(absl::Milliseconds(80)));
  EXPECT_EQ(*q.Quantile(50), fast);
  EXPECT_EQ(*q.Quantile(95), fast);
  EXPECT_EQ(*q.Quantile(96), slow);
  EXPECT_EQ(*q.Quantile(99.9), slow);
  EXPECT_EQ(*q.Quantile(0), fast);    // clamped: the smallest sample's bucket
  EXPECT_EQ(*q.Quantile(250), slow);  // clamped to 100
}

TEST(LatencyQuantileTest, AgreesWithSortedSamplesWithinABucket) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> ms(0.0, 1.0);
  LatencyQuantile q;
  std::vector<absl::Duration> all;
  for (int i = 0; i < 1500; ++i) {
    const absl::Duration d = absl::Milliseconds(ms(rng));
    all.push_back(d);
    q.Record(d);
  }
  std::sort(all.begin(), all.end());
  for (double p : {50.0, 90.0, 95.0, 99.0}) {
    const absl::Duration exact = all[static_cast<size_t>(std::ceil(p / 100 * all.size())) - 1];
    const absl::Duration got = *q.Quantile(p);
    EXPECT_GE(got, exact) << p;
    EXPECT_LE(got, exact * 1.19) << p;
  }
}

// A caller may ask for fewer samples than kMinSamples (deadline admission's
// minSamples), or more.
TEST(LatencyQuantileTest, CallersMinimumOfSamples) {
  LatencyQuantile q;
  EXPECT_FALSE(q.Quantile(90, 1).has_value());
  q.Record(absl::Milliseconds(10));
  ASSERT_TRUE(q.Quantile(90, 1).has_value());
  EXPECT_GE(*q.Quantile(90, 1), absl::Milliseconds(10));
  EXPECT_FALSE(q.Quantile(90, 2).has_value());
  EXPECT_FALSE(q.Quantile(90).has_value()) << "kMinSamples by default";
  EXPECT_TRUE(q.Quantile(90, 0).has_value()) << "at least one sample, whatever is asked";
}

// After two generations of a new latency, the old one is forgotten.
TEST(LatencyQuantileTest, WindowFollowsAChange) {
  LatencyQuantile q;
  for (int i = 0; i < 2 * LatencyQuantile::kGeneration; ++i) q.Record(absl::Milliseconds(50));
  EXPECT_GE(*q.Quantile(50), absl::Milliseconds(50));
  for (int i = 0; i < 2 * LatencyQuantile::kGeneration + 1; ++i) q.Record(absl::Milliseconds(2));
  EXPECT_LE(*q.Quantile(100), absl::Milliseconds(2) * 1.19);
  EXPECT_LE(q.samples(), 2 * LatencyQuantile::kGeneration);
}

}  // namespace
}  // namespace resilience

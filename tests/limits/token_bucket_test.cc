// TokenBucket on a simulated clock: the rate and burst, the retry-after it
// tells, concurrency, and the bounds Validate() puts on its settings.

#include "src/limits/token_bucket.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

class TokenBucketTest : public ::testing::Test {
 protected:
  std::unique_ptr<TokenBucket> Make(double rate, int64_t burst) {
    auto bucket = TokenBucket::Create(rate, burst, clock_);
    EXPECT_TRUE(bucket.ok()) << bucket.status();
    return *std::move(bucket);
  }
  int Drain(TokenBucket& bucket) {
    int n = 0;
    while (bucket.TryAcquire()) ++n;
    return n;
  }
  SimulatedClock clock_;
};

// A full bucket admits `burst` calls at once, then refills at `rate`.
TEST_F(TokenBucketTest, BurstThenRate) {
  auto bucket = Make(100, 20);
  EXPECT_EQ(Drain(*bucket), 20);
  clock_.AdvanceTime(absl::Milliseconds(10));  // one token at 100/s
  EXPECT_EQ(Drain(*bucket), 1);
  clock_.AdvanceTime(absl::Milliseconds(95));
  EXPECT_EQ(Drain(*bucket), 9);
  clock_.AdvanceTime(absl::Seconds(60));  // refills to burst, not beyond
  EXPECT_EQ(Drain(*bucket), 20);
}

// Over an interval, admitted calls = rate x time + burst (exactly, with
// the clock moving in 1 ms steps and calls arriving far faster than the rate).
TEST_F(TokenBucketTest, AdmittedMatchesRateTimesTimePlusBurst) {
  auto bucket = Make(250, 50);
  int admitted = 0;
  for (int ms = 0; ms < 4000; ++ms) {
    for (int i = 0; i < 5; ++i) admitted += bucket->TryAcquire() ? 1 : 0;
    clock_.AdvanceTime(absl::Milliseconds(1));
  }
  // 4 s x 250/s + 50 = 1050; the last token may be in flight at the edge.
  EXPECT_NEAR(admitted, 1050, 1);
}

// A refused call learns when the next token comes.
TEST_F(TokenBucketTest, RetryAfterTellsWhenATokenComes) {
  auto bucket = Make(10, 1);
  ASSERT_TRUE(bucket->TryAcquire());
  absl::Duration retry_after;
  ASSERT_FALSE(bucket->TryAcquire(&retry_after));
  EXPECT_EQ(retry_after, absl::Milliseconds(100));
  clock_.AdvanceTime(absl::Milliseconds(40));
  ASSERT_FALSE(bucket->TryAcquire(&retry_after));
  EXPECT_EQ(retry_after, absl::Milliseconds(60));
  clock_.AdvanceTime(absl::Milliseconds(60));
  EXPECT_TRUE(bucket->TryAcquire());
}

// Concurrent takers never get more than the bucket allows.
TEST_F(TokenBucketTest, ConcurrentTakersGetExactlyTheBurst) {
  auto bucket = Make(1, 1000);
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) admitted += bucket->TryAcquire() ? 1 : 0;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 1000);
}

// Invalid settings are refused with the field named.
TEST_F(TokenBucketTest, Validation) {
  EXPECT_THAT(TokenBucket::Create(0, 1, clock_).status().message(),
              HasSubstr("rate_per_second: must be in [1e-3, 1e9], got 0"));
  EXPECT_THAT(TokenBucket::Create(-5, 1, clock_).status().message(), HasSubstr("rate_per_second"));
  EXPECT_THAT(TokenBucket::Create(10, 0, clock_).status().message(),
              HasSubstr("burst: must be in [1, 1e9], got 0"));
}

// Every rate, burst and combination whose arithmetic would overflow (or
// whose interval would round to nothing) is refused; the edges are accepted.
TEST_F(TokenBucketTest, CreateRefusesOutOfRangeAndOverflowingSettings) {
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
  const std::vector<std::tuple<double, int64_t, std::string>> refused = {
      {1e-10, 1, "rate_per_second: must be in [1e-3, 1e9], got 1e-10"},
      {0.000999, 1, "rate_per_second: must be in [1e-3, 1e9], got 0.000999"},
      {2e9, 1, "rate_per_second: must be in [1e-3, 1e9], got 2e+09"},
      {1e9 + 1, 1, "rate_per_second"},
      {kNan, 1, "rate_per_second: must be in [1e-3, 1e9], got nan"},
      {kInf, 1, "got inf"},
      {-kInf, 1, "got -inf"},
      {std::numeric_limits<double>::denorm_min(), 1, "rate_per_second"},
      {100, 2'000'000'000, "burst: must be in [1, 1e9], got 2000000000"},
      {100, 1'000'000'001, "burst: must be in [1, 1e9], got 1000000001"},
      {100, -1, "burst: must be in [1, 1e9], got -1"},
      {100, kInt64Max, "burst: must be in [1, 1e9]"},
      {100, std::numeric_limits<int64_t>::min(), "burst: must be in [1, 1e9]"},
      // burst * interval > 1e18 ns: at 1e-3/s the interval is 1e12 ns.
      {1e-3, 1'000'001,
       "burst: must be <= 1000000 at rate_per_second 0.001 (an empty bucket must refill "
       "within 1e9s), got 1000001"},
      {1e-3, 1'000'000'000, "burst: must be <= 1000000"},
      {0.5, 500'000'001, "burst: must be <= 500000000 at rate_per_second 0.5"},
  };
  for (const auto& [rate, burst, expected] : refused) {
    absl::StatusOr<std::unique_ptr<TokenBucket>> bucket = TokenBucket::Create(rate, burst, clock_);
    EXPECT_EQ(bucket.status().code(), absl::StatusCode::kInvalidArgument) << rate << " " << burst;
    EXPECT_THAT(bucket.status().message(), HasSubstr(expected));
    EXPECT_EQ(TokenBucket::Validate(rate, burst), bucket.status());
  }
  for (const auto& [rate, burst] : std::vector<std::pair<double, int64_t>>{
           {1e-3, 1}, {1e-3, 1'000'000}, {0.5, 500'000'000}, {1, 1'000'000'000},
           {1e9, 1}, {1e9, 1'000'000'000}, {6.7e8, 1'000'000'000}}) {
    EXPECT_TRUE(TokenBucket::Create(rate, burst, clock_).ok()) << rate << " " << burst;
    EXPECT_LE(burst, TokenBucket::MaxBurst(rate));
    EXPECT_LE(burst * TokenBucket::IntervalNanos(rate), TokenBucket::kMaxRefillNanos);
  }
  EXPECT_EQ(TokenBucket::IntervalNanos(1e-3), 1'000'000'000'000);
  EXPECT_EQ(TokenBucket::IntervalNanos(1e9), 1);
}

// A bucket at the minimum rate admits exactly its burst, then one call per
// 1000 s: the rate is not rounded away to "no limit".
TEST_F(TokenBucketTest, MinimumRateAdmitsExactlyItsBurst) {
  for (int64_t burst : {int64_t{1}, int64_t{3}, int64_t{1'000'000}}) {
    auto bucket = Make(TokenBucket::kMinRatePerSecond, burst);
    int64_t admitted = 0;
    while (bucket->TryAcquire()) ++admitted;
    EXPECT_EQ(admitted, burst);
    absl::Duration retry_after;
    ASSERT_FALSE(bucket->TryAcquire(&retry_after));
    EXPECT_EQ(retry_after, absl::Seconds(1000));
    clock_.AdvanceTime(absl::Seconds(1000) - absl::Nanoseconds(1));
    EXPECT_FALSE(bucket->TryAcquire(&retry_after));
    EXPECT_EQ(retry_after, absl::Nanoseconds(1));
    clock_.AdvanceTime(absl::Nanoseconds(1));
    EXPECT_EQ(Drain(*bucket), 1);
  }
}

// The largest refill time (1e9 s) and the largest rate and burst work:
// nothing overflows, the bucket refills to exactly its burst.
TEST_F(TokenBucketTest, ExtremeBucketsKeepExactCounts) {
  auto slow = Make(1e-3, 1'000'000);  // empty to full: 1e9 s, about 31.7 years
  auto fast = Make(1e9, 1'000'000'000);
  EXPECT_EQ(Drain(*slow), 1'000'000);
  absl::Duration retry_after;
  EXPECT_FALSE(slow->TryAcquire(&retry_after));
  EXPECT_EQ(retry_after, absl::Seconds(1000));
  clock_.AdvanceTime(absl::Seconds(1e9));
  EXPECT_EQ(Drain(*slow), 1'000'000);
  clock_.AdvanceTime(absl::Seconds(1e9) * 2);  // never more than full
  EXPECT_EQ(Drain(*slow), 1'000'000);

  // 1e9/s: one token per nanosecond.
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(fast->TryAcquire());
  auto fast_small = Make(1e9, 1000);
  EXPECT_EQ(Drain(*fast_small), 1000);
  clock_.AdvanceTime(absl::Microseconds(1));
  EXPECT_EQ(Drain(*fast_small), 1000);
}

// At the end of what int64 nanoseconds can hold (the year 2262), the TAT
// arithmetic must not wrap around into "always admit".
TEST(TokenBucketEndOfTimeTest, NothingWrapsAround) {
  constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
  SimulatedClock clock(absl::FromUnixNanos(kInt64Max - 500'000'000'000));  // 500 s left
  auto bucket = TokenBucket::Create(1e-3, 1, clock);  // T = 1000 s
  ASSERT_TRUE(bucket.ok());
  int admitted = 0;
  absl::Duration retry_after;
  for (int i = 0; i < 100; ++i) admitted += (*bucket)->TryAcquire(&retry_after) ? 1 : 0;
  EXPECT_EQ(admitted, 0);
  EXPECT_EQ(retry_after, absl::InfiniteDuration());

  SimulatedClock near_end(absl::FromUnixNanos(kInt64Max - 2'500'000'000'000));  // 2500 s left
  auto second = TokenBucket::Create(1e-3, 1, near_end);
  ASSERT_TRUE(second.ok());
  admitted = 0;
  for (int i = 0; i < 100; ++i) admitted += (*second)->TryAcquire(&retry_after) ? 1 : 0;
  EXPECT_EQ(admitted, 1);  // the full bucket's one token, then nothing
  EXPECT_EQ(retry_after, absl::Seconds(1000));
}

TEST(TokenBucketDefaultsTest, DefaultBurstIsOneSecondOfCallsWithinTheBucketsBounds) {
  EXPECT_EQ(TokenBucket::DefaultBurst(100.0), 100);
  EXPECT_EQ(TokenBucket::DefaultBurst(1.7), 1);  // floored
  EXPECT_EQ(TokenBucket::DefaultBurst(0.5), 1);  // at least one call
  EXPECT_EQ(TokenBucket::DefaultBurst(1e12), TokenBucket::kMaxBurst);
  EXPECT_EQ(TokenBucket::DefaultBurst(std::nan("")), 1);
  // Every default of a valid rate is a valid burst for it.
  for (double rate : {1e-3, 0.5, 1.0, 250.0, 1e9}) {
    EXPECT_TRUE(TokenBucket::Validate(rate, TokenBucket::DefaultBurst(rate)).ok()) << rate;
  }
}

}  // namespace
}  // namespace resilience

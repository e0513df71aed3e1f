// FixedConcurrencyLimiter and TokenBucket, on a simulated clock.

#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/breaker/call_duration_estimate.h"
#include "src/breaker/fixed_concurrency_limiter.h"
#include "src/breaker/simulated_clock.h"
#include "src/breaker/token_bucket.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

// N slots are handed out, the next is refused, a release frees one.
TEST(FixedConcurrencyLimiterTest, HandsOutExactlyTheLimit) {
  FixedConcurrencyLimiter limiter(3);
  EXPECT_TRUE(limiter.TryAcquire());
  EXPECT_TRUE(limiter.TryAcquire());
  EXPECT_TRUE(limiter.TryAcquire());
  EXPECT_FALSE(limiter.TryAcquire());
  EXPECT_EQ(limiter.in_flight(), 3);
  limiter.Release(Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_EQ(limiter.in_flight(), 2);
  EXPECT_TRUE(limiter.TryAcquire());
  EXPECT_EQ(limiter.limit(), 3);
}

// Threads racing for slots never exceed the limit and end at zero.
TEST(FixedConcurrencyLimiterTest, NeverExceedsTheLimitUnderContention) {
  FixedConcurrencyLimiter limiter(2);
  std::atomic<int> holders{0};
  std::atomic<int> max_holders{0};
  std::atomic<int64_t> acquired{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        if (!limiter.TryAcquire()) continue;
        acquired.fetch_add(1);
        const int now = holders.fetch_add(1) + 1;
        int seen = max_holders.load();
        while (now > seen && !max_holders.compare_exchange_weak(seen, now)) {
        }
        holders.fetch_sub(1);
        limiter.Release(Outcome::kSuccess, absl::ZeroDuration());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(max_holders.load(), 2);
  EXPECT_GT(acquired.load(), 0);
  EXPECT_EQ(limiter.in_flight(), 0);
}

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
              HasSubstr("rate_per_second: must be in (0, 1e9], got 0"));
  EXPECT_THAT(TokenBucket::Create(-5, 1, clock_).status().message(), HasSubstr("rate_per_second"));
  EXPECT_THAT(TokenBucket::Create(10, 0, clock_).status().message(),
              HasSubstr("burst: must be in [1, 2^30], got 0"));
}

// Before any call finished, the estimate is the age of the first call
// started (never a small made-up number); then the smoothed duration.
TEST(CallDurationEstimateTest, FirstCallAgeThenSmoothedDuration) {
  SimulatedClock clock;
  CallDurationEstimate estimate;
  EXPECT_EQ(estimate.Expected(clock.Now()), absl::ZeroDuration());
  estimate.Started(clock.Now());
  clock.AdvanceTime(absl::Milliseconds(50));
  estimate.Started(clock.Now());  // only the first start counts
  clock.AdvanceTime(absl::Milliseconds(250));
  EXPECT_EQ(estimate.Expected(clock.Now()), absl::Milliseconds(300));
  estimate.Finished(absl::Milliseconds(400));
  EXPECT_EQ(estimate.Expected(clock.Now()), absl::Milliseconds(400));
  estimate.Finished(absl::Milliseconds(80));  // 400 + (80 - 400) / 8
  EXPECT_EQ(estimate.Expected(clock.Now()), absl::Milliseconds(360));
}

}  // namespace
}  // namespace resilience

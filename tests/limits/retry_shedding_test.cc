// RetryShedding: validation, what counts as a retry, and each kind of limit
// (concurrency fixed and adaptive, token bucket, fleet-wide, per caller)
// shedding retried attempts before first attempts of the same level, on a
// simulated clock.

#include "src/limits/retry_shedding.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "src/limits/aimd_concurrency_limiter.h"
#include "src/limits/fixed_concurrency_limiter.h"
#include "src/limits/global_rate_limiter.h"
#include "src/limits/per_caller_limits.h"
#include "src/limits/token_bucket.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

constexpr Criticality kCrit = Criticality::kCritical;
constexpr Criticality kShed = Criticality::kSheddable;

TEST(RetrySheddingTest, ValidateNamesTheFieldAndValue) {
  EXPECT_TRUE(RetryShedding::Validate({0.5, false}).ok());
  EXPECT_TRUE(RetryShedding::Validate({0, true}).ok());
  EXPECT_TRUE(RetryShedding::Validate({1, true}).ok());
  EXPECT_THAT(RetryShedding::Validate({1.5, false}).message(),
              HasSubstr("retry_share: must be in [0, 1], got 1.5"));
  EXPECT_THAT(RetryShedding::Validate({-0.1, false}).message(), HasSubstr("got -0.1"));
  EXPECT_FALSE(RetryShedding::Validate({std::nan(""), false}).ok());
}

TEST(RetrySheddingTest, OnlyAPositiveDecimalCountIsARetry) {
  EXPECT_TRUE(RetryShedding::IsRetry("1"));
  EXPECT_TRUE(RetryShedding::IsRetry("2"));
  EXPECT_TRUE(RetryShedding::IsRetry("007"));
  EXPECT_TRUE(RetryShedding::IsRetry(std::string(40, '9')));  // never converted: no overflow
  EXPECT_FALSE(RetryShedding::IsRetry(""));
  EXPECT_FALSE(RetryShedding::IsRetry("0"));
  EXPECT_FALSE(RetryShedding::IsRetry("000"));
  EXPECT_FALSE(RetryShedding::IsRetry("-1"));
  EXPECT_FALSE(RetryShedding::IsRetry("+1"));
  EXPECT_FALSE(RetryShedding::IsRetry("1x"));
  EXPECT_FALSE(RetryShedding::IsRetry(" 1"));
}

TEST(RetrySheddingTest, OffJudgesRetriesAsFirstAttempts) {
  const CriticalityShares shares;
  const RetryShedding off;
  EXPECT_FALSE(off.sheds_retries());
  EXPECT_FALSE(off.do_not_retry());
  EXPECT_EQ(&off.SharesFor(shares, /*retry=*/true), &shares);
  // A share of 1 sheds nothing either, but may still say "do not retry".
  const RetryShedding whole(shares, {1.0, true});
  EXPECT_FALSE(whole.sheds_retries());
  EXPECT_TRUE(whole.do_not_retry());
  EXPECT_EQ(&whole.SharesFor(shares, true), &shares);
}

TEST(RetrySheddingTest, RetrySharesScaleEveryLevel) {
  const CriticalityShares shares;  // 1, 1, 0.75, 0.5
  const RetryShedding shedding(shares, {0.5, false});
  ASSERT_TRUE(shedding.sheds_retries());
  const CriticalityShares& retry = shedding.SharesFor(shares, true);
  EXPECT_EQ(&shedding.SharesFor(shares, false), &shares);
  EXPECT_DOUBLE_EQ(retry.share(Criticality::kCriticalPlus), 0.5);
  EXPECT_DOUBLE_EQ(retry.share(kCrit), 0.5);
  EXPECT_DOUBLE_EQ(retry.share(Criticality::kSheddablePlus), 0.375);
  EXPECT_DOUBLE_EQ(retry.share(kShed), 0.25);
  EXPECT_TRUE(CriticalityShares::Validate(retry.shares()).ok());
  // A retry share of 0: retried attempts get nothing of any limit.
  const RetryShedding none(shares, {0.0, false});
  EXPECT_EQ(none.retry_shares().ConcurrencyCap(20, Criticality::kCriticalPlus), 0);
}

TEST(RetrySheddingTest, ConcurrencyRefusesRetriesAboveTheirShareFirstAttemptsToTheLimit) {
  FixedConcurrencyLimiter limiter(20);
  const CriticalityShares shares;
  const RetryShedding shedding(shares, {0.5, false});
  const CriticalityShares& first = shedding.SharesFor(shares, false);
  const CriticalityShares& retry = shedding.SharesFor(shares, true);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(retry.TryAcquire(limiter, kShed));
  EXPECT_FALSE(retry.TryAcquire(limiter, kShed));  // 20 x 0.5 x 0.5
  EXPECT_TRUE(first.TryAcquire(limiter, kShed));   // SHEDDABLE's own 10
  for (int i = 6; i < 10; ++i) EXPECT_TRUE(retry.TryAcquire(limiter, kCrit));
  EXPECT_FALSE(retry.TryAcquire(limiter, kCrit));  // 10 taken: a retried CRITICAL's cap
  for (int i = 10; i < 20; ++i) EXPECT_TRUE(first.TryAcquire(limiter, kCrit));
  EXPECT_FALSE(first.TryAcquire(limiter, kCrit));  // the limit itself
  EXPECT_EQ(limiter.in_flight(), 20);
}

TEST(RetrySheddingTest, AdaptiveLimitRetryCapFollowsTheLimit) {
  SimulatedClock clock(absl::FromUnixSeconds(1000));
  AimdConcurrencyLimiter::Options options;
  options.initial_limit = 20;
  options.min_samples = 1;
  options.sample_window = absl::Milliseconds(10);
  std::unique_ptr<AimdConcurrencyLimiter> limiter = *AimdConcurrencyLimiter::Create(options, clock);
  const CriticalityShares shares;
  const RetryShedding shedding(shares, {0.5, false});
  const CriticalityShares& retry = shedding.retry_shares();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(retry.TryAcquire(*limiter, kCrit));
  EXPECT_FALSE(retry.TryAcquire(*limiter, kCrit));
  // A window with a drop: the limit falls to 18, a retry's cap to 9.
  clock.AdvanceTime(absl::Milliseconds(20));
  limiter->Release(Outcome::kFailure, absl::Milliseconds(20));
  ASSERT_EQ(limiter->limit(), 18);
  EXPECT_EQ(retry.ConcurrencyCap(limiter->limit(), kCrit), 9);
  EXPECT_FALSE(retry.TryAcquire(*limiter, kCrit));  // 9 in flight
  EXPECT_TRUE(shares.TryAcquire(*limiter, kCrit));  // a first attempt: up to 18
}

// At 2x the rate, first attempts and retries of the same level arriving
// evenly: the first attempts get the whole rate, retries only what they
// leave.
TEST(RetrySheddingTest, OverloadedBucketAdmitsFirstAttemptsBeforeRetries) {
  SimulatedClock clock(absl::FromUnixSeconds(1000));
  std::unique_ptr<TokenBucket> bucket = *TokenBucket::Create(100, 100, clock);
  const CriticalityShares shares;
  const RetryShedding shedding(shares, {0.5, false});
  int first_offered = 0, first_admitted = 0, retries_admitted = 0;
  for (int i = 0; i < 4000; ++i) {  // 10 s at 400/s: first attempts alone at 2x
    clock.AdvanceTime(absl::Microseconds(2500));
    if (i % 2 == 0) {
      ++first_offered;
      first_admitted += bucket->TryAcquire(shedding.SharesFor(shares, false), kCrit);
    } else {
      retries_admitted += bucket->TryAcquire(shedding.SharesFor(shares, true), kCrit);
    }
  }
  // 10 s x 100/s and the burst: the first attempts take all of it but the
  // half of the burst the retries took at the start.
  EXPECT_NEAR(first_admitted + retries_admitted, 1000 + 100, 5);
  EXPECT_LE(retries_admitted, 51);
  EXPECT_GE(first_admitted, 1000 + 100 - 51 - 5);
  EXPECT_LT(first_admitted, first_offered);
  // Without retry shedding the retries take their half of every token.
  std::unique_ptr<TokenBucket> plain = *TokenBucket::Create(100, 100, clock);
  int plain_retries = 0;
  for (int i = 0; i < 4000; ++i) {
    clock.AdvanceTime(absl::Microseconds(2500));
    plain_retries += plain->TryAcquire(RetryShedding().SharesFor(shares, i % 2 == 1), kCrit);
  }
  EXPECT_GT(plain_retries, 450);
}

TEST(RetrySheddingTest, FleetLimitLeavesLeasedTokensToFirstAttempts) {
  SimulatedClock clock(absl::FromUnixSeconds(1000));
  GlobalRateLimiter::Options options;
  options.rate_per_second = 100;
  options.burst = 100;
  std::unique_ptr<GlobalRateLimiter> limiter = *GlobalRateLimiter::Create(options, clock);
  ASSERT_EQ(limiter->MaxLease(), 10);
  limiter->OnLease(10, 10, 50);
  const CriticalityShares shares;
  const RetryShedding shedding(shares, {0.5, false});
  int retries = 0;
  while (limiter->TryAcquire(shedding.retry_shares(), kCrit)) ++retries;
  EXPECT_EQ(retries, 5);  // 5 of the 10 leased are first attempts'
  int first = 0;
  while (limiter->TryAcquire(shares, kCrit)) ++first;
  EXPECT_EQ(first, 5);
}

TEST(RetrySheddingTest, PerCallerConcurrencyShedsTheCallersRetriesFirst) {
  SimulatedClock clock(absl::FromUnixSeconds(1000));
  PerCallerLimits::Options options;
  options.max_concurrency = 4;
  std::unique_ptr<PerCallerLimits> limits = *PerCallerLimits::Create(options, clock);
  const CriticalityShares shares;
  const RetryShedding shedding(shares, {0.5, false});
  std::vector<PerCallerLimits::Slot> slots;
  for (int i = 0; i < 2; ++i) {
    PerCallerLimits::Admission a = limits->TryAcquire("tenant", shedding.retry_shares(), kCrit);
    ASSERT_EQ(a.verdict, PerCallerLimits::Verdict::kAdmitted);
    slots.push_back(std::move(a.slot));
  }
  PerCallerLimits::Admission refused = limits->TryAcquire("tenant", shedding.retry_shares(), kCrit);
  EXPECT_EQ(refused.verdict, PerCallerLimits::Verdict::kConcurrency);
  EXPECT_EQ(refused.cap, 2);
  for (int i = 0; i < 2; ++i) {
    PerCallerLimits::Admission a = limits->TryAcquire("tenant", shares, kCrit);
    ASSERT_EQ(a.verdict, PerCallerLimits::Verdict::kAdmitted);
    slots.push_back(std::move(a.slot));
  }
}

}  // namespace
}  // namespace resilience

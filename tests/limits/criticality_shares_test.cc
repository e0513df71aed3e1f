// CriticalityShares: validation, the cap each level sees, and the three
// kinds of limit (concurrency, token bucket, fleet-wide) shedding the less
// critical first, on a simulated clock.

#include "src/limits/criticality_shares.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "src/limits/fixed_concurrency_limiter.h"
#include "src/limits/global_rate_limiter.h"
#include "src/limits/token_bucket.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

constexpr Criticality kPlus = Criticality::kCriticalPlus;
constexpr Criticality kCrit = Criticality::kCritical;
constexpr Criticality kShedPlus = Criticality::kSheddablePlus;
constexpr Criticality kShed = Criticality::kSheddable;

TEST(CriticalityLevelTest, NamesRoundTripAndJunkIsNoLevel) {
  for (int i = 0; i < kCriticalityLevels; ++i) {
    const auto level = static_cast<Criticality>(i);
    EXPECT_EQ(ParseCriticality(CriticalityName(level)), level);
  }
  EXPECT_EQ(CriticalityName(kShedPlus), "SHEDDABLE_PLUS");
  EXPECT_EQ(ParseCriticality("critical"), std::nullopt);
  EXPECT_EQ(ParseCriticality(""), std::nullopt);
  EXPECT_EQ(ParseCriticality("CRITICAL_PLUS_PLUS"), std::nullopt);
  EXPECT_EQ(ParseCriticality(std::string(1 << 16, 'C')), std::nullopt);
  EXPECT_EQ(ParseCriticality(absl::string_view("CRITICAL\0", 9)), std::nullopt);
  EXPECT_EQ(LessCritical(kCrit, kShed), kShed);
  EXPECT_EQ(LessCritical(kPlus, kCrit), kCrit);
}

TEST(CriticalitySharesTest, ValidateNamesTheLevelAndValue) {
  EXPECT_TRUE(CriticalityShares::Validate({1, 1, 0.75, 0.5}).ok());
  EXPECT_TRUE(CriticalityShares::Validate({1, 0.5, 0.5, 0}).ok());
  absl::Status s = CriticalityShares::Validate({1, 1, 0.75, 1.5});
  EXPECT_THAT(s.message(), HasSubstr("criticality_shares.sheddable: must be in [0, 1], got 1.5"));
  s = CriticalityShares::Validate({1, 1, std::nan(""), 0.5});
  EXPECT_THAT(s.message(), HasSubstr("criticality_shares.sheddable_plus: must be in [0, 1]"));
  s = CriticalityShares::Validate({1, 0.5, 0.75, 0.5});
  EXPECT_THAT(s.message(), HasSubstr("criticality_shares.sheddable_plus: must be <= "
                                     "criticality_shares.critical (0.5), got 0.75"));
  s = CriticalityShares::Validate({-0.1, 0, 0, 0});
  EXPECT_THAT(s.message(), HasSubstr("critical_plus: must be in [0, 1], got -0.1"));
}

TEST(CriticalitySharesTest, DefaultCapsLeaveCriticalTheWholeLimit) {
  const CriticalityShares shares;
  EXPECT_EQ(shares.ConcurrencyCap(10, kPlus), 10);
  EXPECT_EQ(shares.ConcurrencyCap(10, kCrit), 10);
  EXPECT_EQ(shares.ConcurrencyCap(10, kShedPlus), 7);
  EXPECT_EQ(shares.ConcurrencyCap(10, kShed), 5);
  // A limit of 1 keeps one slot for every level with a share above 0.
  EXPECT_EQ(shares.ConcurrencyCap(1, kShed), 1);
  const CriticalityShares none({1, 1, 0, 0});
  EXPECT_EQ(none.ConcurrencyCap(10, kShed), 0);
  EXPECT_EQ(shares.LeaseReserve(10, kCrit), 0);
  EXPECT_EQ(shares.LeaseReserve(10, kShed), 5);
  EXPECT_EQ(shares.LeaseReserve(10, kShedPlus), 3);
  EXPECT_EQ(shares.BucketCapacity(1000, 100, kCrit), 1000);
  EXPECT_EQ(shares.BucketCapacity(1000, 100, kShed), 500);
  EXPECT_EQ(shares.BucketCapacity(1000, 600, kShed), 600);  // at least one token
  EXPECT_EQ(none.BucketCapacity(1000, 100, kShed), 0);
}

TEST(CriticalitySharesTest, ConcurrencySlotsBeyondTheShareAreKeptForTheCritical) {
  FixedConcurrencyLimiter limiter(4);
  const CriticalityShares shares;
  EXPECT_TRUE(shares.TryAcquire(limiter, kShed));
  EXPECT_TRUE(shares.TryAcquire(limiter, kShed));
  EXPECT_FALSE(shares.TryAcquire(limiter, kShed));  // 2 of 4 taken: SHEDDABLE's cap
  EXPECT_TRUE(shares.TryAcquire(limiter, kShedPlus));  // cap 3
  EXPECT_FALSE(shares.TryAcquire(limiter, kShedPlus));
  EXPECT_TRUE(shares.TryAcquire(limiter, kCrit));
  EXPECT_FALSE(shares.TryAcquire(limiter, kCrit));  // the limit itself
  EXPECT_FALSE(shares.TryAcquire(limiter, kPlus));
  EXPECT_EQ(limiter.in_flight(), 4);
  limiter.Release(Outcome::kSuccess, absl::ZeroDuration());
  limiter.Release(Outcome::kSuccess, absl::ZeroDuration());
  EXPECT_FALSE(shares.TryAcquire(limiter, kShed));  // 2 still taken
  EXPECT_TRUE(shares.TryAcquire(limiter, kPlus));
}

TEST(CriticalitySharesTest, TokenBucketKeepsTheTopForTheCritical) {
  SimulatedClock clock(absl::FromUnixSeconds(1000));
  std::unique_ptr<TokenBucket> bucket = *TokenBucket::Create(10, 10, clock);
  const CriticalityShares shares;
  int sheddable = 0;
  while (bucket->TryAcquire(shares, kShed)) ++sheddable;
  EXPECT_EQ(sheddable, 5);
  absl::Duration retry_after;
  EXPECT_FALSE(bucket->TryAcquire(shares, kShed, &retry_after));
  EXPECT_EQ(retry_after, absl::Milliseconds(100));  // one token above the share
  int critical = 0;
  while (bucket->TryAcquire(shares, kCrit)) ++critical;
  EXPECT_EQ(critical, 5);
  // The plain TryAcquire() is CRITICAL's.
  clock.AdvanceTime(absl::Milliseconds(100));
  EXPECT_FALSE(bucket->TryAcquire(shares, kShed));
  EXPECT_TRUE(bucket->TryAcquire());
}

// At 3x the rate, 20% CRITICAL and 80% SHEDDABLE arriving evenly: every
// CRITICAL call is admitted, SHEDDABLE takes what is left of the rate.
TEST(CriticalitySharesTest, OverloadedBucketAdmitsEveryCriticalCall) {
  SimulatedClock clock(absl::FromUnixSeconds(1000));
  std::unique_ptr<TokenBucket> bucket = *TokenBucket::Create(100, 100, clock);
  const CriticalityShares shares;
  int critical_offered = 0, critical_admitted = 0, sheddable_admitted = 0;
  for (int i = 0; i < 3000; ++i) {  // 10 s at 300/s
    clock.AdvanceTime(absl::Microseconds(3333));
    if (i % 5 == 0) {
      ++critical_offered;
      critical_admitted += bucket->TryAcquire(shares, kCrit);
    } else {
      sheddable_admitted += bucket->TryAcquire(shares, kShed);
    }
  }
  EXPECT_EQ(critical_admitted, critical_offered);
  // 10 s x 100/s and the half of the burst SHEDDABLE may take: the top half
  // stays in the bucket for CRITICAL calls.
  EXPECT_NEAR(critical_admitted + sheddable_admitted, 1000 + 50, 5);
  EXPECT_GT(sheddable_admitted, 400);
}

TEST(CriticalitySharesTest, FleetLimitLeavesLeasedTokensToTheCritical) {
  SimulatedClock clock(absl::FromUnixSeconds(1000));
  GlobalRateLimiter::Options options;
  options.rate_per_second = 100;
  options.burst = 100;
  std::unique_ptr<GlobalRateLimiter> limiter = *GlobalRateLimiter::Create(options, clock);
  ASSERT_EQ(limiter->MaxLease(), 10);
  limiter->OnLease(10, 10, 50);
  ASSERT_EQ(limiter->mode(), GlobalRateLimiter::Mode::kGlobal);
  const CriticalityShares shares;
  int sheddable = 0;
  while (limiter->TryAcquire(shares, kShed)) ++sheddable;
  EXPECT_EQ(sheddable, 5);  // 5 of the 10 leased are CRITICAL's
  int critical = 0;
  while (limiter->TryAcquire(shares, kCrit)) ++critical;
  EXPECT_EQ(critical, 5);
}

}  // namespace
}  // namespace resilience

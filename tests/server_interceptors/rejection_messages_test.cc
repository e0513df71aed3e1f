// RejectionMessages: a method's rate-limit rejection messages, formatted once.

#include "src/server_interceptors/rejection_messages.h"

#include <optional>

#include "gtest/gtest.h"
#include "src/limits/retry_shedding.h"

namespace resilience {
namespace {

constexpr char kMethod[] = "/cache.v1.CacheService/Get";

TEST(RejectionMessagesTest, NamesTheMethodTheLimitAndALevelWithLessThanTheWhole) {
  // The default shares: CRITICAL_PLUS and CRITICAL 1, SHEDDABLE_PLUS 0.75,
  // SHEDDABLE 0.5.
  const RejectionMessages messages(kMethod, CriticalityShares(), 0.001, 250.0, std::nullopt, "");
  EXPECT_EQ(messages.rate(Criticality::kCriticalPlus),
            "/cache.v1.CacheService/Get: rate limit 0.001/s reached");
  EXPECT_EQ(messages.rate(Criticality::kCritical),
            "/cache.v1.CacheService/Get: rate limit 0.001/s reached");
  EXPECT_EQ(messages.rate(Criticality::kSheddablePlus),
            "/cache.v1.CacheService/Get: rate limit 0.001/s reached for SHEDDABLE_PLUS calls "
            "(share 0.75)");
  EXPECT_EQ(messages.rate(Criticality::kSheddable),
            "/cache.v1.CacheService/Get: rate limit 0.001/s reached for SHEDDABLE calls "
            "(share 0.5)");
  EXPECT_EQ(messages.global_rate(Criticality::kCritical),
            "/cache.v1.CacheService/Get: global rate limit 250/s reached");
  EXPECT_EQ(messages.global_rate(Criticality::kSheddable),
            "/cache.v1.CacheService/Get: global rate limit 250/s reached for SHEDDABLE calls "
            "(share 0.5)");
  EXPECT_EQ(messages.unusable(), "");
}

TEST(RejectionMessagesTest, RetriedAttemptsSayRetriedWithTheirShares) {
  const RetryShedding shedding(CriticalityShares(), {0.5, false});
  const RejectionMessages messages(kMethod, shedding.retry_shares(), 100.0, 250.0, 20, "",
                                   /*retried=*/true);
  EXPECT_EQ(messages.rate(Criticality::kCritical),
            "/cache.v1.CacheService/Get: rate limit 100/s reached for retried CRITICAL calls "
            "(share 0.5)");
  EXPECT_EQ(messages.global_rate(Criticality::kSheddable),
            "/cache.v1.CacheService/Get: global rate limit 250/s reached for retried SHEDDABLE "
            "calls (share 0.25)");
  ASSERT_NE(messages.concurrency(20, Criticality::kCritical), nullptr);
  EXPECT_EQ(*messages.concurrency(20, Criticality::kCritical),
            "/cache.v1.CacheService/Get: concurrency limit 20 reached for retried CRITICAL calls "
            "(10 of 20 slots)");
}

TEST(RejectionMessagesTest, SharesOfOneAddNothing) {
  const RejectionMessages messages(kMethod, CriticalityShares({1.0, 1.0, 1.0, 1.0}), 5.0,
                                   std::nullopt, std::nullopt, "");
  EXPECT_EQ(messages.rate(Criticality::kSheddable),
            "/cache.v1.CacheService/Get: rate limit 5/s reached");
  EXPECT_EQ(messages.global_rate(Criticality::kSheddable), "");  // no global limit
}

TEST(RejectionMessagesTest, SaysWhyLimitsAreUnusable) {
  const RejectionMessages messages(kMethod, CriticalityShares(), std::nullopt, std::nullopt,
                                   std::nullopt, "no fleet limit backend");
  EXPECT_EQ(messages.unusable(),
            "/cache.v1.CacheService/Get: throttle not usable: no fleet limit backend");
  EXPECT_EQ(messages.rate(Criticality::kCritical), "");
}

TEST(RejectionMessagesTest, AFixedConcurrencyLimitsMessagesServeOnlyThatLimit) {
  const RejectionMessages messages(kMethod, CriticalityShares(), std::nullopt, std::nullopt, 4,
                                   "");
  ASSERT_NE(messages.concurrency(4, Criticality::kCritical), nullptr);
  EXPECT_EQ(*messages.concurrency(4, Criticality::kCritical),
            "/cache.v1.CacheService/Get: concurrency limit 4 reached");
  EXPECT_EQ(*messages.concurrency(4, Criticality::kSheddable),
            "/cache.v1.CacheService/Get: concurrency limit 4 reached for SHEDDABLE calls "
            "(2 of 4 slots)");
  EXPECT_EQ(*messages.concurrency(4, Criticality::kSheddable),
            RejectionMessages::Concurrency(kMethod, false, 4, 2, Criticality::kSheddable));
  // Resized by a reload since: formatted per rejection.
  EXPECT_EQ(messages.concurrency(5, Criticality::kCritical), nullptr);
  // None formatted without a fixed limit.
  const RejectionMessages none(kMethod, CriticalityShares(), 1.0, std::nullopt, std::nullopt, "");
  EXPECT_EQ(none.concurrency(4, Criticality::kCritical), nullptr);
  EXPECT_EQ(RejectionMessages::Concurrency(kMethod, true, 2, 2, Criticality::kCritical),
            "/cache.v1.CacheService/Get: adaptive concurrency limit 2 reached");
}

}  // namespace
}  // namespace resilience

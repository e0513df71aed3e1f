// RejectionMessages: a method's rate-limit rejection messages, formatted once.

#include "src/server_interceptors/rejection_messages.h"

#include <optional>

#include "gtest/gtest.h"

namespace resilience {
namespace {

constexpr char kMethod[] = "/cache.v1.CacheService/Get";

TEST(RejectionMessagesTest, NamesTheMethodTheLimitAndALevelWithLessThanTheWhole) {
  // The default shares: CRITICAL_PLUS and CRITICAL 1, SHEDDABLE_PLUS 0.75,
  // SHEDDABLE 0.5.
  const RejectionMessages messages(kMethod, CriticalityShares(), 0.001, 250.0, "");
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

TEST(RejectionMessagesTest, SharesOfOneAddNothing) {
  const RejectionMessages messages(kMethod, CriticalityShares({1.0, 1.0, 1.0, 1.0}), 5.0,
                                   std::nullopt, "");
  EXPECT_EQ(messages.rate(Criticality::kSheddable),
            "/cache.v1.CacheService/Get: rate limit 5/s reached");
  EXPECT_EQ(messages.global_rate(Criticality::kSheddable), "");  // no global limit
}

TEST(RejectionMessagesTest, SaysWhyLimitsAreUnusable) {
  const RejectionMessages messages(kMethod, CriticalityShares(), std::nullopt, std::nullopt,
                                   "no fleet limit backend");
  EXPECT_EQ(messages.unusable(),
            "/cache.v1.CacheService/Get: throttle not usable: no fleet limit backend");
  EXPECT_EQ(messages.rate(Criticality::kCritical), "");
}

}  // namespace
}  // namespace resilience

// LimiterFactory on a SimulatedClock: what a scope's limiters keep across
// an update (a fixed limit resized with its slots, an unchanged rate's
// tokens, unchanged per-caller keys), what is made anew, the message of a
// fleet-wide limit without a backend, and the client's breakers and
// bulkheads.

#include "src/engine/limiter_factory.h"

#include <memory>
#include <optional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

ThrottleSettings Fixed(int max_concurrency, double rate = 0, int64_t burst = 0) {
  ThrottleSettings settings;
  settings.max_concurrency = max_concurrency;
  settings.rate_per_second = rate;
  settings.burst = burst;
  return settings;
}

class LimiterFactoryTest : public ::testing::Test {
 protected:
  SimulatedClock clock_;
  LimiterFactory factory_{clock_, /*seed=*/1};
};

TEST_F(LimiterFactoryTest, AFixedLimitKeepsItsLimiterResizedWithItsSlots) {
  const ScopeLimiters first = factory_.ForScope("/s.S/M", Fixed(4), nullptr);
  ASSERT_NE(first.concurrency, nullptr);
  EXPECT_FALSE(first.adaptive);
  EXPECT_EQ(first.rate, nullptr);
  ASSERT_TRUE(first.concurrency->TryAcquire());
  const ScopeLimiters second = factory_.ForScope("/s.S/M", Fixed(2), &first);
  EXPECT_EQ(second.concurrency, first.concurrency);
  EXPECT_EQ(second.concurrency->limit(), 2);
  EXPECT_TRUE(second.unusable.empty());
}

TEST_F(LimiterFactoryTest, TheSameRateKeepsItsBucketAnotherGetsANewOne) {
  const ScopeLimiters first = factory_.ForScope("/s.S/M", Fixed(0, 10, 5), nullptr);
  ASSERT_NE(first.rate, nullptr);
  EXPECT_EQ(first.concurrency, nullptr);
  EXPECT_EQ(factory_.ForScope("/s.S/M", Fixed(3, 10, 5), &first).rate, first.rate);
  const ScopeLimiters other = factory_.ForScope("/s.S/M", Fixed(0, 20, 5), &first);
  ASSERT_NE(other.rate, nullptr);
  EXPECT_NE(other.rate, first.rate);
  EXPECT_EQ(other.rate->rate_per_second(), 20);
}

TEST_F(LimiterFactoryTest, AFleetWideLimitWithoutABackendIsUnusableAndSaysWhere) {
  ThrottleSettings settings = Fixed(0);
  settings.global.emplace();
  settings.global->path = "methodConfig[0].throttle.global";
  const ScopeLimiters made = factory_.ForScope("/s.S/M", settings, nullptr);
  EXPECT_EQ(made.global, nullptr);
  EXPECT_THAT(made.unusable, HasSubstr("methodConfig[0].throttle.global"));
}

TEST_F(LimiterFactoryTest, BreakersAndBulkheads) {
  BreakerSettings none;
  none.kind = BreakerKind::kNone;
  EXPECT_EQ(factory_.MakeBreaker(none, nullptr), nullptr);
  BreakerSettings sre;
  sre.kind = BreakerKind::kSre;
  EXPECT_NE(factory_.MakeBreaker(sre, [](const BreakerTransition&) {}), nullptr);

  Bulkhead::Options options;
  options.max_concurrency = 2;
  const std::shared_ptr<Bulkhead> first = factory_.MakeBulkhead(options, std::nullopt, nullptr);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(factory_.MakeBulkhead(options, options, first), first);
  Bulkhead::Options more = options;
  more.max_concurrency = 3;
  EXPECT_NE(factory_.MakeBulkhead(more, options, first), first);
}

}  // namespace
}  // namespace resilience

// The throttle the simulated scenarios drive is the one the policy file
// describes: its concurrency limit and per-caller limits, or an error that
// names the policy.

#include "experiments/overload/simulated_throttle.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"

namespace overload {
namespace {

TEST(SimulatedThrottleTest, BuildsTheMethodsAndEachCallersLimits) {
  resilience::SimulatedClock clock;
  absl::StatusOr<SimulatedThrottle> t = SimulatedThrottle::Create(
      Policy{"p", R"({"maxConcurrency": 2, "perCaller": {"key": {"header": "x-tenant-id"},)"
                  R"( "maxConcurrency": 1}})"},
      clock);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_NE(t->limiter, nullptr);
  ASSERT_NE(t->per_caller, nullptr);
  EXPECT_TRUE(t->limiter->TryAcquire());
  EXPECT_TRUE(t->limiter->TryAcquire());
  EXPECT_FALSE(t->limiter->TryAcquire());
  resilience::PerCallerLimits::Admission a = t->per_caller->TryAcquire(
      "tenant-1", t->shares, resilience::Criticality::kCritical);
  EXPECT_EQ(a.verdict, resilience::PerCallerLimits::Verdict::kAdmitted);
  EXPECT_NE(t->per_caller->TryAcquire("tenant-1", t->shares, resilience::Criticality::kCritical)
                .verdict,
            resilience::PerCallerLimits::Verdict::kAdmitted);
}

TEST(SimulatedThrottleTest, ARateOnlyThrottleHasNoConcurrencyLimit) {
  resilience::SimulatedClock clock;
  absl::StatusOr<SimulatedThrottle> t =
      SimulatedThrottle::Create(Policy{"rate", R"({"ratePerSecond": 10})"}, clock);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->limiter, nullptr);
  EXPECT_EQ(t->per_caller, nullptr);
}

TEST(SimulatedThrottleTest, APolicyWithoutAThrottleOrThatDoesNotLoadIsNamed) {
  resilience::SimulatedClock clock;
  for (const Policy& policy : {Policy{"none", ""}, Policy{"bad", R"({"maxConcurrency": -1})"}}) {
    absl::StatusOr<SimulatedThrottle> t = SimulatedThrottle::Create(policy, clock);
    ASSERT_FALSE(t.ok()) << policy.name;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(t.status().message().rfind(absl::StrCat("policy ", policy.name, ": "), 0), 0u)
        << t.status();
  }
}

}  // namespace
}  // namespace overload

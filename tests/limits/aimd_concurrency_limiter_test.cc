// AimdConcurrencyLimiter on a SimulatedClock: one step up per busy window
// without drops, a multiplicative step down per window with drops (failures
// and calls at least `timeout` slow), none while the load leaves it idle.

#include "src/limits/aimd_concurrency_limiter.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

AimdConcurrencyLimiter::Options SmallWindows() {
  AimdConcurrencyLimiter::Options o;
  o.initial_limit = 10;
  o.sample_window = absl::Milliseconds(100);
  o.min_samples = 1;
  o.timeout = absl::Milliseconds(50);
  return o;
}

std::unique_ptr<AimdConcurrencyLimiter> MustCreate(const AimdConcurrencyLimiter::Options& o,
                                                   Clock& clock) {
  auto made = AimdConcurrencyLimiter::Create(o, clock);
  EXPECT_TRUE(made.ok()) << made.status();
  return *std::move(made);
}

// Holds `n` slots, moves the clock by `wait`, and releases them all with
// `outcome` and `latency`.
void Batch(AimdConcurrencyLimiter& limiter, SimulatedClock& clock, int n, absl::Duration wait,
           Outcome outcome, absl::Duration latency) {
  for (int i = 0; i < n; ++i) ASSERT_TRUE(limiter.TryAcquire());
  clock.AdvanceTime(wait);
  for (int i = 0; i < n; ++i) limiter.Release(outcome, latency);
}

TEST(AimdConcurrencyLimiterTest, GrowsByOnePerBusyWindowWithoutDrops) {
  SimulatedClock clock;
  auto limiter = MustCreate(SmallWindows(), clock);
  EXPECT_EQ(limiter->limit(), 10);
  for (int w = 0; w < 5; ++w) {
    Batch(*limiter, clock, 8, absl::Milliseconds(100), Outcome::kSuccess, absl::Milliseconds(10));
  }
  EXPECT_EQ(limiter->limit(), 15);
}

// Windows in which every call expired (ReleaseExpired: a drop, and no latency
// sample for AIMD) close on their drops and back off: 10 -> 9 -> 8.1; a call
// its client cancelled (kNeutral) is neither.
TEST(AimdConcurrencyLimiterTest, ExpiredCallsBackOffCancelledOnesDoNot) {
  SimulatedClock clock;
  auto limiter = MustCreate(SmallWindows(), clock);
  for (int w = 0; w < 3; ++w) {
    Batch(*limiter, clock, 2, absl::Milliseconds(100), Outcome::kNeutral, absl::Milliseconds(1));
  }
  EXPECT_EQ(limiter->limit(), 10);
  for (int w = 0; w < 2; ++w) {
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(limiter->TryAcquire());
    clock.AdvanceTime(absl::Milliseconds(100));
    for (int i = 0; i < 2; ++i) limiter->ReleaseExpired(absl::Milliseconds(20));
  }
  EXPECT_EQ(limiter->limit(), 8);
  EXPECT_EQ(limiter->in_flight(), 0);
}

TEST(AimdConcurrencyLimiterTest, DoesNotGrowWhileMostOfTheLimitIsUnused) {
  SimulatedClock clock;
  auto limiter = MustCreate(SmallWindows(), clock);
  for (int w = 0; w < 5; ++w) {
    Batch(*limiter, clock, 2, absl::Milliseconds(100), Outcome::kSuccess, absl::Milliseconds(10));
  }
  EXPECT_EQ(limiter->limit(), 10);
}

TEST(AimdConcurrencyLimiterTest, BacksOffOnFailuresAndTimeouts) {
  SimulatedClock clock;
  AimdConcurrencyLimiter::Options o = SmallWindows();
  o.initial_limit = 100;
  auto limiter = MustCreate(o, clock);
  // A failure: x0.9.
  Batch(*limiter, clock, 60, absl::Milliseconds(100), Outcome::kFailure, absl::Milliseconds(10));
  EXPECT_EQ(limiter->limit(), 90);
  // A call at the timeout: another x0.9.
  Batch(*limiter, clock, 60, absl::Milliseconds(100), Outcome::kSuccess, absl::Milliseconds(50));
  EXPECT_EQ(limiter->limit(), 81);
  // Down to min_limit and no further.
  for (int w = 0; w < 60; ++w) {
    Batch(*limiter, clock, 1, absl::Milliseconds(100), Outcome::kFailure, absl::Milliseconds(1));
  }
  EXPECT_EQ(limiter->limit(), o.min_limit);
}

TEST(AimdConcurrencyLimiterTest, AWindowWaitsForItsTime) {
  SimulatedClock clock;
  auto limiter = MustCreate(SmallWindows(), clock);
  Batch(*limiter, clock, 8, absl::Milliseconds(50), Outcome::kFailure, absl::Milliseconds(1));
  EXPECT_EQ(limiter->limit(), 10);  // the window is 100 ms
  Batch(*limiter, clock, 8, absl::Milliseconds(50), Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_EQ(limiter->limit(), 9);   // closed now, with the failures in it
}

TEST(AimdConcurrencyLimiterTest, ValidateNamesTheFieldAndTheValue) {
  AimdConcurrencyLimiter::Options o;
  o.backoff_ratio = 1.0;
  EXPECT_THAT(std::string(AimdConcurrencyLimiter::Validate(o).message()),
              HasSubstr("backoff_ratio: must be in [0.1, 1), got 1"));
  o = {};
  o.timeout = absl::ZeroDuration();
  EXPECT_THAT(std::string(AimdConcurrencyLimiter::Validate(o).message()),
              HasSubstr("timeout: must be in (0, 720h], got 0"));
  o = {};
  o.min_limit = 0;
  EXPECT_THAT(std::string(AimdConcurrencyLimiter::Validate(o).message()),
              HasSubstr("min_limit: must be in [1, 1000000], got 0"));
  EXPECT_TRUE(AimdConcurrencyLimiter::Validate({}).ok());
}

}  // namespace
}  // namespace resilience

// Breakers measure their windows, open periods and latencies in monotonic
// time (Clock::Now()): a step of the wall clock (Clock::WallNow()), back or
// forward, neither ends an open period early or late, nor forgets or keeps
// the window's outcomes, nor makes a call slow.

#include <memory>
#include <utility>

#include "gtest/gtest.h"
#include "src/breaker/sre_breaker.h"
#include "src/breaker/three_state_breaker.h"
#include "tests/core/fake_random.h"
#include "tests/core/stepping_wall_clock.h"

namespace resilience {
namespace {

using ::resilience::testing::FakeRandom;
using ::resilience::testing::SteppingWallClock;

constexpr absl::Duration kDay = absl::Hours(24);

// Admits one call, lets `latency` of monotonic time pass while the wall
// clock steps by `wall_step` in the middle of it, and records it with the
// latency a caller measures: Now() at the end minus the admission's start.
void CallAcrossAStep(Breaker& breaker, SteppingWallClock& clock, Outcome outcome,
                     absl::Duration latency, absl::Duration wall_step) {
  Admission a = breaker.Allow();
  ASSERT_TRUE(a.admitted()) << RejectReasonName(a.reason());
  clock.AdvanceTime(latency / 2);
  clock.StepWall(wall_step);
  clock.AdvanceTime(latency - latency / 2);
  a.Record(outcome, clock.Now() - a.start());
}

std::unique_ptr<ThreeStateBreaker> MakeThreeState(const ThreeStateBreaker::Options& options,
                                                  Clock& clock) {
  auto breaker = ThreeStateBreaker::Create(options, clock);
  EXPECT_TRUE(breaker.ok()) << breaker.status();
  return *std::move(breaker);
}

// The wall clock stepping back an hour does not hold an open breaker open
// for that hour: the open period (5 s) ends after 5 s of monotonic time, to
// the nanosecond, as without the step.
TEST(BreakerClockStepTest, WallStepBackDoesNotProlongTheOpenPeriod) {
  SteppingWallClock clock;
  ThreeStateBreaker::Options options;
  auto breaker = MakeThreeState(options, clock);
  for (int i = 0; i < options.min_requests; ++i) {
    CallAcrossAStep(*breaker, clock, Outcome::kFailure, absl::Milliseconds(1),
                    absl::ZeroDuration());
  }
  ASSERT_EQ(breaker->state(), BreakerState::kOpen);
  clock.StepWall(-absl::Hours(1));
  clock.AdvanceTime(options.open_duration - absl::Nanoseconds(1));
  EXPECT_EQ(breaker->Allow().reason(), RejectReason::kOpen);
  clock.AdvanceTime(absl::Nanoseconds(1));
  Admission probe = breaker->Allow();
  EXPECT_TRUE(probe.admitted());
  EXPECT_TRUE(probe.probe());
  EXPECT_EQ(breaker->state(), BreakerState::kHalfOpen);
}

// The wall clock stepping forward a day neither ends the open period at once
// nor empties the window: 19 failures before the step and 1 after it still
// trip (min_requests 20, window 10 s), because only 20 ms of monotonic time
// passed.
TEST(BreakerClockStepTest, WallStepForwardKeepsTheWindowAndTheOpenPeriod) {
  SteppingWallClock clock;
  ThreeStateBreaker::Options options;
  auto breaker = MakeThreeState(options, clock);
  for (int i = 0; i < options.min_requests - 1; ++i) {
    CallAcrossAStep(*breaker, clock, Outcome::kFailure, absl::Milliseconds(1),
                    absl::ZeroDuration());
  }
  clock.StepWall(kDay);
  CallAcrossAStep(*breaker, clock, Outcome::kFailure, absl::Milliseconds(1), absl::ZeroDuration());
  EXPECT_EQ(breaker->state(), BreakerState::kOpen);
  EXPECT_EQ(breaker->Snapshot().counts.failure, options.min_requests);
  clock.StepWall(kDay);
  EXPECT_EQ(breaker->Allow().reason(), RejectReason::kOpen);
}

// A call of 10 ms during which the wall clock steps forward a day is a
// 10 ms call: not slow against a 100 ms threshold, so 20 such calls leave
// the breaker closed with 20 successes and no slow call.
TEST(BreakerClockStepTest, WallStepDuringACallDoesNotMakeItSlow) {
  SteppingWallClock clock;
  ThreeStateBreaker::Options options;
  options.slow_call_threshold = absl::Milliseconds(100);
  options.slow_call_rate_threshold = 0.3;
  auto breaker = MakeThreeState(options, clock);
  for (int i = 0; i < options.min_requests; ++i) {
    CallAcrossAStep(*breaker, clock, Outcome::kSuccess, absl::Milliseconds(10),
                    i % 2 == 0 ? kDay : -kDay);
  }
  EXPECT_EQ(breaker->state(), BreakerState::kClosed);
  const RollingWindow::Counts counts = breaker->Snapshot().counts;
  EXPECT_EQ(counts.success, options.min_requests);
  EXPECT_EQ(counts.slow, 0);
  EXPECT_EQ(counts.failure, 0);
}

// The SRE breaker's window ignores the wall clock too: failures recorded
// before a day's step forward still drive its drop probability, exactly as
// the formula gives for the counts, and a step back does not lower it.
TEST(BreakerClockStepTest, SreWindowIgnoresWallSteps) {
  SteppingWallClock clock;
  SreBreaker::Options options;
  options.random = std::make_shared<FakeRandom>(1.0);  // never drop while filling
  options.recovery_acceleration = false;
  options.refresh_interval = absl::ZeroDuration();
  auto made = SreBreaker::Create(options, clock);
  ASSERT_TRUE(made.ok()) << made.status();
  std::unique_ptr<SreBreaker> breaker = *std::move(made);
  for (int i = 0; i < 20; ++i) {
    CallAcrossAStep(*breaker, clock, Outcome::kFailure, absl::Milliseconds(1),
                    absl::ZeroDuration());
  }
  const double before = breaker->Snapshot().drop_probability;
  // (requests - protection - k * accepts) / (requests + 1) = (20 - 5 - 0) / 21.
  EXPECT_DOUBLE_EQ(before, 15.0 / 21.0);
  clock.StepWall(kDay);
  EXPECT_DOUBLE_EQ(breaker->Snapshot().drop_probability, before);
  clock.StepWall(-2 * kDay);
  EXPECT_DOUBLE_EQ(breaker->Snapshot().drop_probability, before);
  // Monotonic time passing does move it: past the window, nothing is left.
  clock.AdvanceTime(options.window);
  EXPECT_DOUBLE_EQ(breaker->Snapshot().drop_probability, 0.0);
}

}  // namespace
}  // namespace resilience

// ThreeStateBreaker while Closed and Open: what trips it (volume, failure
// rate, consecutive failures, slow calls), the open period, the modes and
// the window. Half-open probing is in three_state_breaker_half_open_test.cc.

#include "src/breaker/three_state_breaker.h"

#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/breaker/three_state_breaker_test_fixture.h"

namespace resilience {
namespace {

using ::resilience::testing::ThreeStateBreakerTest;
using ::testing::ElementsAre;
using State = BreakerState;

// The volume threshold: 19 failures do not trip, the 20th does.
TEST_F(ThreeStateBreakerTest, VolumeThreshold) {
  auto breaker = Make();
  Record(*breaker, 19, Outcome::kFailure);
  EXPECT_EQ(breaker->state(), State::kClosed);
  Record(*breaker, 1, Outcome::kFailure);
  EXPECT_EQ(breaker->state(), State::kOpen);
  EXPECT_THAT(transitions_, ElementsAre(std::pair(State::kClosed, State::kOpen)));
}

// The failure-rate trip happens exactly at the threshold.
TEST_F(ThreeStateBreakerTest, FailureRateThreshold) {
  auto breaker = Make();
  Record(*breaker, 11, Outcome::kSuccess);
  Record(*breaker, 10, Outcome::kFailure);  // 10/21 < 0.5
  EXPECT_EQ(breaker->state(), State::kClosed);
  Record(*breaker, 1, Outcome::kFailure);  // 11/22 = 0.5
  EXPECT_EQ(breaker->state(), State::kOpen);
  // What tripped it, for the event's words.
  ASSERT_EQ(details_.size(), 1u);
  EXPECT_EQ(details_[0].cause, TransitionCause::kFailureRate);
  EXPECT_DOUBLE_EQ(details_[0].figure, 0.5);
  EXPECT_DOUBLE_EQ(details_[0].threshold, 0.5);
  EXPECT_EQ(details_[0].calls, 22);
}

// Successes alone never trip, however many.
TEST_F(ThreeStateBreakerTest, SuccessesNeverTrip) {
  auto breaker = Make();
  Record(*breaker, 1000, Outcome::kSuccess);
  EXPECT_EQ(breaker->state(), State::kClosed);
  EXPECT_EQ(breaker->Snapshot().counts.success, 1000);
}

// Consecutive failures trip at once, below the volume threshold; a success in
// between resets the run.
TEST_F(ThreeStateBreakerTest, ConsecutiveFailuresTrip) {
  options_.consecutive_failures = 3;
  auto breaker = Make();
  Record(*breaker, 2, Outcome::kFailure);
  Record(*breaker, 1, Outcome::kSuccess);
  Record(*breaker, 2, Outcome::kFailure);
  EXPECT_EQ(breaker->state(), State::kClosed);
  EXPECT_EQ(breaker->Snapshot().consecutive_failures, 2);
  Record(*breaker, 1, Outcome::kFailure);
  EXPECT_EQ(breaker->state(), State::kOpen);
  ASSERT_EQ(details_.size(), 1u);
  EXPECT_EQ(details_[0].cause, TransitionCause::kConsecutiveFailures);
  EXPECT_EQ(details_[0].figure, 3);
  EXPECT_EQ(details_[0].threshold, 3);
}

// A slow-call rate at its threshold trips; slow calls also count as failures.
TEST_F(ThreeStateBreakerTest, SlowCallRateTrips) {
  options_.slow_call_threshold = absl::Milliseconds(100);
  options_.slow_call_rate_threshold = 0.3;
  options_.failure_rate_threshold = 1.0;  // isolate the slow-call trip
  auto breaker = Make();
  Record(*breaker, 14, Outcome::kSuccess, absl::Milliseconds(10));
  Record(*breaker, 5, Outcome::kSuccess, absl::Milliseconds(500));
  EXPECT_EQ(breaker->state(), State::kClosed);                      // 19 calls: below the volume
  Record(*breaker, 1, Outcome::kSuccess, absl::Milliseconds(500));  // 6/20 = 0.3
  EXPECT_EQ(breaker->state(), State::kOpen);
  ASSERT_EQ(details_.size(), 1u);
  EXPECT_EQ(details_[0].cause, TransitionCause::kSlowCallRate);
  EXPECT_DOUBLE_EQ(details_[0].figure, 0.3);
  EXPECT_DOUBLE_EQ(details_[0].threshold, 0.3);
  EXPECT_EQ(details_[0].calls, 20);
}

// Slow successes count as failures in the window.
TEST_F(ThreeStateBreakerTest, SlowCallsAreFailures) {
  options_.slow_call_threshold = absl::Milliseconds(100);
  auto breaker = Make();
  Record(*breaker, 1, Outcome::kSuccess, absl::Milliseconds(101));
  RollingWindow::Counts c = breaker->Snapshot().counts;
  EXPECT_EQ(c.failure, 1);
  EXPECT_EQ(c.slow, 1);
  EXPECT_EQ(c.success, 0);
}

// Open rejects everything until open_duration has passed.
TEST_F(ThreeStateBreakerTest, OpenRejectsUntilTheOpenDurationEnds) {
  auto breaker = Make();
  Trip(*breaker);
  Admission a = breaker->Allow();
  EXPECT_FALSE(a.admitted());
  EXPECT_EQ(a.reason(), RejectReason::kOpen);
  clock_.AdvanceTime(absl::Seconds(5) - absl::Nanoseconds(1));
  EXPECT_EQ(breaker->Allow().reason(), RejectReason::kOpen);
  EXPECT_EQ(breaker->Snapshot().drop_probability, 1.0);
  EXPECT_EQ(breaker->Snapshot().counts.rejected, 2);
  clock_.AdvanceTime(absl::Nanoseconds(1));
  Admission probe = breaker->Allow();
  EXPECT_TRUE(probe.admitted());
  EXPECT_TRUE(probe.probe());
  EXPECT_EQ(breaker->state(), State::kHalfOpen);
}

// force_open rejects everything; force_closed admits everything and keeps
// counting; disabled counts nothing; metrics_only counts and never trips.
TEST_F(ThreeStateBreakerTest, Modes) {
  options_.mode = BreakerMode::kForceOpen;
  auto breaker = Make();
  EXPECT_EQ(breaker->Allow().reason(), RejectReason::kForcedOpen);
  EXPECT_EQ(breaker->Snapshot().drop_probability, 1.0);

  breaker->SetMode(BreakerMode::kForceClosed);
  Record(*breaker, 100, Outcome::kFailure);
  EXPECT_EQ(breaker->state(), State::kClosed);
  EXPECT_EQ(breaker->Snapshot().counts.failure, 100);

  options_.mode = BreakerMode::kDisabled;
  auto disabled = Make();
  Record(*disabled, 100, Outcome::kFailure);
  EXPECT_EQ(disabled->state(), State::kClosed);
  EXPECT_EQ(disabled->Snapshot().counts, RollingWindow::Counts());

  options_.mode = BreakerMode::kMetricsOnly;
  auto metrics = Make();
  Record(*metrics, 100, Outcome::kFailure);
  EXPECT_EQ(metrics->state(), State::kClosed);
  EXPECT_EQ(metrics->Snapshot().counts.failure, 100);
  EXPECT_EQ(metrics->Snapshot().failure_rate, 1.0);
  EXPECT_TRUE(transitions_.empty());

  // Back to normal: the next failure trips on the window it kept.
  metrics->SetMode(BreakerMode::kNormal);
  Record(*metrics, 1, Outcome::kFailure);
  EXPECT_EQ(metrics->state(), State::kOpen);
}

// The window forgets old failures: 19 old failures plus 1 new do not trip.
TEST_F(ThreeStateBreakerTest, WindowForgetsOldFailures) {
  auto breaker = Make();
  Record(*breaker, 19, Outcome::kFailure);
  clock_.AdvanceTime(absl::Seconds(10));
  Record(*breaker, 1, Outcome::kFailure);
  EXPECT_EQ(breaker->state(), State::kClosed);
  EXPECT_EQ(breaker->Snapshot().counts.failure, 1);
}

// Neutral outcomes while Closed are not counted.
TEST_F(ThreeStateBreakerTest, NeutralOutcomesAreNotCounted) {
  auto breaker = Make();
  Record(*breaker, 50, Outcome::kNeutral);
  EXPECT_EQ(breaker->Snapshot().counts, RollingWindow::Counts());
  EXPECT_EQ(breaker->state(), State::kClosed);
}

}  // namespace
}  // namespace resilience

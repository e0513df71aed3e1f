// ThreeStateBreaker while Half-Open: probes, their limits and interval, the
// open period's backoff, stale and superseded probe results.

#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/breaker/three_state_breaker.h"
#include "tests/breaker/three_state_breaker_test_fixture.h"

namespace resilience {
namespace {

using ::resilience::testing::ThreeStateBreakerTest;
using ::testing::ElementsAre;
using State = BreakerState;

// Half-open: one probe at a time; its success closes the breaker with a fresh
// window.
TEST_F(ThreeStateBreakerTest, ProbeSuccessCloses) {
  auto breaker = Make();
  Trip(*breaker);
  clock_.AdvanceTime(absl::Seconds(5));
  Admission probe = breaker->Allow();
  ASSERT_TRUE(probe.admitted());
  EXPECT_EQ(breaker->Allow().reason(), RejectReason::kHalfOpenProbeLimit);
  probe.Record(Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_EQ(breaker->state(), State::kClosed);
  EXPECT_EQ(breaker->Snapshot().counts.completed(), 0);
  EXPECT_THAT(transitions_, ElementsAre(std::pair(State::kClosed, State::kOpen),
                                        std::pair(State::kOpen, State::kHalfOpen),
                                        std::pair(State::kHalfOpen, State::kClosed)));
}

// A probe failure re-opens; the open period doubles each time up to the cap,
// and a full close resets it.
TEST_F(ThreeStateBreakerTest, OpenDurationBackoffAndReset) {
  options_.open_duration = absl::Seconds(5);
  options_.open_duration_multiplier = 2;
  options_.max_open_duration = absl::Seconds(15);
  auto breaker = Make();
  Trip(*breaker);
  for (absl::Duration expected : {absl::Seconds(10), absl::Seconds(15), absl::Seconds(15)}) {
    clock_.AdvanceTime(breaker->current_open_duration());
    Admission probe = breaker->Allow();
    ASSERT_TRUE(probe.admitted());
    probe.Record(Outcome::kFailure, absl::Milliseconds(1));
    EXPECT_EQ(breaker->state(), State::kOpen);
    EXPECT_EQ(breaker->current_open_duration(), expected);
    clock_.AdvanceTime(expected - absl::Milliseconds(1));
    EXPECT_EQ(breaker->Allow().reason(), RejectReason::kOpen);
    clock_.AdvanceTime(-expected);  // no-op: the simulated clock never goes back
  }
  clock_.AdvanceTime(absl::Seconds(15));
  Admission probe = breaker->Allow();
  ASSERT_TRUE(probe.admitted());
  probe.Record(Outcome::kSuccess, absl::Milliseconds(1));
  ASSERT_EQ(breaker->state(), State::kClosed);
  Trip(*breaker);
  EXPECT_EQ(breaker->current_open_duration(), absl::Seconds(5));
}

// Several successes to close, several probes at once, and the probe interval.
TEST_F(ThreeStateBreakerTest, ProbeLimitIntervalAndSuccessesToClose) {
  options_.half_open_max_probes = 2;
  options_.half_open_successes_to_close = 3;
  options_.probe_interval = absl::Milliseconds(200);
  auto breaker = Make();
  Trip(*breaker);
  clock_.AdvanceTime(absl::Seconds(5));
  Admission p1 = breaker->Allow();
  ASSERT_TRUE(p1.admitted());
  EXPECT_EQ(breaker->Allow().reason(), RejectReason::kHalfOpenProbeInterval);
  clock_.AdvanceTime(absl::Milliseconds(200));
  Admission p2 = breaker->Allow();
  ASSERT_TRUE(p2.admitted());
  clock_.AdvanceTime(absl::Milliseconds(200));
  EXPECT_EQ(breaker->Allow().reason(), RejectReason::kHalfOpenProbeLimit);
  p1.Record(Outcome::kSuccess, absl::Milliseconds(1));
  p2.Record(Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_EQ(breaker->state(), State::kHalfOpen);  // 2 of 3
  Admission p3 = breaker->Allow();
  ASSERT_TRUE(p3.admitted());
  p3.Record(Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_EQ(breaker->state(), State::kClosed);
}

// A neutral probe (e.g. the caller cancelled) frees its slot and decides
// nothing; so does an Admission dropped without Record().
TEST_F(ThreeStateBreakerTest, NeutralProbeReleasesItsSlot) {
  options_.probe_interval = absl::ZeroDuration();
  auto breaker = Make();
  Trip(*breaker);
  clock_.AdvanceTime(absl::Seconds(5));
  Admission probe = breaker->Allow();
  ASSERT_TRUE(probe.admitted());
  EXPECT_EQ(breaker->Allow().reason(), RejectReason::kHalfOpenProbeLimit);
  probe.Record(Outcome::kNeutral, absl::Milliseconds(1));
  EXPECT_EQ(breaker->state(), State::kHalfOpen);
  {
    Admission abandoned = breaker->Allow();
    ASSERT_TRUE(abandoned.admitted());
  }  // destroyed without Record(): neutral
  Admission next = breaker->Allow();
  EXPECT_TRUE(next.admitted());
  EXPECT_EQ(breaker->state(), State::kHalfOpen);
}

// A report from an older generation is ignored: a call admitted while Closed
// that fails after the breaker went Half-Open neither re-opens it nor takes a
// probe's place.
TEST_F(ThreeStateBreakerTest, StaleGenerationReportsAreIgnored) {
  auto breaker = Make();
  Admission old_call = breaker->Allow();
  ASSERT_TRUE(old_call.admitted());
  Trip(*breaker);
  clock_.AdvanceTime(absl::Seconds(5));
  Admission probe = breaker->Allow();
  ASSERT_TRUE(probe.admitted());
  const BreakerSnapshot before = breaker->Snapshot();
  old_call.Record(Outcome::kFailure, absl::Milliseconds(1));
  EXPECT_EQ(breaker->state(), State::kHalfOpen);
  EXPECT_EQ(breaker->Snapshot().counts, before.counts);
  probe.Record(Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_EQ(breaker->state(), State::kClosed);
  EXPECT_GT(breaker->Snapshot().generation, before.generation);
}

// A late probe result after the breaker moved on is ignored too.
TEST_F(ThreeStateBreakerTest, HalfOpenMaxWaitReopensAndIgnoresTheLateProbe) {
  options_.half_open_max_wait = absl::Seconds(30);
  auto breaker = Make();
  Trip(*breaker);
  clock_.AdvanceTime(absl::Seconds(5));
  Admission stuck = breaker->Allow();
  ASSERT_TRUE(stuck.admitted());
  clock_.AdvanceTime(absl::Seconds(30) - absl::Milliseconds(1));
  EXPECT_EQ(breaker->Allow().reason(), RejectReason::kHalfOpenProbeLimit);
  clock_.AdvanceTime(absl::Milliseconds(1));
  EXPECT_EQ(breaker->Allow().reason(), RejectReason::kOpen);
  EXPECT_EQ(breaker->state(), State::kOpen);
  stuck.Record(Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_EQ(breaker->state(), State::kOpen);
  // Counted as a failed half-open: the next open period is longer.
  EXPECT_EQ(breaker->current_open_duration(), absl::Seconds(10));
}

// probe_overdue: a probe stuck on a slow backend holds the others back only
// for probe_overdue, not for its whole timeout; the second probe's success
// closes the breaker and the stuck probe's late failure is then ignored.
TEST_F(ThreeStateBreakerTest, OverdueProbeLetsAnotherProbeGo) {
  options_.probe_interval = absl::Milliseconds(20);
  options_.probe_overdue = absl::Milliseconds(50);
  auto breaker = Make();
  Trip(*breaker);
  clock_.AdvanceTime(options_.open_duration);
  Admission stuck = breaker->Allow();
  ASSERT_TRUE(stuck.admitted());
  EXPECT_TRUE(stuck.probe());
  clock_.AdvanceTime(absl::Milliseconds(49));
  EXPECT_EQ(breaker->Allow().reason(), RejectReason::kHalfOpenProbeLimit);
  clock_.AdvanceTime(absl::Milliseconds(1));
  Admission second = breaker->Allow();
  ASSERT_TRUE(second.admitted());
  EXPECT_TRUE(second.probe());
  // The next extra probe needs the newest one to be overdue in turn.
  EXPECT_EQ(breaker->Allow().reason(), RejectReason::kHalfOpenProbeLimit);
  second.Record(Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_EQ(breaker->state(), State::kClosed);
  clock_.AdvanceTime(absl::Seconds(1));
  stuck.Record(Outcome::kFailure, absl::Seconds(1));
  EXPECT_EQ(breaker->state(), State::kClosed);
  EXPECT_EQ(breaker->Snapshot().counts.failure, 0);
}

// Without probe_overdue (the default) the stuck probe holds every call back
// until it reports: that is the behaviour probe_overdue exists to bound.
TEST_F(ThreeStateBreakerTest, WithoutProbeOverdueTheStuckProbeHoldsEveryoneBack) {
  options_.probe_interval = absl::Milliseconds(20);
  auto breaker = Make();
  Trip(*breaker);
  clock_.AdvanceTime(options_.open_duration);
  Admission stuck = breaker->Allow();
  ASSERT_TRUE(stuck.admitted());
  clock_.AdvanceTime(absl::Milliseconds(999));
  EXPECT_EQ(breaker->Allow().reason(), RejectReason::kHalfOpenProbeLimit);
  clock_.AdvanceTime(absl::Milliseconds(1));
  stuck.Record(Outcome::kFailure, absl::Seconds(1));
  EXPECT_EQ(breaker->state(), State::kOpen);
}

// A probe superseded by an overdue one: its late failure is older news than
// the overdue probe still in flight. With open periods no longer than
// probe_overdue (20 ms growing to 40 ms here), re-opening would not space
// the probes further apart, only hold every call back for an open period
// after a backend that may have recovered since: the failure frees its slot
// and the newest probe's result decides. This is what kept the slow family's
// worst recovery above 0.5 s (docs/breaker-quality.md).
TEST_F(ThreeStateBreakerTest, SupersededProbesFailureDoesNotReopen) {
  options_.probe_interval = absl::Milliseconds(20);
  options_.probe_overdue = absl::Milliseconds(50);
  options_.open_duration = absl::Milliseconds(20);
  options_.max_open_duration = absl::Milliseconds(40);
  auto breaker = Make();
  auto [first, second] = TwoProbes(*breaker, absl::Milliseconds(50));
  clock_.AdvanceTime(absl::Milliseconds(30));
  first.Record(Outcome::kFailure, absl::Milliseconds(80));
  EXPECT_EQ(breaker->state(), State::kHalfOpen);
  // Its slot is free, but the newest probe is not overdue yet.
  EXPECT_EQ(breaker->Allow().reason(), RejectReason::kHalfOpenProbeLimit);
  second.Record(Outcome::kSuccess, absl::Milliseconds(30));
  EXPECT_EQ(breaker->state(), State::kClosed);
  EXPECT_THAT(transitions_, ElementsAre(std::pair(State::kClosed, State::kOpen),
                                        std::pair(State::kOpen, State::kHalfOpen),
                                        std::pair(State::kHalfOpen, State::kClosed)));
}

// With a longer open period (5 s growing to 10 s) the superseded failure
// re-opens with growth, so the backoff still spaces the probes into a
// backend that stays down; the open period counts from the newest probe's
// admission, not from the old news' arrival.
TEST_F(ThreeStateBreakerTest, SupersededProbesFailureBacksOffFromTheNewestProbe) {
  options_.probe_interval = absl::Milliseconds(20);
  options_.probe_overdue = absl::Milliseconds(50);
  auto breaker = Make();
  auto [first, second] = TwoProbes(*breaker, absl::Milliseconds(50));
  clock_.AdvanceTime(absl::Milliseconds(950));
  first.Record(Outcome::kFailure, absl::Seconds(1));
  EXPECT_EQ(breaker->state(), State::kOpen);
  EXPECT_EQ(breaker->current_open_duration(), absl::Seconds(10));
  // Open until the second probe's admission + 10 s, 9.05 s from now.
  clock_.AdvanceTime(absl::Milliseconds(9049));
  EXPECT_EQ(breaker->Allow().reason(), RejectReason::kOpen);
  clock_.AdvanceTime(absl::Milliseconds(1));
  Admission third = breaker->Allow();
  EXPECT_TRUE(third.admitted());
  EXPECT_TRUE(third.probe());
  // The second probe belongs to the generation before the re-open.
  second.Record(Outcome::kSuccess, absl::Seconds(10));
  EXPECT_EQ(breaker->state(), State::kHalfOpen);
}

// The newest probe's failure re-opens, with growth, even when an older one
// is still in flight; the older one's result is then of an old generation.
TEST_F(ThreeStateBreakerTest, NewestOverdueProbesFailureReopens) {
  options_.probe_interval = absl::Milliseconds(20);
  options_.probe_overdue = absl::Milliseconds(50);
  auto breaker = Make();
  auto [first, second] = TwoProbes(*breaker, absl::Milliseconds(50));
  second.Record(Outcome::kFailure, absl::Milliseconds(1));
  EXPECT_EQ(breaker->state(), State::kOpen);
  EXPECT_EQ(breaker->current_open_duration(), options_.open_duration * 2);
  first.Record(Outcome::kSuccess, absl::Milliseconds(51));
  EXPECT_EQ(breaker->state(), State::kOpen);
}

// Without an overdue probe, a failure of any of several probes re-opens
// (half_open_max_probes > 1: concurrent probes are not superseded).
TEST_F(ThreeStateBreakerTest, ConcurrentProbesFailureReopens) {
  options_.probe_interval = absl::ZeroDuration();
  options_.half_open_max_probes = 2;
  options_.probe_overdue = absl::Milliseconds(50);
  auto breaker = Make();
  auto [first, second] = TwoProbes(*breaker, absl::Milliseconds(10));
  first.Record(Outcome::kFailure, absl::Milliseconds(10));
  EXPECT_EQ(breaker->state(), State::kOpen);
}

}  // namespace
}  // namespace resilience

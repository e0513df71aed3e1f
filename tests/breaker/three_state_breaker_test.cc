#include "src/breaker/three_state_breaker.h"

#include <thread>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using State = BreakerState;

class ThreeStateBreakerTest : public ::testing::Test {
 protected:
  std::unique_ptr<ThreeStateBreaker> Make() {
    options_.listener = [this](const BreakerTransition& t) {
      transitions_.push_back({t.from, t.to});
    };
    auto breaker = ThreeStateBreaker::Create(options_, clock_);
    EXPECT_TRUE(breaker.ok()) << breaker.status();
    return *std::move(breaker);
  }

  // Admits `n` calls one after the other, each taking `latency` of simulated
  // time, and records `outcome` for each; all must be admitted.
  void Record(ThreeStateBreaker& breaker, int n, Outcome outcome,
              absl::Duration latency = absl::Milliseconds(1)) {
    for (int i = 0; i < n; ++i) {
      Admission a = breaker.Allow();
      ASSERT_TRUE(a.admitted()) << "call " << i << ": " << RejectReasonName(a.reason());
      clock_.AdvanceTime(latency);
      a.Record(outcome, latency);
    }
  }

  // Trips a fresh breaker with min_requests failures.
  void Trip(ThreeStateBreaker& breaker) {
    Record(breaker, static_cast<int>(options_.min_requests), Outcome::kFailure);
    ASSERT_EQ(breaker.state(), State::kOpen);
  }

  // Trips `breaker`, waits out its open period and admits two probes `gap`
  // apart (the second one overdue when gap >= probe_overdue).
  std::pair<Admission, Admission> TwoProbes(ThreeStateBreaker& breaker, absl::Duration gap) {
    Trip(breaker);
    clock_.AdvanceTime(options_.open_duration);
    Admission first = breaker.Allow();
    EXPECT_TRUE(first.admitted());
    clock_.AdvanceTime(gap);
    Admission second = breaker.Allow();
    EXPECT_TRUE(second.admitted());
    return {std::move(first), std::move(second)};
  }

  SimulatedClock clock_;
  ThreeStateBreaker::Options options_;
  std::vector<std::pair<State, State>> transitions_;
};

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
}

// A slow-call rate at its threshold trips; slow calls also count as failures.
TEST_F(ThreeStateBreakerTest, SlowCallRateTrips) {
  options_.slow_call_threshold = absl::Milliseconds(100);
  options_.slow_call_rate_threshold = 0.3;
  options_.failure_rate_threshold = 1.0;  // isolate the slow-call trip
  auto breaker = Make();
  Record(*breaker, 14, Outcome::kSuccess, absl::Milliseconds(10));
  Record(*breaker, 5, Outcome::kSuccess, absl::Milliseconds(500));
  EXPECT_EQ(breaker->state(), State::kClosed);  // 19 calls: below the volume
  Record(*breaker, 1, Outcome::kSuccess, absl::Milliseconds(500));  // 6/20 = 0.3
  EXPECT_EQ(breaker->state(), State::kOpen);
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

// Each invalid option is refused with the field and value named.
TEST(ThreeStateBreakerValidateTest, RefusesInvalidOptions) {
  SimulatedClock clock;
  struct Case {
    std::function<void(ThreeStateBreaker::Options&)> set;
    std::string text;
  };
  const std::vector<Case> cases = {
      {[](auto& o) { o.failure_rate_threshold = 0; }, "three_state.failure_rate_threshold: must be in (0, 1], got 0"},
      {[](auto& o) { o.failure_rate_threshold = 1.5; }, "failure_rate_threshold"},
      {[](auto& o) { o.min_requests = 0; }, "three_state.min_requests: must be >= 1, got 0"},
      {[](auto& o) { o.consecutive_failures = -1; }, "three_state.consecutive_failures"},
      {[](auto& o) { o.slow_call_rate_threshold = 2; }, "three_state.slow_call_rate_threshold"},
      {[](auto& o) { o.slow_call_rate_threshold = 0.5; }, "when slow_call_threshold is not set"},
      {[](auto& o) { o.slow_call_threshold = absl::Seconds(-1); }, "three_state.slow_call_threshold"},
      {[](auto& o) { o.buckets = 0; }, "three_state.buckets"},
      {[](auto& o) { o.window = absl::Seconds(1); o.buckets = 3; }, "three_state.window"},
      {[](auto& o) { o.open_duration = absl::ZeroDuration(); }, "three_state.open_duration: must be > 0"},
      {[](auto& o) { o.open_duration_multiplier = 0.5; }, "three_state.open_duration_multiplier"},
      {[](auto& o) { o.max_open_duration = absl::Seconds(1); }, "three_state.max_open_duration: must be >= open_duration (5s), got 1s"},
      {[](auto& o) { o.half_open_max_probes = 0; }, "three_state.half_open_max_probes"},
      {[](auto& o) { o.half_open_successes_to_close = 0; }, "three_state.half_open_successes_to_close"},
      {[](auto& o) { o.probe_interval = absl::Seconds(-1); }, "three_state.probe_interval"},
      {[](auto& o) { o.half_open_max_wait = absl::ZeroDuration(); }, "three_state.half_open_max_wait"},
      {[](auto& o) { o.probe_overdue = absl::Milliseconds(-1); }, "three_state.probe_overdue"},
  };
  for (const Case& c : cases) {
    ThreeStateBreaker::Options o;
    c.set(o);
    auto b = ThreeStateBreaker::Create(o, clock);
    EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(b.status().message(), HasSubstr(c.text));
  }
  EXPECT_TRUE(ThreeStateBreaker::Create(ThreeStateBreaker::Options(), clock).ok());
}

// Documented defaults (docs/algorithms.md, §3 "Three-state breaker").
TEST(ThreeStateBreakerDefaultsTest, Defaults) {
  ThreeStateBreaker::Options o;
  EXPECT_EQ(o.failure_rate_threshold, 0.5);
  EXPECT_EQ(o.min_requests, 20);
  EXPECT_EQ(o.consecutive_failures, 0);
  EXPECT_EQ(o.window, absl::Seconds(10));
  EXPECT_EQ(o.buckets, 10);
  EXPECT_EQ(o.open_duration, absl::Seconds(5));
  EXPECT_EQ(o.open_duration_multiplier, 2.0);
  EXPECT_EQ(o.max_open_duration, absl::Seconds(60));
  EXPECT_EQ(o.half_open_max_probes, 1);
  EXPECT_EQ(o.half_open_successes_to_close, 1);
  EXPECT_EQ(o.probe_interval, absl::Milliseconds(200));
  EXPECT_EQ(o.half_open_max_wait, absl::Seconds(30));
  EXPECT_EQ(o.mode, BreakerMode::kNormal);
}

// Several threads hammering one breaker: while it stays Closed, every outcome
// is counted exactly.
TEST(ThreeStateBreakerConcurrencyTest, CountsAddUpExactly) {
  SimulatedClock clock;
  ThreeStateBreaker::Options o;
  o.min_requests = int64_t{1} << 40;  // never enough volume to trip
  auto breaker = *ThreeStateBreaker::Create(o, clock);
  constexpr int kThreads = 4;
  constexpr int kCalls = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        Admission a = breaker->Allow();
        ASSERT_TRUE(a.admitted());
        a.Record(t == 0 ? Outcome::kFailure : Outcome::kSuccess, absl::Milliseconds(1));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  RollingWindow::Counts c = breaker->Snapshot().counts;
  EXPECT_EQ(c.failure, kCalls);
  EXPECT_EQ(c.success, 3 * kCalls);
}

// Threads racing through trips, probes and recoveries while time moves: the
// state machine stays consistent (no crash, no race, no stuck half-open).
TEST(ThreeStateBreakerConcurrencyTest, RacingTransitionsStayConsistent) {
  SimulatedClock clock;
  ThreeStateBreaker::Options o;
  o.min_requests = 5;
  o.open_duration = absl::Milliseconds(50);
  o.max_open_duration = absl::Milliseconds(200);
  o.probe_interval = absl::ZeroDuration();
  o.half_open_max_probes = 2;
  std::atomic<int> transitions{0};
  o.listener = [&](const BreakerTransition&) { transitions.fetch_add(1); };
  auto breaker = *ThreeStateBreaker::Create(o, clock);
  // Every call moves the shared clock by 10 us: 60000 calls span 0.6 s, in
  // which the backend is down in every odd 100 ms period.
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        Admission a = breaker->Allow();
        clock.AdvanceTime(absl::Microseconds(10));
        if (!a.admitted()) continue;
        const bool down = (absl::ToUnixMillis(clock.Now()) / 100) % 2 == 1;
        a.Record(down || (i + t) % 7 == 0 ? Outcome::kFailure : Outcome::kSuccess,
                 absl::Microseconds(10));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GT(transitions.load(), 0);
  // After a long healthy stretch the breaker is closed again.
  clock.AdvanceTime(absl::Seconds(1));
  for (int i = 0; i < 10 && breaker->state() != State::kClosed; ++i) {
    Admission a = breaker->Allow();
    if (a.admitted()) a.Record(Outcome::kSuccess, absl::Microseconds(10));
  }
  EXPECT_EQ(breaker->state(), State::kClosed);
}

}  // namespace
}  // namespace resilience

// Operator commands on both breaker algorithms (Breaker::Control): forcing
// open and closed, back to automatic, reset; and the time a snapshot says
// the breaker has been in its state. Simulated clock, seeded randomness.

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "src/breaker/sre_breaker.h"
#include "src/breaker/three_state_breaker.h"
#include "src/core/simulated_clock.h"
#include "tests/core/fake_random.h"

namespace resilience {
namespace {

using ::resilience::testing::FakeRandom;

class BreakerControlTest : public ::testing::Test {
 protected:
  std::unique_ptr<ThreeStateBreaker> MakeThreeState() {
    ThreeStateBreaker::Options o;
    o.min_requests = 4;
    o.open_duration = absl::Seconds(5);
    o.listener = [this](const BreakerTransition& t) { transitions_.push_back(t); };
    auto b = ThreeStateBreaker::Create(o, clock_);
    EXPECT_TRUE(b.ok()) << b.status();
    return *std::move(b);
  }
  std::unique_ptr<SreBreaker> MakeSre() {
    SreBreaker::Options o;
    o.random = std::make_shared<FakeRandom>(0.0);  // drop whenever p > 0
    o.refresh_interval = absl::ZeroDuration();
    o.recovery_acceleration = false;
    o.force_pass_interval = absl::ZeroDuration();
    o.listener = [this](const BreakerTransition& t) { transitions_.push_back(t); };
    auto b = SreBreaker::Create(o, clock_);
    EXPECT_TRUE(b.ok()) << b.status();
    return *std::move(b);
  }
  void Fail(Breaker& b, int n) {
    for (int i = 0; i < n; ++i) {
      Admission a = b.Allow();
      if (a.admitted()) a.Record(Outcome::kFailure, absl::Milliseconds(1));
    }
  }

  SimulatedClock clock_;
  std::vector<BreakerTransition> transitions_;
};

TEST(BreakerCommandTest, NamesRoundTrip) {
  for (BreakerCommand c : {BreakerCommand::kForceOpen, BreakerCommand::kForceClosed,
                           BreakerCommand::kAutomatic, BreakerCommand::kReset}) {
    EXPECT_EQ(ParseBreakerCommand(BreakerCommandName(c)), c);
  }
  EXPECT_EQ(ParseBreakerCommand("open"), std::nullopt);
  EXPECT_EQ(ParseBreakerCommand(""), std::nullopt);
}

// A closed breaker forced open rejects with its own reason and says so in
// its snapshot; automatic lets calls through again, the state untouched.
TEST_F(BreakerControlTest, ThreeStateForceOpenThenAutomatic) {
  auto b = MakeThreeState();
  b->Control(BreakerCommand::kForceOpen);
  Admission a = b->Allow();
  EXPECT_EQ(a.reason(), RejectReason::kForcedOpen);
  EXPECT_EQ(b->Snapshot().mode, BreakerMode::kForceOpen);
  EXPECT_EQ(b->Snapshot().state, BreakerState::kClosed);
  b->Control(BreakerCommand::kAutomatic);
  EXPECT_TRUE(b->Allow().admitted());
  EXPECT_EQ(b->Snapshot().mode, BreakerMode::kNormal);
  EXPECT_TRUE(transitions_.empty());
}

// An open breaker forced closed admits every call; back to automatic it is
// open again (the state machine kept its state).
TEST_F(BreakerControlTest, ThreeStateForceClosedAdmitsWhileOpen) {
  auto b = MakeThreeState();
  Fail(*b, 4);
  ASSERT_EQ(b->state(), BreakerState::kOpen);
  b->Control(BreakerCommand::kForceClosed);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(b->Allow().admitted()) << i;
  b->Control(BreakerCommand::kAutomatic);
  EXPECT_EQ(b->Allow().reason(), RejectReason::kOpen);
}

// Reset closes an open breaker at once (cause kReset), forgets the window
// and restarts the time in state.
TEST_F(BreakerControlTest, ThreeStateResetClosesAndClearsTheWindow) {
  auto b = MakeThreeState();
  Fail(*b, 4);
  ASSERT_EQ(transitions_.size(), 1u);
  clock_.AdvanceTime(absl::Seconds(2));
  EXPECT_EQ(b->Snapshot().time_in_state, clock_.Now() - transitions_[0].at);
  b->Control(BreakerCommand::kReset);
  EXPECT_EQ(b->state(), BreakerState::kClosed);
  ASSERT_EQ(transitions_.size(), 2u);
  EXPECT_EQ(transitions_[1].cause, TransitionCause::kReset);
  EXPECT_EQ(transitions_[1].from, BreakerState::kOpen);
  const BreakerSnapshot s = b->Snapshot();
  EXPECT_EQ(s.counts.completed(), 0);
  EXPECT_EQ(s.time_in_state, absl::ZeroDuration());
  // Three more failures do not trip: the four before the reset are gone.
  Fail(*b, 3);
  EXPECT_EQ(b->state(), BreakerState::kClosed);
}

// A call admitted before a reset reports into a window it did not see: it
// is not counted.
TEST_F(BreakerControlTest, ThreeStateResetIgnoresCallsAdmittedBefore) {
  auto b = MakeThreeState();
  Admission before = b->Allow();
  ASSERT_TRUE(before.admitted());
  b->Control(BreakerCommand::kReset);
  before.Record(Outcome::kFailure, absl::Milliseconds(1));
  EXPECT_EQ(b->Snapshot().counts.failure, 0);
  EXPECT_TRUE(transitions_.empty());  // it was closed already
}

// Reset keeps a forced mode: the operator's force_open outlives it.
TEST_F(BreakerControlTest, ResetKeepsTheMode) {
  auto b = MakeThreeState();
  b->Control(BreakerCommand::kForceOpen);
  b->Control(BreakerCommand::kReset);
  EXPECT_EQ(b->Allow().reason(), RejectReason::kForcedOpen);
}

TEST_F(BreakerControlTest, SreForceOpenAndClosed) {
  auto b = MakeSre();
  b->Control(BreakerCommand::kForceOpen);
  EXPECT_EQ(b->Allow().reason(), RejectReason::kForcedOpen);
  EXPECT_EQ(b->Snapshot().mode, BreakerMode::kForceOpen);
  EXPECT_EQ(b->Snapshot().drop_probability, 1.0);
  b->Control(BreakerCommand::kAutomatic);
  EXPECT_TRUE(b->Allow().admitted());

  Fail(*b, 50);  // drops now (p > 0, every draw below it)
  ASSERT_GT(b->DropProbability(), 0.0);
  EXPECT_EQ(b->Allow().reason(), RejectReason::kDropped);
  b->Control(BreakerCommand::kForceClosed);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(b->Allow().admitted()) << i;
  EXPECT_EQ(b->Snapshot().drop_probability, 0.0);
}

// Reset of a dropping SRE breaker: drops stop at once, the listener hears
// it with cause kReset, and the time in state restarts.
TEST_F(BreakerControlTest, SreResetStopsDrops) {
  auto b = MakeSre();
  Fail(*b, 50);
  ASSERT_EQ(b->Allow().reason(), RejectReason::kDropped);
  clock_.AdvanceTime(absl::Seconds(3));
  EXPECT_EQ(b->Snapshot().time_in_state, absl::Seconds(3));
  b->Control(BreakerCommand::kReset);
  EXPECT_TRUE(b->Allow().admitted());
  EXPECT_EQ(b->Snapshot().counts.completed(), 0);
  EXPECT_EQ(b->Snapshot().time_in_state, absl::ZeroDuration());
  ASSERT_EQ(transitions_.size(), 2u);
  EXPECT_EQ(transitions_[0].cause, TransitionCause::kDropsStarted);
  EXPECT_EQ(transitions_[1].cause, TransitionCause::kReset);
}

}  // namespace
}  // namespace resilience

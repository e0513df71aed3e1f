// ThreeStateBreaker told of its channel's connection
// (AllowWithConnection()): no half-open probe is spent while the channel is
// not connected, the open period does not grow for it, and a reconnection
// half-opens an open breaker at once (issue 40: a probe that failed before
// gRPC's reconnect backoff had brought the replicas back doubled the open
// period, 11.8 s to recover in 2 of 12 trials).

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

Admission AllowOn(ThreeStateBreaker& breaker, bool connected) {
  return breaker.AllowWithConnection(Criticality::kCritical, [connected] { return connected; });
}

// The open period ends while the channel is not connected: the breaker stays
// Open, every call is rejected (kAwaitingConnection), however long it takes,
// and the open period does not grow. Connected, the next call is the probe.
TEST_F(ThreeStateBreakerTest, NoProbeIsSpentWhileTheChannelIsNotConnected) {
  auto breaker = Make();
  Trip(*breaker);
  clock_.AdvanceTime(options_.open_duration);
  for (int i = 0; i < 50; ++i) {
    const Admission a = AllowOn(*breaker, false);
    ASSERT_FALSE(a.admitted());
    EXPECT_EQ(a.reason(), RejectReason::kAwaitingConnection);
    clock_.AdvanceTime(absl::Milliseconds(200));
  }
  EXPECT_EQ(breaker->state(), State::kOpen);
  EXPECT_EQ(breaker->current_open_duration(), options_.open_duration);

  Admission probe = AllowOn(*breaker, true);
  ASSERT_TRUE(probe.admitted());
  EXPECT_TRUE(probe.probe());
  probe.Record(Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_EQ(breaker->state(), State::kClosed);
  EXPECT_THAT(transitions_, ElementsAre(std::pair(State::kClosed, State::kOpen),
                                        std::pair(State::kOpen, State::kHalfOpen),
                                        std::pair(State::kHalfOpen, State::kClosed)));
}

// Seen not connected while open, then connected again: Half-Open at once,
// before the open period ends (the replicas are back; waiting out the rest
// of it would only hold calls back).
TEST_F(ThreeStateBreakerTest, AReconnectionHalfOpensBeforeTheOpenPeriodEnds) {
  auto breaker = Make();
  Trip(*breaker);
  EXPECT_EQ(AllowOn(*breaker, false).reason(), RejectReason::kOpen);
  clock_.AdvanceTime(absl::Seconds(1));
  Admission probe = AllowOn(*breaker, true);
  ASSERT_TRUE(probe.admitted());
  EXPECT_EQ(breaker->state(), State::kHalfOpen);
  EXPECT_EQ(AllowOn(*breaker, true).reason(), RejectReason::kHalfOpenProbeLimit);
  probe.Record(Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_EQ(breaker->state(), State::kClosed);
}

// Connected all along (the server answers, with errors): the open period is
// waited out as without the connection, and a failed probe grows it.
TEST_F(ThreeStateBreakerTest, ConnectedAllAlongTheOpenPeriodIsWaitedOut) {
  auto breaker = Make();
  Trip(*breaker);
  clock_.AdvanceTime(options_.open_duration - absl::Milliseconds(1));
  EXPECT_EQ(AllowOn(*breaker, true).reason(), RejectReason::kOpen);
  clock_.AdvanceTime(absl::Milliseconds(1));
  Admission probe = AllowOn(*breaker, true);
  ASSERT_TRUE(probe.admitted());
  probe.Record(Outcome::kFailure, absl::Milliseconds(1));
  EXPECT_EQ(breaker->state(), State::kOpen);
  EXPECT_EQ(breaker->current_open_duration(), 2 * options_.open_duration);
}

// Half-Open, the channel lost: no further probe until it is connected; a
// neutral result (a probe that reached no server) only freed its slot.
TEST_F(ThreeStateBreakerTest, HalfOpenAdmitsNoProbeWhileNotConnected) {
  auto breaker = Make();
  Trip(*breaker);
  clock_.AdvanceTime(options_.open_duration);
  Admission probe = AllowOn(*breaker, true);
  ASSERT_TRUE(probe.admitted());
  probe.Record(Outcome::kNeutral, absl::Milliseconds(1));
  clock_.AdvanceTime(options_.probe_interval);
  EXPECT_EQ(AllowOn(*breaker, false).reason(), RejectReason::kAwaitingConnection);
  EXPECT_EQ(breaker->state(), State::kHalfOpen);
  EXPECT_EQ(breaker->current_open_duration(), options_.open_duration);
  EXPECT_TRUE(AllowOn(*breaker, true).admitted());
}

// A health answer that keeps the breaker open (recoveryProbe) outranks the
// connection: a connected channel to a server that says NOT_SERVING is no
// reason to probe.
TEST_F(ThreeStateBreakerTest, ANotServingAnswerOutranksTheReconnection) {
  options_.health_gated = true;
  auto breaker = Make();
  Trip(*breaker);
  breaker->OnHealth(ThreeStateBreaker::Health::kNotServing);
  EXPECT_EQ(AllowOn(*breaker, false).reason(), RejectReason::kOpen);
  clock_.AdvanceTime(2 * options_.open_duration);
  EXPECT_EQ(AllowOn(*breaker, true).reason(), RejectReason::kOpen);
  breaker->OnHealth(ThreeStateBreaker::Health::kServing);
  EXPECT_TRUE(AllowOn(*breaker, true).admitted());
}

// Allow() is a channel that is always connected: nothing changes for a
// breaker that is not told of one.
TEST_F(ThreeStateBreakerTest, AllowAloneIsAlwaysConnected) {
  auto breaker = Make();
  Trip(*breaker);
  clock_.AdvanceTime(options_.open_duration);
  EXPECT_TRUE(breaker->Allow().admitted());
}

}  // namespace
}  // namespace resilience

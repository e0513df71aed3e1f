// EndpointBreakers: per-endpoint breakers of one method, on a
// SimulatedClock, and the decision "is the service as a whole failing?"
// that lets the method's breaker reject calls locally.

#include "src/breaker/endpoint_breakers.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/breaker/three_state_breaker.h"
#include "src/core/random_source.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class EndpointBreakersTest : public ::testing::Test {
 protected:
  // Three-state breakers with the defaults (20 calls, 50 %, open 5 s).
  EndpointBreakers::Options Options() {
    EndpointBreakers::Options o;
    o.make = [this](BreakerListener listener) {
      ThreeStateBreaker::Options b = breaker_;
      b.listener = std::move(listener);
      return std::unique_ptr<Breaker>(*ThreeStateBreaker::Create(b, clock_));
    };
    o.listener = [this](const std::string& endpoint, const BreakerTransition& t,
                        const BreakerSnapshot& snapshot) {
      events_.emplace_back(endpoint, t.from, t.to);
      EXPECT_EQ(snapshot.state, t.to);
    };
    return o;
  }

  // One attempt per endpoint in turn (round robin), `failing` ones fail.
  void Rounds(EndpointBreakers& e, int rounds, const std::vector<std::string>& endpoints,
              const std::vector<std::string>& failing) {
    for (int i = 0; i < rounds; ++i) {
      for (const std::string& endpoint : endpoints) {
        const bool fails =
            std::find(failing.begin(), failing.end(), endpoint) != failing.end();
        e.Record(endpoint, fails ? Outcome::kFailure : Outcome::kSuccess, absl::Milliseconds(1));
        clock_.AdvanceTime(absl::Milliseconds(1));
      }
    }
  }

  SimulatedClock clock_;
  ThreeStateBreaker::Options breaker_;
  std::vector<std::tuple<std::string, BreakerState, BreakerState>> events_;
};

TEST_F(EndpointBreakersTest, OneFailingEndpointOfThreeNeverMakesTheServiceFail) {
  EndpointBreakers e(Options(), clock_);
  for (int i = 0; i < 300; ++i) {
    Rounds(e, 1, {"a", "b", "c"}, {"c"});
    ASSERT_FALSE(e.ServiceFailing()) << "round " << i;
  }
  const std::vector<EndpointBreakers::EndpointState> states = e.Snapshot();
  ASSERT_EQ(states.size(), 3u);
  EXPECT_EQ(states[0].breaker.state, BreakerState::kClosed);
  EXPECT_EQ(states[1].breaker.state, BreakerState::kClosed);
  EXPECT_EQ(states[2].endpoint, "c");
  EXPECT_NE(states[2].breaker.state, BreakerState::kClosed);
  EXPECT_EQ(states[2].outcomes, 300);
  // Open, c's breaker refused the outcomes it did not count.
  EXPECT_GT(states[2].refused, 200);
  EXPECT_EQ(states[0].refused, 0);
  EXPECT_EQ(events_.front(), std::make_tuple(std::string("c"), BreakerState::kClosed,
                                              BreakerState::kOpen));
}

TEST_F(EndpointBreakersTest, EveryEndpointOpenIsAFailingService) {
  EndpointBreakers e(Options(), clock_);
  Rounds(e, 20, {"a", "b", "c"}, {"a", "b"});
  EXPECT_FALSE(e.ServiceFailing());  // a and b open, c closed
  Rounds(e, 19, {"c"}, {"c"});
  EXPECT_FALSE(e.ServiceFailing());
  Rounds(e, 1, {"c"}, {"c"});
  EXPECT_TRUE(e.ServiceFailing());
  EXPECT_EQ(events_.size(), 3u);
}

TEST_F(EndpointBreakersTest, FailingShareBelowOne) {
  EndpointBreakers::Options o = Options();
  o.failing_share = 0.5;
  EndpointBreakers e(o, clock_);
  Rounds(e, 20, {"a", "b", "c", "d"}, {"a"});
  EXPECT_FALSE(e.ServiceFailing());  // 1 of 4
  Rounds(e, 20, {"b"}, {"b"});
  EXPECT_TRUE(e.ServiceFailing());  // 2 of 4 >= 0.5
}

TEST_F(EndpointBreakersTest, OutcomesRefusedByAnOpenEndpointAndProbedAfterItsOpenPeriod) {
  EndpointBreakers e(Options(), clock_);
  e.Record("b", Outcome::kSuccess, absl::Milliseconds(1));  // a second endpoint
  Rounds(e, 20, {"a"}, {"a"});
  EXPECT_FALSE(e.Record("a", Outcome::kFailure, absl::Milliseconds(1)));
  clock_.AdvanceTime(breaker_.open_duration);
  // Half-open: the next outcome is a probe, counted; a success closes.
  EXPECT_TRUE(e.Record("a", Outcome::kSuccess, absl::Milliseconds(1)));
  EXPECT_EQ(e.Snapshot()[0].breaker.state, BreakerState::kClosed);
  EXPECT_THAT(events_, ElementsAre(std::make_tuple("a", BreakerState::kClosed, BreakerState::kOpen),
                                   std::make_tuple("a", BreakerState::kOpen,
                                                   BreakerState::kHalfOpen),
                                   std::make_tuple("a", BreakerState::kHalfOpen,
                                                   BreakerState::kClosed)));
}

// (a): with fewer than two endpoints seen within `recent`, the method
// decides alone.
TEST_F(EndpointBreakersTest, FewerThanTwoEndpointsSeenRecently) {
  EndpointBreakers::Options o = Options();
  o.recent = absl::Seconds(10);
  EndpointBreakers e(o, clock_);
  EXPECT_TRUE(e.ServiceFailing());
  e.Record("a", Outcome::kSuccess, absl::ZeroDuration());
  EXPECT_TRUE(e.ServiceFailing());  // one endpoint: nothing to route around
  e.Record("b", Outcome::kSuccess, absl::ZeroDuration());
  EXPECT_FALSE(e.ServiceFailing());
  clock_.AdvanceTime(absl::Seconds(10));
  EXPECT_FALSE(e.ServiceFailing());
  clock_.AdvanceTime(absl::Milliseconds(1));
  EXPECT_TRUE(e.ServiceFailing());
  // A neutral end is a sighting too.
  e.Record("a", Outcome::kNeutral, absl::ZeroDuration());
  e.Record("b", Outcome::kNeutral, absl::ZeroDuration());
  EXPECT_FALSE(e.ServiceFailing());
}

// With one endpoint only, what its open breaker refuses still counts for the
// method (a channel to one backend behaves as it did without endpoints).
TEST_F(EndpointBreakersTest, OneEndpointLeavesTheMethodCounting) {
  EndpointBreakers e(Options(), clock_);
  Rounds(e, 20, {"a"}, {"a"});
  EXPECT_EQ(e.Snapshot()[0].breaker.state, BreakerState::kOpen);
  EXPECT_TRUE(e.Record("a", Outcome::kFailure, absl::Milliseconds(1)));
  EXPECT_TRUE(e.ServiceFailing());
}

// (b): a run of failures of attempts that reached no endpoint, with no
// success in between; one such failure among successes is not enough.
TEST_F(EndpointBreakersTest, ARunOfFailuresWithNoEndpoint) {
  EndpointBreakers::Options o = Options();
  o.unreached_failures = 3;
  EndpointBreakers e(o, clock_);
  e.Record("a", Outcome::kSuccess, absl::ZeroDuration());
  e.Record("b", Outcome::kSuccess, absl::ZeroDuration());
  EXPECT_TRUE(e.Record("", Outcome::kFailure, absl::ZeroDuration()));
  e.Record("", Outcome::kFailure, absl::ZeroDuration());
  EXPECT_FALSE(e.ServiceFailing());
  e.Record("b", Outcome::kSuccess, absl::ZeroDuration());  // ends the run
  e.Record("", Outcome::kFailure, absl::ZeroDuration());
  e.Record("", Outcome::kFailure, absl::ZeroDuration());
  EXPECT_FALSE(e.ServiceFailing());
  e.Record("", Outcome::kFailure, absl::ZeroDuration());
  EXPECT_TRUE(e.ServiceFailing());
  EXPECT_EQ(e.Snapshot().size(), 2u);  // "" is no endpoint
  e.Record("a", Outcome::kSuccess, absl::ZeroDuration());
  EXPECT_FALSE(e.ServiceFailing());
}

TEST_F(EndpointBreakersTest, BoundedByForgettingTheEndpointSeenLongestAgo) {
  EndpointBreakers::Options o = Options();
  o.max_endpoints = 3;
  o.recent = absl::Seconds(1);
  EndpointBreakers e(o, clock_);
  Rounds(e, 1, {"a", "b", "c"}, {});
  e.Record("a", Outcome::kSuccess, absl::ZeroDuration());  // b is now the oldest
  e.Record("d", Outcome::kSuccess, absl::ZeroDuration());
  std::vector<std::string> names;
  for (const auto& s : e.Snapshot()) names.push_back(s.endpoint);
  EXPECT_THAT(names, ElementsAre("a", "c", "d"));
  // Past `recent`, a new endpoint forgets every stale one.
  clock_.AdvanceTime(absl::Seconds(2));
  e.Record("e", Outcome::kSuccess, absl::ZeroDuration());
  names.clear();
  for (const auto& s : e.Snapshot()) names.push_back(s.endpoint);
  EXPECT_THAT(names, ElementsAre("e"));
}

// Seeded: healthy endpoints fail now and then, one endpoint always; picks
// at random. The service never counts as failing; once every endpoint
// fails, it does as soon as the healthy ones' breakers have tripped.
TEST_F(EndpointBreakersTest, SeededRandomPicksOneBadEndpoint) {
  EndpointBreakers e(Options(), clock_);
  SplitMixRandom random(42);
  const std::string endpoints[] = {"ipv4:10.0.0.1:80", "ipv4:10.0.0.2:80", "ipv4:10.0.0.3:80"};
  for (const std::string& endpoint : endpoints) {
    e.Record(endpoint, Outcome::kSuccess, absl::Milliseconds(2));
  }
  for (int i = 0; i < 5000; ++i) {
    const int pick = static_cast<int>(random.NextUniform() * 3) % 3;
    const bool fails = pick == 2 || random.NextUniform() < 0.05;
    e.Record(endpoints[pick], fails ? Outcome::kFailure : Outcome::kSuccess,
             absl::Milliseconds(2));
    clock_.AdvanceTime(absl::Milliseconds(1));
    ASSERT_FALSE(e.ServiceFailing()) << "attempt " << i;
  }
  // A fresh window: then every endpoint fails.
  clock_.AdvanceTime(breaker_.window + absl::Seconds(1));
  int failing_at = -1;
  for (int i = 0; i < 5000 && failing_at < 0; ++i) {
    const int pick = static_cast<int>(random.NextUniform() * 3) % 3;
    e.Record(endpoints[pick], Outcome::kFailure, absl::Milliseconds(2));
    clock_.AdvanceTime(absl::Milliseconds(1));
    if (e.ServiceFailing()) failing_at = i;
  }
  // Two healthy breakers need >= 20 outcomes each at >= 50 % failures.
  EXPECT_GT(failing_at, 30);
  EXPECT_LT(failing_at, 200);
}

// An operator's command on one endpoint: forced open, its outcomes are
// refused and it counts as failing; forced closed, never; automatic gives
// the decision back to its breaker. Unknown endpoints are refused.
TEST_F(EndpointBreakersTest, ControlForcesOneEndpoint) {
  EndpointBreakers e(Options(), clock_);
  Rounds(e, 30, {"a", "b", "c"}, {});
  EXPECT_FALSE(e.Control("d", BreakerCommand::kForceOpen));
  ASSERT_TRUE(e.Control("a", BreakerCommand::kForceOpen));
  ASSERT_TRUE(e.Control("b", BreakerCommand::kForceOpen));
  EXPECT_FALSE(e.Record("a", Outcome::kSuccess, absl::Milliseconds(1)));
  EXPECT_FALSE(e.ServiceFailing());  // c is closed
  ASSERT_TRUE(e.Control("c", BreakerCommand::kForceOpen));
  EXPECT_TRUE(e.ServiceFailing());
  ASSERT_TRUE(e.Control("c", BreakerCommand::kAutomatic));
  EXPECT_FALSE(e.ServiceFailing());
  EXPECT_TRUE(e.Record("c", Outcome::kSuccess, absl::Milliseconds(1)));
  const std::vector<EndpointBreakers::EndpointState> states = e.Snapshot();
  EXPECT_EQ(states[0].breaker.mode, BreakerMode::kForceOpen);
  EXPECT_EQ(states[0].refused, 1);
  EXPECT_EQ(states[2].breaker.mode, BreakerMode::kNormal);

  // Every endpoint failing, one forced closed: the service is not failing.
  ASSERT_TRUE(e.Control("a", BreakerCommand::kAutomatic));
  ASSERT_TRUE(e.Control("b", BreakerCommand::kAutomatic));
  ASSERT_TRUE(e.Control("c", BreakerCommand::kForceClosed));
  Rounds(e, 30, {"a", "b", "c"}, {"a", "b", "c"});
  EXPECT_FALSE(e.ServiceFailing());
  ASSERT_TRUE(e.Control("c", BreakerCommand::kAutomatic));
  Rounds(e, 30, {"a", "b", "c"}, {"a", "b", "c"});
  EXPECT_TRUE(e.ServiceFailing());
}

// A forced endpoint stays when it is no longer seen (outlier detection took
// it out of the rotation, say) until it is set back to automatic.
TEST_F(EndpointBreakersTest, AForcedEndpointIsNotForgotten) {
  EndpointBreakers::Options o = Options();
  o.max_endpoints = 3;
  o.recent = absl::Seconds(1);
  EndpointBreakers e(o, clock_);
  Rounds(e, 1, {"a", "b", "c"}, {});
  ASSERT_TRUE(e.Control("a", BreakerCommand::kForceOpen));
  clock_.AdvanceTime(absl::Seconds(2));
  Rounds(e, 1, {"d", "e", "f"}, {});
  std::vector<std::string> names;
  for (const EndpointBreakers::EndpointState& s : e.Snapshot()) names.push_back(s.endpoint);
  EXPECT_THAT(names, ElementsAre("a", "e", "f"));
  ASSERT_TRUE(e.Control("a", BreakerCommand::kAutomatic));
  Rounds(e, 1, {"g"}, {});
  names.clear();
  for (const EndpointBreakers::EndpointState& s : e.Snapshot()) names.push_back(s.endpoint);
  EXPECT_THAT(names, ElementsAre("e", "f", "g"));
}

// FailingAlone() (the retry budget's rule): an endpoint failing while
// another serves, before its breaker can open (a window full of earlier
// successes) and after; never when every endpoint fails.
TEST_F(EndpointBreakersTest, AnEndpointFailsAloneWhileAnotherServes) {
  EndpointBreakers e(Options(), clock_);
  Rounds(e, 100, {"a", "b", "c"}, {});  // c's window: 100 successes
  EXPECT_FALSE(e.FailingAlone("c"));
  EXPECT_FALSE(e.FailingAlone(""));
  EXPECT_FALSE(e.FailingAlone("z"));
  // c fails from now on: alone at its third failure in a row, its breaker
  // still closed (3 failures in 103 outcomes).
  Rounds(e, 2, {"a", "b", "c"}, {"c"});
  EXPECT_FALSE(e.FailingAlone("c"));
  Rounds(e, 1, {"a", "b", "c"}, {"c"});
  EXPECT_TRUE(e.FailingAlone("c"));
  EXPECT_EQ(e.Snapshot()[2].breaker.state, BreakerState::kClosed);
  EXPECT_FALSE(e.FailingAlone("a"));  // a serves
  // And once its breaker has opened (at 50 % of its window: 100 failures).
  Rounds(e, 120, {"a", "b", "c"}, {"c"});
  EXPECT_NE(e.Snapshot()[2].breaker.state, BreakerState::kClosed);
  EXPECT_TRUE(e.FailingAlone("c"));
  // A success on c ends its run of failures, but its open breaker keeps it
  // bad.
  e.Record("c", Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_TRUE(e.FailingAlone("c"));
  // The others start failing too: once none's last outcome is a success,
  // c no longer fails alone (the whole service fails: the budget bounds).
  Rounds(e, 1, {"a"}, {"a"});
  EXPECT_TRUE(e.FailingAlone("c"));  // b still serves
  Rounds(e, 1, {"b"}, {"b"});
  EXPECT_FALSE(e.FailingAlone("c"));
  EXPECT_FALSE(e.FailingAlone("a"));  // a's first failure only
  Rounds(e, 3, {"a", "b"}, {"a", "b"});
  EXPECT_FALSE(e.FailingAlone("a"));
  EXPECT_FALSE(e.FailingAlone("b"));
}

// Another endpoint serves only with a success within `recent`; an operator's
// force_closed makes an endpoint never fail alone, force_open always (while
// another serves).
TEST_F(EndpointBreakersTest, FailingAloneNeedsARecentSuccessElsewhereAndObeysControl) {
  EndpointBreakers::Options o = Options();
  o.recent = absl::Seconds(10);
  o.alone_failures = 2;
  EndpointBreakers e(o, clock_);
  Rounds(e, 1, {"a", "b"}, {});
  clock_.AdvanceTime(absl::Seconds(11));
  Rounds(e, 2, {"b"}, {"b"});
  EXPECT_FALSE(e.FailingAlone("b"));  // a: not seen within 10 s
  e.Record("a", Outcome::kNeutral, absl::Milliseconds(1));
  EXPECT_FALSE(e.FailingAlone("b"));  // a seen, but its success is old
  e.Record("a", Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_TRUE(e.FailingAlone("b"));
  ASSERT_TRUE(e.Control("b", BreakerCommand::kForceClosed));
  EXPECT_FALSE(e.FailingAlone("b"));
  ASSERT_TRUE(e.Control("b", BreakerCommand::kForceOpen));
  e.Record("b", Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_TRUE(e.FailingAlone("b"));
  ASSERT_TRUE(e.Control("a", BreakerCommand::kForceOpen));
  EXPECT_FALSE(e.FailingAlone("b"));  // every endpoint open: the service fails
}

// At a channel's start gRPC's round_robin sends every pick to the first
// endpoint it connected: a bad one may be the only one seen while the others
// connect. With the target's endpoints listed, those not seen yet count as
// serving for listed_grace after the first outcome; after it, a lone
// endpoint failing is the whole service failing again.
TEST_F(EndpointBreakersTest, ListedEndpointsNotSeenYetServeDuringTheStartGrace) {
  EndpointBreakers::Options o = Options();
  o.listed_endpoints = 3;
  EndpointBreakers e(o, clock_);
  Rounds(e, 2, {"b"}, {"b"});
  EXPECT_FALSE(e.FailingAlone("b"));  // two failures: not bad yet
  Rounds(e, 1, {"b"}, {"b"});
  EXPECT_TRUE(e.FailingAlone("b"));  // a and c are connecting
  EXPECT_FALSE(e.FailingAlone("a"));
  // Once the other two are seen, what they did counts, as without the list.
  Rounds(e, 1, {"a", "c"}, {"a", "c"});
  Rounds(e, 1, {"b"}, {"b"});
  EXPECT_FALSE(e.FailingAlone("b"));
  Rounds(e, 1, {"a"}, {});
  EXPECT_TRUE(e.FailingAlone("b"));

  // After the grace (1 s from the first outcome), unseen endpoints are not
  // serving: a whole-service failure from the start spends the budget.
  EndpointBreakers late(o, clock_);
  Rounds(late, 3, {"b"}, {"b"});
  EXPECT_TRUE(late.FailingAlone("b"));
  clock_.AdvanceTime(absl::Seconds(1));
  Rounds(late, 1, {"b"}, {"b"});
  EXPECT_FALSE(late.FailingAlone("b"));

  // Without the list (a name to resolve) or with one endpoint listed, a lone
  // endpoint never fails alone.
  for (int listed : {0, 1}) {
    o.listed_endpoints = listed;
    EndpointBreakers unlisted(o, clock_);
    Rounds(unlisted, 5, {"b"}, {"b"});
    EXPECT_FALSE(unlisted.FailingAlone("b")) << listed;
  }
}

TEST_F(EndpointBreakersTest, Validate) {
  EndpointBreakers::Options o = Options();
  EXPECT_TRUE(EndpointBreakers::Validate(o).ok());
  o.failing_share = 0;
  EXPECT_THAT(std::string(EndpointBreakers::Validate(o).message()),
              HasSubstr("failing_share: must be in (0, 1], got 0"));
  o = Options();
  o.max_endpoints = 0;
  EXPECT_THAT(std::string(EndpointBreakers::Validate(o).message()), HasSubstr("max_endpoints"));
  o = Options();
  o.recent = absl::ZeroDuration();
  EXPECT_THAT(std::string(EndpointBreakers::Validate(o).message()), HasSubstr("recent"));
  o = Options();
  o.unreached_failures = 0;
  EXPECT_THAT(std::string(EndpointBreakers::Validate(o).message()),
              HasSubstr("unreached_failures: must be >= 1, got 0"));
  o = Options();
  o.alone_failures = 0;
  EXPECT_THAT(std::string(EndpointBreakers::Validate(o).message()),
              HasSubstr("alone_failures: must be >= 1, got 0"));
  o = Options();
  o.listed_endpoints = -1;
  EXPECT_THAT(std::string(EndpointBreakers::Validate(o).message()),
              HasSubstr("listed_endpoints: must be >= 0, got -1"));
  o = Options();
  o.listed_grace = absl::Minutes(2);
  EXPECT_THAT(std::string(EndpointBreakers::Validate(o).message()),
              HasSubstr("listed_grace: must be in [0, 1m], got 2m"));
}

}  // namespace
}  // namespace resilience

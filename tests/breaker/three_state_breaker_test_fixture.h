// The fixture of the ThreeStateBreaker tests: a breaker on a SimulatedClock,
// its transitions recorded, and helpers that admit and record calls, trip it
// and admit probes.

#ifndef GRPC_RESILIENCE_TESTS_BREAKER_THREE_STATE_BREAKER_TEST_FIXTURE_H_
#define GRPC_RESILIENCE_TESTS_BREAKER_THREE_STATE_BREAKER_TEST_FIXTURE_H_

#include <memory>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "src/breaker/three_state_breaker.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace testing {

class ThreeStateBreakerTest : public ::testing::Test {
 protected:
  std::unique_ptr<ThreeStateBreaker> Make() {
    options_.listener = [this](const BreakerTransition& t) {
      transitions_.push_back({t.from, t.to});
      details_.push_back(t);
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
    ASSERT_EQ(breaker.state(), BreakerState::kOpen);
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
  std::vector<std::pair<BreakerState, BreakerState>> transitions_;
  std::vector<BreakerTransition> details_;  // the same, whole
};

}  // namespace testing
}  // namespace resilience

#endif  // GRPC_RESILIENCE_TESTS_BREAKER_THREE_STATE_BREAKER_TEST_FIXTURE_H_

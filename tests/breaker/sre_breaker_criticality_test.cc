// SreBreaker keeps its statistics per criticality (SRE book, "Handling
// Overload"): the level the backend refuses is the one throttled, and a
// client that sets no criticality behaves exactly as before.

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "src/breaker/sre_breaker.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

constexpr Criticality kCrit = Criticality::kCritical;
constexpr Criticality kShed = Criticality::kSheddable;

SreBreaker::Options Seeded(uint64_t seed) {
  SreBreaker::Options options;
  options.seed = seed;
  options.refresh_interval = absl::ZeroDuration();
  return options;
}

// A backend that sheds every SHEDDABLE call and answers every CRITICAL one,
// 20% CRITICAL: the client drops SHEDDABLE calls and none of the CRITICAL.
TEST(SreBreakerCriticalityTest, SheddableIsThrottledFirst) {
  SimulatedClock clock;
  std::unique_ptr<SreBreaker> breaker = *SreBreaker::Create(Seeded(7), clock);
  int critical_dropped = 0, sheddable_sent = 0, sheddable_offered = 0;
  for (int i = 0; i < 2000; ++i) {
    clock.AdvanceTime(absl::Milliseconds(5));  // 200/s over 10 s
    const bool critical = i % 5 == 0;
    Admission a = breaker->Allow(critical ? kCrit : kShed);
    if (critical) {
      if (!a.admitted()) ++critical_dropped;
      if (a.admitted()) a.Record(Outcome::kSuccess, absl::Milliseconds(1));
    } else {
      ++sheddable_offered;
      if (a.admitted()) {
        ++sheddable_sent;
        a.Record(Outcome::kFailure, absl::Milliseconds(1));
      }
    }
  }
  EXPECT_EQ(critical_dropped, 0);
  EXPECT_EQ(breaker->DropProbability(kCrit), 0.0);
  EXPECT_GT(breaker->DropProbability(kShed), 0.85);
  // Past the first protection calls, nearly every SHEDDABLE call is dropped.
  EXPECT_LT(sheddable_sent, sheddable_offered / 8);
  // The snapshot speaks for all levels: dropping, counts summed.
  const BreakerSnapshot s = breaker->Snapshot();
  EXPECT_EQ(s.state, BreakerState::kOpen);
  EXPECT_GT(s.counts.success, 350);
  // The window is 10 s, as long as the run: the earliest calls have left it.
  EXPECT_GT(s.counts.failure, 0);
  EXPECT_LE(s.counts.failure, sheddable_sent);
}

// Allow() is Allow(CRITICAL): the same decisions and snapshot, call by call.
TEST(SreBreakerCriticalityTest, NoCriticalityIsTodaysBreaker) {
  SimulatedClock clock_a, clock_b;
  std::unique_ptr<SreBreaker> a = *SreBreaker::Create(Seeded(3), clock_a);
  std::unique_ptr<SreBreaker> b = *SreBreaker::Create(Seeded(3), clock_b);
  std::vector<bool> admitted_a, admitted_b;
  for (int i = 0; i < 3000; ++i) {
    clock_a.AdvanceTime(absl::Milliseconds(3));
    clock_b.AdvanceTime(absl::Milliseconds(3));
    // Failing two calls of three for the first half, then healthy.
    const Outcome outcome = i < 1500 && i % 3 != 0 ? Outcome::kFailure : Outcome::kSuccess;
    Admission x = a->Allow();
    Admission y = b->Allow(kCrit);
    admitted_a.push_back(x.admitted());
    admitted_b.push_back(y.admitted());
    if (x.admitted()) x.Record(outcome, absl::Milliseconds(2));
    if (y.admitted()) y.Record(outcome, absl::Milliseconds(2));
  }
  EXPECT_EQ(admitted_a, admitted_b);
  EXPECT_EQ(a->Snapshot().counts, b->Snapshot().counts);
  int dropped = 0;
  for (bool v : admitted_a) dropped += !v;
  EXPECT_GT(dropped, 100);  // the scenario did drop
}

// Reset clears every level's window; force-open rejects every level.
TEST(SreBreakerCriticalityTest, ControlAppliesToEveryLevel) {
  SimulatedClock clock;
  std::unique_ptr<SreBreaker> breaker = *SreBreaker::Create(Seeded(1), clock);
  for (int i = 0; i < 100; ++i) {
    Admission a = breaker->Allow(kShed);
    if (a.admitted()) a.Record(Outcome::kFailure, absl::Milliseconds(1));
  }
  EXPECT_GT(breaker->DropProbability(kShed), 0.5);
  breaker->Control(BreakerCommand::kReset);
  EXPECT_EQ(breaker->DropProbability(kShed), 0.0);
  EXPECT_EQ(breaker->Snapshot().state, BreakerState::kClosed);
  breaker->Control(BreakerCommand::kForceOpen);
  EXPECT_FALSE(breaker->Allow(kShed).admitted());
  EXPECT_FALSE(breaker->Allow(Criticality::kCriticalPlus).admitted());
}

}  // namespace
}  // namespace resilience

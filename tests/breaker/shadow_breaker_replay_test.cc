// Shadow mode of the breakers (EnforcedAdmission(), docs/shadow-mode.md): the
// same seeded sequence of calls (arrival times, durations, outcomes) replayed
// through an enforcing breaker and through a shadow one, on a simulated
// clock. The shadow breaker lets every call through, yet counts as "would
// have rejected" exactly the calls the enforcing one rejects and goes
// through the same transitions (opens, half-opens, probes), for the SRE and
// the three-state breaker: equality holds by construction (the shadow
// breaker is told only the outcomes of the calls it admitted), so the test
// asserts it, well inside the +-2 % target.

#include "src/breaker/enforced_admission.h"

#include <cstdint>
#include <memory>
#include <queue>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "src/breaker/sre_breaker.h"
#include "src/breaker/three_state_breaker.h"
#include "src/core/random_source.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

// One call of the replay.
struct Call {
  absl::Time arrival;
  absl::Duration duration;
  Outcome outcome;
};

// 20,000 calls at ~200/s for 100 s: the backend fails 80 % of calls from
// 20 s to 45 s and from 70 s to 75 s, 2 % otherwise; durations 1-50 ms.
std::vector<Call> Recorded(absl::Time start) {
  SplitMixRandom random(44);
  std::vector<Call> calls;
  absl::Time t = start;
  for (int i = 0; i < 20000; ++i) {
    t += absl::Microseconds(static_cast<int64_t>(1 + random.NextUniform() * 9999));
    const double s = absl::ToDoubleSeconds(t - start);
    const bool outage = (s >= 20 && s < 45) || (s >= 70 && s < 75);
    const bool fails = random.NextUniform() < (outage ? 0.8 : 0.02);
    calls.push_back({t, absl::Milliseconds(1 + static_cast<int64_t>(random.NextUniform() * 49)),
                     fails ? Outcome::kFailure : Outcome::kSuccess});
  }
  return calls;
}

struct Replay {
  int64_t went_out = 0;       // calls that reached the "backend"
  int64_t rejected = 0;       // enforce: rejected; shadow: would have been
  std::vector<BreakerState> transitions;
  BreakerSnapshot last;
};

// Runs `calls` through a breaker made by `make` under `mode`; completions
// are recorded in the order they end, before any later arrival.
template <typename Make>
Replay RunReplay(EnforcementMode mode, Make make) {
  SimulatedClock clock;
  const absl::Time start = clock.Now();
  Replay out;
  std::unique_ptr<Breaker> breaker =
      make(clock, [&out](const BreakerTransition& t) { out.transitions.push_back(t.to); });
  struct Pending {
    absl::Time end;
    int64_t seq;
    std::shared_ptr<Admission> admission;
    Outcome outcome;
    bool operator>(const Pending& o) const {
      return end != o.end ? end > o.end : seq > o.seq;
    }
  };
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> pending;
  int64_t seq = 0;
  const auto complete_until = [&](absl::Time until) {
    while (!pending.empty() && pending.top().end <= until) {
      Pending p = pending.top();
      pending.pop();
      clock.SetTime(p.end);
      p.admission->Record(p.outcome, p.end - p.admission->start());
    }
  };
  for (const Call& call : Recorded(start)) {
    complete_until(call.arrival);
    clock.SetTime(call.arrival);
    RejectReason would = RejectReason::kNone;
    Admission a = EnforcedAdmission(breaker->Allow(), mode, &would);
    if (would != RejectReason::kNone) ++out.rejected;
    if (!a.admitted()) {
      ++out.rejected;
      continue;
    }
    ++out.went_out;
    if (!a.pending()) continue;  // shadow: goes out, its outcome told to no breaker
    pending.push({call.arrival + call.duration, seq++, std::make_shared<Admission>(std::move(a)),
                  call.outcome});
  }
  complete_until(absl::InfiniteFuture());
  out.last = breaker->Snapshot();
  return out;
}

std::unique_ptr<Breaker> MakeSre(Clock& clock, BreakerListener listener) {
  SreBreaker::Options o;
  o.seed = 7;
  o.listener = std::move(listener);
  return *SreBreaker::Create(o, clock);
}

std::unique_ptr<Breaker> MakeThreeState(Clock& clock, BreakerListener listener) {
  ThreeStateBreaker::Options o;
  o.failure_rate_threshold = 0.5;
  o.min_requests = 20;
  o.open_duration = absl::Seconds(2);
  o.half_open_max_probes = 2;
  o.half_open_successes_to_close = 3;
  o.probe_interval = absl::Milliseconds(50);
  o.listener = std::move(listener);
  return *ThreeStateBreaker::Create(o, clock);
}

template <typename Make>
void ExpectShadowTracksEnforce(Make make) {
  const Replay enforce = RunReplay(EnforcementMode::kEnforce, make);
  const Replay shadow = RunReplay(EnforcementMode::kShadow, make);
  // The outages trip the breaker: it has something to reject.
  ASSERT_GT(enforce.rejected, 1000);
  EXPECT_EQ(enforce.went_out + enforce.rejected, 20000);
  // Shadow: every call went out, the same ones counted.
  EXPECT_EQ(shadow.went_out, 20000);
  EXPECT_EQ(shadow.rejected, enforce.rejected);
  EXPECT_EQ(shadow.transitions, enforce.transitions);
  EXPECT_EQ(shadow.last.state, enforce.last.state);
  EXPECT_EQ(shadow.last.counts, enforce.last.counts);
}

TEST(ShadowBreakerReplayTest, SreShadowCountsWhatEnforceRejects) {
  ExpectShadowTracksEnforce(MakeSre);
}

TEST(ShadowBreakerReplayTest, ThreeStateShadowOpensAndProbesLikeEnforce) {
  ExpectShadowTracksEnforce(MakeThreeState);
  const Replay shadow = RunReplay(EnforcementMode::kShadow, MakeThreeState);
  // It opened, half-opened and closed again, more than once.
  int opened = 0, half_opened = 0;
  for (BreakerState s : shadow.transitions) {
    opened += s == BreakerState::kOpen;
    half_opened += s == BreakerState::kHalfOpen;
  }
  EXPECT_GE(opened, 2);
  EXPECT_GE(half_opened, 2);
}

TEST(ShadowBreakerReplayTest, EnforceIsTheBreakersOwnDecision) {
  SimulatedClock clock;
  ThreeStateBreaker::Options o;
  o.consecutive_failures = 1;
  std::unique_ptr<ThreeStateBreaker> breaker = *ThreeStateBreaker::Create(o, clock);
  breaker->Allow().Record(Outcome::kFailure, absl::Milliseconds(1));
  RejectReason would = RejectReason::kNone;
  Admission enforced = EnforcedAdmission(breaker->Allow(), EnforcementMode::kEnforce, &would);
  EXPECT_FALSE(enforced.admitted());
  EXPECT_EQ(would, RejectReason::kNone);
  Admission shadowed = EnforcedAdmission(breaker->Allow(), EnforcementMode::kShadow, &would);
  EXPECT_TRUE(shadowed.admitted());
  // Nothing goes back to the breaker, nor to an endpoint's (BreakerStage).
  EXPECT_FALSE(shadowed.pending());
  EXPECT_FALSE(shadowed.waived());
  EXPECT_EQ(would, RejectReason::kOpen);
}

}  // namespace
}  // namespace resilience

// The breaker-quality suite (docs/breaker-quality.md): the recovery metric on
// hand-made call sequences, the scenario families' schedules, the late
// failures of the slow family, and the targets the recommended breaker meets.

#include <algorithm>
#include <map>

#include "experiments/goodput/goodput.h"
#include "experiments/goodput/run_recorder.h"
#include "experiments/goodput/scenarios.h"
#include "experiments/goodput/suite.h"
#include "gtest/gtest.h"

namespace goodput {
namespace {

using absl::Milliseconds;
using absl::Seconds;

// A healthy period of `n` calls, one per ms from 0; the oracle gets all.
struct Calls {
  explicit Calls(int n) : ticks(n), ok(n, true), oracle(n, true) {
    for (int i = 0; i < n; ++i) ticks[i] = i;
    period.start = absl::ZeroDuration();
    period.end = Milliseconds(n);
  }
  Recovery Times() const { return RecoveryTimes(period, ticks, ok, oracle, 100); }
  Period period;
  std::vector<int64_t> ticks;
  std::vector<bool> ok, oracle;
};

TEST(RecoveryTimesTest, NothingLostIsZero) {
  Calls c(1000);
  EXPECT_EQ(c.Times().first_success, absl::ZeroDuration());
  EXPECT_EQ(c.Times().back_to_99, absl::ZeroDuration());
}

// 30 calls rejected at the start: the first success comes at 30 ms; a
// window of 100 calls may miss one call and still hold 99%, so the rate is
// back at the 30th call (29 ms).
TEST(RecoveryTimesTest, RejectionsAtTheStart) {
  Calls c(1000);
  for (int i = 0; i < 30; ++i) c.ok[i] = false;
  EXPECT_EQ(c.Times().first_success, Milliseconds(30));
  EXPECT_EQ(c.Times().back_to_99, Milliseconds(29));
}

// What tells the two apart: a breaker that lets the first call through but
// keeps dropping one call in 50 for 5 s recovers at once by the first
// success and only after 5 s by the 99% rate.
TEST(RecoveryTimesTest, ScatteredDropsCountUntilTheyStop) {
  Calls c(10000);
  for (int i = 1; i < 5000; i += 50) c.ok[i] = false;
  EXPECT_EQ(c.Times().first_success, absl::ZeroDuration());
  EXPECT_GE(c.Times().back_to_99, Milliseconds(4900));
  EXPECT_LE(c.Times().back_to_99, Milliseconds(4952));
}

// Calls the oracle would lose too do not count against the breaker.
TEST(RecoveryTimesTest, MeasuredAgainstTheOracle) {
  Calls c(1000);
  for (int i = 0; i < 1000; i += 3) c.ok[i] = c.oracle[i] = false;
  EXPECT_EQ(c.Times().back_to_99, absl::ZeroDuration());
}

// Never back: censored at the period's length.
TEST(RecoveryTimesTest, NeverBackIsThePeriodsLength) {
  Calls c(1000);
  for (int i = 0; i < 1000; i += 20) c.ok[i] = false;
  EXPECT_EQ(c.Times().back_to_99, Milliseconds(1000));
  Calls none(500);
  std::fill(none.ok.begin(), none.ok.end(), false);
  EXPECT_EQ(none.Times().first_success, Milliseconds(500));
}

// Every family: seeded (same seed, same schedule; another seed, other
// lengths), alternating healthy and failing from a healthy start, tiling
// the run.
TEST(ScenarioTest, FamiliesAreSeededJitteredAndTileTheRun) {
  for (const std::string& family : FamilyNames()) {
    const auto a = FamilySchedule(family, Seconds(300), 1);
    const auto b = FamilySchedule(family, Seconds(300), 1);
    const auto c = FamilySchedule(family, Seconds(300), 2);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << family;
    ASSERT_EQ(a->size(), b->size()) << family;
    EXPECT_EQ(a->front().kind, Period::kHealthy) << family;
    EXPECT_EQ(a->front().start, absl::ZeroDuration()) << family;
    EXPECT_EQ(a->back().end, Seconds(300)) << family;
    for (size_t i = 0; i < a->size(); ++i) {
      EXPECT_EQ((*a)[i].end, (*b)[i].end) << family;
      if (i > 0) {
        EXPECT_EQ((*a)[i].start, (*a)[i - 1].end) << family;
      }
      EXPECT_LT((*a)[i].start, (*a)[i].end) << family;
    }
    EXPECT_NE((*a)[0].end, (*c)[0].end) << family;
  }
  EXPECT_FALSE(FamilySchedule("nope", Seconds(10), 1).ok());
  EXPECT_FALSE(MakeScenario("outage", Seconds(10), 7, 1).ok());  // 1000 / 7 is not whole
}

// The shapes the families promise.
TEST(ScenarioTest, FamilyShapes) {
  const auto blip = FamilySchedule("blip", Seconds(300), 3);
  ASSERT_TRUE(blip.ok());
  for (const Period& p : *blip) {
    if (p.kind == Period::kHealthy || p.end == Seconds(300)) continue;
    EXPECT_EQ(p.kind, Period::kDown);
    EXPECT_GE(p.end - p.start, Milliseconds(150));
    EXPECT_LE(p.end - p.start, Milliseconds(250));
  }
  const auto brownout = FamilySchedule("brownout", Seconds(300), 3);
  ASSERT_TRUE(brownout.ok());
  for (const Period& p : *brownout) {
    if (p.kind != Period::kHealthy) {
      EXPECT_EQ(p.error_rate, 0.3);
    }
  }
  const auto ramp = FamilySchedule("ramp", Seconds(300), 3);
  ASSERT_TRUE(ramp.ok());
  ASSERT_GE(ramp->size(), 10u);
  EXPECT_EQ((*ramp)[1].error_rate, 0.2);
  EXPECT_EQ((*ramp)[5].kind, Period::kDown);
  EXPECT_EQ((*ramp)[9].error_rate, 0.2);
  const auto slow = MakeScenario("slow", Seconds(300), 1000, 3);
  ASSERT_TRUE(slow.ok());
  EXPECT_EQ(slow->failure_latency, Seconds(1));
  EXPECT_EQ(MakeScenario("outage", Seconds(300), 100, 3)->failure_latency, absl::ZeroDuration());
}

Policy Recommended() {
  for (const Policy& p : StandardPolicies()) {
    if (p.key == "recommended") return p;
  }
  ADD_FAILURE() << "no recommended policy";
  return {};
}

// At 10 calls/s a run offers a tenth of the calls and meets the same
// backend: `none` succeeds exactly where the oracle does.
TEST(RunScenarioTest, RateSetsTheCalls) {
  auto s = MakeScenario("outage", Seconds(60), 10, 1);
  ASSERT_TRUE(s.ok());
  const Metrics none = RunScenario(*s, Policy{"none", ""}, 1);
  EXPECT_EQ(none.offered, 600);
  EXPECT_EQ(none.succeeded, none.oracle_succeeded);
  EXPECT_EQ(none.succeeded + none.failed, none.offered);
}

// In the slow family a failure is known only a timeout later: the breaker
// trips at the earliest 1 s into an outage, so at least a second of calls
// reaches the dead backend per outage.
TEST(RunScenarioTest, SlowFailuresArriveLate) {
  auto slow = MakeScenario("slow", Seconds(300), 1000, 1);
  auto fast = MakeScenario("outage", Seconds(300), 1000, 1);
  ASSERT_TRUE(slow.ok() && fast.ok());
  const Metrics s = RunScenario(*slow, Recommended(), 1);
  const Metrics f = RunScenario(*fast, Recommended(), 1);
  const int64_t outages = static_cast<int64_t>(s.recovery99_per_outage.size());
  ASSERT_GT(outages, 3);
  EXPECT_GE(s.reached_failing_backend, outages * 1000);
  EXPECT_LT(f.reached_failing_backend, outages * 100);
}

// probeOverdue: without it, a probe sent into the slow outage holds every
// call back for its whole second; with the shipped 400 ms, recovery after a
// slow outage takes less than half a second on average.
TEST(RunScenarioTest, ProbeOverdueBoundsTheSlowRecovery) {
  auto slow = MakeScenario("slow", Seconds(300), 1000, 1);
  ASSERT_TRUE(slow.ok());
  const Policy stuck{"stuck",
                     R"({"threeState": {"failureRateThreshold": 0.8, "consecutiveFailures": 10,
                         "openDuration": "0.2s", "maxOpenDuration": "0.48s",
                         "probeInterval": "0.02s"}})"};
  const Metrics without = RunScenario(*slow, stuck, 1);
  const Metrics with = RunScenario(*slow, Recommended(), 1);
  EXPECT_GT(without.recovery99_seconds, 0.6);
  EXPECT_LT(with.recovery99_seconds, 0.45);
  EXPECT_GT(with.goodput_ratio, without.goodput_ratio);
}

using Key = std::pair<std::string, int>;

std::map<Key, Metrics> RecommendedIn(
    const std::vector<std::string>& families) {
  SuiteOptions options;
  options.families = families;
  auto rows = RunSuite(options, {Policy{"none", ""}, Recommended()});
  EXPECT_TRUE(rows.ok()) << rows.status();
  std::map<Key, Metrics> out;
  if (!rows.ok()) return out;
  for (const SuiteRow& row : *rows) {
    if (row.policy == "recommended") out[Key(row.family, row.calls_per_second)] = row.metrics;
  }
  return out;
}

// The targets of docs/breaker-quality.md on outages, seeds 1-3: goodput
// >= 0.99 at every rate; waste <= 0.01 at 1000 and <= 0.03 at 100 calls/s;
// back to 99% of the oracle's rate within 0.5 s of every outage at 1000
// calls/s. At 10 calls/s the waste is about 0.27, not the 0.10 once asked:
// the docs show why no breaker that learns from its calls can do both there.
TEST(BreakerQualityTest, RecommendedOnOutages) {
  auto m = RecommendedIn({"outage"});
  for (int rate : {1000, 100, 10}) {
    EXPECT_GE(m[Key("outage", rate)].goodput_ratio, 0.99) << rate;
  }
  EXPECT_LE(m[Key("outage", 1000)].waste_ratio, 0.01);
  EXPECT_LE(m[Key("outage", 100)].waste_ratio, 0.03);
  EXPECT_LE(m[Key("outage", 10)].waste_ratio, 0.30);
  EXPECT_LE(m[Key("outage", 1000)].recovery99_max_seconds, 0.5);
}

// The slow family (failures reported 1 s late), seeds 1-3: back to 99% of
// the oracle's rate within 0.5 s of every outage at 1000 calls/s, with
// goodput >= 0.99 at every rate. A probe superseded by an overdue one no
// longer re-opens the breaker when its failure arrives late (it did, 86 ms
// after the backend of seed 1's outage at 92.5-102.0 s had recovered,
// holding calls back 0.565 s).
TEST(BreakerQualityTest, RecommendedOnSlowOutages) {
  auto m = RecommendedIn({"slow"});
  for (int rate : {1000, 100, 10}) {
    EXPECT_GE(m[Key("slow", rate)].goodput_ratio, 0.99) << rate;
  }
  EXPECT_LE(m[Key("slow", 1000)].recovery99_max_seconds, 0.5);
  EXPECT_LE(m[Key("slow", 100)].recovery99_max_seconds, 0.5);
}

// A brownout of 30% errors, below the 80% threshold, never trips it by the
// rate; only a rare run of 10 failures in a row opens it briefly.
TEST(BreakerQualityTest, RecommendedThroughABrownout) {
  auto m = RecommendedIn({"brownout"});
  for (int rate : {1000, 100, 10}) {
    EXPECT_GE(m[Key("brownout", rate)].goodput_ratio, 0.999) << rate;
  }
}

// SreBreaker's own defaults do not count local drops: after an outage its
// success rate is back to 99% of the oracle's in about a third of the time
// the go-zero preset (drops counted) takes, with more goodput.
TEST(BreakerQualityTest, SreDefaultsRecoverFasterThanTheGoZeroPreset) {
  std::map<std::string, Policy> by_key;
  for (const Policy& p : StandardPolicies()) by_key[p.key] = p;
  ASSERT_TRUE(by_key.count("sre-default") && by_key.count("sre-go-zero"));
  const std::vector<Period> schedule = OutageSchedule(Seconds(300), 1);
  const Metrics d = RunSimulated(schedule, Seconds(300), by_key["sre-default"], 1);
  const Metrics g = RunSimulated(schedule, Seconds(300), by_key["sre-go-zero"], 1);
  EXPECT_LT(d.recovery99_seconds, 0.5 * g.recovery99_seconds);
  EXPECT_GT(d.goodput_ratio, g.goodput_ratio);
}

}  // namespace
}  // namespace goodput

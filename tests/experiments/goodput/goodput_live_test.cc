// The goodput experiment's live mode, short: real time, concurrent callers,
// real latencies, a hand-made outage (healthy 1 s, down 2 s, healthy 2 s).
// Real time makes the exact counts vary; what must hold does not.

#include "experiments/goodput/live_run.h"

#include "gtest/gtest.h"

namespace goodput {
namespace {

Period P(Period::Kind kind, int from_ms, int to_ms) {
  Period p;
  p.kind = kind;
  p.start = absl::Milliseconds(from_ms);
  p.end = absl::Milliseconds(to_ms);
  return p;
}

Policy Recommended() {
  for (const Policy& p : StandardPolicies()) {
    if (p.key == "recommended") return p;
  }
  return {};
}

// Every policy's calls are paced, counted the same by client and server
// (RunLive() fails otherwise), `none` gets exactly the oracle's successes,
// and the recommended breaker keeps most calls off the dead backend and is
// back within a second of its recovery although outcomes arrive late and
// out of order.
TEST(GoodputLiveTest, RecommendedHoldsInRealTime) {
  const std::vector<Period> schedule = {P(Period::kHealthy, 0, 1000),
                                        P(Period::kDown, 1000, 3000),
                                        P(Period::kHealthy, 3000, 5000)};
  LiveOptions options;
  options.length = absl::Seconds(5);
  const std::vector<Policy> policies = {Policy{"none", ""}, Recommended()};
  ASSERT_FALSE(policies[1].breaker_json.empty());
  absl::StatusOr<std::vector<Metrics>> results = RunLive(schedule, policies, options);
  ASSERT_TRUE(results.ok()) << results.status();
  SetWasteRatios(*results, 0);
  const Metrics& none = (*results)[0];
  const Metrics& rec = (*results)[1];
  EXPECT_GT(none.offered, 500);  // about 1000 when the machine keeps up
  EXPECT_EQ(none.succeeded, none.oracle_succeeded);
  EXPECT_EQ(none.rejected_locally, 0);
  EXPECT_LT(rec.waste_ratio, 0.3);
  EXPECT_GT(rec.goodput_ratio, 0.8);
  ASSERT_EQ(rec.recovery99_per_outage.size(), 1u);
  EXPECT_LT(rec.recovery99_seconds, 1.0);
}

}  // namespace
}  // namespace goodput

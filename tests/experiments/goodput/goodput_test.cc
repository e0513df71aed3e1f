// The goodput experiment's conclusions, pinned for a fixed seed (the whole
// 300 s schedules run in well under a second of simulated time).

#include "experiments/goodput/goodput.h"

#include <map>

#include "gtest/gtest.h"

namespace goodput {
namespace {

std::map<std::string, Metrics> RunAll(const std::vector<Period>& schedule) {
  const absl::Duration length = absl::Seconds(300);
  std::map<std::string, Metrics> results;
  for (const Policy& policy : StandardPolicies()) {
    results[policy.key] = RunSimulated(schedule, length, policy, /*seed=*/1);
  }
  for (auto& [key, m] : results) {
    m.waste_ratio = static_cast<double>(m.reached_failing_backend) /
                    results["none"].reached_failing_backend;
  }
  return results;
}

class GoodputTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::map<std::string, Metrics> results_ =
      RunAll(GetParam() == "outage" ? OutageSchedule(absl::Seconds(300), 1)
                                 : MixedSchedule(absl::Seconds(300), 1));
};

// Every breaker sends fewer calls to a failing backend than no breaker.
TEST_P(GoodputTest, EveryBreakerReducesWaste) {
  for (const auto& [key, m] : results_) {
    if (key == "none") continue;
    EXPECT_LT(m.waste_ratio, 1.0) << key;
    EXPECT_EQ(m.offered, 300000) << key;
    EXPECT_EQ(m.succeeded + m.failed + m.rejected_locally, m.offered) << key;
  }
}

// The recommended breaker dominates both anchors: more goodput, less waste.
TEST_P(GoodputTest, RecommendedDominatesTheAnchors) {
  const Metrics& r = results_["recommended"];
  for (const char* anchor : {"sre-go-zero", "three-state-hystrix"}) {
    EXPECT_GT(r.goodput_ratio, results_[anchor].goodput_ratio) << anchor;
    EXPECT_LT(r.waste_ratio, results_[anchor].waste_ratio) << anchor;
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, GoodputTest, ::testing::Values("outage", "mixed"));

// On the outage schedule the recommended breaker gets 99% of the oracle's
// successes while sending at most 1% of no-breaker's calls to the dead
// backend.
TEST(GoodputOutageTest, RecommendedMeetsTheTarget) {
  std::map<std::string, Metrics> results = RunAll(OutageSchedule(absl::Seconds(300), 1));
  EXPECT_GE(results["recommended"].goodput_ratio, 0.99);
  EXPECT_LE(results["recommended"].waste_ratio, 0.01);
}

// Schedules are seeded: the same seed gives the same schedule, another seed
// another one; periods alternate healthy / failing and tile the run.
TEST(ScheduleTest, SeededAndWellFormed) {
  const auto a = MixedSchedule(absl::Seconds(300), 5);
  const auto b = MixedSchedule(absl::Seconds(300), 5);
  const auto c = MixedSchedule(absl::Seconds(300), 6);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].end, b[i].end);
    EXPECT_EQ(a[i].kind, b[i].kind);
    EXPECT_EQ(a[i].start, i == 0 ? absl::ZeroDuration() : a[i - 1].end);
    EXPECT_EQ(a[i].kind == Period::kHealthy, i % 2 == 0);
  }
  EXPECT_EQ(a.back().end, absl::Seconds(300));
  EXPECT_NE(a[0].end, c[0].end);
}

}  // namespace
}  // namespace goodput

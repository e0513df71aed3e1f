// The criticality mix of the overload experiment, simulated and seeded: at
// 3x capacity with 20% CRITICAL and 80% SHEDDABLE, a throttle with room for
// one service time of queue answers >= 99% of the CRITICAL calls OK within
// their deadline while SHEDDABLE absorbs the cut; a server that judges every
// call CRITICAL (no header) does not.

#include "experiments/overload/criticality_mix.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overload {
namespace {

using ::testing::HasSubstr;

const MixRun& Find(const MixResult& r, const std::string& policy, bool honoured) {
  for (const MixRun& run : r.runs) {
    if (run.policy == policy && run.honoured == honoured) return run;
  }
  ADD_FAILURE() << "no run " << policy;
  return r.runs.front();
}

class CriticalityMixTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(CriticalityMixTest, CriticalIsAnsweredWhileSheddableAbsorbsTheCut) {
  MixConfig config;
  config.seed = GetParam();
  absl::StatusOr<MixResult> result = RunMixSimulated(config, MixPolicies(config));
  ASSERT_TRUE(result.ok()) << result.status();
  const double capacity = config.workers / absl::ToDoubleSeconds(config.service_time);
  const MixRun& honoured = Find(*result, "fixed-2x", true);
  const MixRun& ignored = Find(*result, "fixed-2x", false);
  SCOPED_TRACE(MixToTable(*result));
  // About 20% of 3 C offered as CRITICAL.
  EXPECT_NEAR(honoured.critical.offered, 0.6 * capacity * absl::ToDoubleSeconds(config.duration),
              0.05 * 0.6 * capacity * absl::ToDoubleSeconds(config.duration));
  EXPECT_GE(honoured.critical.ok_fraction(), 0.99);
  // SHEDDABLE absorbs the cut: most of it refused, and what is admitted is
  // mostly answered in time (the capacity is not wasted).
  EXPECT_GT(static_cast<double>(honoured.sheddable.rejected) / honoured.sheddable.offered, 0.6);
  EXPECT_GE(honoured.goodput_per_second, 0.85 * capacity);
  // Without the header every call is CRITICAL, and CRITICAL gets what
  // SHEDDABLE gets.
  EXPECT_LT(ignored.critical.ok_fraction(), 0.6);
  // The limit right for C has no room for a queue: criticality still
  // protects CRITICAL far better than without it.
  EXPECT_GT(Find(*result, "fixed", true).critical.ok_fraction(),
            Find(*result, "fixed", false).critical.ok_fraction() + 0.3);
}

INSTANTIATE_TEST_SUITE_P(Seeds, CriticalityMixTest, ::testing::Values(1, 2, 3));

TEST(CriticalityMixTest, RefusesAPolicyWithoutConcurrencyLimit) {
  MixConfig config;
  absl::StatusOr<MixResult> result =
      RunMixSimulated(config, {Policy{"rate", R"({"ratePerSecond": 100})"}});
  EXPECT_THAT(result.status().message(), HasSubstr("policy rate: no concurrency limit"));
  config.workers = 0;
  EXPECT_FALSE(RunMixSimulated(config, MixPolicies(config)).ok());
}

TEST(CriticalityMixTest, JsonNamesEveryRunAndClass) {
  MixConfig config;
  config.duration = absl::Seconds(1);
  absl::StatusOr<MixResult> result = RunMixSimulated(config, MixPolicies(config));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->runs.size(), 6u);
  const std::string json = MixToJson(*result);
  EXPECT_THAT(json, HasSubstr(R"("policy": "adaptive", "criticality": "ignored")"));
  EXPECT_THAT(json, HasSubstr(R"("SHEDDABLE": {"offered": )"));
}

}  // namespace
}  // namespace overload

// The tenant scenario of the overload experiment (simulated): one tenant at
// 10x its fair share among nine at 0.8x. With per-caller limits the nine
// lose at most 5% of their goodput to it; with only a method-wide limit they
// lose much more (so the scenario can tell the two apart).

#include "experiments/overload/tenant_mix.h"

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overload {
namespace {

using ::testing::HasSubstr;

class TenantMixTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(TenantMixTest, PerCallerLimitsKeepTheQuietTenantsGoodput) {
  TenantConfig config;
  config.seed = GetParam();
  absl::StatusOr<TenantMixResult> result = RunTenantsSimulated(config, TenantPolicies(config));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->runs.size(), 6u);
  ASSERT_EQ(result->quiet_loss.size(), 3u);
  const std::string table = TenantsToTable(*result);
  // shared: the noisy tenant takes the method's limit.
  EXPECT_EQ(result->runs[0].policy, "shared");
  EXPECT_GT(result->quiet_loss[0], 0.20) << table;
  for (size_t p : {1u, 2u}) {
    const TenantRun& with = result->runs[2 * p];
    EXPECT_LE(result->quiet_loss[p], 0.05) << with.policy << "\n" << table;
    // The noisy tenant is held to its key's limit: the rate's share
    // (1000/s / 10 tenants), or 4 slots of 16 ms calls (250/s); most of its
    // calls are refused.
    const double noisy_goodput = with.tenants[0].ok_in_deadline / 10.0;
    EXPECT_LE(noisy_goodput, p == 1 ? 1.1 * 100 : 250) << with.policy << "\n" << table;
    EXPECT_GT(with.tenants[0].rejected, with.tenants[0].offered / 2) << table;
  }
  // Without the noisy tenant every policy serves the nine nearly alike.
  for (size_t p : {1u, 2u}) {
    EXPECT_GT(result->runs[2 * p + 1].quiet_goodput_per_second,
              0.95 * result->runs[1].quiet_goodput_per_second)
        << table;
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, TenantMixTest, ::testing::Values(1, 2, 3));

TEST(TenantMixConfigTest, RefusesAConfigThatCannotRun) {
  TenantConfig config;
  config.tenants = 1;
  EXPECT_FALSE(RunTenantsSimulated(config, TenantPolicies(config)).ok());
}

TEST(TenantMixOutputTest, JsonTableAndSvgNameEveryPolicy) {
  TenantConfig config;
  config.duration = absl::Seconds(1);
  absl::StatusOr<TenantMixResult> result = RunTenantsSimulated(config, TenantPolicies(config));
  ASSERT_TRUE(result.ok()) << result.status();
  for (const std::string& text :
       {TenantsToJson(*result), TenantsToTable(*result), TenantsToSvg(*result, "t")}) {
    for (const char* name : {"shared", "per-caller-rate", "per-caller-concurrency"}) {
      EXPECT_THAT(text, ::testing::HasSubstr(name));
    }
  }
  EXPECT_THAT(TenantsToJson(*result), ::testing::HasSubstr("\"quiet_loss\": {\"shared\": "));
}

// Repetitions (over real gRPC each differs) are printed one after the other,
// then each policy's smallest and largest loss, then the simulated figures
// at the same scale; the chart has a group per policy and repetition.
TEST(TenantMixOutputTest, RepeatsListEveryRunAndTheRangeOfTheLoss) {
  TenantConfig config;
  config.duration = absl::Seconds(1);
  absl::StatusOr<TenantMixResult> first = RunTenantsSimulated(config, TenantPolicies(config));
  ASSERT_TRUE(first.ok()) << first.status();
  TenantMixResult second = *first;
  second.quiet_loss[0] = 0.5;
  second.notes.push_back("load average before: 1.00 2.00 3.00");
  const std::vector<TenantMixResult> repeats = {*first, second};
  const std::string table = TenantRepeatsToTable(repeats, &*first);
  EXPECT_THAT(table, HasSubstr("== run 2 of 2 =="));
  EXPECT_THAT(table, HasSubstr("note: load average before: 1.00 2.00 3.00"));
  EXPECT_THAT(table, HasSubstr(absl::StrFormat("shared                   %.2f%% to 50.00%%",
                                               100 * first->quiet_loss[0])));
  EXPECT_THAT(table, HasSubstr("== simulated at the same scale (same arrivals) =="));
  const std::string json = TenantRepeatsToJson(repeats, &*first);
  EXPECT_THAT(json, HasSubstr("{\"repeats\": [\n{\"config\": "));
  EXPECT_THAT(json, HasSubstr("\"notes\": [\"load average before: 1.00 2.00 3.00\"]"));
  EXPECT_THAT(json, HasSubstr("\"simulated_same_scale\": {\"config\": "));
  const std::string svg = TenantRepeatsToSvg(repeats, "t");
  EXPECT_THAT(svg, HasSubstr("run 2: quiet lose 50.0%"));
  EXPECT_THAT(svg, HasSubstr("per-caller-concurrency"));
  // One repetition without simulated figures prints as TenantsTo*().
  EXPECT_EQ(TenantRepeatsToTable({*first}, nullptr), TenantsToTable(*first));
  EXPECT_EQ(TenantRepeatsToJson({*first}, nullptr), TenantsToJson(*first));
}

}  // namespace
}  // namespace overload

// methodConfig[].criticality and throttle.criticalityShares: defaults,
// values, and errors naming the path and the value.

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/policy/policy_table_test_util.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<PolicyTable> LoadEntry(const std::string& fields) {
  return Load(absl::StrCat(R"({"methodConfig": [{"name": [{"service": "s.S", "method": "M"}], )",
                           fields, "}]}"));
}

TEST(CriticalityPolicyTest, DefaultsAreCriticalAndTheWholeLimit) {
  absl::StatusOr<PolicyTable> table = LoadEntry(R"("throttle": {"maxConcurrency": 10})");
  ASSERT_TRUE(table.ok()) << table.status();
  const MethodPolicy& p = *table->Find("/s.S/M").policy;
  EXPECT_EQ(p.criticality.default_level, Criticality::kCritical);
  EXPECT_EQ(p.criticality.ceiling, Criticality::kCritical);
  // A header may lower a call, never raise it above the ceiling.
  EXPECT_EQ(p.criticality.Resolve(Criticality::kCriticalPlus), Criticality::kCritical);
  EXPECT_EQ(p.criticality.Resolve(Criticality::kSheddable), Criticality::kSheddable);
  EXPECT_EQ(p.criticality.Resolve(std::nullopt), Criticality::kCritical);
  const CriticalityShares& shares = p.throttle->criticality_shares;
  EXPECT_EQ(shares.share(Criticality::kCriticalPlus), 1.0);
  EXPECT_EQ(shares.share(Criticality::kCritical), 1.0);
  EXPECT_EQ(shares.share(Criticality::kSheddablePlus), 0.75);
  EXPECT_EQ(shares.share(Criticality::kSheddable), 0.5);
}

TEST(CriticalityPolicyTest, ReadsLevelsAndShares) {
  absl::StatusOr<PolicyTable> table = LoadEntry(
      R"("criticality": {"default": "SHEDDABLE_PLUS", "ceiling": "CRITICAL_PLUS"},
         "throttle": {"ratePerSecond": 100, "criticalityShares": {"sheddable": 0.2}})");
  ASSERT_TRUE(table.ok()) << table.status();
  const MethodPolicy& p = *table->Find("/s.S/M").policy;
  EXPECT_EQ(p.criticality.default_level, Criticality::kSheddablePlus);
  EXPECT_EQ(p.criticality.Resolve(Criticality::kCriticalPlus), Criticality::kCriticalPlus);
  EXPECT_EQ(p.throttle->criticality_shares.share(Criticality::kSheddable), 0.2);
  EXPECT_EQ(p.throttle->criticality_shares.share(Criticality::kSheddablePlus), 0.75);
}

TEST(CriticalityPolicyTest, ALowCeilingLowersTheDefault) {
  absl::StatusOr<PolicyTable> table = LoadEntry(R"("criticality": {"ceiling": "SHEDDABLE"})");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->Find("/s.S/M").policy->criticality.default_level, Criticality::kSheddable);
}

TEST(CriticalityPolicyTest, ErrorsNameThePathAndValue) {
  absl::StatusOr<PolicyTable> t = LoadEntry(R"("criticality": {"default": "URGENT"})");
  EXPECT_THAT(t.status().message(),
              HasSubstr("methodConfig[0].criticality.default: must be \"CRITICAL_PLUS\", "
                        "\"CRITICAL\", \"SHEDDABLE_PLUS\" or \"SHEDDABLE\", got \"URGENT\""));
  t = LoadEntry(R"("criticality": {"ceiling": "critical"})");
  EXPECT_THAT(t.status().message(),
              HasSubstr("methodConfig[0].criticality.ceiling: must be \"CRITICAL_PLUS\""));
  t = LoadEntry(R"("criticality": {"default": "CRITICAL_PLUS"})");
  EXPECT_THAT(t.status().message(),
              HasSubstr("methodConfig[0].criticality.default: must be at most the ceiling "
                        "(\"CRITICAL\"), got \"CRITICAL_PLUS\""));
  t = LoadEntry(R"("throttle": {"maxConcurrency": 4, "criticalityShares": {"sheddable": 1.5}})");
  EXPECT_THAT(t.status().message(),
              HasSubstr("methodConfig[0].throttle.criticalityShares.sheddable: must be in [0, 1], "
                        "got 1.5"));
  t = LoadEntry(
      R"("throttle": {"maxConcurrency": 4, "criticalityShares": {"sheddablePlus": 0.9, "critical": 0.8}})");
  EXPECT_THAT(t.status().message(),
              HasSubstr("methodConfig[0].throttle.criticalityShares.sheddablePlus: must be <= "
                        "methodConfig[0].throttle.criticalityShares.critical (0.8), got 0.9"));
  t = LoadEntry(R"("throttle": {"criticalityShares": {"sheddable": 0.1}})");
  EXPECT_FALSE(t.ok());  // shares without a limit: the throttle sets none
}

}  // namespace
}  // namespace resilience

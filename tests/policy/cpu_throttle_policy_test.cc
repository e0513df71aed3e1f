// throttle.cpu: the CPU gate's threshold, alone or beside the throttle's
// other limits, and errors naming the path and the value.

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/policy/policy_table_test_util.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

TEST(CpuThrottlePolicyTest, ReadsTheThresholdAloneOrBesideOtherLimits) {
  absl::StatusOr<PolicyTable> alone = LoadThrottle(R"({"cpu": {"threshold": 0.8}})");
  ASSERT_TRUE(alone.ok()) << alone.status();
  const ThrottleSettings& t = *alone->Find("/s.S/M").policy->throttle;
  ASSERT_TRUE(t.cpu_threshold.has_value());
  EXPECT_DOUBLE_EQ(*t.cpu_threshold, 0.8);
  EXPECT_EQ(t.max_concurrency, 0);
  EXPECT_EQ(t.rate_per_second, 0);

  absl::StatusOr<PolicyTable> beside =
      LoadThrottle(R"({"maxConcurrency": 10, "cpu": {"threshold": 1}})");
  ASSERT_TRUE(beside.ok()) << beside.status();
  EXPECT_EQ(beside->Find("/s.S/M").policy->throttle->max_concurrency, 10);
  EXPECT_DOUBLE_EQ(*beside->Find("/s.S/M").policy->throttle->cpu_threshold, 1.0);

  absl::StatusOr<PolicyTable> without = LoadThrottle(R"({"maxConcurrency": 10})");
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_FALSE(without->Find("/s.S/M").policy->throttle->cpu_threshold.has_value());
}

TEST(CpuThrottlePolicyTest, ErrorsNameThePathAndValue) {
  const std::string at = "methodConfig[0].throttle.cpu.threshold";
  absl::StatusOr<PolicyTable> missing = LoadThrottle(R"({"cpu": {}})");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr(at + ": required"));
  for (const char* bad : {"0", "1.5", "-0.1"}) {
    absl::StatusOr<PolicyTable> table =
        LoadThrottle(absl::StrCat(R"({"cpu": {"threshold": )", bad, "}}"));
    ASSERT_FALSE(table.ok()) << bad;
    EXPECT_THAT(std::string(table.status().message()),
                HasSubstr(absl::StrCat(at, ": must be in (0, 1], got ", bad)));
  }
  absl::StatusOr<PolicyTable> typo = LoadThrottle(R"({"cpu": {"treshold": 0.5}})");
  EXPECT_FALSE(typo.ok() && typo->warnings().empty()) << "a misspelt field is never silent";
}

}  // namespace
}  // namespace resilience

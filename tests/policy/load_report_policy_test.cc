// throttle.loadReport: on by default for every throttle, switched off by
// false, and errors naming the path and the value.

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/policy/policy_table_test_util.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

TEST(LoadReportPolicyTest, OnByDefaultOffWhenFalse) {
  absl::StatusOr<PolicyTable> by_default = LoadThrottle(R"({"maxConcurrency": 10})");
  ASSERT_TRUE(by_default.ok()) << by_default.status();
  EXPECT_TRUE(by_default->Find("/s.S/M").policy->throttle->load_report);
  EXPECT_TRUE(by_default->warnings().empty());

  absl::StatusOr<PolicyTable> off = LoadThrottle(R"({"maxConcurrency": 10, "loadReport": false})");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->Find("/s.S/M").policy->throttle->load_report);

  absl::StatusOr<PolicyTable> on = LoadThrottle(R"({"ratePerSecond": 5, "loadReport": true})");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_TRUE(on->Find("/s.S/M").policy->throttle->load_report);
  EXPECT_TRUE(on->warnings().empty());
}

TEST(LoadReportPolicyTest, ErrorsNameThePathAndValue) {
  absl::StatusOr<PolicyTable> alone = LoadThrottle(R"({"loadReport": true})");
  ASSERT_FALSE(alone.ok());
  EXPECT_THAT(std::string(alone.status().message()),
              HasSubstr("methodConfig[0].throttle: set maxConcurrency"));
  EXPECT_THAT(std::string(alone.status().message()),
              HasSubstr("loadReport alone has no load to report"));

  absl::StatusOr<PolicyTable> not_bool =
      LoadThrottle(R"({"maxConcurrency": 10, "loadReport": "yes"})");
  ASSERT_FALSE(not_bool.ok());
  EXPECT_THAT(std::string(not_bool.status().message()), HasSubstr("loadReport"));
  EXPECT_THAT(std::string(not_bool.status().message()), HasSubstr("yes"));

  absl::StatusOr<PolicyTable> typo =
      LoadThrottle(R"({"maxConcurrency": 10, "loadReports": false})");
  EXPECT_FALSE(typo.ok() && typo->warnings().empty()) << "a misspelt field is never silent";
}

}  // namespace
}  // namespace resilience

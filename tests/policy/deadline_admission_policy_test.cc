// throttle.deadlineAdmission: its defaults, alone in a throttle or beside
// other limits, and errors naming the path and the value.

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/policy/policy_table_test_util.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

TEST(DeadlineAdmissionPolicyTest, DefaultsAloneOrBesideOtherLimits) {
  absl::StatusOr<PolicyTable> alone = LoadThrottle(R"({"deadlineAdmission": {}})");
  ASSERT_TRUE(alone.ok()) << alone.status();
  const ThrottleSettings& t = *alone->Find("/s.S/M").policy->throttle;
  ASSERT_TRUE(t.deadline_admission.has_value());
  EXPECT_DOUBLE_EQ(t.deadline_admission->percentile, 0.9);
  EXPECT_DOUBLE_EQ(t.deadline_admission->max_share, 0.2);
  EXPECT_EQ(t.deadline_admission->window, absl::Seconds(10));
  EXPECT_EQ(t.deadline_admission->min_samples, 100);
  EXPECT_EQ(t.max_concurrency, 0);
  EXPECT_EQ(t.rate_per_second, 0);

  absl::StatusOr<PolicyTable> set = LoadThrottle(
      R"({"maxConcurrency": 10, "deadlineAdmission": {"percentile": 0.99, "maxShare": 0.5,
          "window": "2.5s", "minSamples": 20}})");
  ASSERT_TRUE(set.ok()) << set.status();
  const ThrottleSettings& s = *set->Find("/s.S/M").policy->throttle;
  EXPECT_EQ(s.max_concurrency, 10);
  ASSERT_TRUE(s.deadline_admission.has_value());
  EXPECT_DOUBLE_EQ(s.deadline_admission->percentile, 0.99);
  EXPECT_DOUBLE_EQ(s.deadline_admission->max_share, 0.5);
  EXPECT_EQ(s.deadline_admission->window, absl::Milliseconds(2500));
  EXPECT_EQ(s.deadline_admission->min_samples, 20);

  absl::StatusOr<PolicyTable> without = LoadThrottle(R"({"maxConcurrency": 10})");
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_FALSE(without->Find("/s.S/M").policy->throttle->deadline_admission.has_value());
}

TEST(DeadlineAdmissionPolicyTest, ErrorsNameThePathAndValue) {
  const std::string at = "methodConfig[0].throttle.deadlineAdmission";
  struct Case {
    const char* json;
    std::string message;
  };
  for (const Case& c : {
           Case{R"({"percentile": 0.3})", at + ".percentile: must be in [0.5, 1], got 0.3"},
           Case{R"({"percentile": 90})", at + ".percentile: must be in [0.5, 1], got 90"},
           Case{R"({"maxShare": 0})", at + ".maxShare: must be in (0, 1], got 0"},
           Case{R"({"maxShare": 1.5})", at + ".maxShare: must be in (0, 1], got 1.5"},
           Case{R"({"window": "0.05s"})",
                at + ".window: must be in [100ms, 1h] and a whole multiple of 10ms, got 50ms"},
           Case{R"({"window": "7200s"})",
                at + ".window: must be in [100ms, 1h] and a whole multiple of 10ms, got 2h"},
           Case{R"({"minSamples": 0})", at + ".minSamples: must be in [1, 1000], got 0"},
           Case{R"({"minSamples": 5000})", at + ".minSamples: must be in [1, 1000], got 5000"},
       }) {
    absl::StatusOr<PolicyTable> table =
        LoadThrottle(absl::StrCat(R"({"deadlineAdmission": )", c.json, "}"));
    ASSERT_FALSE(table.ok()) << c.json;
    EXPECT_THAT(std::string(table.status().message()), HasSubstr(c.message));
  }
  absl::StatusOr<PolicyTable> typo = LoadThrottle(R"({"deadlineAdmission": {"percentil": 0.9}})");
  EXPECT_FALSE(typo.ok() && typo->warnings().empty()) << "a misspelt field is never silent";
  absl::StatusOr<PolicyTable> none = LoadThrottle(R"({"loadReport": true})");
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("deadlineAdmission"));
}

}  // namespace
}  // namespace resilience

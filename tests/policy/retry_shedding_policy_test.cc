// throttle.retryShedding: its defaults, both fields, and errors naming the
// path and the value.

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/policy/policy_table_test_util.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

TEST(RetrySheddingPolicyTest, OffUnlessSetAndEmptyMeansTheDefaults) {
  absl::StatusOr<PolicyTable> without = LoadThrottle(R"({"maxConcurrency": 10})");
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_FALSE(without->Find("/s.S/M").policy->throttle->retry_shedding.has_value());

  absl::StatusOr<PolicyTable> empty =
      LoadThrottle(R"({"maxConcurrency": 10, "retryShedding": {}})");
  ASSERT_TRUE(empty.ok()) << empty.status();
  const ThrottleSettings& t = *empty->Find("/s.S/M").policy->throttle;
  ASSERT_TRUE(t.retry_shedding.has_value());
  EXPECT_DOUBLE_EQ(t.retry_shedding->retry_share, RetryShedding::kDefaultRetryShare);
  EXPECT_FALSE(t.retry_shedding->do_not_retry);
}

TEST(RetrySheddingPolicyTest, ReadsBothFields) {
  absl::StatusOr<PolicyTable> table = LoadThrottle(
      R"({"ratePerSecond": 100, "retryShedding": {"retryShare": 0.25, "doNotRetry": true}})");
  ASSERT_TRUE(table.ok()) << table.status();
  const ThrottleSettings& t = *table->Find("/s.S/M").policy->throttle;
  ASSERT_TRUE(t.retry_shedding.has_value());
  EXPECT_DOUBLE_EQ(t.retry_shedding->retry_share, 0.25);
  EXPECT_TRUE(t.retry_shedding->do_not_retry);
}

TEST(RetrySheddingPolicyTest, ErrorsNameThePathAndValue) {
  const std::string at = "methodConfig[0].throttle.retryShedding.retryShare";
  for (const char* bad : {"1.5", "-0.1"}) {
    absl::StatusOr<PolicyTable> table = LoadThrottle(
        absl::StrCat(R"({"maxConcurrency": 4, "retryShedding": {"retryShare": )", bad, "}}"));
    ASSERT_FALSE(table.ok()) << bad;
    EXPECT_THAT(std::string(table.status().message()),
                HasSubstr(absl::StrCat(at, ": must be in [0, 1], got ", bad)));
  }
  absl::StatusOr<PolicyTable> alone = LoadThrottle(R"({"retryShedding": {}})");
  EXPECT_FALSE(alone.ok()) << "retry shedding needs a limit to shed by";
  absl::StatusOr<PolicyTable> typo =
      LoadThrottle(R"({"maxConcurrency": 4, "retryShedding": {"retryshare": 0.5}})");
  EXPECT_FALSE(typo.ok() && typo->warnings().empty()) << "a misspelt field is never silent";
}

}  // namespace
}  // namespace resilience

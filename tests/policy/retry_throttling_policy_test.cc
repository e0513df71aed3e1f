// retryThrottling (gRPC's, one per channel) and retryBudget (ours, one per
// channel and method) in the policy file: what each entry gets, the
// defaults, the refusals naming path and value, and the warning of a budget
// that cannot act.

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/policy/method_catalog.h"
#include "src/policy/policy_table.h"

namespace resilience {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

absl::StatusOr<PolicyTable> Load(const std::string& json) {
  static const MethodCatalog* const methods = new MethodCatalog(
      {{"a.S", "Get"}, {"a.S", "Store"}, {"a.S", "Put"}, {"a.S", "Ping"}});
  PolicyTable::LoadOptions options;
  options.methods = methods;
  return PolicyTable::FromJsonString(json, options);
}

// Four entries: Get retries, Store hedges, Put retries with a retryBudget of
// its own, Ping only has a timeout; `top` is added at the top level.
std::string File(const std::string& top) {
  return absl::StrCat(R"({"methodConfig": [
      {"name": [{"service": "a.S", "method": "Get"}], "retryPolicy": {"maxAttempts": 3}},
      {"name": [{"service": "a.S", "method": "Store"}],
       "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.01s"}},
      {"name": [{"service": "a.S", "method": "Put"}], "retryPolicy": {"maxAttempts": 2},
       "retryBudget": {"maxTokens": 20, "tokenRatio": 0.5}},
      {"name": [{"service": "a.S", "method": "Ping"}], "timeout": "1s"}])",
                      top, "}");
}

const MethodPolicy& Of(const PolicyTable& set, const char* method) {
  return *set.Find(method).policy;
}

// Without retryThrottling, every entry that retries or hedges keeps a
// budget of its own, with the defaults unless it wrote one.
TEST(RetryThrottlingPolicyTest, WithoutRetryThrottlingEachReissuingMethodHasABudget) {
  absl::StatusOr<PolicyTable> set = Load(File(""));
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(set->warnings(), IsEmpty());
  EXPECT_FALSE(set->retry_throttling().has_value());
  ASSERT_TRUE(Of(*set, "/a.S/Get").retry_budget.has_value());
  EXPECT_EQ(Of(*set, "/a.S/Get").retry_budget->max_tokens, 10);
  EXPECT_EQ(Of(*set, "/a.S/Get").retry_budget->token_ratio, 0.1);
  ASSERT_TRUE(Of(*set, "/a.S/Store").retry_budget.has_value());
  EXPECT_EQ(Of(*set, "/a.S/Store").retry_budget->max_tokens, 10);
  ASSERT_TRUE(Of(*set, "/a.S/Put").retry_budget.has_value());
  EXPECT_EQ(Of(*set, "/a.S/Put").retry_budget->max_tokens, 20);
  EXPECT_EQ(Of(*set, "/a.S/Put").retry_budget->token_ratio, 0.5);
  EXPECT_FALSE(Of(*set, "/a.S/Ping").retry_budget.has_value());
}

// With retryThrottling (gRPC's meaning: one per channel), a retrying entry
// has a retryBudget only when it wrote one; a hedging entry keeps the
// default, since gRPC's throttle charges failures only and cannot bound
// hedges on a backend that is slow without failing.
TEST(RetryThrottlingPolicyTest, WithRetryThrottlingWrittenBudgetsAndHedgesKeepTheirs) {
  absl::StatusOr<PolicyTable> set =
      Load(File(R"(, "retryThrottling": {"maxTokens": 100, "tokenRatio": 0.2})"));
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(set->warnings(), IsEmpty());
  ASSERT_TRUE(set->retry_throttling().has_value());
  EXPECT_EQ(set->retry_throttling()->max_tokens, 100);
  EXPECT_EQ(set->retry_throttling()->token_ratio, 0.2);
  EXPECT_EQ(set->stream_retry_throttling().max_tokens, 100);
  EXPECT_FALSE(Of(*set, "/a.S/Get").retry_budget.has_value());
  ASSERT_TRUE(Of(*set, "/a.S/Store").retry_budget.has_value());
  EXPECT_EQ(Of(*set, "/a.S/Store").retry_budget->max_tokens, 10);
  EXPECT_EQ(Of(*set, "/a.S/Store").retry_budget->token_ratio, 0.1);
  ASSERT_TRUE(Of(*set, "/a.S/Put").retry_budget.has_value());
  EXPECT_EQ(Of(*set, "/a.S/Put").retry_budget->max_tokens, 20);
  EXPECT_FALSE(Of(*set, "/a.S/Ping").retry_budget.has_value());
}

TEST(RetryThrottlingPolicyTest, BadBudgetsNameTheirPath) {
  absl::StatusOr<PolicyTable> set = Load(R"({"methodConfig": [{"name": [{"service": "a.S"}],
      "retryPolicy": {"maxAttempts": 2}, "retryBudget": {"maxTokens": 0}}]})");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(std::string(set.status().message()),
              HasSubstr("methodConfig[0].retryBudget.maxTokens: must be in [1, 1000], got 0"));
  set = Load(R"({"methodConfig": [{"name": [{"service": "a.S"}],
      "retryPolicy": {"maxAttempts": 2}, "retryBudget": {"tokenRatio": 1.5}}]})");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(std::string(set.status().message()),
              HasSubstr("methodConfig[0].retryBudget.tokenRatio: must be in (0, 1], got 1.5"));
  set = Load(R"({"retryThrottling": {"maxTokens": 1001}})");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(std::string(set.status().message()),
              HasSubstr("retryThrottling.maxTokens: must be in [1, 1000], got 1001"));
}

// A retryBudget on an entry that makes one attempt per call acts on nothing.
TEST(RetryThrottlingPolicyTest, BudgetOfAnEntryThatNeverReissuesWarns) {
  absl::StatusOr<PolicyTable> set = Load(R"({"methodConfig": [{"name": [{"service": "a.S"}],
      "timeout": "1s", "retryBudget": {"maxTokens": 5}}]})");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(set->warnings(),
              ElementsAre("methodConfig[0].retryBudget: the entry neither retries (a retryPolicy "
                          "with maxAttempts above 1) nor hedges, so it has no effect"));
}

}  // namespace
}  // namespace resilience

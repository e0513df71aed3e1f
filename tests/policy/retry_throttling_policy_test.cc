// retryThrottling (gRPC's, one per channel) and retryBudget (ours, one per
// channel and method) in the policy file: what each entry gets, the
// defaults, the refusals naming path and value, and the warning of a budget
// that cannot act.

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/policy/method_catalog.h"
#include "src/policy/policy_table.h"

namespace resilience {
namespace {

using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::IsSupersetOf;
using ::testing::Not;

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

// A retryBudget with a ttl scales with the method's calls: the entry gets a
// windowed budget (no bucket, not even the default one), with the
// defaults for what it does not write.
TEST(RetryThrottlingPolicyTest, RetryBudgetWithTtlIsWindowed) {
  absl::StatusOr<PolicyTable> set = Load(R"({"methodConfig": [
      {"name": [{"service": "a.S", "method": "Get"}], "retryPolicy": {"maxAttempts": 3},
       "retryBudget": {"tokenRatio": 0.2, "ttl": "5s", "initialTokens": 3,
                       "minRetriesPerSecond": 0.25}},
      {"name": [{"service": "a.S", "method": "Store"}],
       "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.01s"},
       "retryBudget": {"ttl": "10s"}}],
      "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}})");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(set->warnings(), IsEmpty());
  const MethodPolicy& get = Of(*set, "/a.S/Get");
  EXPECT_FALSE(get.retry_budget.has_value());
  ASSERT_TRUE(get.windowed_budget.has_value());
  EXPECT_EQ(get.windowed_budget->token_ratio, 0.2);
  EXPECT_EQ(get.windowed_budget->ttl, absl::Seconds(5));
  EXPECT_EQ(get.windowed_budget->initial_tokens, 3);
  EXPECT_EQ(get.windowed_budget->min_retries_per_second, 0.25);
  const MethodPolicy& store = Of(*set, "/a.S/Store");
  EXPECT_FALSE(store.retry_budget.has_value());  // a hedging entry's default bucket is not added
  ASSERT_TRUE(store.windowed_budget.has_value());
  EXPECT_EQ(*store.windowed_budget, WindowedRetryBudget::Options());
  EXPECT_EQ(set->retry_throttling()->max_tokens, 10);  // gRPC's, unchanged
}

TEST(RetryThrottlingPolicyTest, BadWindowedBudgetsNameTheirPath) {
  const std::pair<const char*, const char*> cases[] = {
      {R"("retryBudget": {"ttl": "0s"})", "methodConfig[0].retryBudget.ttl: must be in [1s, 1m], got 0"},
      {R"("retryBudget": {"ttl": "90s"})",
       "methodConfig[0].retryBudget.ttl: must be in [1s, 1m], got 1m30s"},
      {R"("retryBudget": {"ttl": "10s", "tokenRatio": 0})",
       "methodConfig[0].retryBudget.tokenRatio: must be in (0, 1], got 0"},
      {R"("retryBudget": {"ttl": "10s", "initialTokens": -1})",
       "methodConfig[0].retryBudget.initialTokens: must be in [0, 1000], got -1"},
      {R"("retryBudget": {"initialTokens": 3})",
       "methodConfig[0].retryBudget.initialTokens: initialTokens is for a budget with a ttl"},
      {R"("retryBudget": {"minRetriesPerSecond": 1})",
       "methodConfig[0].retryBudget.minRetriesPerSecond: minRetriesPerSecond is for a budget "
       "with a ttl"},
      {R"("retryBudget": {"ttl": "10s", "minRetriesPerSecond": -0.5})",
       "methodConfig[0].retryBudget.minRetriesPerSecond: must be in [0, 1000], got -0.5"},
  };
  for (const auto& [budget, message] : cases) {
    absl::StatusOr<PolicyTable> set = Load(absl::StrCat(
        R"({"methodConfig": [{"name": [{"service": "a.S"}], "retryPolicy": {"maxAttempts": 2}, )",
        budget, "}]}"));
    ASSERT_FALSE(set.ok()) << budget;
    EXPECT_THAT(std::string(set.status().message()), HasSubstr(message)) << budget;
  }
  // gRPC's retryThrottling keeps gRPC's fields.
  absl::StatusOr<PolicyTable> set = Load(R"({"retryThrottling": {"maxTokens": 10, "ttl": "10s"}})");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(std::string(set.status().message()),
              HasSubstr("retryThrottling.ttl: not a field of gRPC's retryThrottling"));
}

// maxTokens is a bucket's: with a ttl it is ignored, and says so.
TEST(RetryThrottlingPolicyTest, MaxTokensWithTtlWarns) {
  absl::StatusOr<PolicyTable> set = Load(R"({"methodConfig": [{"name": [{"service": "a.S"}],
      "retryPolicy": {"maxAttempts": 2}, "retryBudget": {"maxTokens": 4, "ttl": "10s"}}]})");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(set->warnings(),
              ElementsAre("methodConfig[0].retryBudget.maxTokens: ignored with ttl (the budget is "
                          "the calls' tokenRatio over the ttl, not a bucket); remove it"));
}

// A tokenRatio finer than a thousandth is kept to three decimals, as gRPC
// keeps it; the loader says which value is used, for gRPC's retryThrottling
// and for both kinds of retryBudget.
TEST(RetryThrottlingPolicyTest, TokenRatioFinerThanAThousandthWarns) {
  absl::StatusOr<PolicyTable> set = Load(R"({
      "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.0001},
      "methodConfig": [
        {"name": [{"service": "a.S"}], "retryPolicy": {"maxAttempts": 2},
         "retryBudget": {"ttl": "10s", "tokenRatio": 0.0015}},
        {"name": [{"service": "b.S"}], "retryPolicy": {"maxAttempts": 2},
         "retryBudget": {"tokenRatio": 0.25}}]})");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(set->warnings(),
              IsSupersetOf(
                  {"retryThrottling.tokenRatio: kept to three decimals, as gRPC keeps it: 0.0001 "
                   "is used as 0.001",
                   "methodConfig[0].retryBudget.tokenRatio: kept to three decimals, as gRPC keeps "
                   "it: 0.0015 is used as 0.002"}));
  EXPECT_THAT(set->warnings(), Each(Not(HasSubstr("methodConfig[1].retryBudget"))));
}

}  // namespace
}  // namespace resilience

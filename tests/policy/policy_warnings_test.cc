// File: tests/policy/policy_warnings_test.cc
//
// PolicyTable, the loader behind the public PolicySet. Warnings (settings
// without effect, strict mode) and file errors.

#include "src/policy/policy_table.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "src/core/random_source.h"
#include "src/limits/fixed_concurrency_limiter.h"
#include "src/limits/token_bucket.h"
#include "src/policy/method_catalog.h"
#include "src/retry/backoff.h"
#include "src/retry/retry_budget.h"

#include "tests/policy/policy_table_test_util.h"

namespace resilience {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A perAttemptTimeout that ends an attempt of a policy that does not retry
// DEADLINE_EXCEEDED gives up the call's remaining attempts: a warning, since
// it is rarely what was meant. Retrying DEADLINE_EXCEEDED, or a limit
// without retries (maxAttempts 1), is none.
// A long injected delay in front of a concurrency limit holds the slots of
// callers that cancel during it (callback API): a warning, so the trade-off
// is chosen; short delays, rate limits alone or no delay fraction say nothing.
TEST(PolicyTableTest, LongDelayInFrontOfAConcurrencyLimitWarns) {
  EXPECT_THAT(
      WarningsOf(Entry(R"("throttle": {"maxConcurrency": 4}, )"
                       R"("faultInjection": {"delay": "30s", "delayFraction": 1})")),
      ElementsAre("methodConfig[0].faultInjection.delay: 30s in front of "
                  "methodConfig[0].throttle's concurrency limit: on the callback API a caller "
                  "that cancels during the delay keeps its slot until the delay ends (gRPC 1.51 "
                  "reports no cancellation before the handler starts; the caller's deadline "
                  "does end it); use a delay under 1s or give callers deadlines"));
  EXPECT_THAT(WarningsOf(Entry(R"("throttle": {"adaptive": {}}, )"
                               R"("faultInjection": {"delay": "2s"})")),
              ElementsAre(HasSubstr("throttle's concurrency limit")));
  EXPECT_TRUE(WarningsOf(Entry(R"("throttle": {"maxConcurrency": 2}, )"
                               R"("faultInjection": {"delay": "0.3s"})"))
                  .empty());
  EXPECT_TRUE(WarningsOf(Entry(R"("throttle": {"ratePerSecond": 10}, )"
                               R"("faultInjection": {"delay": "30s"})"))
                  .empty());
  EXPECT_TRUE(WarningsOf(Entry(R"("throttle": {"maxConcurrency": 4}, )"
                               R"("faultInjection": {"delay": "30s", "delayFraction": 0})"))
                  .empty());
}

TEST(PolicyTableTest, PerAttemptTimeoutThatIsNotRetriedWarns) {
  EXPECT_THAT(
      WarningsOf(Entry(R"("retryPolicy": {"maxAttempts": 3, "perAttemptTimeout": "0.2s"})")),
      ElementsAre("methodConfig[0].retryPolicy.perAttemptTimeout: DEADLINE_EXCEEDED is not in "
                  "methodConfig[0].retryPolicy.retryableStatusCodes, so an attempt it ends is "
                  "not retried: the call ends then, with attempts left (add DEADLINE_EXCEEDED "
                  "to retry it)"));
  EXPECT_TRUE(WarningsOf(Entry(R"("retryPolicy": {"maxAttempts": 3, "perAttemptTimeout": "0.2s", )"
                               R"("retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]})"))
                  .empty());
  EXPECT_TRUE(
      WarningsOf(Entry(R"("retryPolicy": {"maxAttempts": 1, "perAttemptTimeout": "0.2s"})"))
          .empty());
}

// Settings that are accepted but can have no effect, or are ignored, each
// get a warning naming the path; normal configs get none.
TEST(PolicyTableTest, SettingsWithoutEffectAreWarned) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {Entry(R"("retryPolicy": {"maxAttempts": 1})"),
       "methodConfig[0].retryPolicy: maxAttempts 1 makes no retry and perAttemptTimeout is not "
       "set, so the retryPolicy has no effect"},
      {Entry(R"("retryPolicy": {"maxAttempts": 1, "perAttemptTimeout": "1s", )"
             R"("initialBackoff": "1s", "retryableStatusCodes": ["INTERNAL"]})"),
       "methodConfig[0].retryPolicy: initialBackoff, retryableStatusCodes have no effect with "
       "maxAttempts 1 (no retry)"},
      {Entry(R"("retryPolicy": {"maxAttempts": 1, "perAttemptTimeout": "1s", "jitter": 0})"),
       "methodConfig[0].retryPolicy: jitter has no effect with maxAttempts 1 (no retry)"},
      {Entry(R"("retryPolicy": {"fullJitter": true, "jitter": 0.1})"),
       "methodConfig[0].retryPolicy.jitter: ignored with fullJitter (each backoff is a uniform "
       "draw in [0, backoff])"},
      {Entry(R"("breaker": {"sre": {}, "successCodes": ["NOT_FOUND", "OK"]})"),
       "methodConfig[0].breaker.successCodes[1]: OK is always a success; listing it has no "
       "effect"},
      {Entry(R"("breaker": {"threeState": {"openDurationMultiplier": 1, )"
             R"("maxOpenDuration": "90s"}})"),
       "methodConfig[0].breaker.threeState.maxOpenDuration: no effect with "
       "openDurationMultiplier 1 (the open period stays openDuration)"},
      {Entry(R"("faultInjection": {})"),
       "methodConfig[0].faultInjection: sets neither delay nor abortCode, so it injects nothing"},
      {Entry(R"("faultInjection": {"seed": 7})"),
       "methodConfig[0].faultInjection: sets neither delay nor abortCode, so it injects nothing"},
      {Entry(R"("faultInjection": {"delay": "0s", "abortCode": "INTERNAL"})"),
       "methodConfig[0].faultInjection.delay: 0s adds no latency"},
      {absl::StrCat(R"({"retryThrottling": {"maxTokens": 5}, "methodConfig": [)",
                    R"({"name": [{"service": "a.S"}], "retryPolicy": {"maxAttempts": 1, )",
                    R"("perAttemptTimeout": "1s"}}]})"),
       "retryThrottling: no methodConfig entry retries (a retryPolicy with maxAttempts above "
       "1) or hedges, so it has no effect"},
  };
  for (const auto& [json, expected] : cases) {
    EXPECT_THAT(WarningsOf(json), ElementsAre(expected)) << json;
  }
  // OK as a failure would count every success against the backend.
  EXPECT_EQ(ErrorOf(Entry(R"("breaker": {"sre": {}, "failureCodes": ["OK"]})")),
            "methodConfig[0].breaker.failureCodes[0]: must be an error code, got OK");

  // Normal configs, ours and gRPC's, warn about nothing.
  for (const std::string& json : {
           std::string(kExample),
           Entry(R"("timeout": "1s", "waitForReady": true, "retryPolicy": {"maxAttempts": 2, )"
                 R"("initialBackoff": "0.1s", "maxBackoff": "0.1s", "backoffMultiplier": 2, )"
                 R"("retryableStatusCodes": ["UNAVAILABLE"]})"),
           Entry(R"("retryPolicy": {"maxAttempts": 1, "perAttemptTimeout": "1s"})"),
           Entry(R"("retryPolicy": {"fullJitter": true}, "breaker": {"threeState": )"
                 R"({"openDurationMultiplier": 1}, "successCodes": ["NOT_FOUND"], )"
                 R"("callerDeadline": "NEUTRAL"})"),
           Entry(R"("faultInjection": {"delay": "1s", "delayFraction": 0})"),
           std::string(R"({"methodConfig": [{"name": [{}]}]})"),
       }) {
    EXPECT_THAT(WarningsOf(json), ::testing::IsEmpty()) << json;
  }
}

// Strict mode: any warning fails the load, listing them all; without
// warnings it changes nothing, and errors stay as they are.
TEST(PolicyTableTest, StrictModeTurnsWarningsIntoAnError) {
  const PolicyTable::LoadOptions strict{/*strict=*/true};
  const std::string two_warnings =
      R"({"healthCheckConfig": {}, )"
      R"("methodConfig": [{"name": [{}], "deadline": "1s"}]})";
  EXPECT_EQ(WarningsOf(two_warnings).size(), 2u);
  absl::StatusOr<PolicyTable> refused = Load(two_warnings, strict);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "strict mode: 2 warning(s): healthCheckConfig: no effect under pick_first (gRPC's "
            "default, as no loadBalancingConfig is given): gRPC 1.51 checks health under "
            "round_robin; add \"loadBalancingConfig\": [{\"round_robin\": {}}]; "
            "methodConfig[0].deadline: deprecated alias of "
            "timeout (the call's overall deadline); write timeout");

  absl::StatusOr<PolicyTable> clean = Load(kExample, strict);
  ASSERT_TRUE(clean.ok()) << clean.status();
  EXPECT_NE(clean->Find("/cache.v1.CacheService/Get").policy, nullptr);

  EXPECT_THAT(std::string(
                  Load(Entry(R"("retryPolicy": {"maxAttempts": 0})"), strict)
                      .status()
                      .message()),
              StartsWith("methodConfig[0].retryPolicy.maxAttempts: must be in [1, 10]"));
  EXPECT_TRUE(Load(two_warnings, PolicyTable::LoadOptions{}).ok());
}

class PolicyFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& content) {
    std::string path = absl::StrCat(::testing::TempDir(), "/policy_", getpid(), "_", counter_++,
                                    ".json");
    std::ofstream(path, std::ios::binary) << content;
    paths_.push_back(path);
    return path;
  }
  ~PolicyFileTest() override {
    for (const std::string& p : paths_) std::remove(p.c_str());
  }
  int counter_ = 0;
  std::vector<std::string> paths_;
};

// Files: a good one loads; missing, directory, empty, oversized and invalid
// ones each get a message that starts with the file's path.
TEST_F(PolicyFileTest, FileErrors) {
  absl::StatusOr<PolicyTable> ok = LoadFile(Write(kExample));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_NE(ok->Find("/cache.v1.CacheService/Get").policy, nullptr);

  absl::StatusOr<PolicyTable> missing = LoadFile("/nonexistent/p.json");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("policy file \"/nonexistent/p.json\": cannot open: No such file"));

  EXPECT_THAT(LoadFile(::testing::TempDir()).status().message(),
              HasSubstr("not a regular file"));

  const std::string empty = Write("");
  EXPECT_THAT(LoadFile(empty).status().message(),
              HasSubstr(absl::StrCat("policy file \"", empty, "\": policy JSON is empty")));

  const std::string huge = Write(std::string(PolicyTable::kMaxFileBytes + 1, ' '));
  EXPECT_THAT(LoadFile(huge).status().message(),
              HasSubstr("over the limit of"));

  const std::string warned = Write(Entry(R"("deadline": "1s")"));
  EXPECT_TRUE(LoadFile(warned).ok());
  EXPECT_EQ(LoadFile(warned, PolicyTable::LoadOptions{/*strict=*/true})
                .status()
                .message(),
            absl::StrCat("policy file \"", warned, "\": strict mode: 1 warning(s): "
                         "methodConfig[0].deadline: deprecated alias of timeout (the call's "
                         "overall deadline); write timeout"));

  const std::string bad = Write(Entry(R"("retryPolicy": {"maxAttempts": 0})"));
  EXPECT_THAT(LoadFile(bad).status().message(),
              HasSubstr(absl::StrCat("policy file \"", bad,
                                     "\": methodConfig[0].retryPolicy.maxAttempts")));
}

}  // namespace
}  // namespace resilience

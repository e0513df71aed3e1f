// File: tests/policy/policy_validation_test.cc
//
// PolicyTable, the loader behind the public PolicySet. Validation: every rule
// names the path and the value, and the loader accepts exactly what the core
// classes accept.

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

// Each semantic rule, with the JSON path and the bad value in the message.
TEST(PolicyTableTest, ValidationRulesNamePathAndValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {Entry(R"("retryPolicy": {"maxAttempts": 0})"),
       "methodConfig[0].retryPolicy.maxAttempts: must be in [1, 10], got 0"},
      {Entry(R"("retryPolicy": {"maxAttempts": 11})"), "got 11"},
      {Entry(R"("retryPolicy": {"initialBackoff": "0s"})"),
       "methodConfig[0].retryPolicy.initialBackoff: must be in (0, 1h], got 0"},
      {Entry(R"("retryPolicy": {"initialBackoff": "2s", "maxBackoff": "1s"})"),
       "methodConfig[0].retryPolicy.maxBackoff: must be >= initialBackoff (2s), got 1s"},
      {Entry(R"("retryPolicy": {"backoffMultiplier": 0.5})"),
       "methodConfig[0].retryPolicy.backoffMultiplier: must be >= 1, got 0.5"},
      {Entry(R"("retryPolicy": {"jitter": 1.5})"),
       "methodConfig[0].retryPolicy.jitter: must be in [0, 1], got 1.5"},
      {Entry(R"("retryPolicy": {"jitter": "NaN"})"), "retryPolicy.jitter: must be in [0, 1], got nan"},
      {Entry(R"("retryPolicy": {"retryableStatusCodes": ["UNAVAILABLE", "BOGUS"]})"),
       "methodConfig[0].retryPolicy.retryableStatusCodes[1]: unknown status code \"BOGUS\""},
      {Entry(R"("retryPolicy": {"retryableStatusCodes": ["OK"]})"),
       "retryableStatusCodes[0]: must be an error code, got OK"},
      {Entry(R"("timeout": "0s")"), "methodConfig[0].timeout: must be in (0, 720h], got 0"},
      {Entry(R"("timeout": "-1s")"), "methodConfig[0].timeout: must be in (0, 720h], got -1s"},
      {Entry(R"("deadline": "-0.5s")"),
       "methodConfig[0].deadline: must be in (0, 720h], got -500ms"},
      {Entry(R"("breaker": {"sre": {}, "threeState": {}})"),
       "methodConfig[0].breaker: must set exactly one of \"sre\" and \"threeState\", got both"},
      {Entry(R"("breaker": {})"), "got neither"},
      {Entry(R"("breaker": {"sre": {"k": -1}})"),
       "methodConfig[0].breaker.sre.k: must be >= 1, got -1"},
      {Entry(R"("breaker": {"sre": {"k": "NaN"}})"), "methodConfig[0].breaker.sre.k"},
      {Entry(R"("breaker": {"sre": {"k": "Infinity"}})"), "methodConfig[0].breaker.sre.k"},
      {Entry(R"("breaker": {"sre": {"protection": -2}})"),
       "methodConfig[0].breaker.sre.protection: must be >= 0, got -2"},
      {Entry(R"("breaker": {"sre": {"buckets": 0}})"), "methodConfig[0].breaker.sre.buckets"},
      {Entry(R"("breaker": {"sre": {"window": "1s", "buckets": 3}})"),
       "methodConfig[0].breaker.sre.window: 1s does not divide into 3 buckets"},
      {Entry(R"("breaker": {"sre": {"maxDropProbability": 0}})"),
       "methodConfig[0].breaker.sre.maxDropProbability: must be in (0, 1], got 0"},
      {Entry(R"("breaker": {"threeState": {"failureRateThreshold": 2}})"),
       "methodConfig[0].breaker.threeState.failureRateThreshold: must be in (0, 1], got 2"},
      {Entry(R"("breaker": {"threeState": {"minRequests": -5}})"),
       "methodConfig[0].breaker.threeState.minRequests: must be >= 1, got -5"},
      {Entry(R"("breaker": {"threeState": {"openDuration": "10s", "maxOpenDuration": "5s"}})"),
       "methodConfig[0].breaker.threeState.maxOpenDuration: must be >= openDuration (10s), got 5s"},
      {Entry(R"("breaker": {"threeState": {"slowCallRateThreshold": 0.5}})"),
       "slowCallRateThreshold: must be 0 when slowCallThreshold is not set"},
      {Entry(R"("breaker": {"threeState": {"mode": "sideways"}})"),
       "methodConfig[0].breaker.threeState.mode: must be one of normal, force_open, "
       "force_closed, disabled, metrics_only, got \"sideways\""},
      {Entry(R"("breaker": {"sre": {}, "failureCodes": ["INTERNAL"], "successCodes": ["INTERNAL"]})"),
       "methodConfig[0].breaker.successCodes[0]: INTERNAL is also in methodConfig[0].breaker.failureCodes"},
      {Entry(R"("breaker": {"sre": {}, "failureCodes": ["nope"]})"),
       "methodConfig[0].breaker.failureCodes[0]: unknown status code \"nope\""},
      {Entry(R"("throttle": {})"),
       "methodConfig[0].throttle: set maxConcurrency or adaptive, ratePerSecond, or both (or "
       "global, perCaller, cpu, deadlineAdmission)"},
      {Entry(R"("throttle": {"maxConcurrency": 0})"),
       "methodConfig[0].throttle.maxConcurrency: must be >= 1, got 0"},
      {Entry(R"("throttle": {"ratePerSecond": -1})"),
       "methodConfig[0].throttle.ratePerSecond: must be in [1e-3, 1e9], got -1"},
      {Entry(R"("throttle": {"maxConcurrency": 2, "burst": 5})"),
       "methodConfig[0].throttle.burst: needs ratePerSecond"},
      {Entry(R"("throttle": {"ratePerSecond": 5, "burst": 0})"),
       "methodConfig[0].throttle.burst: must be in [1, 1e9], got 0"},
      {Entry(R"("throttle": {"maxConcurrency": 2, "minPushback": "0s"})"),
       "methodConfig[0].throttle.minPushback: must be in (0, 1h], got 0"},
      {Entry(R"("throttle": {"maxConcurrency": 2, "maxPushback": "3601s"})"),
       "methodConfig[0].throttle.maxPushback: must be in (0, 1h], got 1h1s"},
      {Entry(R"("throttle": {"maxConcurrency": 2, "minPushback": "2s", "maxPushback": "1s"})"),
       "methodConfig[0].throttle.maxPushback: must be >= minPushback (2s), got 1s"},
      {Entry(R"("faultInjection": {"delay": "-1s"})"),
       "methodConfig[0].faultInjection.delay: must be in [0, 1h], got -1s"},
      {Entry(R"("faultInjection": {"delay": "1s", "delayFraction": 2})"),
       "methodConfig[0].faultInjection.delayFraction: must be in [0, 1], got 2"},
      {Entry(R"("faultInjection": {"abortCode": "OK"})"),
       "methodConfig[0].faultInjection.abortCode: must be an error code, got OK"},
      {Entry(R"("faultInjection": {"abortFraction": 0.5})"),
       "methodConfig[0].faultInjection.abortFraction: needs abortCode"},
      {R"({"retryThrottling": {"maxTokens": 0}})",
       "retryThrottling.maxTokens: must be in [1, 1000], got 0"},
      {R"({"retryThrottling": {"tokenRatio": 0}})",
       "retryThrottling.tokenRatio: must be in (0, 1], got 0"},
      {R"({"methodConfig": [{"timeout": "1s"}]})",
       "methodConfig[0].name: must list at least one name"},
      {R"({"methodConfig": [{"name": [{"method": "Get"}]}]})",
       "methodConfig[0].name[0]: method \"Get\" needs a service"},
      {R"({"methodConfig": [{"name": [{"service": "a/b"}]}]})",
       "methodConfig[0].name[0]: service and method must not contain '/'"},
  };
  for (const auto& [json, expected] : cases) {
    EXPECT_THAT(ErrorOf(json), HasSubstr(expected)) << json;
  }
}

// The inputs that loaded and then crashed the server on its first call
// (TokenBucket::Create() refused what the loader had accepted), and the tiny
// rate that silently disabled the limit: refused, naming path and value.
TEST(PolicyTableTest, ThrottleOutsideTheTokenBucketsBoundsIsRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"methodConfig":[{"name":[{"service":"cache.v1.CacheService","method":"Get"}],)"
       R"("throttle":{"ratePerSecond":2e9}}]})",
       "methodConfig[0].throttle.ratePerSecond: must be in [1e-3, 1e9], got 2e+09"},
      {R"({"methodConfig":[{"name":[{"service":"cache.v1.CacheService","method":"Get"}],)"
       R"("throttle":{"ratePerSecond":100,"burst":2000000000}}]})",
       "methodConfig[0].throttle.burst: must be in [1, 1e9], got 2000000000"},
      {Entry(R"("throttle": {"ratePerSecond": 1e-10, "burst": 1})"),
       "methodConfig[0].throttle.ratePerSecond: must be in [1e-3, 1e9], got 1e-10"},
      {Entry(R"("throttle": {"ratePerSecond": 0})"),
       "methodConfig[0].throttle.ratePerSecond: must be in [1e-3, 1e9], got 0"},
      {Entry(R"("throttle": {"ratePerSecond": "NaN"})"),
       "methodConfig[0].throttle.ratePerSecond: must be in [1e-3, 1e9], got nan"},
      {Entry(R"("throttle": {"ratePerSecond": "Infinity"})"),
       "methodConfig[0].throttle.ratePerSecond: must be in [1e-3, 1e9], got inf"},
      {Entry(R"("throttle": {"ratePerSecond": 1000000001})"),
       "methodConfig[0].throttle.ratePerSecond: must be in [1e-3, 1e9], got 1e+09"},
      {Entry(R"("throttle": {"ratePerSecond": 100, "burst": 1000000001})"),
       "methodConfig[0].throttle.burst: must be in [1, 1e9], got 1000000001"},
      // burst * (1 / rate) would not fit the bucket's int64 nanoseconds.
      {Entry(R"("throttle": {"ratePerSecond": 0.001, "burst": 1000001})"),
       "methodConfig[0].throttle.burst: must be <= 1000000 at ratePerSecond 0.001 (an empty "
       "bucket must refill within 1e9s), got 1000001"},
      {Entry(R"("throttle": {"ratePerSecond": 0.5, "burst": 1000000000})"),
       "methodConfig[0].throttle.burst: must be <= 500000000 at ratePerSecond 0.5"},
  };
  for (const auto& [json, expected] : cases) {
    EXPECT_THAT(ErrorOf(json), HasSubstr(expected)) << json;
  }
}

// Whatever throttle the loader accepts, TokenBucket::Create() accepts, and
// the other way round: a sweep over rates and bursts, edges included.
TEST(PolicyTableTest, LoaderAndTokenBucketAgreeOnEveryThrottle) {
  SimulatedClock clock;
  const std::vector<std::string> rates = {"1e-10", "0.000999", "0.001", "0.0015", "0.5", "1",
                                          "3.3", "1000", "6.7e8", "999999999.9", "1e9",
                                          "1.0000001e9", "2e9", "1e300"};
  const std::vector<std::string> bursts = {"",       "1",         "2",          "999999",
                                           "1000000", "1000001",   "500000000",  "999999999",
                                           "1000000000", "1000000001", "2147483647"};
  int accepted = 0;
  for (const std::string& rate : rates) {
    for (const std::string& burst : bursts) {
      const std::string json = Entry(absl::StrCat(R"("throttle": {"ratePerSecond": )", rate,
                                                  burst.empty() ? "" : R"(, "burst": )", burst,
                                                  "}"));
      absl::StatusOr<PolicyTable> set = Load(json);
      const double r = std::stod(rate);
      const int64_t b = burst.empty() ? 0 : std::stoll(burst);
      if (set.ok()) {
        ++accepted;
        const ThrottleSettings& t = *set->Find("/s.S/M").policy->throttle;
        EXPECT_EQ(t.rate_per_second, r);
        if (!burst.empty()) {
          EXPECT_EQ(t.burst, b);
        }
        auto bucket = TokenBucket::Create(t.rate_per_second, t.burst, clock);
        EXPECT_TRUE(bucket.ok()) << json << ": " << bucket.status();
      } else if (!burst.empty()) {
        EXPECT_FALSE(TokenBucket::Create(r, b, clock).ok()) << json << ": " << set.status();
        EXPECT_THAT(std::string(set.status().message()), HasSubstr("methodConfig[0].throttle."));
      }
    }
  }
  EXPECT_GT(accepted, 30);
}

// The loader leaves the backoff, the retry budget and the concurrency limit
// to the classes that enforce them: a sweep over each setting, edges
// included, where the file loads exactly when the class's Validate()
// accepts, a refusal names the file's path, and whatever loads, the class's
// Create() accepts.
TEST(PolicyTableTest, LoaderAndCoreClassesAgreeOnBackoffBudgetAndConcurrency) {
  const auto number = [](const std::string& text) {
    if (text == "\"NaN\"") return std::numeric_limits<double>::quiet_NaN();
    if (text == "\"Infinity\"") return std::numeric_limits<double>::infinity();
    return std::stod(text);
  };
  // Backoff: initialBackoff x maxBackoff, then backoffMultiplier x jitter.
  const std::vector<std::pair<std::string, absl::Duration>> durations = {
      {"-1s", -absl::Seconds(1)},
      {"0s", absl::ZeroDuration()},
      {"0.000000001s", absl::Nanoseconds(1)},
      {"0.05s", absl::Milliseconds(50)},
      {"1s", absl::Seconds(1)},
      {"3600s", absl::Hours(1)},
      {"3600.000000001s", absl::Hours(1) + absl::Nanoseconds(1)}};
  const std::vector<std::string> multipliers = {"0.5", "1", "2", "1e300", "\"Infinity\"",
                                                "\"NaN\""};
  const std::vector<std::string> jitters = {"-0.1", "0", "0.2", "1", "1.5", "\"NaN\""};
  SplitMixRandom random(1);
  int loaded = 0;
  const auto check_backoff = [&](const std::string& fields, const Backoff::Options& options) {
    const std::string json =
        Entry(absl::StrCat(R"("retryPolicy": {"maxAttempts": 2, )", fields, "}"));
    absl::StatusOr<PolicyTable> set = Load(json);
    const absl::Status valid = Backoff::Validate(options);
    EXPECT_EQ(set.ok(), valid.ok()) << json << ": " << set.status() << " / " << valid;
    if (set.ok()) {
      ++loaded;
      const RetrySettings& r = *set->Find("/s.S/M").policy->retry;
      EXPECT_EQ(r.initial_backoff, options.initial_backoff) << json;
      EXPECT_EQ(r.max_backoff, options.max_backoff) << json;
      EXPECT_TRUE(Backoff::Create(r.backoff(), random).ok()) << json;
    } else {
      EXPECT_THAT(std::string(set.status().message()),
                  HasSubstr("methodConfig[0].retryPolicy."));
    }
  };
  for (const auto& [initial_text, initial] : durations) {
    for (const auto& [max_text, max] : durations) {
      Backoff::Options options;
      options.initial_backoff = initial;
      options.max_backoff = max;
      check_backoff(absl::StrCat(R"("initialBackoff": ")", initial_text, R"(", "maxBackoff": ")",
                                 max_text, R"(")"),
                    options);
    }
  }
  for (const std::string& multiplier : multipliers) {
    for (const std::string& jitter : jitters) {
      Backoff::Options options;
      options.backoff_multiplier = number(multiplier);
      options.jitter = number(jitter);
      check_backoff(absl::StrCat(R"("backoffMultiplier": )", multiplier, R"(, "jitter": )", jitter),
                    options);
    }
  }
  EXPECT_EQ(loaded, 10 + 9);  // initial <= max, both in (0, 1h]; 3 multipliers x 3 jitters

  // Retry budget: maxTokens x tokenRatio.
  for (const int max_tokens : {-1, 0, 1, 10, 1000, 1001, 2147483647}) {
    for (const char* ratio : {"0", "0.0001", "0.001", "0.1", "1", "1.5", "\"NaN\""}) {
      const std::string json = absl::StrCat(R"({"retryThrottling": {"maxTokens": )", max_tokens,
                                            R"(, "tokenRatio": )", ratio, "}}");
      absl::StatusOr<PolicyTable> set = Load(json);
      const RetryBudget::Options options{max_tokens, number(ratio)};
      EXPECT_EQ(set.ok(), RetryBudget::Validate(options).ok()) << json << ": " << set.status();
      if (set.ok()) {
        EXPECT_TRUE(RetryBudget::Create(*set->retry_throttling()).ok()) << json;
      } else {
        EXPECT_THAT(std::string(set.status().message()), HasSubstr("retryThrottling."));
      }
    }
  }

  // Concurrency limit.
  for (const int max_concurrency : {-2147483647 - 1, -3, 0, 1, 64, 2147483647}) {
    const std::string json =
        Entry(absl::StrCat(R"("throttle": {"maxConcurrency": )", max_concurrency, "}"));
    absl::StatusOr<PolicyTable> set = Load(json);
    EXPECT_EQ(set.ok(), FixedConcurrencyLimiter::Validate(max_concurrency).ok()) << json;
    if (set.ok()) {
      EXPECT_TRUE(
          FixedConcurrencyLimiter::Create(set->Find("/s.S/M").policy->throttle->max_concurrency)
              .ok());
    } else {
      EXPECT_THAT(std::string(set.status().message()),
                  HasSubstr(absl::StrCat("methodConfig[0].throttle.maxConcurrency: must be >= 1, "
                                         "got ",
                                         max_concurrency)));
    }
  }
}

// Every duration of the file has an upper bound: the bound itself loads,
// one nanosecond more (and the huge values that hung or crashed the
// runtime) is refused with the path and the value.
TEST(PolicyTableTest, EveryDurationIsBounded) {
  struct Field {
    std::string json;  // $D is the duration
    std::string path;
    std::string range;
    std::string max;   // the largest accepted value, in the file's form
  };
  const std::vector<Field> fields = {
      {R"("timeout": "$D")", "methodConfig[0].timeout", "(0, 720h]", "2592000s"},
      {R"("deadline": "$D")", "methodConfig[0].deadline", "(0, 720h]", "2592000s"},
      {R"("retryPolicy": {"initialBackoff": "$D", "maxBackoff": "3600s"})",
       "methodConfig[0].retryPolicy.initialBackoff", "(0, 1h]", "3600s"},
      {R"("retryPolicy": {"maxBackoff": "$D"})", "methodConfig[0].retryPolicy.maxBackoff",
       "(0, 1h]", "3600s"},
      {R"("retryPolicy": {"perAttemptTimeout": "$D"})",
       "methodConfig[0].retryPolicy.perAttemptTimeout", "(0, 720h]", "2592000s"},
      {R"("retryPolicy": {"perAttemptRecvTimeout": "$D"})",
       "methodConfig[0].retryPolicy.perAttemptRecvTimeout", "(0, 720h]", "2592000s"},
      {R"("breaker": {"sre": {"window": "$D"}})", "methodConfig[0].breaker.sre.window",
       "[1ms, 1h]", "3600s"},
      {R"("breaker": {"sre": {"forcePassInterval": "$D"}})",
       "methodConfig[0].breaker.sre.forcePassInterval", "[0, 1h]", "3600s"},
      {R"("breaker": {"sre": {"slowCallThreshold": "$D"}})",
       "methodConfig[0].breaker.sre.slowCallThreshold", "[0, 720h]", "2592000s"},
      {R"("breaker": {"threeState": {"slowCallThreshold": "$D"}})",
       "methodConfig[0].breaker.threeState.slowCallThreshold", "[0, 720h]", "2592000s"},
      {R"("breaker": {"threeState": {"window": "$D"}})",
       "methodConfig[0].breaker.threeState.window", "[1ms, 1h]", "3600s"},
      {R"("breaker": {"threeState": {"openDuration": "$D"}})",
       "methodConfig[0].breaker.threeState.openDuration", "(0, 24h]", "86400s"},
      {R"("breaker": {"threeState": {"maxOpenDuration": "$D"}})",
       "methodConfig[0].breaker.threeState.maxOpenDuration", "(0, 24h]", "86400s"},
      {R"("breaker": {"threeState": {"probeInterval": "$D"}})",
       "methodConfig[0].breaker.threeState.probeInterval", "[0, 1h]", "3600s"},
      {R"("breaker": {"threeState": {"halfOpenMaxWait": "$D"}})",
       "methodConfig[0].breaker.threeState.halfOpenMaxWait", "(0, 24h]", "86400s"},
      {R"("breaker": {"threeState": {"probeOverdue": "$D"}})",
       "methodConfig[0].breaker.threeState.probeOverdue", "[0, 1h]", "3600s"},
      {R"("throttle": {"maxConcurrency": 1, "minPushback": "$D", "maxPushback": "3600s"})",
       "methodConfig[0].throttle.minPushback", "(0, 1h]", "3600s"},
      {R"("throttle": {"maxConcurrency": 1, "maxPushback": "$D"})",
       "methodConfig[0].throttle.maxPushback", "(0, 1h]", "3600s"},
      {R"("faultInjection": {"delay": "$D"})", "methodConfig[0].faultInjection.delay",
       "[0, 1h]", "3600s"},
  };
  for (const Field& f : fields) {
    const auto with = [&](const std::string& d) {
      return Entry(absl::StrReplaceAll(f.json, {{"$D", d}}));
    };
    absl::StatusOr<PolicyTable> at_max = Load(with(f.max));
    EXPECT_TRUE(at_max.ok()) << f.path << ": " << at_max.status();
    const std::string over = absl::StrCat(f.max.substr(0, f.max.size() - 1), ".000000001s");
    EXPECT_THAT(ErrorOf(with(over)),
                HasSubstr(absl::StrCat(f.path, ": must be in ", f.range, ", got ")))
        << over;
    EXPECT_THAT(ErrorOf(with("10000000000s")),
                HasSubstr(absl::StrCat(f.path, ": must be in ", f.range,
                                       ", got 2777777h46m40s")));
    EXPECT_THAT(ErrorOf(with("315576000000s")), HasSubstr(f.path));  // protobuf's largest
    EXPECT_THAT(ErrorOf(with("-315576000000s")), HasSubstr(f.path));
  }
  // The bounds in the message are the constants the interceptors rely on.
  EXPECT_EQ(kMaxPolicyCallTime, absl::Seconds(2592000));
  EXPECT_EQ(kMaxPolicyOpenTime, absl::Seconds(86400));
  EXPECT_EQ(kMaxPolicyInterval, absl::Seconds(3600));
}

}  // namespace
}  // namespace resilience

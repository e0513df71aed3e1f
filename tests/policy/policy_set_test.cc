#include "src/policy/policy_set.h"

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

namespace resilience {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The methods this file's policies name, standing in for the services a
// real process links (the loader warns about names that match none of them;
// method_catalog_test checks that against the linked ones).
const MethodCatalog& TestMethods() {
  static const MethodCatalog* const methods = new MethodCatalog({
      {"s.S", "M"},
      {"a.S", "Get"},
      {"a.S", "Store"},
      {"b.T", "Get"},
      {"x", "M"},
      {"helloworld.Greeter", "SayHello"},
      {"demo.Echo", "Echo"},
      {"cache.v1.CacheService", "Get"},
      {"cache.v1.CacheService", "Store"},
      {"cache.v1.CacheService", "Dump", false, true},
      {"cache.v1.Other", "M"},
  });
  return *methods;
}

absl::StatusOr<PolicySet> Load(absl::string_view json, PolicySet::LoadOptions options = {}) {
  if (options.methods == nullptr) options.methods = &TestMethods();
  return PolicySet::FromJsonString(json, options);
}

absl::StatusOr<PolicySet> LoadFile(const std::string& path, PolicySet::LoadOptions options = {}) {
  if (options.methods == nullptr) options.methods = &TestMethods();
  return PolicySet::FromJsonFile(path, options);
}


// The example from the policy issue, as a user would write it.
constexpr char kExample[] = R"json({
  "methodConfig": [
    {
      "name": [{"service": "cache.v1.CacheService", "method": "Get"}, {"service": "cache.v1.Other"}],
      "timeout": "0.2s",
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.05s", "maxBackoff": "1s",
                      "backoffMultiplier": 2, "jitter": 0.2, "retryableStatusCodes": ["UNAVAILABLE"]},
      "breaker": {"sre": {"k": 1.5, "protection": 5, "window": "10s", "buckets": 40}},
      "throttle": {"maxConcurrency": 5, "ratePerSecond": 100, "burst": 20,
                   "minPushback": "0.05s", "maxPushback": "2s"},
      "faultInjection": {"delay": "0.2s", "delayFraction": 1.0, "abortCode": "UNAVAILABLE", "abortFraction": 0.2}
    }
  ],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
})json";

PolicySet MustParse(const std::string& json) {
  absl::StatusOr<PolicySet> set = Load(json);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *std::move(set) : PolicySet();
}

// The error message of parsing `json`, which must fail with InvalidArgument.
std::string ErrorOf(const std::string& json) {
  absl::StatusOr<PolicySet> set = Load(json);
  EXPECT_FALSE(set.ok()) << json;
  if (set.ok()) return "";
  EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument) << set.status();
  return std::string(set.status().message());
}

// One methodConfig entry for Get with `fields` added.
std::string Entry(const std::string& fields) {
  return absl::StrCat(
      R"({"methodConfig": [{"name": [{"service": "s.S", "method": "M"}])",
      fields.empty() ? "" : ", ", fields, "}]}");
}

// The issue's example loads with every value where it belongs.
TEST(PolicySetTest, LoadsTheExample) {
  PolicySet set = MustParse(kExample);
  PolicySet::Match m = set.Find("/cache.v1.CacheService/Get");
  ASSERT_NE(m.policy, nullptr);
  const MethodPolicy& p = *m.policy;
  EXPECT_EQ(p.timeout, absl::Milliseconds(200));  // the call's overall deadline
  EXPECT_FALSE(p.wait_for_ready.has_value());
  ASSERT_TRUE(p.retry.has_value());
  EXPECT_FALSE(p.retry->per_attempt_timeout.has_value());
  EXPECT_EQ(p.retry->max_attempts, 3);
  EXPECT_EQ(p.retry->initial_backoff, absl::Milliseconds(50));
  EXPECT_EQ(p.retry->max_backoff, absl::Seconds(1));
  EXPECT_EQ(p.retry->backoff_multiplier, 2);
  EXPECT_EQ(p.retry->jitter, 0.2);
  EXPECT_THAT(p.retry->retryable_status_codes, ElementsAre(absl::StatusCode::kUnavailable));
  EXPECT_EQ(p.breaker.kind, BreakerKind::kSre);
  EXPECT_EQ(p.breaker.sre.k, 1.5);
  EXPECT_EQ(p.breaker.sre.buckets, 40);
  EXPECT_EQ(p.breaker.caller_deadline, CallerDeadline::kFailure);
  ASSERT_TRUE(p.throttle.has_value());
  EXPECT_EQ(p.throttle->max_concurrency, 5);
  EXPECT_EQ(p.throttle->rate_per_second, 100);
  EXPECT_EQ(p.throttle->burst, 20);
  EXPECT_EQ(p.throttle->min_pushback, absl::Milliseconds(50));
  EXPECT_EQ(p.throttle->max_pushback, absl::Seconds(2));
  ASSERT_TRUE(p.fault_injection.has_value());
  EXPECT_EQ(p.fault_injection->delay, absl::Milliseconds(200));
  EXPECT_EQ(p.fault_injection->abort_code, absl::StatusCode::kUnavailable);
  EXPECT_EQ(p.fault_injection->abort_fraction, 0.2);
  ASSERT_TRUE(set.retry_throttling().has_value());
  EXPECT_EQ(set.retry_throttling()->max_tokens, 10);
  EXPECT_EQ(set.retry_throttling()->token_ratio, 0.1);
  // The second name shares the entry.
  EXPECT_EQ(set.Find("/cache.v1.Other/Anything").policy, m.policy);
  EXPECT_TRUE(set.warnings().empty());
}

// Exact {service, method} beats {service}, which beats the {} default; a
// method no entry names and no default covers has no policy.
TEST(PolicySetTest, MatchingPrecedence) {
  PolicySet set = MustParse(R"({"methodConfig": [
    {"name": [{}], "timeout": "3s"},
    {"name": [{"service": "a.S"}], "timeout": "2s"},
    {"name": [{"service": "a.S", "method": "Get"}], "timeout": "1s"}
  ]})");
  EXPECT_EQ(set.Find("/a.S/Get").policy->timeout, absl::Seconds(1));
  EXPECT_EQ(set.Find("/a.S/Get").scope, "a.S/Get");
  EXPECT_EQ(set.Find("/a.S/Store").policy->timeout, absl::Seconds(2));
  EXPECT_EQ(set.Find("/a.S/Store").scope, "a.S/");
  EXPECT_EQ(set.Find("/b.T/Get").policy->timeout, absl::Seconds(3));
  EXPECT_EQ(set.Find("/b.T/Get").scope, "");
  EXPECT_EQ(set.Find("").policy->timeout, absl::Seconds(3));  // unknown method name

  PolicySet no_default = MustParse(R"({"methodConfig": [{"name": [{"service": "a.S"}]}]})");
  EXPECT_EQ(no_default.Find("/b.T/Get").policy, nullptr);
  EXPECT_EQ(no_default.Find("garbage").policy, nullptr);
  EXPECT_EQ(PolicySet().Find("/a.S/Get").policy, nullptr);
}

// Pointers from Find stay valid when the set is moved.
TEST(PolicySetTest, MatchesSurviveMoves) {
  PolicySet set = MustParse(Entry(R"("timeout": "1s")"));
  PolicySet::Match before = set.Find("/s.S/M");
  PolicySet moved = std::move(set);
  PolicySet::Match after = moved.Find("/s.S/M");
  EXPECT_EQ(before.policy, after.policy);
  EXPECT_EQ(before.scope.data(), after.scope.data());
}

// Omitted fields take the documented defaults.
TEST(PolicySetTest, Defaults) {
  PolicySet set = MustParse(Entry(R"("retryPolicy": {}, "breaker": {"sre": {}})"));
  const MethodPolicy& p = *set.Find("/s.S/M").policy;
  EXPECT_FALSE(p.timeout.has_value());
  EXPECT_FALSE(p.throttle.has_value());
  EXPECT_FALSE(p.fault_injection.has_value());
  const RetrySettings defaults;
  EXPECT_EQ(p.retry->max_attempts, 3);
  EXPECT_EQ(p.retry->initial_backoff, absl::Milliseconds(50));
  EXPECT_EQ(p.retry->max_backoff, absl::Seconds(1));
  EXPECT_EQ(p.retry->backoff_multiplier, 2);
  EXPECT_EQ(p.retry->jitter, 0.2);
  EXPECT_FALSE(p.retry->full_jitter);
  EXPECT_EQ(p.retry->retryable_status_codes, defaults.retryable_status_codes);
  EXPECT_FALSE(p.retry->per_attempt_timeout.has_value());
  EXPECT_FALSE(p.wait_for_ready.has_value());
  EXPECT_EQ(p.breaker.caller_deadline, CallerDeadline::kFailure);
  const SreBreaker::Options sre;
  EXPECT_EQ(p.breaker.sre.k, sre.k);
  EXPECT_EQ(p.breaker.sre.protection, sre.protection);
  EXPECT_EQ(p.breaker.sre.window, sre.window);
  EXPECT_EQ(p.breaker.sre.buckets, sre.buckets);
  EXPECT_EQ(p.breaker.sre.force_pass_interval, sre.force_pass_interval);
  EXPECT_EQ(p.breaker.sre.count_local_rejections, sre.count_local_rejections);
  EXPECT_EQ(p.breaker.sre.recovery_acceleration, sre.recovery_acceleration);
  EXPECT_FALSE(set.retry_throttling().has_value());
  EXPECT_EQ(set.stream_retry_throttling().max_tokens, 10);
  EXPECT_EQ(set.stream_retry_throttling().token_ratio, 0.1);

  PolicySet three = MustParse(Entry(R"("breaker": {"threeState": {"openDuration": "90s"}})"));
  const ThreeStateBreaker::Options& t = three.Find("/s.S/M").policy->breaker.three_state;
  EXPECT_EQ(t.failure_rate_threshold, 0.5);
  EXPECT_EQ(t.min_requests, 20);
  EXPECT_EQ(t.buckets, 10);
  EXPECT_EQ(t.open_duration, absl::Seconds(90));
  EXPECT_EQ(t.max_open_duration, absl::Seconds(90));  // the cap follows a longer open period
  EXPECT_EQ(t.mode, BreakerMode::kNormal);

  PolicySet throttle = MustParse(Entry(R"("throttle": {"ratePerSecond": 50})"));
  EXPECT_EQ(throttle.Find("/s.S/M").policy->throttle->burst, 50);
  EXPECT_EQ(throttle.Find("/s.S/M").policy->throttle->max_concurrency, 0);
  PolicySet fault = MustParse(Entry(R"("faultInjection": {"abortCode": "INTERNAL"})"));
  EXPECT_EQ(fault.Find("/s.S/M").policy->fault_injection->abort_fraction, 1.0);
  EXPECT_EQ(fault.Find("/s.S/M").policy->fault_injection->delay_fraction, 0.0);
}

// The breaker's outcome classification follows the default table, with the
// file's overrides.
TEST(PolicySetTest, OutcomeClassification) {
  PolicySet set = MustParse(Entry(
      R"("breaker": {"sre": {}, "failureCodes": ["NOT_FOUND"], "successCodes": ["RESOURCE_EXHAUSTED"]})"));
  const OutcomeClassifier& c = set.Find("/s.S/M").policy->breaker.classifier;
  EXPECT_EQ(c.Classify(absl::StatusCode::kNotFound), Outcome::kFailure);
  EXPECT_EQ(c.Classify(absl::StatusCode::kResourceExhausted), Outcome::kSuccess);
  EXPECT_EQ(c.Classify(absl::StatusCode::kUnavailable), Outcome::kFailure);
  EXPECT_EQ(c.Classify(absl::StatusCode::kInvalidArgument), Outcome::kSuccess);
  EXPECT_EQ(c.Classify(absl::StatusCode::kCancelled), Outcome::kNeutral);

  const OutcomeClassifier defaults;
  using C = absl::StatusCode;
  for (C code : {C::kOk, C::kInvalidArgument, C::kNotFound, C::kAlreadyExists,
                 C::kPermissionDenied, C::kUnauthenticated, C::kFailedPrecondition,
                 C::kOutOfRange, C::kUnimplemented}) {
    EXPECT_EQ(defaults.Classify(code), Outcome::kSuccess) << absl::StatusCodeToString(code);
  }
  for (C code : {C::kUnavailable, C::kInternal, C::kUnknown, C::kDataLoss,
                 C::kResourceExhausted, C::kAborted, C::kDeadlineExceeded}) {
    EXPECT_EQ(defaults.Classify(code), Outcome::kFailure) << absl::StatusCodeToString(code);
  }
}

// A gRPC service config (load balancing, waitForReady, message limits,
// retryPolicy with every gRPC field, retryThrottling) loads unchanged, with
// gRPC's meaning (timeout is the overall deadline, waitForReady applies);
// what is not applied is listed.
TEST(PolicySetTest, RealGrpcServiceConfigLoads) {
  PolicySet set = MustParse(R"json({
    "loadBalancingConfig": [{"round_robin": {}}],
    "methodConfig": [{
      "name": [{"service": "helloworld.Greeter", "method": "SayHello"}, {"service": "demo.Echo"}],
      "waitForReady": true,
      "timeout": "1.000000001s",
      "maxRequestMessageBytes": 1024,
      "maxResponseMessageBytes": 2048,
      "retryPolicy": {
        "maxAttempts": 4,
        "initialBackoff": "0.1s",
        "maxBackoff": "1s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"],
        "perAttemptRecvTimeout": "0.5s"
      }
    }],
    "retryThrottling": {"maxTokens": 100, "tokenRatio": 0.25}
  })json");
  const MethodPolicy* p = set.Find("/helloworld.Greeter/SayHello").policy;
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->timeout, absl::Seconds(1) + absl::Nanoseconds(1));
  EXPECT_EQ(p->wait_for_ready, true);
  EXPECT_EQ(p->retry->max_attempts, 4);
  EXPECT_FALSE(p->retry->per_attempt_timeout.has_value());  // perAttemptRecvTimeout is not it
  EXPECT_THAT(p->retry->retryable_status_codes, Contains(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(p->retry->retryable_status_codes, Not(Contains(absl::StatusCode::kInternal)));
  EXPECT_EQ(set.retry_throttling()->max_tokens, 100);
  EXPECT_THAT(set.warnings(),
              ElementsAre(StartsWith("loadBalancingConfig: accepted"),
                          "methodConfig[0].retryPolicy.perAttemptRecvTimeout: accepted for "
                          "compatibility with gRPC service configs, not applied; the limit of "
                          "each attempt is retryPolicy.perAttemptTimeout",
                          StartsWith("methodConfig[0].maxRequestMessageBytes"),
                          StartsWith("methodConfig[0].maxResponseMessageBytes")));
}

// Each semantic rule, with the JSON path and the bad value in the message.
TEST(PolicySetTest, ValidationRulesNamePathAndValue) {
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
       "global)"},
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
TEST(PolicySetTest, ThrottleOutsideTheTokenBucketsBoundsIsRefused) {
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
TEST(PolicySetTest, LoaderAndTokenBucketAgreeOnEveryThrottle) {
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
      absl::StatusOr<PolicySet> set = Load(json);
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
TEST(PolicySetTest, LoaderAndCoreClassesAgreeOnBackoffBudgetAndConcurrency) {
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
    absl::StatusOr<PolicySet> set = Load(json);
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
      absl::StatusOr<PolicySet> set = Load(json);
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
    absl::StatusOr<PolicySet> set = Load(json);
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
TEST(PolicySetTest, EveryDurationIsBounded) {
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
    absl::StatusOr<PolicySet> at_max = Load(with(f.max));
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

// A method or service named twice, or two defaults, is an error naming both
// places.
TEST(PolicySetTest, DuplicateNamesAreErrors) {
  EXPECT_THAT(ErrorOf(R"({"methodConfig": [
      {"name": [{"service": "a.S", "method": "Get"}]},
      {"name": [{"service": "a.S", "method": "Get"}]}]})"),
              HasSubstr("methodConfig[1].name[0]: method a.S/Get is named twice; first in "
                        "methodConfig[0].name[0]"));
  EXPECT_THAT(ErrorOf(R"({"methodConfig": [
      {"name": [{"service": "a.S"}, {"service": "a.S"}]}]})"),
              HasSubstr("methodConfig[0].name[1]: service a.S/ is named twice"));
  EXPECT_THAT(ErrorOf(R"({"methodConfig": [{"name": [{}]}, {"name": [{"service": ""}]}]})"),
              HasSubstr("methodConfig[1].name[0]: a second default ({}); the first is in "
                        "methodConfig[0].name[0]"));
}

// Malformed input of every kind gets a clear error and never crashes.
TEST(PolicySetTest, MalformedInputs) {
  EXPECT_THAT(ErrorOf(""), HasSubstr("policy JSON is empty"));
  EXPECT_THAT(ErrorOf(" \n\t "), HasSubstr("policy JSON is empty"));
  EXPECT_EQ(ErrorOf("not json"),
            "policy JSON: expected a value (object, array, string, number, true, false or null), "
            "found \"not json\" at line 1, column 1");
  EXPECT_THAT(ErrorOf("{\"methodConfig\": ["), HasSubstr("policy JSON"));
  EXPECT_EQ(ErrorOf("[]"),
            "policy JSON: expected an object such as {\"methodConfig\": [...]}, got an array");
  EXPECT_THAT(ErrorOf("42"), HasSubstr("policy JSON: expected an object such as"));
  EXPECT_THAT(ErrorOf("null"), HasSubstr("got null"));
  EXPECT_THAT(ErrorOf(R"({"methodConfgi": []})"), HasSubstr("methodConfgi: Cannot find field"));
  EXPECT_THAT(ErrorOf(Entry(R"("retryPolicy": {"maxAttempt": 3})")),
              HasSubstr("maxAttempt: Cannot find field"));
  EXPECT_THAT(ErrorOf(Entry(R"("retryPolicy": {"maxAttempts": "three"})")),
              HasSubstr("methodConfig[0].retryPolicy.maxAttempts: expected a number, got "
                        "\"three\""));
  EXPECT_THAT(ErrorOf(Entry(R"("retryPolicy": {"maxAttempts": 1e12})")),
              HasSubstr("methodConfig[0].retryPolicy.maxAttempts: invalid value"));
  EXPECT_THAT(ErrorOf(Entry(R"("timeout": "fast")")),
              HasSubstr("methodConfig[0].timeout: expected a duration such as \"0.2s\""));
  EXPECT_THAT(ErrorOf(Entry(R"("timeout": "99999999999999s")")),
              HasSubstr("methodConfig[0].timeout: invalid value"));  // protobuf's own range
  EXPECT_EQ(ErrorOf(R"({"methodConfig": 3})"),
            "policy JSON: methodConfig: expected an array, got 3");

  // Deep nesting inside an accepted free-form field: refused, no stack overflow.
  const std::string deep = absl::StrCat(R"({"healthCheckConfig": )", std::string(100000, '['),
                                        std::string(100000, ']'), "}");
  EXPECT_THAT(ErrorOf(deep), HasSubstr("policy JSON: healthCheckConfig[0][0]"));
  EXPECT_THAT(ErrorOf(deep), HasSubstr("nested deeper than 32 levels at line 1, column 54"));
  const std::string deep_objects =
      absl::StrCat(R"({"healthCheckConfig": )", [] {
        std::string s;
        for (int i = 0; i < 20000; ++i) s += "{\"a\":";
        s += "1";
        for (int i = 0; i < 20000; ++i) s += "}";
        return s;
      }(), "}");
  EXPECT_THAT(ErrorOf(deep_objects), HasSubstr("nested deeper than 32 levels"));

  // A large but valid file parses.
  std::string many = R"({"methodConfig": [)";
  for (int i = 0; i < 5000; ++i) {
    absl::StrAppend(&many, i ? "," : "", R"({"name": [{"service": "s.S", "method": "M)", i,
                    R"("}], "timeout": "1s"})");
  }
  many += "]}";
  PolicySet set = MustParse(many);
  EXPECT_EQ(set.Find("/s.S/M4999").policy->timeout, absl::Seconds(1));
  EXPECT_EQ(set.policies().size(), 5000u);
}

// The policies.json the example ships loads with what its README promises:
// Get retries, each attempt with a perAttemptTimeout within the call's
// timeout, behind an SRE breaker; Store has a three-state breaker, Dump a
// timeout, and the server throttles all three. No warnings: it is the
// example to copy.
TEST(PolicySetTest, ShippedExamplePolicies) {
  absl::StatusOr<PolicySet> set = LoadFile(SHIPPED_POLICY_PATH);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_TRUE(set->warnings().empty());
  const MethodPolicy* get = set->Find("/cache.v1.CacheService/Get").policy;
  const MethodPolicy* store = set->Find("/cache.v1.CacheService/Store").policy;
  const MethodPolicy* dump = set->Find("/cache.v1.CacheService/Dump").policy;
  ASSERT_TRUE(get && store && dump);
  ASSERT_TRUE(get->retry.has_value() && get->timeout.has_value());
  ASSERT_TRUE(get->retry->per_attempt_timeout.has_value());
  EXPECT_LT(*get->retry->per_attempt_timeout, *get->timeout);
  EXPECT_EQ(get->breaker.kind, BreakerKind::kSre);
  EXPECT_TRUE(store->timeout.has_value());
  EXPECT_EQ(store->breaker.kind, BreakerKind::kThreeState);
  EXPECT_TRUE(dump->timeout.has_value());
  EXPECT_TRUE(get->throttle && store->throttle && dump->throttle);
}

// The warnings of loading `json`, which must load.
std::vector<std::string> WarningsOf(const std::string& json) {
  absl::StatusOr<PolicySet> set = Load(json);
  EXPECT_TRUE(set.ok()) << json << ": " << set.status();
  return set.ok() ? set->warnings() : std::vector<std::string>{};
}

// `timeout` is gRPC's: the call's overall deadline, whatever the retries.
// `deadline` is a deprecated alias that loads into it with a warning; both
// at once is an error naming both.
TEST(PolicySetTest, TimeoutIsTheOverallDeadlineAndDeadlineItsDeprecatedAlias) {
  PolicySet with_retry =
      MustParse(Entry(R"("timeout": "2s", "retryPolicy": {"maxAttempts": 3})"));
  const MethodPolicy& p = *with_retry.Find("/s.S/M").policy;
  EXPECT_EQ(p.timeout, absl::Seconds(2));
  EXPECT_FALSE(p.retry->per_attempt_timeout.has_value());  // not per attempt
  EXPECT_TRUE(with_retry.warnings().empty());

  PolicySet alias = MustParse(Entry(R"("deadline": "1.5s")"));
  EXPECT_EQ(alias.Find("/s.S/M").policy->timeout, absl::Milliseconds(1500));
  EXPECT_THAT(alias.warnings(),
              ElementsAre("methodConfig[0].deadline: deprecated alias of timeout (the call's "
                          "overall deadline); write timeout"));

  EXPECT_EQ(ErrorOf(Entry(R"("timeout": "0.2s", "deadline": "2s")")),
            "methodConfig[0].deadline (2s) and methodConfig[0].timeout (200ms) are both set; "
            "deadline is a deprecated alias of timeout (the call's overall deadline): keep only "
            "timeout (a limit per attempt is retryPolicy.perAttemptTimeout)");
  // Each is still checked against its bounds first.
  EXPECT_THAT(ErrorOf(Entry(R"("timeout": "0.2s", "deadline": "0s")")),
              HasSubstr("methodConfig[0].deadline: must be in (0, 720h], got 0"));
}

// A perAttemptTimeout that ends an attempt of a policy that does not retry
// DEADLINE_EXCEEDED gives up the call's remaining attempts: a warning, since
// it is rarely what was meant. Retrying DEADLINE_EXCEEDED, or a limit
// without retries (maxAttempts 1), is none.
// A long injected delay in front of a concurrency limit holds the slots of
// callers that cancel during it (callback API): a warning, so the trade-off
// is chosen; short delays, rate limits alone or no delay fraction say nothing.
TEST(PolicySetTest, LongDelayInFrontOfAConcurrencyLimitWarns) {
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

TEST(PolicySetTest, PerAttemptTimeoutThatIsNotRetriedWarns) {
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

// retryPolicy.perAttemptTimeout limits each attempt; one that is not shorter
// than the call's timeout can never fire, which is a warning.
TEST(PolicySetTest, PerAttemptTimeout) {
  PolicySet set = MustParse(
      Entry(R"("timeout": "2s", "retryPolicy": {"maxAttempts": 3, "perAttemptTimeout": "0.2s", )"
            R"("retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]})"));
  EXPECT_EQ(set.Find("/s.S/M").policy->retry->per_attempt_timeout, absl::Milliseconds(200));
  EXPECT_EQ(set.Find("/s.S/M").policy->timeout, absl::Seconds(2));
  EXPECT_TRUE(set.warnings().empty());
  // Without a timeout only the caller's deadline bounds the call: fine.
  EXPECT_TRUE(WarningsOf(Entry(R"("retryPolicy": {"perAttemptTimeout": "5s", )"
                               R"("retryableStatusCodes": ["DEADLINE_EXCEEDED"]})"))
                  .empty());

  EXPECT_THAT(
      WarningsOf(Entry(R"("timeout": "1s", "retryPolicy": {"perAttemptTimeout": "1s"})")),
      ElementsAre("methodConfig[0].retryPolicy.perAttemptTimeout: 1s is not shorter than "
                  "methodConfig[0].timeout (1s), so it never ends an attempt"));
  EXPECT_THAT(
      WarningsOf(Entry(R"("deadline": "1s", "retryPolicy": {"perAttemptTimeout": "3s"})")),
      ElementsAre(StartsWith("methodConfig[0].deadline: deprecated alias"),
                  "methodConfig[0].retryPolicy.perAttemptTimeout: 3s is not shorter than "
                  "methodConfig[0].deadline (1s), so it never ends an attempt"));

  EXPECT_THAT(ErrorOf(Entry(R"("retryPolicy": {"perAttemptTimeout": "0s"})")),
              HasSubstr("methodConfig[0].retryPolicy.perAttemptTimeout: must be in (0, 720h], "
                        "got 0"));
  EXPECT_THAT(ErrorOf(Entry(R"("retryPolicy": {"perAttemptTimeout": 5})")),
              HasSubstr("methodConfig[0].retryPolicy.perAttemptTimeout: expected a duration "
                        "such as \"0.2s\""));
}

// breaker.callerDeadline: FAILURE (the default) or NEUTRAL; anything else
// names the path and the value.
TEST(PolicySetTest, BreakerCallerDeadline) {
  const auto caller_deadline = [](const std::string& value) {
    PolicySet set = MustParse(
        Entry(absl::StrCat(R"("breaker": {"sre": {}, "callerDeadline": )", value, "}")));
    const MethodPolicy* p = set.Find("/s.S/M").policy;
    return p == nullptr ? CallerDeadline::kFailure : p->breaker.caller_deadline;
  };
  EXPECT_EQ(caller_deadline(R"("NEUTRAL")"), CallerDeadline::kNeutral);
  EXPECT_EQ(caller_deadline(R"("FAILURE")"), CallerDeadline::kFailure);
  EXPECT_EQ(caller_deadline("null"), CallerDeadline::kFailure);
  PolicySet three = MustParse(
      Entry(R"("breaker": {"threeState": {}, "callerDeadline": "NEUTRAL"})"));
  EXPECT_EQ(three.Find("/s.S/M").policy->breaker.caller_deadline, CallerDeadline::kNeutral);
  EXPECT_TRUE(three.warnings().empty());

  EXPECT_EQ(ErrorOf(Entry(R"("breaker": {"sre": {}, "callerDeadline": "neutral"})")),
            "methodConfig[0].breaker.callerDeadline: must be \"FAILURE\" or \"NEUTRAL\", got "
            "\"neutral\"");
  EXPECT_THAT(ErrorOf(Entry(R"("breaker": {"sre": {}, "callerDeadline": ""})")),
              HasSubstr("methodConfig[0].breaker.callerDeadline: must be \"FAILURE\" or "
                        "\"NEUTRAL\", got \"\""));
  EXPECT_EQ(ErrorOf(Entry(R"("breaker": {"sre": {}, "callerDeadline": 1})")),
            "policy JSON: methodConfig[0].breaker.callerDeadline: expected a string, got 1");
}

// waitForReady is applied now: true and false both land in the policy, with
// no warning; left out it stays unset (the caller's choice).
TEST(PolicySetTest, WaitForReadyIsApplied) {
  PolicySet on = MustParse(Entry(R"("waitForReady": true)"));
  EXPECT_EQ(on.Find("/s.S/M").policy->wait_for_ready, true);
  EXPECT_TRUE(on.warnings().empty());
  PolicySet off = MustParse(Entry(R"("waitForReady": false)"));
  EXPECT_EQ(off.Find("/s.S/M").policy->wait_for_ready, false);
  EXPECT_TRUE(off.warnings().empty());
  EXPECT_FALSE(MustParse(Entry("")).Find("/s.S/M").policy->wait_for_ready.has_value());
}

// As in gRPC, an entry either retries or hedges. A hedgingPolicy loads as
// gRFC A6 defines it (maxAttempts 2..5, larger clamped with a warning),
// plus adaptiveDelay; every bad value names its path.
TEST(PolicySetTest, HedgingPolicy) {
  EXPECT_EQ(ErrorOf(Entry(R"("retryPolicy": {}, "hedgingPolicy": {"maxAttempts": 2})")),
            "methodConfig[0].hedgingPolicy: cannot be set together with "
            "methodConfig[0].retryPolicy (as in gRPC, an entry either retries or hedges)");
  PolicySet hedging = MustParse(Entry(
      R"("hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.02s",
                           "nonFatalStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]})"));
  const MethodPolicy& p = *hedging.Find("/s.S/M").policy;
  EXPECT_FALSE(p.retry.has_value());
  ASSERT_TRUE(p.hedging.has_value());
  EXPECT_EQ(p.hedging->max_attempts, 3);
  EXPECT_EQ(p.hedging->delay, absl::Milliseconds(20));
  EXPECT_THAT(p.hedging->non_fatal_status_codes,
              ElementsAre(absl::StatusCode::kUnavailable, absl::StatusCode::kResourceExhausted));
  EXPECT_FALSE(p.hedging->adaptive_delay.has_value());
  EXPECT_THAT(hedging.warnings(), ElementsAre());

  PolicySet clamped = MustParse(Entry(R"("hedgingPolicy": {"maxAttempts": 9, "hedgingDelay": "0.01s"})"));
  EXPECT_EQ(clamped.Find("/s.S/M").policy->hedging->max_attempts, 5);
  EXPECT_THAT(clamped.warnings(),
              ElementsAre("methodConfig[0].hedgingPolicy.maxAttempts: 9 is clamped to 5, as gRPC "
                          "does"));
  PolicySet at_once = MustParse(Entry(R"("hedgingPolicy": {"maxAttempts": 2})"));
  EXPECT_THAT(at_once.warnings(),
              ElementsAre("methodConfig[0].hedgingPolicy.hedgingDelay: 0 sends all 2 attempts of "
                          "every call at once (until the retry budget stops them)"));

  PolicySet adaptive = MustParse(Entry(
      R"("hedgingPolicy": {"maxAttempts": 2, "adaptiveDelay": {"percentile": 99, "floor": "0.003s"}})"));
  const auto& a = adaptive.Find("/s.S/M").policy->hedging->adaptive_delay;
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->percentile, 99);
  EXPECT_EQ(a->floor, absl::Milliseconds(3));
  EXPECT_THAT(adaptive.warnings(), ElementsAre());
  PolicySet adaptive_defaults =
      MustParse(Entry(R"("hedgingPolicy": {"maxAttempts": 2, "adaptiveDelay": {}})"));
  EXPECT_EQ(adaptive_defaults.Find("/s.S/M").policy->hedging->adaptive_delay->percentile, 95);
  EXPECT_EQ(adaptive_defaults.Find("/s.S/M").policy->hedging->adaptive_delay->floor,
            absl::Milliseconds(1));

  EXPECT_EQ(ErrorOf(Entry(R"("hedgingPolicy": {"hedgingDelay": "0.01s"})")),
            "methodConfig[0].hedgingPolicy.maxAttempts: required (at least 2), as in gRPC");
  EXPECT_EQ(ErrorOf(Entry(R"("hedgingPolicy": {"maxAttempts": 1})")),
            "methodConfig[0].hedgingPolicy.maxAttempts: must be at least 2, got 1");
  EXPECT_EQ(ErrorOf(Entry(R"("hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "7200s"})")),
            "methodConfig[0].hedgingPolicy.hedgingDelay: must be in [0, 1h], got 2h");
  EXPECT_EQ(ErrorOf(Entry(R"("hedgingPolicy": {"maxAttempts": 2, "nonFatalStatusCodes": ["OK"]})")),
            "methodConfig[0].hedgingPolicy.nonFatalStatusCodes[0]: must be an error code, got OK");
  EXPECT_THAT(ErrorOf(Entry(R"("hedgingPolicy": {"maxAttempts": 2, "nonFatalStatusCodes": ["NOPE"]})")),
              ::testing::StartsWith("methodConfig[0].hedgingPolicy.nonFatalStatusCodes[0]: "));
  EXPECT_EQ(ErrorOf(Entry(
                R"("hedgingPolicy": {"maxAttempts": 2, "adaptiveDelay": {"percentile": 40}})")),
            "methodConfig[0].hedgingPolicy.adaptiveDelay.percentile: must be in [50, 99.9], got 40");
  EXPECT_EQ(ErrorOf(Entry(
                R"("hedgingPolicy": {"maxAttempts": 2, "adaptiveDelay": {"floor": "-1s"}})")),
            "methodConfig[0].hedgingPolicy.adaptiveDelay.floor: must be in [0, 1h], got -1s");
  // Hedges spend retryThrottling's budget: it is not "without effect".
  PolicySet throttled = MustParse(R"({"methodConfig": [{"name": [{"service": "s.S"}],
      "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.01s"}}],
      "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}})");
  EXPECT_THAT(throttled.warnings(), ElementsAre());
}

TEST(PolicySetTest, WrongJsonShapesAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"methodConfig": [[{"name": [{}]}]]})",
       "policy JSON: methodConfig[0]: expected an object, got an array"},
      {R"({"methodConfig": [{"name": [{}]}, [[{"name": [{"service": "a"}]}]]]})",
       "policy JSON: methodConfig[1]: expected an object, got an array"},
      {R"({"methodConfig": {"name": [{}]}})",
       "policy JSON: methodConfig: expected an array, got an object"},
      {R"({"methodConfig": [{"name": {"service": "x"}}]})",
       "policy JSON: methodConfig[0].name: expected an array, got an object"},
      {R"({"methodConfig": [{"name": [[{"service": "x"}]]}]})",
       "policy JSON: methodConfig[0].name[0]: expected an object, got an array"},
      {R"({"methodConfig": [null]})", "policy JSON: methodConfig[0]: expected an object, got null"},
      {R"({"methodConfig": [{"name": [null]}]})",
       "policy JSON: methodConfig[0].name[0]: expected an object, got null"},
      {R"({"methodConfig": [{"name": [{"service": 5}]}]})",
       "policy JSON: methodConfig[0].name[0].service: expected a string, got 5"},
      {R"({"methodConfig": [{"name": [{"service": ["a.S"]}]}]})",
       "policy JSON: methodConfig[0].name[0].service: expected a string, got an array"},
      {Entry(R"("retryPolicy": {"retryableStatusCodes": "UNAVAILABLE"})"),
       "policy JSON: methodConfig[0].retryPolicy.retryableStatusCodes: expected an array, got "
       "\"UNAVAILABLE\""},
      {Entry(R"("retryPolicy": {"retryableStatusCodes": [["UNAVAILABLE"]]})"),
       "policy JSON: methodConfig[0].retryPolicy.retryableStatusCodes[0]: expected a string, "
       "got an array"},
      {Entry(R"("retryPolicy": {"retryableStatusCodes": [null]})"),
       "policy JSON: methodConfig[0].retryPolicy.retryableStatusCodes[0]: expected a string, "
       "got null"},
      {Entry(R"("breaker": {"sre": {}, "failureCodes": "INTERNAL"})"),
       "policy JSON: methodConfig[0].breaker.failureCodes: expected an array, got \"INTERNAL\""},
      {Entry(R"("waitForReady": "true")"),
       "policy JSON: methodConfig[0].waitForReady: expected true or false, got \"true\""},
      {Entry(R"("retryPolicy": {"fullJitter": "false"})"),
       "policy JSON: methodConfig[0].retryPolicy.fullJitter: expected true or false, got "
       "\"false\""},
      {Entry(R"("waitForReady": 1)"),
       "policy JSON: methodConfig[0].waitForReady: expected true or false, got 1"},
      {Entry(R"("timeout": {"seconds": 5})"),
       "policy JSON: methodConfig[0].timeout: expected a duration such as \"0.2s\" (seconds "
       "with up to 9 decimals, then s), got an object"},
      {Entry(R"("timeout": 5)"), "policy JSON: methodConfig[0].timeout: expected a duration"},
      {Entry(R"("timeout": " 1s")"), "methodConfig[0].timeout: expected a duration such as "
                                     "\"0.2s\" (seconds with up to 9 decimals, then s), got "
                                     "\" 1s\""},
      {Entry(R"("timeout": "+1s")"), "methodConfig[0].timeout: expected a duration"},
      {Entry(R"("timeout": "1.s")"), "methodConfig[0].timeout: expected a duration"},
      {Entry(R"("timeout": "1.0000000001s")"), "methodConfig[0].timeout: expected a duration"},
      {Entry(R"("timeout": ["1s"])"), "methodConfig[0].timeout: expected a duration"},
      {Entry(R"("retryPolicy": {"jitter": "0x1"})"),
       "policy JSON: methodConfig[0].retryPolicy.jitter: expected a number, got \"0x1\""},
      {Entry(R"("retryPolicy": {"maxAttempts": [3]})"),
       "policy JSON: methodConfig[0].retryPolicy.maxAttempts: expected a number, got an array"},
      {Entry(R"("retryPolicy": {"maxAttempts": true})"),
       "policy JSON: methodConfig[0].retryPolicy.maxAttempts: expected a number, got true"},
      {Entry(R"("retryPolicy": [])"),
       "policy JSON: methodConfig[0].retryPolicy: expected an object, got an array"},
      {Entry(R"("retryPolicy": "none")"),
       "policy JSON: methodConfig[0].retryPolicy: expected an object, got \"none\""},
      {Entry(R"("hedgingPolicy": [1])"),
       "policy JSON: methodConfig[0].hedgingPolicy: expected an object, got an array"},
      {R"({"loadBalancingConfig": {"round_robin": {}}})",
       "policy JSON: loadBalancingConfig: expected an array, got an object"},
      {R"({"loadBalancingConfig": [[{"round_robin": {}}]]})",
       "policy JSON: loadBalancingConfig[0]: expected an object, got an array"},
      {R"({"retryThrottling": {"maxTokens": {"value": 10}}})",
       "policy JSON: retryThrottling.maxTokens: expected a number, got an object"},
      // Written under both its JSON and its proto name: protobuf merges them.
      {Entry(R"("retryPolicy": {"maxAttempts": 2}, "retry_policy": {"jitter": 0.5})"),
       "policy JSON: methodConfig[0]: \"retryPolicy\" and \"retry_policy\" are the same field; "
       "write it once, as \"retryPolicy\""},
      // Values are shown printable and cut short, here and in the loader's own
      // messages.
      {Entry(R"("retryPolicy": {"retryableStatusCodes": ["UNAVAIL\u0000ABLE"]})"),
       "retryableStatusCodes[0]: unknown status code \"UNAVAIL\\x00ABLE\""},
      {Entry(R"("breaker": {"threeState": {"mode": "\u00e9"}})"), "got \"\\xc3\\xa9\""},
      {Entry(absl::StrCat(R"("waitForReady": ")", std::string(100, 'y'), "\xc3\xa9\"")),
       absl::StrCat("got \"", std::string(64, 'y'), "...\"")},
      {Entry("\"waitForReady\": \"\xc3\xa9\\t\""), "got \"\\xc3\\xa9\\x09\""},
  };
  for (const auto& [json, expected] : cases) {
    EXPECT_THAT(ErrorOf(json), HasSubstr(expected)) << json;
  }
  // What proto3 JSON does allow still loads: numbers as strings, NaN and
  // Infinity as strings (then refused by range), 3.0 for an int, null for a
  // field left out, the proto name alone, free-form Structs of any shape.
  PolicySet set = MustParse(Entry(
      R"("retryPolicy": {"maxAttempts": "4", "jitter": "0.5", "backoffMultiplier": 3.0},)"
      R"("fault_injection": {"seed": "18446744073709551615", "abortCode": "INTERNAL"},)"
      R"("timeout": null, "breaker": null, "hedgingPolicy": null,)"
      R"("throttle": {"maxConcurrency": 2.0, "ratePerSecond": "1e3"})"));
  const MethodPolicy& p = *set.Find("/s.S/M").policy;
  EXPECT_EQ(p.retry->max_attempts, 4);
  EXPECT_EQ(p.retry->jitter, 0.5);
  EXPECT_EQ(p.fault_injection->seed, 18446744073709551615u);
  EXPECT_FALSE(p.timeout.has_value());
  EXPECT_EQ(p.breaker.kind, BreakerKind::kNone);
  EXPECT_EQ(p.throttle->max_concurrency, 2);
  EXPECT_EQ(p.throttle->rate_per_second, 1000);
  EXPECT_TRUE(set.warnings().empty());
  EXPECT_THAT(WarningsOf(R"({"healthCheckConfig": {"a": [[1, null], {"b": [[]]}]}})"),
              ElementsAre(StartsWith("healthCheckConfig: accepted")));
  EXPECT_THAT(ErrorOf(Entry(R"("retryPolicy": {"jitter": "-Infinity"})")),
              HasSubstr("methodConfig[0].retryPolicy.jitter: must be in [0, 1], got -inf"));
}

// protobuf's parser also takes text that is not JSON at all, or is
// ambiguous: refused with the path, what is wrong and where.
TEST(PolicySetTest, OnlyStrictJsonIsAccepted) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"methodConfig\": [{\"name\": [{}], \"timeout\": \"1s\",}]}",
       "policy JSON: methodConfig[0]: trailing comma (not allowed in JSON) at line 1, column 49"},
      {"{\"methodConfig\": [{\"name\": [{},]}]}",
       "policy JSON: methodConfig[0].name: trailing comma (not allowed in JSON) at line 1, "
       "column 31"},
      {"{\"methodConfig\": [],\n}", "policy JSON: trailing comma (not allowed in JSON) at line 1, "
                                    "column 20"},
      {"{'methodConfig': []}",
       "policy JSON: single-quoted key (JSON strings use double quotes) at line 1, column 2"},
      {"{\"methodConfig\": [{\"name\": [{\"service\": 'a.S'}]}]}",
       "policy JSON: methodConfig[0].name[0].service: single-quoted string (JSON strings use "
       "double quotes) at line 1, column 41"},
      {"{methodConfig: []}",
       "policy JSON: unquoted key methodConfig (JSON keys are strings in double quotes) at "
       "line 1, column 2"},
      {"{\"methodConfig\": [{\"name\": [{}],\n  \"timeout\": \"1s\",\n  \"timeout\": \"2s\"}]}",
       "policy JSON: methodConfig[0]: duplicate key \"timeout\" (first at line 2, column 3) at "
       "line 3, column 3"},
      // The same key, spelled with an escape.
      {"{\"methodConfig\": [], \"method\\u0043onfig\": []}",
       "policy JSON: duplicate key \"methodConfig\" (first at line 1, column 2) at line 1, "
       "column 22"},
      {"{\"methodConfig\": [{\"name\": [{}]}], \"retryThrottling\": {\"maxTokens\": 10.}}",
       "policy JSON: retryThrottling.maxTokens: invalid number 10. (JSON wants a digit after the "
       "decimal point) at line 1, column 69"},
      {"{\"loadBalancingPolicy\": \"a\\xb\"}",
       "policy JSON: loadBalancingPolicy: invalid escape \\x in a string at line 1, column 27"},
      {"{\"loadBalancingPolicy\": \"a\tb\"}",
       "policy JSON: loadBalancingPolicy: raw control character \\x09 in a string (JSON wants "
       "it escaped) at line 1, column 27"},
      {"{\"healthCheckConfig\": {\"k\\u00e9y\": {\"a\": 1, \"a\": 2}}}",
       "policy JSON: healthCheckConfig.k\\xc3\\xa9y: duplicate key \"a\" (first at line 1, "
       "column 37) at line 1, column 45"},
  };
  for (const auto& [json, expected] : cases) {
    EXPECT_EQ(ErrorOf(json), expected) << json;
  }
  // Valid JSON with every escape, surrogate pairs and numbers of every form
  // still loads.
  PolicySet set = MustParse(R"({"methodConfig": [{"name": [{"service": "a\"\\\b\f\n\r\t\u0041)"
                            R"(\ud83d\ude00"}], "retryPolicy": {"jitter": 0.5e-0, )"
                            R"("maxAttempts": 20E-1, "backoffMultiplier": 1E+0}}]})");
  ASSERT_EQ(set.names().size(), 1u);
  EXPECT_EQ(set.names()[0].service, "a\"\\\b\f\n\r\tA\xf0\x9f\x98\x80");
  EXPECT_EQ(set.policies()[0].retry->jitter, 0.5);
  EXPECT_EQ(set.policies()[0].retry->max_attempts, 2);
  // Nesting: 32 levels load, 33 do not.
  const auto nested = [](int levels) {
    std::string open, close;
    for (int i = 2; i < levels; ++i) {
      open += i % 2 ? "[" : "{\"a\": ";
      close.insert(0, i % 2 ? "]" : "}");
    }
    return absl::StrCat(R"({"healthCheckConfig": )", open, "{}", close, "}");
  };
  EXPECT_THAT(WarningsOf(nested(32)), ElementsAre(StartsWith("healthCheckConfig: accepted")));
  EXPECT_THAT(ErrorOf(nested(33)), HasSubstr("nested deeper than 32 levels"));
}

// Settings that are accepted but can have no effect, or are ignored, each
// get a warning naming the path; normal configs get none.
TEST(PolicySetTest, SettingsWithoutEffectAreWarned) {
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
TEST(PolicySetTest, StrictModeTurnsWarningsIntoAnError) {
  const PolicySet::LoadOptions strict{/*strict=*/true};
  const std::string two_warnings =
      R"({"loadBalancingPolicy": "round_robin", )"
      R"("methodConfig": [{"name": [{}], "deadline": "1s"}]})";
  EXPECT_EQ(WarningsOf(two_warnings).size(), 2u);
  absl::StatusOr<PolicySet> refused = Load(two_warnings, strict);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "strict mode: 2 warning(s): loadBalancingPolicy: accepted for compatibility with "
            "gRPC service configs, not applied; methodConfig[0].deadline: deprecated alias of "
            "timeout (the call's overall deadline); write timeout");

  absl::StatusOr<PolicySet> clean = Load(kExample, strict);
  ASSERT_TRUE(clean.ok()) << clean.status();
  EXPECT_NE(clean->Find("/cache.v1.CacheService/Get").policy, nullptr);

  EXPECT_THAT(std::string(
                  Load(Entry(R"("retryPolicy": {"maxAttempts": 0})"), strict)
                      .status()
                      .message()),
              StartsWith("methodConfig[0].retryPolicy.maxAttempts: must be in [1, 10]"));
  EXPECT_TRUE(Load(two_warnings, PolicySet::LoadOptions{}).ok());
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
  absl::StatusOr<PolicySet> ok = LoadFile(Write(kExample));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_NE(ok->Find("/cache.v1.CacheService/Get").policy, nullptr);

  absl::StatusOr<PolicySet> missing = LoadFile("/nonexistent/p.json");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("policy file \"/nonexistent/p.json\": cannot open: No such file"));

  EXPECT_THAT(LoadFile(::testing::TempDir()).status().message(),
              HasSubstr("not a regular file"));

  const std::string empty = Write("");
  EXPECT_THAT(LoadFile(empty).status().message(),
              HasSubstr(absl::StrCat("policy file \"", empty, "\": policy JSON is empty")));

  const std::string huge = Write(std::string(PolicySet::kMaxFileBytes + 1, ' '));
  EXPECT_THAT(LoadFile(huge).status().message(),
              HasSubstr("over the limit of"));

  const std::string warned = Write(Entry(R"("deadline": "1s")"));
  EXPECT_TRUE(LoadFile(warned).ok());
  EXPECT_EQ(LoadFile(warned, PolicySet::LoadOptions{/*strict=*/true})
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

// JSON syntax errors: one line that says where, and never the raw input
// (which may hold bytes that are not text).
TEST(PolicySetSyntaxTest, SyntaxErrorsAreOneLineWithAPositionAndNoRawBytes) {
  absl::StatusOr<PolicySet> token = Load("{\"methodConfig\": [\n  {\"name\": [}] }");
  ASSERT_FALSE(token.ok());
  EXPECT_THAT(token.status().message(), ::testing::HasSubstr("at line 2, column 13"));
  EXPECT_EQ(std::string(token.status().message()).find('\n'), std::string::npos);

  absl::StatusOr<PolicySet> bytes =
      Load(std::string("{\"methodConfig\":[{\"name\":[\xff\xfe{}]}]}"));
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().message(),
            "policy JSON: not valid UTF-8 at line 1, column 27 (byte 26)");
  for (const absl::StatusOr<PolicySet>* result : {&token, &bytes}) {
    for (unsigned char c : std::string(result->status().message())) {
      EXPECT_TRUE(c >= 0x20 && c < 0x7F) << static_cast<int>(c);
    }
  }
}

// A file saved with a UTF-8 byte-order mark (as editors on Windows do) loads
// as the same file without it; a byte that starts no value is named with its
// position instead of protobuf's bare "Expected a value.".
TEST(PolicySetSyntaxTest, AByteOrderMarkIsIgnoredAndAStrayByteIsShownWithItsPosition) {
  const std::string body =
      R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService"}], "timeout": "1s"}]})";
  absl::StatusOr<PolicySet> with_bom = Load("\xEF\xBB\xBF" + body);
  ASSERT_TRUE(with_bom.ok()) << with_bom.status();
  EXPECT_EQ(with_bom->Find("/cache.v1.CacheService/Get").policy->timeout, absl::Seconds(1));

  absl::StatusOr<PolicySet> stray = Load("{\"methodConfig\": [\n  @]}");
  ASSERT_FALSE(stray.ok());
  EXPECT_EQ(stray.status().message(),
            "policy JSON: methodConfig[0]: expected a value (object, array, string, number, true, "
            "false or null), found \"@]}\" at line 2, column 3");

  absl::StatusOr<PolicySet> two_boms = Load("\xEF\xBB\xBF\xEF\xBB\xBF" + body);
  ASSERT_FALSE(two_boms.ok());
  EXPECT_THAT(std::string(two_boms.status().message()),
              ::testing::HasSubstr(R"(found "\xef\xbb\xbf{"methodC..." at line 1, column 1)"));

  absl::StatusOr<PolicySet> truncated = Load("{\"methodConfig\": ");
  ASSERT_FALSE(truncated.ok());
  EXPECT_THAT(truncated.status().message(), ::testing::HasSubstr("found the end of the text"));
}

}  // namespace
}  // namespace resilience

#include "src/policy/policy_set.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/breaker/simulated_clock.h"
#include "src/breaker/token_bucket.h"

namespace resilience {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

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
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(json);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *std::move(set) : PolicySet();
}

// The error message of parsing `json`, which must fail with InvalidArgument.
std::string ErrorOf(const std::string& json) {
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(json);
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
  EXPECT_EQ(p.timeout, absl::Milliseconds(200));
  EXPECT_FALSE(p.deadline.has_value());
  ASSERT_TRUE(p.retry.has_value());
  EXPECT_EQ(p.retry->max_attempts, 3);
  EXPECT_EQ(p.retry->initial_backoff, absl::Milliseconds(50));
  EXPECT_EQ(p.retry->max_backoff, absl::Seconds(1));
  EXPECT_EQ(p.retry->backoff_multiplier, 2);
  EXPECT_EQ(p.retry->jitter, 0.2);
  EXPECT_THAT(p.retry->retryable_status_codes, ElementsAre(absl::StatusCode::kUnavailable));
  EXPECT_EQ(p.breaker.kind, BreakerKind::kSre);
  EXPECT_EQ(p.breaker.sre.k, 1.5);
  EXPECT_EQ(p.breaker.sre.buckets, 40);
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
  EXPECT_EQ(set.retry_budget().max_tokens, 10);
  EXPECT_EQ(set.retry_budget().token_ratio, 0.1);
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
  const SreBreaker::Options sre;
  EXPECT_EQ(p.breaker.sre.k, sre.k);
  EXPECT_EQ(p.breaker.sre.protection, sre.protection);
  EXPECT_EQ(p.breaker.sre.window, sre.window);
  EXPECT_EQ(p.breaker.sre.buckets, sre.buckets);
  EXPECT_EQ(p.breaker.sre.force_pass_interval, sre.force_pass_interval);
  EXPECT_EQ(p.breaker.sre.count_local_rejections, sre.count_local_rejections);
  EXPECT_EQ(p.breaker.sre.recovery_acceleration, sre.recovery_acceleration);
  EXPECT_EQ(set.retry_budget().max_tokens, 10);
  EXPECT_EQ(set.retry_budget().token_ratio, 0.1);

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
// retryPolicy with every gRPC field, retryThrottling) loads unchanged; what
// is not applied is listed.
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
  EXPECT_EQ(p->retry->max_attempts, 4);
  EXPECT_TRUE(p->retry->IsRetryable(absl::StatusCode::kResourceExhausted));
  EXPECT_FALSE(p->retry->IsRetryable(absl::StatusCode::kInternal));
  EXPECT_EQ(set.retry_budget().max_tokens, 100);
  EXPECT_THAT(set.warnings(),
              ElementsAre(StartsWith("loadBalancingConfig: accepted"),
                          StartsWith("methodConfig[0].retryPolicy.perAttemptRecvTimeout"),
                          StartsWith("methodConfig[0].waitForReady"),
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
       "methodConfig[0].throttle: set maxConcurrency, ratePerSecond or both"},
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
      absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(json);
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
    absl::StatusOr<PolicySet> at_max = PolicySet::FromJsonString(with(f.max));
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
  EXPECT_THAT(ErrorOf("not json"), HasSubstr("policy JSON: Unexpected token"));
  EXPECT_THAT(ErrorOf("{\"methodConfig\": ["), HasSubstr("policy JSON"));
  EXPECT_THAT(ErrorOf("[]"), HasSubstr("Root element must be a message"));
  EXPECT_THAT(ErrorOf("42"), HasSubstr("Root element must be a message"));
  EXPECT_THAT(ErrorOf(R"({"methodConfgi": []})"), HasSubstr("methodConfgi: Cannot find field"));
  EXPECT_THAT(ErrorOf(Entry(R"("retryPolicy": {"maxAttempt": 3})")),
              HasSubstr("maxAttempt: Cannot find field"));
  EXPECT_THAT(ErrorOf(Entry(R"("retryPolicy": {"maxAttempts": "three"})")),
              HasSubstr("methodConfig[0].retryPolicy.maxAttempts: invalid value \"three\""));
  EXPECT_THAT(ErrorOf(Entry(R"("retryPolicy": {"maxAttempts": 1e12})")),
              HasSubstr("methodConfig[0].retryPolicy.maxAttempts: invalid value"));
  EXPECT_THAT(ErrorOf(Entry(R"("timeout": "fast")")),
              HasSubstr("methodConfig[0].timeout: invalid value"));
  EXPECT_THAT(ErrorOf(R"({"methodConfig": 3})"), HasSubstr("methodConfig: invalid value 3"));

  // Deep nesting inside an accepted free-form field: refused, no stack overflow.
  const std::string deep = absl::StrCat(R"({"healthCheckConfig": )", std::string(100000, '['),
                                        std::string(100000, ']'), "}");
  EXPECT_THAT(ErrorOf(deep), HasSubstr("policy JSON"));
  const std::string deep_objects =
      absl::StrCat(R"({"healthCheckConfig": )", [] {
        std::string s;
        for (int i = 0; i < 20000; ++i) s += "{\"a\":";
        s += "1";
        for (int i = 0; i < 20000; ++i) s += "}";
        return s;
      }(), "}");
  EXPECT_THAT(ErrorOf(deep_objects), HasSubstr("policy JSON"));

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
// Get retries with a per-attempt timeout behind an SRE breaker, Store has a
// three-state breaker, Dump a timeout, and the server throttles all three.
TEST(PolicySetTest, ShippedExamplePolicies) {
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonFile(SHIPPED_POLICY_PATH);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_TRUE(set->warnings().empty());
  const MethodPolicy* get = set->Find("/cache.v1.CacheService/Get").policy;
  const MethodPolicy* store = set->Find("/cache.v1.CacheService/Store").policy;
  const MethodPolicy* dump = set->Find("/cache.v1.CacheService/Dump").policy;
  ASSERT_TRUE(get && store && dump);
  EXPECT_TRUE(get->retry.has_value() && get->timeout.has_value());
  EXPECT_EQ(get->breaker.kind, BreakerKind::kSre);
  EXPECT_TRUE(store->timeout.has_value());
  EXPECT_EQ(store->breaker.kind, BreakerKind::kThreeState);
  EXPECT_TRUE(dump->timeout.has_value());
  EXPECT_TRUE(get->throttle && store->throttle && dump->throttle);
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
  absl::StatusOr<PolicySet> ok = PolicySet::FromJsonFile(Write(kExample));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_NE(ok->Find("/cache.v1.CacheService/Get").policy, nullptr);

  absl::StatusOr<PolicySet> missing = PolicySet::FromJsonFile("/nonexistent/p.json");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("policy file \"/nonexistent/p.json\": cannot open: No such file"));

  EXPECT_THAT(PolicySet::FromJsonFile(::testing::TempDir()).status().message(),
              HasSubstr("not a regular file"));

  const std::string empty = Write("");
  EXPECT_THAT(PolicySet::FromJsonFile(empty).status().message(),
              HasSubstr(absl::StrCat("policy file \"", empty, "\": policy JSON is empty")));

  const std::string huge = Write(std::string(PolicySet::kMaxFileBytes + 1, ' '));
  EXPECT_THAT(PolicySet::FromJsonFile(huge).status().message(),
              HasSubstr("over the limit of"));

  const std::string bad = Write(Entry(R"("retryPolicy": {"maxAttempts": 0})"));
  EXPECT_THAT(PolicySet::FromJsonFile(bad).status().message(),
              HasSubstr(absl::StrCat("policy file \"", bad,
                                     "\": methodConfig[0].retryPolicy.maxAttempts")));
}

// JSON syntax errors: one line that says where, and never the raw input
// (which may hold bytes that are not text).
TEST(PolicySetSyntaxTest, SyntaxErrorsAreOneLineWithAPositionAndNoRawBytes) {
  absl::StatusOr<PolicySet> token = PolicySet::FromJsonString("{\"methodConfig\": [\n  {\"name\": [}] }");
  ASSERT_FALSE(token.ok());
  EXPECT_THAT(token.status().message(), ::testing::HasSubstr("at line 2, column 13"));
  EXPECT_EQ(std::string(token.status().message()).find('\n'), std::string::npos);

  absl::StatusOr<PolicySet> bytes =
      PolicySet::FromJsonString(std::string("{\"methodConfig\":[{\"name\":[\xff\xfe{}]}]}"));
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().message(),
            "policy JSON: not valid UTF-8 at line 1, column 27 (byte 26)");
  for (const absl::StatusOr<PolicySet>* result : {&token, &bytes}) {
    for (unsigned char c : std::string(result->status().message())) {
      EXPECT_TRUE(c >= 0x20 && c < 0x7F) << static_cast<int>(c);
    }
  }
}

}  // namespace
}  // namespace resilience

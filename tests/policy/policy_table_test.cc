// File: tests/policy/policy_table_test.cc
//
// PolicyTable, the loader behind the public PolicySet. Loading and lookup: the
// example, matching, defaults and the settings each field loads into.

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

// The issue's example loads with every value where it belongs.
TEST(PolicyTableTest, LoadsTheExample) {
  PolicyTable set = MustParse(kExample);
  PolicyTable::Match m = set.Find("/cache.v1.CacheService/Get");
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
TEST(PolicyTableTest, MatchingPrecedence) {
  PolicyTable set = MustParse(R"({"methodConfig": [
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

  PolicyTable no_default = MustParse(R"({"methodConfig": [{"name": [{"service": "a.S"}]}]})");
  EXPECT_EQ(no_default.Find("/b.T/Get").policy, nullptr);
  EXPECT_EQ(no_default.Find("garbage").policy, nullptr);
  EXPECT_EQ(PolicyTable().Find("/a.S/Get").policy, nullptr);
}

// Pointers from Find stay valid when the set is moved.
TEST(PolicyTableTest, MatchesSurviveMoves) {
  PolicyTable set = MustParse(Entry(R"("timeout": "1s")"));
  PolicyTable::Match before = set.Find("/s.S/M");
  PolicyTable moved = std::move(set);
  PolicyTable::Match after = moved.Find("/s.S/M");
  EXPECT_EQ(before.policy, after.policy);
  EXPECT_EQ(before.scope.data(), after.scope.data());
}

// Omitted fields take the documented defaults.
TEST(PolicyTableTest, Defaults) {
  PolicyTable set = MustParse(Entry(R"("retryPolicy": {}, "breaker": {"sre": {}})"));
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

  PolicyTable three = MustParse(Entry(R"("breaker": {"threeState": {"openDuration": "90s"}})"));
  const ThreeStateBreaker::Options& t = three.Find("/s.S/M").policy->breaker.three_state;
  EXPECT_EQ(t.failure_rate_threshold, 0.5);
  EXPECT_EQ(t.min_requests, 20);
  EXPECT_EQ(t.buckets, 10);
  EXPECT_EQ(t.open_duration, absl::Seconds(90));
  EXPECT_EQ(t.max_open_duration, absl::Seconds(90));  // the cap follows a longer open period
  EXPECT_EQ(t.mode, BreakerMode::kNormal);

  PolicyTable throttle = MustParse(Entry(R"("throttle": {"ratePerSecond": 50})"));
  EXPECT_EQ(throttle.Find("/s.S/M").policy->throttle->burst, 50);
  EXPECT_EQ(throttle.Find("/s.S/M").policy->throttle->max_concurrency, 0);
  PolicyTable fault = MustParse(Entry(R"("faultInjection": {"abortCode": "INTERNAL"})"));
  EXPECT_EQ(fault.Find("/s.S/M").policy->fault_injection->abort_fraction, 1.0);
  EXPECT_EQ(fault.Find("/s.S/M").policy->fault_injection->delay_fraction, 0.0);
}

// The breaker's outcome classification follows the default table, with the
// file's overrides.
TEST(PolicyTableTest, OutcomeClassification) {
  PolicyTable set = MustParse(Entry(
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
// gRPC's meaning (timeout is the overall deadline, waitForReady applies,
// the load balancing goes to the channel); what is not applied is listed.
TEST(PolicyTableTest, RealGrpcServiceConfigLoads) {
  PolicyTable set = MustParse(R"json({
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
  EXPECT_EQ(set.load_balancing().root, "round_robin");
  EXPECT_THAT(set.warnings(),
              ElementsAre("methodConfig[0].retryPolicy.perAttemptRecvTimeout: accepted for "
                          "compatibility with gRPC service configs, not applied; the limit of "
                          "each attempt is retryPolicy.perAttemptTimeout",
                          StartsWith("methodConfig[0].maxRequestMessageBytes"),
                          StartsWith("methodConfig[0].maxResponseMessageBytes")));
}

// A method or service named twice, or two defaults, is an error naming both
// places.
TEST(PolicyTableTest, DuplicateNamesAreErrors) {
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

// The policies.json the example ships loads with what its README promises:
// Get retries, each attempt with a perAttemptTimeout within the call's
// timeout, within a windowed retryBudget, behind an SRE breaker; Store has a three-state breaker, Dump a
// timeout, and the server throttles all three. No warnings: it is the
// example to copy.
TEST(PolicyTableTest, ShippedExamplePolicies) {
  absl::StatusOr<PolicyTable> set = LoadFile(SHIPPED_POLICY_PATH);
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
  // Get's retries: within a budget of its own calls (docs/fleet.md,
  // "Amplification") and gRPC's retryThrottling.
  ASSERT_TRUE(get->windowed_budget.has_value());
  EXPECT_EQ(get->windowed_budget->token_ratio, 0.1);
  EXPECT_FALSE(get->retry_budget.has_value());
  EXPECT_TRUE(set->retry_throttling().has_value());
  EXPECT_TRUE(store->timeout.has_value());
  EXPECT_EQ(store->breaker.kind, BreakerKind::kThreeState);
  EXPECT_TRUE(dump->timeout.has_value());
  EXPECT_TRUE(get->throttle && store->throttle && dump->throttle);
}

// `timeout` is gRPC's: the call's overall deadline, whatever the retries.
// `deadline` is a deprecated alias that loads into it with a warning; both
// at once is an error naming both.
TEST(PolicyTableTest, TimeoutIsTheOverallDeadlineAndDeadlineItsDeprecatedAlias) {
  PolicyTable with_retry =
      MustParse(Entry(R"("timeout": "2s", "retryPolicy": {"maxAttempts": 3})"));
  const MethodPolicy& p = *with_retry.Find("/s.S/M").policy;
  EXPECT_EQ(p.timeout, absl::Seconds(2));
  EXPECT_FALSE(p.retry->per_attempt_timeout.has_value());  // not per attempt
  EXPECT_TRUE(with_retry.warnings().empty());

  PolicyTable alias = MustParse(Entry(R"("deadline": "1.5s")"));
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

// retryPolicy.perAttemptTimeout limits each attempt; one that is not shorter
// than the call's timeout can never fire, which is a warning.
TEST(PolicyTableTest, PerAttemptTimeout) {
  PolicyTable set = MustParse(
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
TEST(PolicyTableTest, BreakerCallerDeadline) {
  const auto caller_deadline = [](const std::string& value) {
    PolicyTable set = MustParse(
        Entry(absl::StrCat(R"("breaker": {"sre": {}, "callerDeadline": )", value, "}")));
    const MethodPolicy* p = set.Find("/s.S/M").policy;
    return p == nullptr ? CallerDeadline::kFailure : p->breaker.caller_deadline;
  };
  EXPECT_EQ(caller_deadline(R"("NEUTRAL")"), CallerDeadline::kNeutral);
  EXPECT_EQ(caller_deadline(R"("FAILURE")"), CallerDeadline::kFailure);
  EXPECT_EQ(caller_deadline("null"), CallerDeadline::kFailure);
  PolicyTable three = MustParse(
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
TEST(PolicyTableTest, WaitForReadyIsApplied) {
  PolicyTable on = MustParse(Entry(R"("waitForReady": true)"));
  EXPECT_EQ(on.Find("/s.S/M").policy->wait_for_ready, true);
  EXPECT_TRUE(on.warnings().empty());
  PolicyTable off = MustParse(Entry(R"("waitForReady": false)"));
  EXPECT_EQ(off.Find("/s.S/M").policy->wait_for_ready, false);
  EXPECT_TRUE(off.warnings().empty());
  EXPECT_FALSE(MustParse(Entry("")).Find("/s.S/M").policy->wait_for_ready.has_value());
}

// As in gRPC, an entry either retries or hedges. A hedgingPolicy loads as
// gRFC A6 defines it (maxAttempts 2..5, larger clamped with a warning),
// plus adaptiveDelay; every bad value names its path.
TEST(PolicyTableTest, HedgingPolicy) {
  EXPECT_EQ(ErrorOf(Entry(R"("retryPolicy": {}, "hedgingPolicy": {"maxAttempts": 2})")),
            "methodConfig[0].hedgingPolicy: cannot be set together with "
            "methodConfig[0].retryPolicy (as in gRPC, an entry either retries or hedges)");
  PolicyTable hedging = MustParse(Entry(
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

  PolicyTable clamped = MustParse(Entry(R"("hedgingPolicy": {"maxAttempts": 9, "hedgingDelay": "0.01s"})"));
  EXPECT_EQ(clamped.Find("/s.S/M").policy->hedging->max_attempts, 5);
  EXPECT_THAT(clamped.warnings(),
              ElementsAre("methodConfig[0].hedgingPolicy.maxAttempts: 9 is clamped to 5, as gRPC "
                          "does"));
  PolicyTable at_once = MustParse(Entry(R"("hedgingPolicy": {"maxAttempts": 2})"));
  EXPECT_THAT(at_once.warnings(),
              ElementsAre("methodConfig[0].hedgingPolicy.hedgingDelay: 0 sends all 2 attempts of "
                          "every call at once (until the retry budget stops them)"));

  PolicyTable adaptive = MustParse(Entry(
      R"("hedgingPolicy": {"maxAttempts": 2, "adaptiveDelay": {"percentile": 99, "floor": "0.003s"}})"));
  const auto& a = adaptive.Find("/s.S/M").policy->hedging->adaptive_delay;
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->percentile, 99);
  EXPECT_EQ(a->floor, absl::Milliseconds(3));
  EXPECT_THAT(adaptive.warnings(), ElementsAre());
  PolicyTable adaptive_defaults =
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
  PolicyTable throttled = MustParse(R"({"methodConfig": [{"name": [{"service": "s.S"}],
      "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.01s"}}],
      "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}})");
  EXPECT_THAT(throttled.warnings(), ElementsAre());
}

}  // namespace
}  // namespace resilience

#include "src/policy/policy_lint.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/policy/breaker_timing_warnings.h"
#include "src/policy/status_codes.h"

namespace resilience {

namespace pb = ::resilience::v1;

void PolicyLint::Entry(const pb::MethodConfig& entry, const MethodPolicy& policy,
                       const std::string& path, std::vector<std::string>& warnings) {
  if (policy.retry.has_value()) {
    const std::string timeout_path = path + (entry.has_deadline() ? ".deadline" : ".timeout");
    RetryFindings(entry.retry_policy(), *policy.retry, path + ".retryPolicy", policy.timeout,
                  timeout_path, warnings);
  }
  if (entry.has_retry_budget() && !Reissues(policy)) {
    warnings.push_back(absl::StrCat(path,
                                    ".retryBudget: the entry neither retries (a retryPolicy with "
                                    "maxAttempts above 1) nor hedges, so it has no effect"));
  }
  if (entry.has_breaker()) BreakerFindings(entry.breaker(), path + ".breaker", warnings);
  if (policy.throttle.has_value() && entry.throttle().has_adaptive()) {
    AdaptiveFindings(entry.throttle().adaptive(), path + ".throttle.adaptive", warnings);
  }
  if (policy.bulkhead.has_value()) {
    BulkheadFindings(entry.bulkhead(), *policy.bulkhead, path + ".bulkhead", warnings);
  }
  if (policy.fault_injection.has_value()) {
    FaultFindings(entry.fault_injection(), *policy.fault_injection, path + ".faultInjection",
                  warnings);
    DelayFindings(policy, path, warnings);
  }
  if (entry.has_breaker()) AppendBreakerTimingWarnings(entry.breaker(), policy, path, warnings);
}

void PolicyLint::File(const pb::PolicyFile& file, const std::vector<MethodPolicy>& policies,
                      std::vector<std::string>& warnings) {
  if (file.has_retry_throttling() &&
      std::none_of(policies.begin(), policies.end(), &PolicyLint::Reissues)) {
    warnings.push_back(
        "retryThrottling: no methodConfig entry retries (a retryPolicy with maxAttempts above 1) "
        "or hedges, so it has no effect");
  }
}

bool PolicyLint::Reissues(const MethodPolicy& policy) {
  return (policy.retry.has_value() && policy.retry->max_attempts > 1) || policy.hedging.has_value();
}

void PolicyLint::RetryFindings(const pb::RetryPolicy& p, const RetrySettings& r,
                               const std::string& path, std::optional<absl::Duration> timeout,
                               const std::string& timeout_path,
                               std::vector<std::string>& warnings) {
  const auto& codes = r.retryable_status_codes;
  if (r.per_attempt_timeout.has_value() && timeout.has_value() &&
      *r.per_attempt_timeout >= *timeout) {
    // An attempt starts no earlier than the call, so its own deadline is
    // never the earlier one.
    warnings.push_back(absl::StrCat(
        path, ".perAttemptTimeout: ", absl::FormatDuration(*r.per_attempt_timeout),
        " is not shorter than ", timeout_path, " (", absl::FormatDuration(*timeout),
        "), so it never ends an attempt"));
  } else if (r.per_attempt_timeout.has_value() && r.max_attempts > 1 &&
             std::find(codes.begin(), codes.end(), absl::StatusCode::kDeadlineExceeded) ==
                 codes.end()) {
    // The timed-out attempt ends DEADLINE_EXCEEDED, which this policy
    // does not retry: the timeout only shortens the call.
    warnings.push_back(absl::StrCat(
        path, ".perAttemptTimeout: DEADLINE_EXCEEDED is not in ", path,
        ".retryableStatusCodes, so an attempt it ends is not retried: the call "
        "ends then, with attempts left (add DEADLINE_EXCEEDED to retry it)"));
  }
  if (r.max_attempts > 1) {
    if (r.full_jitter && p.has_jitter()) {
      warnings.push_back(absl::StrCat(path,
                                      ".jitter: ignored with fullJitter (each backoff is a "
                                      "uniform draw in [0, backoff])"));
    }
    return;
  }
  if (!r.per_attempt_timeout.has_value()) {
    warnings.push_back(absl::StrCat(path,
                                    ": maxAttempts 1 makes no retry and perAttemptTimeout is not "
                                    "set, so the retryPolicy has no effect"));
    return;
  }
  std::vector<absl::string_view> unused;
  if (p.has_initial_backoff()) unused.push_back("initialBackoff");
  if (p.has_max_backoff()) unused.push_back("maxBackoff");
  if (p.has_backoff_multiplier()) unused.push_back("backoffMultiplier");
  if (p.has_jitter()) unused.push_back("jitter");
  if (p.has_full_jitter()) unused.push_back("fullJitter");
  if (p.retryable_status_codes_size() > 0) unused.push_back("retryableStatusCodes");
  if (unused.empty()) return;
  warnings.push_back(absl::StrCat(path, ": ", absl::StrJoin(unused, ", "),
                                  unused.size() == 1 ? " has" : " have",
                                  " no effect with maxAttempts 1 (no retry)"));
}

void PolicyLint::BreakerFindings(const pb::BreakerPolicy& p, const std::string& path,
                                 std::vector<std::string>& warnings) {
  for (int i = 0; i < p.success_codes_size(); ++i) {
    absl::StatusOr<absl::StatusCode> code = ParseStatusCodeName(p.success_codes(i));
    if (code.ok() && *code == absl::StatusCode::kOk) {
      warnings.push_back(absl::StrCat(path, ".successCodes[", i,
                                      "]: OK is always a success; listing it has no effect"));
    }
  }
  const pb::ThreeStateBreakerPolicy& t = p.three_state();
  if (t.has_max_open_duration() && t.has_open_duration_multiplier() &&
      t.open_duration_multiplier() == 1.0) {
    warnings.push_back(absl::StrCat(path,
                                    ".threeState.maxOpenDuration: no effect with "
                                    "openDurationMultiplier 1 (the open period stays "
                                    "openDuration)"));
  }
}

void PolicyLint::BulkheadFindings(const pb::BulkheadPolicy& p, const Bulkhead::Options& o,
                                  const std::string& path, std::vector<std::string>& warnings) {
  if (o.max_queue > 0 && o.max_wait == absl::ZeroDuration()) {
    warnings.push_back(absl::StrCat(path, ".maxQueue: ", o.max_queue, " has no effect with ",
                                    path,
                                    ".maxWait 0s (a call that finds no slot fails at once)"));
  } else if (o.max_queue == 0 && p.has_max_wait() && o.max_wait > absl::ZeroDuration()) {
    warnings.push_back(absl::StrCat(path, ".maxWait: ", absl::FormatDuration(o.max_wait),
                                    " has no effect with ", path, ".maxQueue 0 (no call waits)"));
  }
}

void PolicyLint::AdaptiveFindings(const pb::AdaptiveThrottle& p, const std::string& path,
                                  std::vector<std::string>& warnings) {
  // The other algorithm's fields: read by nothing.
  const bool aimd = p.algorithm() == "AIMD";
  std::vector<absl::string_view> unused;
  if (aimd) {
    if (p.has_baseline_interval()) unused.push_back("baselineInterval");
    if (p.has_baseline_samples()) unused.push_back("baselineSamples");
    if (p.has_tolerance()) unused.push_back("tolerance");
    if (p.has_smoothing()) unused.push_back("smoothing");
  } else {
    if (p.has_backoff_ratio()) unused.push_back("backoffRatio");
    if (p.has_timeout()) unused.push_back("timeout");
  }
  if (unused.empty()) return;
  warnings.push_back(absl::StrCat(path, ": ", absl::StrJoin(unused, ", "),
                                  unused.size() == 1 ? " is" : " are", " not used by algorithm ",
                                  aimd ? "AIMD" : "GRADIENT", ", ignored"));
}

void PolicyLint::FaultFindings(const pb::FaultInjectionPolicy& p, const FaultInjectionSettings& f,
                               const std::string& path, std::vector<std::string>& warnings) {
  if (p.has_delay() && f.delay == absl::ZeroDuration()) {
    warnings.push_back(absl::StrCat(path, ".delay: 0s adds no latency"));
  } else if (!p.has_delay() && p.abort_code().empty()) {
    warnings.push_back(
        absl::StrCat(path, ": sets neither delay nor abortCode, so it injects nothing"));
  }
}

void PolicyLint::DelayFindings(const MethodPolicy& policy, const std::string& path,
                               std::vector<std::string>& warnings) {
  const FaultInjectionSettings& f = *policy.fault_injection;
  if (!policy.throttle.has_value() || f.delay_fraction <= 0 || f.delay < kLongHeldDelay) return;
  const ThrottleSettings& t = *policy.throttle;
  if (t.max_concurrency == 0 && !t.adaptive.has_value()) return;
  warnings.push_back(absl::StrCat(
      path, ".faultInjection.delay: ", absl::FormatDuration(f.delay), " in front of ", path,
      ".throttle's concurrency limit: on the callback API a caller that cancels during the "
      "delay keeps its slot until the delay ends (gRPC 1.51 reports no cancellation before the "
      "handler starts; the caller's deadline does end it); use a delay under ",
      absl::FormatDuration(kLongHeldDelay), " or give callers deadlines"));
}

}  // namespace resilience

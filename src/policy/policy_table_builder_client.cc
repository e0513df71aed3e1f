// File: src/policy/policy_table_builder_client.cc
//
// PolicyTableBuilder: the client's settings of an entry, retryPolicy, breaker and
// bulkhead.

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "src/limits/bulkhead.h"
#include "src/policy/enforcement_setting.h"
#include "src/policy/json_text.h"
#include "src/policy/policy_table_builder.h"
#include "src/policy/status_codes.h"
#include "src/retry/backoff.h"

namespace resilience {
namespace {

namespace pb = ::resilience::v1;

using internal::Printable;

}  // namespace

absl::StatusOr<RetrySettings> PolicyTableBuilder::Retry(const pb::RetryPolicy& p,
                                                        const std::string& path) {
  RetrySettings r;
  if (p.has_max_attempts()) {
    if (p.max_attempts() < 1 || p.max_attempts() > 10) {
      return Invalid(path + ".maxAttempts", "in [1, 10]", p.max_attempts());
    }
    r.max_attempts = p.max_attempts();
  }
  // The backoff: the set fields over Backoff::Options' defaults, checked
  // by Backoff itself.
  if (p.has_initial_backoff()) r.initial_backoff = ToDuration(p.initial_backoff());
  if (p.has_max_backoff()) r.max_backoff = ToDuration(p.max_backoff());
  if (p.has_backoff_multiplier()) r.backoff_multiplier = p.backoff_multiplier();
  if (p.has_jitter()) r.jitter = p.jitter();
  r.full_jitter = p.full_jitter();
  if (absl::Status s = AtPath(Backoff::Validate(r.backoff()), "backoff.", path); !s.ok()) {
    return s;
  }
  if (p.retryable_status_codes_size() > 0) {
    if (absl::Status s = Assign(
            ReadErrorCodes(path + ".retryableStatusCodes", p.retryable_status_codes()),
            r.retryable_status_codes);
        !s.ok()) {
      return s;
    }
  }
  absl::Duration per_attempt_timeout;
  // perAttemptRecvTimeout is not applied, but checked like every duration
  // (gRPC wants it > 0 too).
  if (absl::Status s = ReadDurations(
          path, {{"perAttemptTimeout", p.has_per_attempt_timeout(), p.per_attempt_timeout(),
                  Positive(kMaxPolicyCallTime), &per_attempt_timeout},
                 {"perAttemptRecvTimeout", p.has_per_attempt_recv_timeout(),
                  p.per_attempt_recv_timeout(), Positive(kMaxPolicyCallTime), nullptr}});
      !s.ok()) {
    return s;
  }
  if (p.has_per_attempt_timeout()) r.per_attempt_timeout = per_attempt_timeout;
  if (p.has_per_attempt_recv_timeout()) {
    NotApplied(path + ".perAttemptRecvTimeout",
               "the limit of each attempt is retryPolicy.perAttemptTimeout");
  }

  return r;
}

absl::Status PolicyTableBuilder::Breaker(const pb::BreakerPolicy& p, const std::string& path,
                                         BreakerSettings& out) {
  if (p.has_sre() == p.has_three_state()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": must set exactly one of \"sre\" and \"threeState\", got ",
                     p.has_sre() ? "both" : "neither"));
  }
  if (p.has_sre()) {
    out.kind = BreakerKind::kSre;
    if (absl::Status s = Sre(p.sre(), path + ".sre", out.sre); !s.ok()) return s;
  } else {
    out.kind = BreakerKind::kThreeState;
    if (absl::Status s = ThreeState(p.three_state(), path + ".threeState", out.three_state);
        !s.ok()) {
      return s;
    }
  }
  absl::StatusOr<EnforcementMode> enforcement = ReadEnforcement(p.enforcement(), path);
  if (!enforcement.ok()) return enforcement.status();
  out.enforcement = *enforcement;
  if (absl::Status s = ReadOutcomeCodes(p, path, out); !s.ok()) return s;
  if (p.has_caller_deadline()) {
    if (p.caller_deadline() == "FAILURE") {
      out.caller_deadline = CallerDeadline::kFailure;
    } else if (p.caller_deadline() == "NEUTRAL") {
      out.caller_deadline = CallerDeadline::kNeutral;
    } else {
      return Invalid(path + ".callerDeadline", "\"FAILURE\" or \"NEUTRAL\"",
                     absl::StrCat("\"", Printable(p.caller_deadline(), 64), "\""));
    }
  }
  if (p.has_endpoints()) {
    const pb::EndpointBreakerPolicy& e = p.endpoints();
    const std::string at = path + ".endpoints";
    if (e.has_enabled()) out.per_endpoint = e.enabled();
    if (e.has_failing_share()) out.endpoints.failing_share = e.failing_share();
    if (e.has_max_endpoints()) out.endpoints.max_endpoints = e.max_endpoints();
    if (absl::Status s = ReadDurations(
            at, {{"recent", e.has_recent(), e.recent(),
                  DurationRange{absl::Milliseconds(1), /*low_open=*/false, kMaxPolicyOpenTime},
                  &out.endpoints.recent}});
        !s.ok()) {
      return s;
    }
    if (absl::Status s = EndpointBreakers::Validate(out.endpoints); !s.ok()) {
      return AtPath(s, "", at);
    }
  }
  if (p.has_recovery_probe()) return RecoveryProbeSettings(p.recovery_probe(), path, out);
  return absl::OkStatus();
}

// breaker.failureCodes and successCodes into the breaker's classifier: error
// codes only as failures, none in both lists.
absl::Status PolicyTableBuilder::ReadOutcomeCodes(const pb::BreakerPolicy& p,
                                                  const std::string& path, BreakerSettings& out) {
  bool listed_as_failure[kNumStatusCodes] = {};
  absl::StatusOr<std::vector<absl::StatusCode>> failures =
      ReadErrorCodes(path + ".failureCodes", p.failure_codes());
  if (!failures.ok()) return failures.status();
  for (absl::StatusCode code : *failures) {
    // Every successful call would count against the backend: not OK.
    listed_as_failure[static_cast<int>(code)] = true;
    out.classifier.Set(code, Outcome::kFailure);
  }
  for (int i = 0; i < p.success_codes_size(); ++i) {
    const std::string code_path = absl::StrCat(path, ".successCodes[", i, "]");
    absl::StatusOr<absl::StatusCode> code = ReadStatusCode(code_path, p.success_codes(i));
    if (!code.ok()) return code.status();
    if (listed_as_failure[static_cast<int>(*code)]) {
      return absl::InvalidArgumentError(absl::StrCat(code_path, ": ",
                                                     Printable(p.success_codes(i), 64),
                                                     " is also in ", path, ".failureCodes"));
    }
    out.classifier.Set(*code, Outcome::kSuccess);
  }
  return absl::OkStatus();
}

// breaker.recoveryProbe: the health service asked, the probes' spacing and
// deadline (RecoveryProbe::Options). Three-state breakers only: the SRE
// breaker has no open state for a probe to end.
absl::Status PolicyTableBuilder::RecoveryProbeSettings(const pb::RecoveryProbePolicy& p,
                                                       const std::string& breaker_path,
                                                       BreakerSettings& out) {
  const std::string path = breaker_path + ".recoveryProbe";
  if (out.kind != BreakerKind::kThreeState) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": needs ", breaker_path,
        ".threeState (the SRE breaker has no open state for a health probe to end), got sre"));
  }
  resilience::RecoveryProbe::Options o;
  if (p.has_health()) {
    const std::string& health = p.health();
    const bool printable = std::all_of(health.begin(), health.end(), [](char c) {
      return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
    });
    if (health.size() > 200 || !printable) {
      return Invalid(path + ".health", "a service name of at most 200 printable ASCII bytes",
                     absl::StrCat("\"", Printable(health, 64), "\""));
    }
    o.health_service = health;
  }
  if (absl::Status s = ReadDurations(
          path, {{"interval", p.has_interval(), p.interval(), kWindowRange, &o.interval},
                 {"timeout", p.has_timeout(), p.timeout(), kWindowRange, &o.timeout}});
      !s.ok()) {
    return s;
  }
  if (absl::Status s = resilience::RecoveryProbe::Validate(o); !s.ok()) return AtPath(s, "recovery_probe", path);
  out.recovery_probe = o;
  return absl::OkStatus();
}

absl::Status PolicyTableBuilder::Sre(const pb::SreBreakerPolicy& p, const std::string& path,
                                     SreBreaker::Options& o) {
  if (absl::Status s = ReadDurations(
          path, {{"window", p.has_window(), p.window(), kWindowRange, &o.window},
                 {"forcePassInterval", p.has_force_pass_interval(), p.force_pass_interval(),
                  NonNegative(kMaxPolicyInterval), &o.force_pass_interval},
                 {"slowCallThreshold", p.has_slow_call_threshold(), p.slow_call_threshold(),
                  NonNegative(kMaxPolicyCallTime), &o.slow_call_threshold}});
      !s.ok()) {
    return s;
  }
  if (p.has_k()) o.k = p.k();
  if (p.has_protection()) o.protection = p.protection();
  if (p.has_buckets()) o.buckets = p.buckets();
  if (p.has_count_local_rejections()) o.count_local_rejections = p.count_local_rejections();
  if (p.has_recovery_acceleration()) o.recovery_acceleration = p.recovery_acceleration();
  if (p.has_max_drop_probability()) o.max_drop_probability = p.max_drop_probability();
  // The window must hold at least one refresh interval.
  o.refresh_interval = std::min(o.refresh_interval, o.window / 2);
  return AtPath(SreBreaker::Validate(o), "sre.", path);
}

absl::Status PolicyTableBuilder::ThreeState(const pb::ThreeStateBreakerPolicy& p,
                                            const std::string& path,
                                            ThreeStateBreaker::Options& o) {
  if (absl::Status s = ReadDurations(
          path, {{"slowCallThreshold", p.has_slow_call_threshold(), p.slow_call_threshold(),
                  NonNegative(kMaxPolicyCallTime), &o.slow_call_threshold},
                 {"window", p.has_window(), p.window(), kWindowRange, &o.window},
                 {"openDuration", p.has_open_duration(), p.open_duration(),
                  Positive(kMaxPolicyOpenTime), &o.open_duration},
                 {"maxOpenDuration", p.has_max_open_duration(), p.max_open_duration(),
                  Positive(kMaxPolicyOpenTime), &o.max_open_duration},
                 {"probeInterval", p.has_probe_interval(), p.probe_interval(),
                  NonNegative(kMaxPolicyInterval), &o.probe_interval},
                 {"halfOpenMaxWait", p.has_half_open_max_wait(), p.half_open_max_wait(),
                  Positive(kMaxPolicyOpenTime), &o.half_open_max_wait},
                 {"probeOverdue", p.has_probe_overdue(), p.probe_overdue(),
                  NonNegative(kMaxPolicyInterval), &o.probe_overdue}});
      !s.ok()) {
    return s;
  }
  if (p.has_failure_rate_threshold()) o.failure_rate_threshold = p.failure_rate_threshold();
  if (p.has_min_requests()) o.min_requests = p.min_requests();
  if (p.has_consecutive_failures()) o.consecutive_failures = p.consecutive_failures();
  if (p.has_slow_call_rate_threshold()) o.slow_call_rate_threshold = p.slow_call_rate_threshold();
  if (p.has_buckets()) o.buckets = p.buckets();
  if (p.has_open_duration_multiplier()) o.open_duration_multiplier = p.open_duration_multiplier();
  if (!p.has_max_open_duration()) {
    o.max_open_duration = std::max(o.max_open_duration, o.open_duration);
  }
  if (p.has_half_open_max_probes()) o.half_open_max_probes = p.half_open_max_probes();
  if (p.has_half_open_successes_to_close()) {
    o.half_open_successes_to_close = p.half_open_successes_to_close();
  }
  if (!p.mode().empty()) {
    const std::string mode = absl::AsciiStrToLower(p.mode());
    if (mode == "normal") {
      o.mode = BreakerMode::kNormal;
    } else if (mode == "force_open") {
      o.mode = BreakerMode::kForceOpen;
    } else if (mode == "force_closed") {
      o.mode = BreakerMode::kForceClosed;
    } else if (mode == "disabled") {
      o.mode = BreakerMode::kDisabled;
    } else if (mode == "metrics_only") {
      o.mode = BreakerMode::kMetricsOnly;
    } else {
      return Invalid(path + ".mode",
                     "one of normal, force_open, force_closed, disabled, metrics_only",
                     absl::StrCat("\"", Printable(p.mode(), 64), "\""));
    }
  }
  return AtPath(ThreeStateBreaker::Validate(o), "three_state.", path);
}

absl::StatusOr<Bulkhead::Options> PolicyTableBuilder::ReadBulkhead(const pb::BulkheadPolicy& p,
                                                                    const std::string& path) {
  // Slots and queue places are counted in an int; a million calls in flight
  // on one channel's method is past any real use.
  constexpr int kMaxCalls = 1000000;
  Bulkhead::Options o;
  if (!p.has_max_concurrency()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".maxConcurrency: required (the calls in flight at once, >= 1)"));
  }
  if (p.max_concurrency() < 1 || p.max_concurrency() > kMaxCalls) {
    return Invalid(path + ".maxConcurrency", "in [1, 1000000]", p.max_concurrency());
  }
  o.max_concurrency = p.max_concurrency();
  if (p.has_max_queue()) {
    if (p.max_queue() < 0 || p.max_queue() > kMaxCalls) {
      return Invalid(path + ".maxQueue", "in [0, 1000000]", p.max_queue());
    }
    o.max_queue = p.max_queue();
  }
  if (absl::Status s = ReadDurations(path, {{"maxWait", p.has_max_wait(), p.max_wait(),
                                             NonNegative(kMaxPolicyInterval), &o.max_wait}});
      !s.ok()) {
    return s;
  }
  if (absl::Status s = AtPath(Bulkhead::Validate(o), "", path); !s.ok()) return s;
  absl::StatusOr<EnforcementMode> enforcement = ReadEnforcement(p.enforcement(), path);
  if (!enforcement.ok()) return enforcement.status();
  o.enforcement = *enforcement;
  return o;
}

}  // namespace resilience

#include "src/policy/policy_set.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"
#include "resilience/v1/policy.pb.h"
#include "src/breaker/token_bucket.h"
#include "src/policy/status_codes.h"

namespace resilience {
namespace {

namespace pb = ::resilience::v1;

absl::Duration ToDuration(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

// "max_drop_probability" -> "maxDropProbability" wherever a lower-case letter
// or digit, '_' and a lower-case letter meet; other text is left alone.
std::string SnakeToCamel(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const bool joins = text[i] == '_' && i > 0 && i + 1 < text.size() &&
                       (absl::ascii_islower(text[i - 1]) || absl::ascii_isdigit(text[i - 1])) &&
                       absl::ascii_islower(text[i + 1]);
    if (joins) {
      out.push_back(absl::ascii_toupper(text[++i]));
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

// protobuf reports paths with proto field names ("method_config[0].retry_policy");
// users wrote JSON names ("methodConfig[0].retryPolicy"). Converts the path,
// which protobuf puts in parentheses at the start of its message.
std::string JsonNamesInParseError(absl::string_view message) {
  const size_t close = message.find(')');
  if (message.empty() || message[0] != '(' || close == absl::string_view::npos) {
    return std::string(message);
  }
  return absl::StrCat(SnakeToCamel(message.substr(1, close - 1)), ":",
                      absl::StripPrefix(message.substr(close + 1), ":"));
}

}  // namespace

// Turns a parsed PolicyFile into a PolicySet, applying defaults and checking
// every rule; the first error wins. Paths in messages use JSON names.
class PolicySetBuilder {
 public:
  absl::StatusOr<PolicySet> Build(const pb::PolicyFile& file) {
    if (file.load_balancing_policy().size() > 0) Warn("loadBalancingPolicy");
    if (file.load_balancing_config_size() > 0) Warn("loadBalancingConfig");
    if (file.has_health_check_config()) Warn("healthCheckConfig");
    for (int i = 0; i < file.method_config_size(); ++i) {
      if (absl::Status s = AddEntry(file.method_config(i), absl::StrCat("methodConfig[", i, "]"));
          !s.ok()) {
        return s;
      }
    }
    if (file.has_retry_throttling()) {
      if (absl::Status s = RetryBudget(file.retry_throttling()); !s.ok()) return s;
    }
    return std::move(set_);
  }

 private:
  void Warn(absl::string_view path) {
    set_.warnings_.push_back(absl::StrCat(
        path, ": accepted for compatibility with gRPC service configs, not applied"));
  }

  template <typename T>
  static absl::Status Invalid(absl::string_view path, absl::string_view rule, const T& value) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": must be ", rule, ", got ", value));
  }

  static std::string Show(const google::protobuf::Duration& d) {
    return absl::FormatDuration(ToDuration(d));
  }

  // A fraction in [0, 1]; NaN fails.
  static absl::Status CheckFraction(absl::string_view path, double value) {
    if (!(value >= 0.0 && value <= 1.0)) return Invalid(path, "in [0, 1]", value);
    return absl::OkStatus();
  }

  // A duration in [low, high], or in (low, high] when `low_open`. Every
  // duration of the file passes here with an upper bound (kMaxPolicy*), so
  // no later arithmetic on it can overflow; the message shows the range.
  static absl::Status CheckDuration(absl::string_view path, const google::protobuf::Duration& d,
                                    absl::Duration low, bool low_open, absl::Duration high) {
    const absl::Duration value = ToDuration(d);
    const bool low_ok = low_open ? value > low : value >= low;
    if (!low_ok || value > high) {
      return Invalid(path,
                     absl::StrCat("in ", low_open ? "(" : "[", absl::FormatDuration(low), ", ",
                                  absl::FormatDuration(high), "]"),
                     Show(d));
    }
    return absl::OkStatus();
  }

  // In (0, high].
  static absl::Status CheckPositive(absl::string_view path, const google::protobuf::Duration& d,
                                    absl::Duration high) {
    return CheckDuration(path, d, absl::ZeroDuration(), /*low_open=*/true, high);
  }

  // In [0, high].
  static absl::Status CheckNonNegative(absl::string_view path,
                                       const google::protobuf::Duration& d, absl::Duration high) {
    return CheckDuration(path, d, absl::ZeroDuration(), /*low_open=*/false, high);
  }

  // A rolling window: in [1ms, 1h] (RollingWindow also wants whole
  // milliseconds that divide into the buckets; its Validate() says so).
  static absl::Status CheckWindow(absl::string_view path, const google::protobuf::Duration& d) {
    return CheckDuration(path, d, absl::Milliseconds(1), /*low_open=*/false, kMaxPolicyInterval);
  }

  static absl::StatusOr<absl::StatusCode> Code(absl::string_view path, absl::string_view name) {
    absl::StatusOr<absl::StatusCode> code = ParseStatusCodeName(name);
    if (!code.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", code.status().message()));
    return code;
  }

  absl::Status AddEntry(const pb::MethodConfig& entry, const std::string& path) {
    MethodPolicy policy;
    policy.source = path;
    if (entry.name_size() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ".name: must list at least one name ({\"service\": ...} or {} for the default)"));
    }
    if (entry.has_timeout()) {
      if (absl::Status s = CheckPositive(path + ".timeout", entry.timeout(), kMaxPolicyCallTime);
          !s.ok()) {
        return s;
      }
      policy.timeout = ToDuration(entry.timeout());
    }
    if (entry.has_deadline()) {
      if (absl::Status s =
              CheckPositive(path + ".deadline", entry.deadline(), kMaxPolicyCallTime);
          !s.ok()) {
        return s;
      }
      policy.deadline = ToDuration(entry.deadline());
    }
    if (entry.has_retry_policy()) {
      absl::StatusOr<RetrySettings> retry = Retry(entry.retry_policy(), path + ".retryPolicy");
      if (!retry.ok()) return retry.status();
      policy.retry = *std::move(retry);
    }
    if (entry.has_breaker()) {
      if (absl::Status s = Breaker(entry.breaker(), path + ".breaker", policy.breaker); !s.ok()) {
        return s;
      }
    }
    if (entry.has_throttle()) {
      absl::StatusOr<ThrottleSettings> t = Throttle(entry.throttle(), path + ".throttle");
      if (!t.ok()) return t.status();
      policy.throttle = *t;
    }
    if (entry.has_fault_injection()) {
      absl::StatusOr<FaultInjectionSettings> f =
          FaultInjection(entry.fault_injection(), path + ".faultInjection");
      if (!f.ok()) return f.status();
      policy.fault_injection = *f;
    }
    if (entry.has_wait_for_ready()) Warn(path + ".waitForReady");
    if (entry.has_max_request_message_bytes()) Warn(path + ".maxRequestMessageBytes");
    if (entry.has_max_response_message_bytes()) Warn(path + ".maxResponseMessageBytes");
    if (entry.has_hedging_policy()) Warn(path + ".hedgingPolicy");

    const size_t index = set_.policies_.size();
    set_.policies_.push_back(std::move(policy));
    for (int n = 0; n < entry.name_size(); ++n) {
      const pb::MethodName& name = entry.name(n);
      const std::string name_path = absl::StrCat(path, ".name[", n, "]");
      if (name.service().empty() && !name.method().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            name_path, ": method \"", name.method(), "\" needs a service"));
      }
      if (name.service().find('/') != std::string::npos ||
          name.method().find('/') != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat(
            name_path, ": service and method must not contain '/', got \"", name.service(),
            "\", \"", name.method(), "\""));
      }
      if (name.service().empty()) {
        if (set_.default_index_.has_value()) {
          return absl::InvalidArgumentError(absl::StrCat(
              name_path, ": a second default ({}); the first is in ", default_path_));
        }
        set_.default_index_ = index;
        default_path_ = name_path;
        continue;
      }
      const std::string key = absl::StrCat(name.service(), "/", name.method());
      auto [it, inserted] = set_.by_name_.emplace(key, index);
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat(
            name_path, ": ", name.method().empty() ? "service " : "method ", key,
            " is named twice; first in ", name_paths_[key]));
      }
      name_paths_[key] = name_path;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<RetrySettings> Retry(const pb::RetryPolicy& p, const std::string& path) {
    RetrySettings r;
    if (p.has_max_attempts()) {
      if (p.max_attempts() < 1 || p.max_attempts() > 10) {
        return Invalid(path + ".maxAttempts", "in [1, 10]", p.max_attempts());
      }
      r.max_attempts = p.max_attempts();
    }
    if (p.has_initial_backoff()) {
      if (absl::Status s =
              CheckPositive(path + ".initialBackoff", p.initial_backoff(), kMaxPolicyInterval);
          !s.ok()) {
        return s;
      }
      r.initial_backoff = ToDuration(p.initial_backoff());
    }
    if (p.has_max_backoff()) {
      if (absl::Status s =
              CheckPositive(path + ".maxBackoff", p.max_backoff(), kMaxPolicyInterval);
          !s.ok()) {
        return s;
      }
      r.max_backoff = ToDuration(p.max_backoff());
    }
    if (r.max_backoff < r.initial_backoff) {
      return Invalid(path + ".maxBackoff",
                     absl::StrCat(">= initialBackoff (", absl::FormatDuration(r.initial_backoff), ")"),
                     absl::FormatDuration(r.max_backoff));
    }
    if (p.has_backoff_multiplier()) {
      if (!(p.backoff_multiplier() >= 1.0) || !std::isfinite(p.backoff_multiplier())) {
        return Invalid(path + ".backoffMultiplier", ">= 1", p.backoff_multiplier());
      }
      r.backoff_multiplier = p.backoff_multiplier();
    }
    if (p.has_jitter()) {
      if (absl::Status s = CheckFraction(path + ".jitter", p.jitter()); !s.ok()) return s;
      r.jitter = p.jitter();
    }
    r.full_jitter = p.full_jitter();
    if (p.retryable_status_codes_size() > 0) {
      r.retryable_status_codes.clear();
      for (int i = 0; i < p.retryable_status_codes_size(); ++i) {
        const std::string code_path = absl::StrCat(path, ".retryableStatusCodes[", i, "]");
        absl::StatusOr<absl::StatusCode> code = Code(code_path, p.retryable_status_codes(i));
        if (!code.ok()) return code.status();
        if (*code == absl::StatusCode::kOk) return Invalid(code_path, "an error code", "OK");
        r.retryable_status_codes.push_back(*code);
      }
    }
    if (p.has_per_attempt_recv_timeout()) {
      // Not applied, but checked like every duration (gRPC wants it > 0 too).
      if (absl::Status s = CheckPositive(path + ".perAttemptRecvTimeout",
                                         p.per_attempt_recv_timeout(), kMaxPolicyCallTime);
          !s.ok()) {
        return s;
      }
      Warn(path + ".perAttemptRecvTimeout");
    }
    return r;
  }

  absl::Status Breaker(const pb::BreakerPolicy& p, const std::string& path, BreakerSettings& out) {
    if (p.has_sre() == p.has_three_state()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": must set exactly one of \"sre\" and \"threeState\", got ",
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
    bool listed_as_failure[kNumStatusCodes] = {};
    for (int i = 0; i < p.failure_codes_size(); ++i) {
      absl::StatusOr<absl::StatusCode> code =
          Code(absl::StrCat(path, ".failureCodes[", i, "]"), p.failure_codes(i));
      if (!code.ok()) return code.status();
      listed_as_failure[static_cast<int>(*code)] = true;
      out.classifier.Set(*code, Outcome::kFailure);
    }
    for (int i = 0; i < p.success_codes_size(); ++i) {
      const std::string code_path = absl::StrCat(path, ".successCodes[", i, "]");
      absl::StatusOr<absl::StatusCode> code = Code(code_path, p.success_codes(i));
      if (!code.ok()) return code.status();
      if (listed_as_failure[static_cast<int>(*code)]) {
        return absl::InvalidArgumentError(absl::StrCat(
            code_path, ": ", p.success_codes(i), " is also in ", path, ".failureCodes"));
      }
      out.classifier.Set(*code, Outcome::kSuccess);
    }
    return absl::OkStatus();
  }

  // Copies the set fields onto `o` (which holds the defaults), then lets the
  // breaker's own validation speak, with the JSON path in front.
  absl::Status Sre(const pb::SreBreakerPolicy& p, const std::string& path,
                   SreBreaker::Options& o) {
    if (p.has_window()) {
      if (absl::Status s = CheckWindow(path + ".window", p.window()); !s.ok()) return s;
    }
    if (p.has_force_pass_interval()) {
      if (absl::Status s = CheckNonNegative(path + ".forcePassInterval",
                                            p.force_pass_interval(), kMaxPolicyInterval);
          !s.ok()) {
        return s;
      }
    }
    if (p.has_slow_call_threshold()) {
      if (absl::Status s = CheckNonNegative(path + ".slowCallThreshold", p.slow_call_threshold(),
                                            kMaxPolicyCallTime);
          !s.ok()) {
        return s;
      }
    }
    if (p.has_k()) o.k = p.k();
    if (p.has_protection()) o.protection = p.protection();
    if (p.has_window()) o.window = ToDuration(p.window());
    if (p.has_buckets()) o.buckets = p.buckets();
    if (p.has_count_local_rejections()) o.count_local_rejections = p.count_local_rejections();
    if (p.has_force_pass_interval()) o.force_pass_interval = ToDuration(p.force_pass_interval());
    if (p.has_recovery_acceleration()) o.recovery_acceleration = p.recovery_acceleration();
    if (p.has_max_drop_probability()) o.max_drop_probability = p.max_drop_probability();
    if (p.has_slow_call_threshold()) o.slow_call_threshold = ToDuration(p.slow_call_threshold());
    // The window must hold at least one refresh interval.
    o.refresh_interval = std::min(o.refresh_interval, o.window / 2);
    return Rename(SreBreaker::Validate(o), "sre.", path);
  }

  absl::Status ThreeState(const pb::ThreeStateBreakerPolicy& p, const std::string& path,
                          ThreeStateBreaker::Options& o) {
    if (absl::Status s = ThreeStateDurations(p, path); !s.ok()) return s;
    if (p.has_failure_rate_threshold()) o.failure_rate_threshold = p.failure_rate_threshold();
    if (p.has_min_requests()) o.min_requests = p.min_requests();
    if (p.has_consecutive_failures()) o.consecutive_failures = p.consecutive_failures();
    if (p.has_slow_call_threshold()) o.slow_call_threshold = ToDuration(p.slow_call_threshold());
    if (p.has_slow_call_rate_threshold()) o.slow_call_rate_threshold = p.slow_call_rate_threshold();
    if (p.has_window()) o.window = ToDuration(p.window());
    if (p.has_buckets()) o.buckets = p.buckets();
    if (p.has_open_duration()) o.open_duration = ToDuration(p.open_duration());
    if (p.has_open_duration_multiplier()) o.open_duration_multiplier = p.open_duration_multiplier();
    if (p.has_max_open_duration()) {
      o.max_open_duration = ToDuration(p.max_open_duration());
    } else {
      o.max_open_duration = std::max(o.max_open_duration, o.open_duration);
    }
    if (p.has_half_open_max_probes()) o.half_open_max_probes = p.half_open_max_probes();
    if (p.has_half_open_successes_to_close()) {
      o.half_open_successes_to_close = p.half_open_successes_to_close();
    }
    if (p.has_probe_interval()) o.probe_interval = ToDuration(p.probe_interval());
    if (p.has_half_open_max_wait()) o.half_open_max_wait = ToDuration(p.half_open_max_wait());
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
                       absl::StrCat("\"", p.mode(), "\""));
      }
    }
    return Rename(ThreeStateBreaker::Validate(o), "three_state.", path);
  }

  // The bounds of the three-state breaker's durations (its Validate() checks
  // how they relate to each other).
  static absl::Status ThreeStateDurations(const pb::ThreeStateBreakerPolicy& p,
                                          const std::string& path) {
    if (p.has_slow_call_threshold()) {
      if (absl::Status s = CheckNonNegative(path + ".slowCallThreshold", p.slow_call_threshold(),
                                            kMaxPolicyCallTime);
          !s.ok()) {
        return s;
      }
    }
    if (p.has_window()) {
      if (absl::Status s = CheckWindow(path + ".window", p.window()); !s.ok()) return s;
    }
    if (p.has_open_duration()) {
      if (absl::Status s =
              CheckPositive(path + ".openDuration", p.open_duration(), kMaxPolicyOpenTime);
          !s.ok()) {
        return s;
      }
    }
    if (p.has_max_open_duration()) {
      if (absl::Status s = CheckPositive(path + ".maxOpenDuration", p.max_open_duration(),
                                         kMaxPolicyOpenTime);
          !s.ok()) {
        return s;
      }
    }
    if (p.has_probe_interval()) {
      if (absl::Status s =
              CheckNonNegative(path + ".probeInterval", p.probe_interval(), kMaxPolicyInterval);
          !s.ok()) {
        return s;
      }
    }
    if (p.has_half_open_max_wait()) {
      if (absl::Status s = CheckPositive(path + ".halfOpenMaxWait", p.half_open_max_wait(),
                                         kMaxPolicyOpenTime);
          !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }

  // The breakers name their fields "sre.max_drop_probability"; the file says
  // "methodConfig[0].breaker.sre.maxDropProbability". Rewrites the message's
  // field references to the file's paths and JSON names.
  static absl::Status Rename(const absl::Status& s, absl::string_view prefix,
                             const std::string& path) {
    if (s.ok()) return s;
    const std::string message =
        absl::StrReplaceAll(s.message(), {{prefix, absl::StrCat(path, ".")}});
    return absl::InvalidArgumentError(SnakeToCamel(message));
  }

  absl::StatusOr<ThrottleSettings> Throttle(const pb::ThrottlePolicy& p, const std::string& path) {
    ThrottleSettings t;
    if (!p.has_max_concurrency() && !p.has_rate_per_second()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": set maxConcurrency, ratePerSecond or both"));
    }
    if (p.has_max_concurrency()) {
      if (p.max_concurrency() < 1) return Invalid(path + ".maxConcurrency", ">= 1", p.max_concurrency());
      t.max_concurrency = p.max_concurrency();
    }
    // The rate limit gets exactly the token bucket's bounds, so that
    // TokenBucket::Create() accepts whatever loads.
    if (p.has_rate_per_second()) {
      const double rate = p.rate_per_second();
      // Written so that NaN fails.
      if (!(rate >= TokenBucket::kMinRatePerSecond && rate <= TokenBucket::kMaxRatePerSecond)) {
        return Invalid(path + ".ratePerSecond", "in [1e-3, 1e9]", rate);
      }
      t.rate_per_second = rate;
      // One second's worth of calls, at least 1: always within MaxBurst().
      t.burst = static_cast<int>(std::max(1.0, std::floor(rate)));
    }
    if (p.has_burst()) {
      if (!p.has_rate_per_second()) {
        return absl::InvalidArgumentError(absl::StrCat(path, ".burst: needs ratePerSecond"));
      }
      if (p.burst() < 1 || p.burst() > TokenBucket::kMaxBurst) {
        return Invalid(path + ".burst", "in [1, 1e9]", p.burst());
      }
      const int64_t max_burst = TokenBucket::MaxBurst(t.rate_per_second);
      if (p.burst() > max_burst) {
        return Invalid(path + ".burst",
                       absl::StrCat("<= ", max_burst, " at ratePerSecond ", t.rate_per_second,
                                    " (an empty bucket must refill within 1e9s)"),
                       p.burst());
      }
      t.burst = p.burst();
    }
    if (t.rate_per_second > 0) {
      // Cannot fail after the checks above; kept so that a bound added to
      // the bucket alone still stops the file here, not at the first call.
      if (absl::Status s = TokenBucket::Validate(t.rate_per_second, t.burst); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
      }
    }
    if (p.has_min_pushback()) {
      if (absl::Status s =
              CheckPositive(path + ".minPushback", p.min_pushback(), kMaxPolicyInterval);
          !s.ok()) {
        return s;
      }
      t.min_pushback = ToDuration(p.min_pushback());
    }
    if (p.has_max_pushback()) {
      if (absl::Status s =
              CheckPositive(path + ".maxPushback", p.max_pushback(), kMaxPolicyInterval);
          !s.ok()) {
        return s;
      }
      t.max_pushback = ToDuration(p.max_pushback());
    }
    if (t.max_pushback < t.min_pushback) {
      return Invalid(path + ".maxPushback",
                     absl::StrCat(">= minPushback (", absl::FormatDuration(t.min_pushback), ")"),
                     absl::FormatDuration(t.max_pushback));
    }
    return t;
  }

  absl::StatusOr<FaultInjectionSettings> FaultInjection(const pb::FaultInjectionPolicy& p,
                                                        const std::string& path) {
    FaultInjectionSettings f;
    if (p.has_delay()) {
      if (absl::Status s = CheckNonNegative(path + ".delay", p.delay(), kMaxPolicyInterval);
          !s.ok()) {
        return s;
      }
      f.delay = ToDuration(p.delay());
      f.delay_fraction = 1.0;
    }
    if (p.has_delay_fraction()) {
      if (!p.has_delay()) {
        return absl::InvalidArgumentError(absl::StrCat(path, ".delayFraction: needs delay"));
      }
      if (absl::Status s = CheckFraction(path + ".delayFraction", p.delay_fraction()); !s.ok()) {
        return s;
      }
      f.delay_fraction = p.delay_fraction();
    }
    if (!p.abort_code().empty()) {
      absl::StatusOr<absl::StatusCode> code = Code(path + ".abortCode", p.abort_code());
      if (!code.ok()) return code.status();
      if (*code == absl::StatusCode::kOk) return Invalid(path + ".abortCode", "an error code", "OK");
      f.abort_code = *code;
      f.abort_fraction = 1.0;
    }
    if (p.has_abort_fraction()) {
      if (p.abort_code().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(path, ".abortFraction: needs abortCode"));
      }
      if (absl::Status s = CheckFraction(path + ".abortFraction", p.abort_fraction()); !s.ok()) {
        return s;
      }
      f.abort_fraction = p.abort_fraction();
    }
    if (p.has_seed()) f.seed = p.seed();
    return f;
  }

  absl::Status RetryBudget(const pb::RetryThrottling& p) {
    const std::string path = "retryThrottling";
    if (p.has_max_tokens()) {
      if (p.max_tokens() < 1 || p.max_tokens() > 1000) {
        return Invalid(path + ".maxTokens", "in [1, 1000]", p.max_tokens());
      }
      set_.retry_budget_.max_tokens = p.max_tokens();
    }
    if (p.has_token_ratio()) {
      if (!(p.token_ratio() > 0.0 && p.token_ratio() <= 1.0)) {
        return Invalid(path + ".tokenRatio", "in (0, 1]", p.token_ratio());
      }
      set_.retry_budget_.token_ratio = p.token_ratio();
    }
    return absl::OkStatus();
  }

  PolicySet set_;
  std::string default_path_;
  absl::flat_hash_map<std::string, std::string> name_paths_;  // name -> where
};

namespace {

// The offset of the first byte of `text` that does not start a well-formed
// UTF-8 sequence (by lead byte and continuation bytes), or npos.
size_t FirstInvalidUtf8(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t length;
    if (c < 0x80) {
      length = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (size_t k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return i;
    }
    i += length;
  }
  return absl::string_view::npos;
}

// "line L, column C" of byte `offset` (both from 1).
std::string Position(absl::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return absl::StrCat("line ", line, ", column ", column);
}

// One line out of the JSON parser's error: its first line, where it is (the
// parser shows the input from the error on, which locates it), and no raw
// input bytes.
std::string ParseErrorLine(absl::string_view json, absl::string_view message) {
  const size_t newline = message.find('\n');
  std::string line(message.substr(0, newline));
  if (newline != absl::string_view::npos) {
    absl::string_view rest = message.substr(newline + 1);
    const size_t caret = rest.rfind('\n');
    const absl::string_view shown = caret == absl::string_view::npos ? rest : rest.substr(0, caret);
    if (!shown.empty() && absl::EndsWith(json, shown)) {
      absl::StrAppend(&line, " at ", Position(json, json.size() - shown.size()));
    }
  }
  // Printable ASCII stays; anything else is shown as \xNN.
  std::string shown;
  for (const unsigned char c : line) {
    if (c >= 0x20 && c < 0x7F) {
      shown.push_back(static_cast<char>(c));
    } else {
      absl::StrAppend(&shown, "\\x", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return shown;
}

}  // namespace

absl::StatusOr<PolicySet> PolicySet::FromJsonString(absl::string_view json) {
  if (absl::StripAsciiWhitespace(json).empty()) {
    return absl::InvalidArgumentError("policy JSON is empty (expected an object such as "
                                      "{\"methodConfig\": [...]})");
  }
  if (const size_t bad = FirstInvalidUtf8(json); bad != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy JSON: not valid UTF-8 at ", Position(json, bad), " (byte ", bad, ")"));
  }
  pb::PolicyFile file;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &file, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "policy JSON: ",
        ParseErrorLine(json, JsonNamesInParseError(parsed.message().as_string()))));
  }
  return PolicySetBuilder().Build(file);
}

absl::StatusOr<PolicySet> PolicySet::FromJsonFile(const std::string& path) {
  const std::string where = absl::StrCat("policy file \"", path, "\": ");
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    const std::string reason = absl::StrCat(where, "cannot open: ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(reason) : absl::InvalidArgumentError(reason);
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(where, "not a regular file"));
  }
  if (static_cast<size_t>(st.st_size) > kMaxFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(where, "is ", st.st_size,
                                                   " bytes, over the limit of ", kMaxFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "cannot open: ", std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(where, "read error"));
  absl::StatusOr<PolicySet> set = FromJsonString(text.str());
  if (!set.ok()) {
    return absl::Status(set.status().code(), absl::StrCat(where, set.status().message()));
  }
  return set;
}

PolicySet::Match PolicySet::Find(absl::string_view full_method) const {
  Match match;
  absl::string_view name = full_method;
  absl::ConsumePrefix(&name, "/");
  const size_t slash = name.rfind('/');
  if (slash != absl::string_view::npos && slash > 0) {
    if (auto it = by_name_.find(name); it != by_name_.end()) {          // "svc/method"
      match.policy = &policies_[it->second];
      match.scope = it->first;
      return match;
    }
    if (auto it = by_name_.find(name.substr(0, slash + 1)); it != by_name_.end()) {  // "svc/"
      match.policy = &policies_[it->second];
      match.scope = it->first;
      return match;
    }
  }
  if (default_index_.has_value()) match.policy = &policies_[*default_index_];
  return match;
}

}  // namespace resilience

#include "grpc_resilience/internal/policy/policy_set.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "resilience/v1/policy.pb.h"
#include "grpc_resilience/internal/limits/token_bucket.h"
#include "grpc_resilience/internal/policy/builtin_retry_config.h"
#include "grpc_resilience/internal/policy/method_catalog.h"
#include "grpc_resilience/internal/policy/status_codes.h"

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

// `text` with every byte that is not printable ASCII shown as \xNN, cut to
// `max_bytes` of input (then "..." follows): safe to put in a one-line
// message whatever the file held.
std::string Printable(absl::string_view text, size_t max_bytes) {
  std::string shown;
  for (size_t i = 0; i < text.size() && i < max_bytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      shown.push_back(static_cast<char>(c));
    } else {
      absl::StrAppend(&shown, "\\x", absl::Hex(c, absl::kZeroPad2));
    }
  }
  if (text.size() > max_bytes) shown += "...";
  return shown;
}

}  // namespace

// Turns a parsed PolicyFile into a PolicySet, applying defaults and checking
// every rule; the first error wins. Paths in messages use JSON names.
class PolicySetBuilder {
 public:
  absl::StatusOr<PolicySet> Build(const pb::PolicyFile& file) {
    if (file.load_balancing_policy().size() > 0) NotApplied("loadBalancingPolicy");
    if (file.load_balancing_config_size() > 0) NotApplied("loadBalancingConfig");
    if (file.has_health_check_config()) NotApplied("healthCheckConfig");
    for (int i = 0; i < file.method_config_size(); ++i) {
      if (absl::Status s = AddEntry(file.method_config(i), absl::StrCat("methodConfig[", i, "]"));
          !s.ok()) {
        return s;
      }
    }
    if (file.has_retry_throttling()) {
      if (absl::Status s = RetryBudget(file.retry_throttling()); !s.ok()) return s;
      if (!any_retries_) {
        Warn("retryThrottling: no methodConfig entry retries (a retryPolicy with maxAttempts "
             "above 1), so it has no effect");
      }
    }
    return std::move(set_);
  }

 private:
  // A setting that is accepted but ignored or has no effect; `message` starts
  // with its JSON path.
  void Warn(std::string message) { set_.warnings_.push_back(std::move(message)); }

  // A gRPC service config setting grpc-resilience does not apply.
  void NotApplied(absl::string_view path, absl::string_view hint = "") {
    Warn(absl::StrCat(path, ": accepted for compatibility with gRPC service configs, not applied",
                      hint.empty() ? "" : "; ", hint));
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
    if (!code.ok()) {
      // The message quotes the name: again with the name made printable
      // (the same name when it is), so that no raw byte reaches it.
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": ", ParseStatusCodeName(Printable(name, 64)).status().message()));
    }
    return code;
  }

  absl::Status AddEntry(const pb::MethodConfig& entry, const std::string& path) {
    MethodPolicy policy;
    policy.source = path;
    if (entry.name_size() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ".name: must list at least one name ({\"service\": ...} or {} for the default)"));
    }
    if (entry.has_hedging_policy() && entry.has_retry_policy()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ".hedgingPolicy: cannot be set together with ", path,
          ".retryPolicy (as in gRPC, an entry either retries or hedges)"));
    }
    if (entry.has_timeout()) {
      if (absl::Status s = CheckPositive(path + ".timeout", entry.timeout(), kMaxPolicyCallTime);
          !s.ok()) {
        return s;
      }
      policy.timeout = ToDuration(entry.timeout());
    }
    // Where the entry's timeout came from, for messages.
    std::string timeout_path = path + ".timeout";
    if (entry.has_deadline()) {
      if (absl::Status s =
              CheckPositive(path + ".deadline", entry.deadline(), kMaxPolicyCallTime);
          !s.ok()) {
        return s;
      }
      if (entry.has_timeout()) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ".deadline (", Show(entry.deadline()), ") and ", path, ".timeout (",
            Show(entry.timeout()),
            ") are both set; deadline is a deprecated alias of timeout (the call's overall "
            "deadline): keep only timeout (a limit per attempt is "
            "retryPolicy.perAttemptTimeout)"));
      }
      policy.timeout = ToDuration(entry.deadline());
      timeout_path = path + ".deadline";
      Warn(absl::StrCat(path,
                        ".deadline: deprecated alias of timeout (the call's overall deadline); "
                        "write timeout"));
    }
    if (entry.has_retry_policy()) {
      absl::StatusOr<RetrySettings> retry =
          Retry(entry.retry_policy(), path + ".retryPolicy", policy.timeout, timeout_path);
      if (!retry.ok()) return retry.status();
      if (retry->max_attempts > 1) any_retries_ = true;
      policy.retry = *std::move(retry);
    }
    if (entry.has_wait_for_ready()) policy.wait_for_ready = entry.wait_for_ready();
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
    if (entry.has_max_request_message_bytes()) NotApplied(path + ".maxRequestMessageBytes");
    if (entry.has_max_response_message_bytes()) NotApplied(path + ".maxResponseMessageBytes");
    if (entry.has_hedging_policy()) {
      NotApplied(path + ".hedgingPolicy", "hedging is not supported yet");
    }

    const size_t index = set_.policies_.size();
    set_.policies_.push_back(std::move(policy));
    for (int n = 0; n < entry.name_size(); ++n) {
      const pb::MethodName& name = entry.name(n);
      const std::string name_path = absl::StrCat(path, ".name[", n, "]");
      set_.names_.push_back(PolicySet::Name{name.service(), name.method(), name_path});
      if (name.service().empty() && !name.method().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            name_path, ": method \"", Printable(name.method(), 64), "\" needs a service"));
      }
      if (name.service().find('/') != std::string::npos ||
          name.method().find('/') != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat(
            name_path, ": service and method must not contain '/', got \"",
            Printable(name.service(), 64), "\", \"", Printable(name.method(), 64), "\""));
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

  // `timeout` is the entry's (from `timeout_path`), for the warning about a
  // perAttemptTimeout that can never fire.
  absl::StatusOr<RetrySettings> Retry(const pb::RetryPolicy& p, const std::string& path,
                                      std::optional<absl::Duration> timeout,
                                      const std::string& timeout_path) {
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
    if (p.has_per_attempt_timeout()) {
      if (absl::Status s = CheckPositive(path + ".perAttemptTimeout", p.per_attempt_timeout(),
                                         kMaxPolicyCallTime);
          !s.ok()) {
        return s;
      }
      r.per_attempt_timeout = ToDuration(p.per_attempt_timeout());
    }
    if (p.has_per_attempt_recv_timeout()) {
      // Not applied, but checked like every duration (gRPC wants it > 0 too).
      if (absl::Status s = CheckPositive(path + ".perAttemptRecvTimeout",
                                         p.per_attempt_recv_timeout(), kMaxPolicyCallTime);
          !s.ok()) {
        return s;
      }
      NotApplied(path + ".perAttemptRecvTimeout",
                 "the limit of each attempt is retryPolicy.perAttemptTimeout");
    }

    // Settings that are accepted but can have no effect.
    if (r.per_attempt_timeout.has_value() && timeout.has_value() &&
        *r.per_attempt_timeout >= *timeout) {
      // An attempt starts no earlier than the call, so its own deadline is
      // never the earlier one.
      Warn(absl::StrCat(path, ".perAttemptTimeout: ", absl::FormatDuration(*r.per_attempt_timeout),
                        " is not shorter than ", timeout_path, " (",
                        absl::FormatDuration(*timeout), "), so it never ends an attempt"));
    }
    if (r.max_attempts == 1) {
      if (!r.per_attempt_timeout.has_value()) {
        Warn(absl::StrCat(path,
                          ": maxAttempts 1 makes no retry and perAttemptTimeout is not set, so "
                          "the retryPolicy has no effect"));
      } else {
        std::vector<absl::string_view> unused;
        if (p.has_initial_backoff()) unused.push_back("initialBackoff");
        if (p.has_max_backoff()) unused.push_back("maxBackoff");
        if (p.has_backoff_multiplier()) unused.push_back("backoffMultiplier");
        if (p.has_jitter()) unused.push_back("jitter");
        if (p.has_full_jitter()) unused.push_back("fullJitter");
        if (p.retryable_status_codes_size() > 0) unused.push_back("retryableStatusCodes");
        if (!unused.empty()) {
          Warn(absl::StrCat(path, ": ", absl::StrJoin(unused, ", "),
                            unused.size() == 1 ? " has" : " have",
                            " no effect with maxAttempts 1 (no retry)"));
        }
      }
    } else if (r.full_jitter && p.has_jitter()) {
      Warn(absl::StrCat(path, ".jitter: ignored with fullJitter (each backoff is a uniform draw "
                        "in [0, backoff])"));
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
      const std::string code_path = absl::StrCat(path, ".failureCodes[", i, "]");
      absl::StatusOr<absl::StatusCode> code = Code(code_path, p.failure_codes(i));
      if (!code.ok()) return code.status();
      // Every successful call would count against the backend.
      if (*code == absl::StatusCode::kOk) return Invalid(code_path, "an error code", "OK");
      listed_as_failure[static_cast<int>(*code)] = true;
      out.classifier.Set(*code, Outcome::kFailure);
    }
    for (int i = 0; i < p.success_codes_size(); ++i) {
      const std::string code_path = absl::StrCat(path, ".successCodes[", i, "]");
      absl::StatusOr<absl::StatusCode> code = Code(code_path, p.success_codes(i));
      if (!code.ok()) return code.status();
      if (listed_as_failure[static_cast<int>(*code)]) {
        return absl::InvalidArgumentError(absl::StrCat(
            code_path, ": ", Printable(p.success_codes(i), 64), " is also in ", path,
            ".failureCodes"));
      }
      if (*code == absl::StatusCode::kOk) {
        Warn(absl::StrCat(code_path, ": OK is always a success; listing it has no effect"));
      }
      out.classifier.Set(*code, Outcome::kSuccess);
    }
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
    if (p.has_max_open_duration() && p.has_open_duration_multiplier() &&
        p.open_duration_multiplier() == 1.0) {
      Warn(absl::StrCat(path, ".maxOpenDuration: no effect with openDurationMultiplier 1 (the "
                        "open period stays openDuration)"));
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
                       absl::StrCat("\"", Printable(p.mode(), 64), "\""));
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
    if (p.has_delay() && f.delay == absl::ZeroDuration()) {
      Warn(absl::StrCat(path, ".delay: 0s adds no latency"));
    } else if (!p.has_delay() && p.abort_code().empty()) {
      Warn(absl::StrCat(path, ": sets neither delay nor abortCode, so it injects nothing"));
    }
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
  bool any_retries_ = false;  // some entry has a retryPolicy with maxAttempts > 1
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

// Deepest nesting of objects and arrays accepted. protobuf's parser turns
// the text into nested messages (three for an object held in a
// google.protobuf.Value) and gives up at 100 of them, with a message that
// names nothing; 32 levels stay below that whatever the mix.
constexpr int kMaxJsonDepth = 32;

// Whether `number` is a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// With `empty_fraction`, a "." without digits passes and sets it.
bool JsonNumber(absl::string_view number, bool* empty_fraction) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t from = i;
    while (i < number.size() && absl::ascii_isdigit(number[i])) ++i;
    return i - from;
  };
  if (i < number.size() && number[i] == '-') ++i;
  if (i < number.size() && number[i] == '0') {
    ++i;
  } else if (digits() == 0) {
    return false;
  }
  if (i < number.size() && number[i] == '.') {
    ++i;
    if (digits() == 0) {
      if (empty_fraction == nullptr) return false;
      *empty_fraction = true;
    }
  }
  if (i < number.size() && (number[i] == 'e' || number[i] == 'E')) {
    ++i;
    if (i < number.size() && (number[i] == '+' || number[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == number.size();
}

// JsonScanner
//
// Reads the text as strict JSON (RFC 8259) before protobuf's parser does,
// and refuses what that parser would accept although it is not JSON or is
// ambiguous: trailing commas, single-quoted strings, unquoted keys,
// "1." numbers, unknown escapes and raw control characters in strings, a key
// twice in one object (protobuf keeps the last, or merges two objects), and
// nesting deeper than kMaxJsonDepth. Each with the JSON path and the
// position. At anything else that is not JSON it stops without a verdict:
// protobuf's parser then reports that syntax error as before. Recursion
// goes no deeper than kMaxJsonDepth.
class JsonScanner {
 public:
  explicit JsonScanner(absl::string_view text) : text_(text) {}

  absl::Status Check() {
    SkipSpace();
    if (!Value()) return error_;
    while (true) {
      SkipSpace();
      if (frames_.empty()) return absl::OkStatus();  // what follows is protobuf's to report
      Frame& top = frames_.back();
      if (At(',')) {
        const size_t comma = pos_++;
        SkipSpace();
        if (At(']') || At('}')) {
          return Fail(comma, frames_.size() - 1, "trailing comma (not allowed in JSON)");
        }
        if (top.object) {
          if (!Key()) return error_;
        } else {
          ++top.index;
        }
        if (!Value()) return error_;
      } else if (At(top.object ? '}' : ']')) {
        ++pos_;
        frames_.pop_back();
      } else {
        return absl::OkStatus();
      }
    }
  }

 private:
  struct Frame {
    bool object = false;
    int64_t index = 0;        // array: the element being read
    std::string key;          // object: the member being read, decoded
    absl::flat_hash_map<std::string, size_t> seen;  // object: key -> its offset
  };

  bool At(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  // The JSON path of the value the first `levels` frames lead to.
  std::string Path(size_t levels) const {
    std::string path;
    for (size_t i = 0; i < levels && i < frames_.size(); ++i) {
      if (frames_[i].object) {
        absl::StrAppend(&path, path.empty() ? "" : ".", Printable(frames_[i].key, 40));
      } else {
        absl::StrAppend(&path, "[", frames_[i].index, "]");
      }
    }
    return path;
  }

  // Stops the scan with `what` at byte `offset`, in the value at the path of
  // the first `levels` frames. Returns false, to be returned.
  bool Stop(size_t offset, size_t levels, absl::string_view what) {
    const std::string path = Path(levels);
    error_ = absl::InvalidArgumentError(absl::StrCat(
        "policy JSON: ", path, path.empty() ? "" : ": ", what, " at ", Position(text_, offset)));
    return false;
  }
  absl::Status Fail(size_t offset, size_t levels, absl::string_view what) {
    Stop(offset, levels, what);
    return error_;
  }

  // An object member's key and its ':'. On a key met before, stops.
  bool Key() {
    Frame& top = frames_.back();
    const size_t levels = frames_.size() - 1;  // the object's own path
    const size_t start = pos_;
    if (At('"')) {
      std::string key;
      if (!String(&key, levels)) return false;
      if (auto [it, inserted] = top.seen.emplace(key, start); !inserted) {
        return Stop(start, levels,
                    absl::StrCat("duplicate key \"", Printable(key, 40), "\" (first at ",
                                 Position(text_, it->second), ")"));
      }
      top.key = std::move(key);
    } else if (At('\'')) {
      return Stop(start, levels, "single-quoted key (JSON strings use double quotes)");
    } else if (pos_ < text_.size() && (absl::ascii_isalpha(text_[pos_]) || text_[pos_] == '_' ||
                                       text_[pos_] == '$')) {
      size_t end = pos_;
      while (end < text_.size() &&
             (absl::ascii_isalnum(text_[end]) || text_[end] == '_' || text_[end] == '$')) {
        ++end;
      }
      return Stop(start, levels,
                  absl::StrCat("unquoted key ", Printable(text_.substr(pos_, end - pos_), 40),
                               " (JSON keys are strings in double quotes)"));
    } else {
      return false;  // not JSON: protobuf says what
    }
    SkipSpace();
    if (!At(':')) return false;
    ++pos_;
    SkipSpace();
    return true;
  }

  // One value; an object or array is opened (and its first member read), the
  // loop in Check() goes on with the rest.
  bool Value() {
    const size_t start = pos_;
    const size_t levels = frames_.size();  // the value's own path
    if (pos_ >= text_.size()) return false;
    const char c = text_[pos_];
    if (c == '{' || c == '[') {
      if (frames_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
        return Stop(start, levels,
                    absl::StrCat("nested deeper than ", kMaxJsonDepth, " levels"));
      }
      ++pos_;
      frames_.emplace_back();
      frames_.back().object = c == '{';
      SkipSpace();
      if (At(c == '{' ? '}' : ']')) {  // empty
        ++pos_;
        frames_.pop_back();
        return true;
      }
      return c == '{' ? Key() && Value() : Value();
    }
    if (c == '"') return String(nullptr, levels);
    if (c == '\'') {
      return Stop(start, levels, "single-quoted string (JSON strings use double quotes)");
    }
    if (c == '-' || absl::ascii_isdigit(c)) return Number(levels);
    if (absl::ascii_isalpha(c)) {
      size_t end = pos_;
      while (end < text_.size() && absl::ascii_isalnum(text_[end])) ++end;
      const absl::string_view word = text_.substr(pos_, end - pos_);
      if (word != "true" && word != "false" && word != "null") return false;
      pos_ = end;
      return true;
    }
    return false;
  }

  // A number: RFC 8259's grammar. protobuf also takes "1." and "1.e5";
  // those stop here, other malformed numbers are protobuf's to report.
  bool Number(size_t levels) {
    const size_t start = pos_;
    size_t end = pos_;
    while (end < text_.size() && (absl::ascii_isdigit(text_[end]) || text_[end] == '-' ||
                                  text_[end] == '+' || text_[end] == '.' ||
                                  text_[end] == 'e' || text_[end] == 'E')) {
      ++end;
    }
    const absl::string_view number = text_.substr(start, end - start);
    bool empty_fraction = false;
    if (!JsonNumber(number, &empty_fraction)) return false;
    if (empty_fraction) {
      return Stop(start, levels,
                  absl::StrCat("invalid number ", number,
                               " (JSON wants a digit after the decimal point)"));
    }
    pos_ = end;
    return true;
  }

  // A double-quoted string; decoded into `out` when not null (keys).
  bool String(std::string* out, size_t levels) {
    ++pos_;  // the opening quote
    while (pos_ < text_.size()) {
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) {
        return Stop(pos_, levels,
                    absl::StrCat("raw control character \\x", absl::Hex(c, absl::kZeroPad2),
                                 " in a string (JSON wants it escaped)"));
      }
      if (c != '\\') {
        if (out != nullptr) out->push_back(static_cast<char>(c));
        ++pos_;
        continue;
      }
      if (pos_ + 1 >= text_.size()) return false;
      const char e = text_[pos_ + 1];
      static constexpr absl::string_view kSimple = "\"\\/bfnrt";
      static constexpr absl::string_view kMeaning = "\"\\/\b\f\n\r\t";
      if (const size_t k = kSimple.find(e); k != absl::string_view::npos) {
        if (out != nullptr) out->push_back(kMeaning[k]);
        pos_ += 2;
      } else if (e == 'u') {
        uint32_t unit;
        if (!Hex4(pos_ + 2, &unit)) return false;
        pos_ += 6;
        uint32_t code_point = unit;
        if (unit >= 0xD800 && unit <= 0xDBFF) {
          uint32_t low;
          if (!(At('\\') && pos_ + 1 < text_.size() && text_[pos_ + 1] == 'u' &&
                Hex4(pos_ + 2, &low) && low >= 0xDC00 && low <= 0xDFFF)) {
            return false;  // a lone surrogate: protobuf refuses it
          }
          pos_ += 6;
          code_point = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
        } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
          return false;
        }
        if (out != nullptr) AppendUtf8(code_point, *out);
      } else {
        return Stop(pos_, levels,
                    absl::StrCat("invalid escape \\", Printable(absl::string_view(&e, 1), 1),
                                 " in a string"));
      }
    }
    return false;  // unterminated
  }

  bool Hex4(size_t at, uint32_t* value) const {
    if (at + 4 > text_.size()) return false;
    *value = 0;
    for (size_t i = at; i < at + 4; ++i) {
      const char h = text_[i];
      if (!absl::ascii_isxdigit(h)) return false;
      *value = *value * 16 + (absl::ascii_isdigit(h) ? h - '0' : absl::ascii_tolower(h) - 'a' + 10);
    }
    return true;
  }

  static void AppendUtf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  absl::string_view text_;
  size_t pos_ = 0;
  std::vector<Frame> frames_;
  absl::Status error_;  // set when a scan stops with a verdict
};

// ShapeChecker
//
// Walks the JSON (parsed into a google::protobuf::Value) against the
// PolicyFile schema and refuses a value of the wrong kind where protobuf's
// parser would quietly reinterpret it: a single value or nested arrays
// where an array belongs (it flattens them), null inside an array (it drops
// it), "true" for a bool, an object for a duration (it reads
// {"seconds": 5}), a duration string it reads leniently (" 1s", "+1s",
// "1.s"), a number string it reads as hex ("0x1") and a field written
// under both its JSON and its proto name (it merges them). Fields in schema
// order, so the first mismatch reported does not depend on hashing. Keys
// the schema does not know are left to protobuf's parser. Recursion is
// bounded by the schema's depth.
class ShapeChecker {
 public:
  static absl::Status Check(const google::protobuf::Value& root) {
    if (root.kind_case() != google::protobuf::Value::kStructValue) {
      return Mismatch("", "an object such as {\"methodConfig\": [...]}", root);
    }
    return Object(root.struct_value(), *pb::PolicyFile::descriptor(), "");
  }

 private:
  using FieldDescriptor = google::protobuf::FieldDescriptor;
  using Value = google::protobuf::Value;

  static absl::Status Object(const google::protobuf::Struct& object,
                             const google::protobuf::Descriptor& type, const std::string& path) {
    for (int i = 0; i < type.field_count(); ++i) {
      const FieldDescriptor& field = *type.field(i);
      const auto json = object.fields().find(field.json_name());
      const auto proto = field.name() == field.json_name() ? object.fields().end()
                                                           : object.fields().find(field.name());
      if (json != object.fields().end() && proto != object.fields().end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "policy JSON: ", path, path.empty() ? "" : ": ", "\"", field.json_name(),
            "\" and \"", field.name(), "\" are the same field; write it once, as \"",
            field.json_name(), "\""));
      }
      const auto it = json != object.fields().end() ? json : proto;
      if (it == object.fields().end()) continue;
      const std::string field_path = absl::StrCat(path, path.empty() ? "" : ".", it->first);
      const Value& value = it->second;
      if (value.kind_case() == Value::kNullValue) continue;  // as if left out
      if (!field.is_repeated()) {
        if (absl::Status s = One(value, field, field_path); !s.ok()) return s;
        continue;
      }
      if (value.kind_case() != Value::kListValue) return Mismatch(field_path, "an array", value);
      for (int k = 0; k < value.list_value().values_size(); ++k) {
        const std::string element_path = absl::StrCat(field_path, "[", k, "]");
        const Value& element = value.list_value().values(k);
        if (element.kind_case() == Value::kNullValue) {
          return Mismatch(element_path, Expected(field), element);
        }
        if (absl::Status s = One(element, field, element_path); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  // What a single value of `field` must look like.
  static std::string Expected(const FieldDescriptor& field) {
    switch (field.type()) {
      case FieldDescriptor::TYPE_MESSAGE:
        if (field.message_type() == google::protobuf::Duration::descriptor()) {
          return "a duration such as \"0.2s\" (seconds with up to 9 decimals, then s)";
        }
        return "an object";
      case FieldDescriptor::TYPE_STRING:
        return "a string";
      case FieldDescriptor::TYPE_BOOL:
        return "true or false";
      case FieldDescriptor::TYPE_ENUM:
        return "a name";
      default:
        return "a number";
    }
  }

  // One value of `field` (an element, if repeated), not null.
  static absl::Status One(const Value& value, const FieldDescriptor& field,
                          const std::string& path) {
    const Value::KindCase kind = value.kind_case();
    switch (field.type()) {
      case FieldDescriptor::TYPE_MESSAGE: {
        const google::protobuf::Descriptor* type = field.message_type();
        if (type == google::protobuf::Duration::descriptor()) {
          if (kind != Value::kStringValue || !DurationText(value.string_value())) {
            return Mismatch(path, Expected(field), value);
          }
          return absl::OkStatus();
        }
        if (kind != Value::kStructValue) return Mismatch(path, Expected(field), value);
        if (type == google::protobuf::Struct::descriptor()) return absl::OkStatus();  // free-form
        return Object(value.struct_value(), *type, path);
      }
      case FieldDescriptor::TYPE_STRING:
      case FieldDescriptor::TYPE_BYTES:
        if (kind != Value::kStringValue) return Mismatch(path, Expected(field), value);
        return absl::OkStatus();
      case FieldDescriptor::TYPE_BOOL:
        if (kind != Value::kBoolValue) return Mismatch(path, Expected(field), value);
        return absl::OkStatus();
      case FieldDescriptor::TYPE_ENUM:
        if (kind != Value::kStringValue && kind != Value::kNumberValue) {
          return Mismatch(path, Expected(field), value);
        }
        return absl::OkStatus();
      default: {  // numbers
        if (kind == Value::kNumberValue) return absl::OkStatus();
        // proto3 JSON also takes a number as a string, and "NaN",
        // "Infinity", "-Infinity" for floating point; protobuf checks the
        // range. Anything else (protobuf reads "0x1" as 1) is refused.
        const bool floating = field.cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE ||
                              field.cpp_type() == FieldDescriptor::CPPTYPE_FLOAT;
        if (kind == Value::kStringValue) {
          const std::string& text = value.string_value();
          if (JsonNumber(text, nullptr) ||
              (floating && (text == "NaN" || text == "Infinity" || text == "-Infinity"))) {
            return absl::OkStatus();
          }
        }
        return Mismatch(path, Expected(field), value);
      }
    }
  }

  // -?[0-9]+(\.[0-9]{1,9})?s: the duration form protobuf writes; its parser
  // also reads " 1s", "+1s" and "1.s". Range is checked later.
  static bool DurationText(absl::string_view text) {
    if (!absl::ConsumeSuffix(&text, "s")) return false;
    absl::ConsumePrefix(&text, "-");
    const size_t dot = text.find('.');
    const absl::string_view seconds = text.substr(0, dot);
    const auto all_digits = [](absl::string_view d) {
      return !d.empty() && std::all_of(d.begin(), d.end(), absl::ascii_isdigit);
    };
    if (!all_digits(seconds)) return false;
    if (dot == absl::string_view::npos) return true;
    const absl::string_view fraction = text.substr(dot + 1);
    return all_digits(fraction) && fraction.size() <= 9;
  }

  static std::string Describe(const Value& value) {
    switch (value.kind_case()) {
      case Value::kNullValue:
        return "null";
      case Value::kBoolValue:
        return value.bool_value() ? "true" : "false";
      case Value::kNumberValue:
        return absl::StrCat(value.number_value());
      case Value::kStringValue:
        return absl::StrCat("\"", Printable(value.string_value(), 64), "\"");
      case Value::kStructValue:
        return "an object";
      case Value::kListValue:
        return "an array";
      default:
        return "nothing";
    }
  }

  static absl::Status Mismatch(const std::string& path, absl::string_view expected,
                               const Value& value) {
    return absl::InvalidArgumentError(absl::StrCat("policy JSON: ", path, path.empty() ? "" : ": ",
                                                   "expected ", expected, ", got ",
                                                   Describe(value)));
  }
};

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
  return Printable(line, line.size());
}

}  // namespace

absl::StatusOr<PolicySet> PolicySet::FromJsonString(absl::string_view json,
                                                    LoadOptions options) {
  if (absl::StripAsciiWhitespace(json).empty()) {
    return absl::InvalidArgumentError("policy JSON is empty (expected an object such as "
                                      "{\"methodConfig\": [...]})");
  }
  if (const size_t bad = FirstInvalidUtf8(json); bad != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy JSON: not valid UTF-8 at ", Position(json, bad), " (byte ", bad, ")"));
  }
  // Strict JSON first, then the shape of every value against the schema:
  // both refuse what protobuf's parser would quietly accept or reinterpret.
  if (absl::Status s = JsonScanner(json).Check(); !s.ok()) return s;
  google::protobuf::util::JsonParseOptions parse_options;
  parse_options.ignore_unknown_fields = false;
  const auto parse_error = [&](const auto& status) {
    return absl::InvalidArgumentError(absl::StrCat(
        "policy JSON: ",
        ParseErrorLine(json, JsonNamesInParseError(status.message().as_string()))));
  };
  const google::protobuf::StringPiece text(json.data(), json.size());
  google::protobuf::Value value;
  if (const auto parsed = google::protobuf::util::JsonStringToMessage(text, &value, parse_options);
      !parsed.ok()) {
    return parse_error(parsed);
  }
  if (absl::Status s = ShapeChecker::Check(value); !s.ok()) return s;
  pb::PolicyFile file;
  if (const auto parsed = google::protobuf::util::JsonStringToMessage(text, &file, parse_options);
      !parsed.ok()) {
    return parse_error(parsed);
  }
  absl::StatusOr<PolicySet> set = PolicySetBuilder().Build(file);
  if (!set.ok()) return set;
  // Names that match nothing linked, and retry settings gRPC's own retry
  // (which serves streams) cannot apply.
  const MethodCatalog& methods =
      options.methods != nullptr ? *options.methods : MethodCatalog::Linked();
  for (std::string& warning : UnlinkedNameWarnings(*set, methods)) {
    set->warnings_.push_back(std::move(warning));
  }
  const BuiltInRetryConfig builtin = BuiltInRetryConfig::Build(*set, methods);
  for (const std::string& warning : builtin.warnings()) set->warnings_.push_back(warning);
  if (options.strict && !set->warnings().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("strict mode: ", set->warnings().size(),
                                                   " warning(s): ",
                                                   absl::StrJoin(set->warnings(), "; ")));
  }
  return set;
}

absl::StatusOr<PolicySet> PolicySet::FromJsonFile(const std::string& path,
                                                  LoadOptions options) {
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
  absl::StatusOr<PolicySet> set = FromJsonString(text.str(), options);
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

#include "src/policy/policy_set.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "resilience/v1/policy.pb.h"
#include "src/limits/aimd_concurrency_limiter.h"
#include "src/limits/fixed_concurrency_limiter.h"
#include "src/limits/gradient_concurrency_limiter.h"
#include "src/limits/token_bucket.h"
#include "src/policy/breaker_timing_warnings.h"
#include "src/policy/builtin_retry_config.h"
#include "src/policy/hedging_settings.h"
#include "src/policy/global_throttle_policy.h"
#include "src/policy/json_scanner.h"
#include "src/policy/json_text.h"
#include "src/policy/method_catalog.h"
#include "src/policy/shape_checker.h"
#include "src/policy/status_codes.h"
#include "src/retry/backoff.h"
#include "src/retry/retry_budget.h"

namespace resilience {
namespace {

namespace pb = ::resilience::v1;

using internal::FirstInvalidUtf8;
using internal::Position;
using internal::Printable;
using internal::SnakeToCamel;

absl::Duration ToDuration(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
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

// The range a duration of the file must be in: [low, high], or (low, high]
// when `low_open`.
struct DurationRange {
  absl::Duration low;
  bool low_open;
  absl::Duration high;
};

// In (0, high].
constexpr DurationRange Positive(absl::Duration high) {
  return {absl::ZeroDuration(), /*low_open=*/true, high};
}

// In [0, high].
constexpr DurationRange NonNegative(absl::Duration high) {
  return {absl::ZeroDuration(), /*low_open=*/false, high};
}

// A rolling window: in [1ms, 1h] (RollingWindow also wants whole
// milliseconds that divide into the buckets; its Validate() says so).
constexpr DurationRange kWindowRange = {absl::Milliseconds(1), /*low_open=*/false,
                                        kMaxPolicyInterval};

}  // namespace

// Turns a parsed PolicyFile into a PolicySet, applying defaults and checking
// every rule; the first error wins. Paths in messages use JSON names. The
// settings of the core's classes (breakers, backoff, retry budget, token
// bucket, concurrency limiter) are checked by the classes' own Validate(),
// whose messages are rewritten to the file's paths (AtPath()), so that
// whatever loads, their Create() accepts.
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
    if (absl::Status s = CheckGlobalThrottleKeys(GlobalThrottleScopes()); !s.ok()) return s;
    if (file.has_retry_throttling()) {
      absl::StatusOr<RetryBudgetSettings> t =
          ReadRetryBudget(file.retry_throttling(), "retryThrottling");
      if (!t.ok()) return t.status();
      set_.retry_throttling_ = *t;
      if (!any_retries_) {
        Warn("retryThrottling: no methodConfig entry retries (a retryPolicy with maxAttempts "
             "above 1) or hedges, so it has no effect");
      }
    }
    // The library's safety default: a method that hedges always keeps a
    // budget of its own, since gRPC's throttle charges failures only and so
    // cannot bound hedges on a backend that is slow without failing; a
    // method that retries keeps one when gRPC's throttle is absent.
    for (MethodPolicy& policy : set_.policies_) {
      const bool needs_budget =
          policy.hedging.has_value() || (!file.has_retry_throttling() && Reissues(policy));
      if (needs_budget && !policy.retry_budget.has_value()) {
        policy.retry_budget = RetryBudgetSettings();
      }
    }
    return std::move(set_);
  }

 private:
  // Every scope with a throttle.global: the names of the file, and the
  // default entry's "".
  std::vector<GlobalThrottleScope> GlobalThrottleScopes() const {
    std::vector<GlobalThrottleScope> scopes;
    auto add = [&](const std::string& scope, size_t index) {
      const MethodPolicy& p = set_.policies_[index];
      if (p.throttle && p.throttle->global) scopes.push_back({scope, &*p.throttle->global});
    };
    for (const auto& [scope, index] : set_.by_name_) add(scope, index);
    if (set_.default_index_) add("", *set_.default_index_);
    return scopes;
  }

  // A setting that is accepted but ignored or has no effect; `message` starts
  // with its JSON path.
  void Warn(std::string message) { set_.warnings_.push_back(std::move(message)); }

  // A long injected delay in front of a concurrency limit: on gRPC 1.51's
  // callback API a caller that cancels during the delay is not seen before
  // the delay ends (no cancellation reaches a call whose handler has not
  // started), so its slot stays taken that long. Said at load, so that the
  // trade-off is chosen, not met in production.
  void WarnIfDelaysHoldSlots(const MethodPolicy& policy, const std::string& path) {
    const FaultInjectionSettings& f = *policy.fault_injection;
    if (!policy.throttle.has_value() || f.delay_fraction <= 0 || f.delay < kLongHeldDelay) return;
    const ThrottleSettings& t = *policy.throttle;
    if (t.max_concurrency == 0 && !t.adaptive.has_value()) return;
    Warn(absl::StrCat(path, ".faultInjection.delay: ", absl::FormatDuration(f.delay),
                      " in front of ", path,
                      ".throttle's concurrency limit: on the callback API a caller that "
                      "cancels during the delay keeps its slot until the delay ends (gRPC 1.51 "
                      "reports no cancellation before the handler starts; the caller's "
                      "deadline does end it); use a delay under ",
                      absl::FormatDuration(kLongHeldDelay), " or give callers deadlines"));
  }
  static constexpr absl::Duration kLongHeldDelay = absl::Seconds(1);

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

  // One duration field of the file, for ReadDurations().
  struct DurationField {
    absl::string_view name;  // its JSON name, after the path given to ReadDurations()
    bool set;                // the file sets it
    const google::protobuf::Duration& value;
    DurationRange range;
    absl::Duration* out;  // where it goes; null: checked only (a field not applied)
  };

  // ReadDurations()
  //
  // The one "check, then assign" of the file's durations: each field the
  // file sets, in order, is checked against its range and stored in `*out`;
  // the first out of range is InvalidArgument "<path>.<name>: must be in
  // (0, 1h], got 2h", and the fields after it are left alone. Every duration
  // of the file passes here (or through a core class's Validate()) with an
  // upper bound (kMaxPolicy*), so no later arithmetic on it can overflow.
  static absl::Status ReadDurations(absl::string_view path,
                                    std::initializer_list<DurationField> fields) {
    for (const DurationField& f : fields) {
      if (!f.set) continue;
      const absl::Duration value = ToDuration(f.value);
      const bool low_ok = f.range.low_open ? value > f.range.low : value >= f.range.low;
      if (!low_ok || value > f.range.high) {
        return Invalid(absl::StrCat(path, ".", f.name),
                       absl::StrCat("in ", f.range.low_open ? "(" : "[",
                                    absl::FormatDuration(f.range.low), ", ",
                                    absl::FormatDuration(f.range.high), "]"),
                       absl::FormatDuration(value));
      }
      if (f.out != nullptr) *f.out = value;
    }
    return absl::OkStatus();
  }

  // AtPath()
  //
  // A core class's Validate() names its fields in snake_case after a prefix
  // of its own ("sre.max_drop_probability", "backoff.initial_backoff") or
  // none ("rate_per_second"); the file says
  // "methodConfig[0].breaker.sre.maxDropProbability". Rewrites every
  // `prefix` in the message to `path` + "." (with no prefix, puts `path` +
  // "." in front) and the names to JSON's camelCase.
  static absl::Status AtPath(const absl::Status& s, absl::string_view prefix,
                             absl::string_view path) {
    if (s.ok()) return s;
    const std::string message =
        prefix.empty() ? absl::StrCat(path, ".", s.message())
                       : absl::StrReplaceAll(s.message(), {{prefix, absl::StrCat(path, ".")}});
    return absl::InvalidArgumentError(SnakeToCamel(message));
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
    absl::Duration timeout, deadline;
    if (absl::Status s = ReadDurations(
            path, {{"timeout", entry.has_timeout(), entry.timeout(),
                    Positive(kMaxPolicyCallTime), &timeout},
                   {"deadline", entry.has_deadline(), entry.deadline(),
                    Positive(kMaxPolicyCallTime), &deadline}});
        !s.ok()) {
      return s;
    }
    if (entry.has_timeout()) policy.timeout = timeout;
    // Where the entry's timeout came from, for messages.
    std::string timeout_path = path + ".timeout";
    if (entry.has_deadline()) {
      if (entry.has_timeout()) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ".deadline (", Show(entry.deadline()), ") and ", path, ".timeout (",
            Show(entry.timeout()),
            ") are both set; deadline is a deprecated alias of timeout (the call's overall "
            "deadline): keep only timeout (a limit per attempt is "
            "retryPolicy.perAttemptTimeout)"));
      }
      policy.timeout = deadline;
      timeout_path = path + ".deadline";
      Warn(absl::StrCat(path,
                        ".deadline: deprecated alias of timeout (the call's overall deadline); "
                        "write timeout"));
    }
    if (entry.has_retry_policy()) {
      absl::StatusOr<RetrySettings> retry =
          Retry(entry.retry_policy(), path + ".retryPolicy", policy.timeout, timeout_path);
      if (!retry.ok()) return retry.status();
      policy.retry = *std::move(retry);
    }
    if (Reissues(policy)) any_retries_ = true;
    if (entry.has_retry_budget()) {
      absl::StatusOr<RetryBudgetSettings> budget =
          ReadRetryBudget(entry.retry_budget(), path + ".retryBudget");
      if (!budget.ok()) return budget.status();
      policy.retry_budget = *budget;
      if (!Reissues(policy) && !entry.has_hedging_policy()) {
        Warn(absl::StrCat(path, ".retryBudget: the entry neither retries (a retryPolicy with "
                                "maxAttempts above 1) nor hedges, so it has no effect"));
      }
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
      WarnIfDelaysHoldSlots(policy, path);
    }
    if (entry.has_max_request_message_bytes()) NotApplied(path + ".maxRequestMessageBytes");
    if (entry.has_max_response_message_bytes()) NotApplied(path + ".maxResponseMessageBytes");
    if (entry.has_hedging_policy()) {
      absl::StatusOr<HedgingSettings> hedging =
          ReadHedgingSettings(entry.hedging_policy(), path + ".hedgingPolicy", set_.warnings_);
      if (!hedging.ok()) return hedging.status();
      policy.hedging = *std::move(hedging);
      any_retries_ = true;  // hedges are throttled too
    }

    if (entry.has_breaker()) {
      AppendBreakerTimingWarnings(entry.breaker(), policy, path, set_.warnings_);
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
      r.retryable_status_codes.clear();
      for (int i = 0; i < p.retryable_status_codes_size(); ++i) {
        const std::string code_path = absl::StrCat(path, ".retryableStatusCodes[", i, "]");
        absl::StatusOr<absl::StatusCode> code = Code(code_path, p.retryable_status_codes(i));
        if (!code.ok()) return code.status();
        if (*code == absl::StatusCode::kOk) return Invalid(code_path, "an error code", "OK");
        r.retryable_status_codes.push_back(*code);
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

    // Settings that are accepted but can have no effect.
    if (r.per_attempt_timeout.has_value() && timeout.has_value() &&
        *r.per_attempt_timeout >= *timeout) {
      // An attempt starts no earlier than the call, so its own deadline is
      // never the earlier one.
      Warn(absl::StrCat(path, ".perAttemptTimeout: ", absl::FormatDuration(*r.per_attempt_timeout),
                        " is not shorter than ", timeout_path, " (",
                        absl::FormatDuration(*timeout), "), so it never ends an attempt"));
    } else if (r.per_attempt_timeout.has_value() && r.max_attempts > 1 &&
               std::find(r.retryable_status_codes.begin(), r.retryable_status_codes.end(),
                         absl::StatusCode::kDeadlineExceeded) ==
                   r.retryable_status_codes.end()) {
      // The timed-out attempt ends DEADLINE_EXCEEDED, which this policy
      // does not retry: the timeout only shortens the call.
      Warn(absl::StrCat(path, ".perAttemptTimeout: DEADLINE_EXCEEDED is not in ", path,
                        ".retryableStatusCodes, so an attempt it ends is not retried: the call "
                        "ends then, with attempts left (add DEADLINE_EXCEEDED to retry it)"));
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

  // The bounds of the durations are checked here (its Validate() checks how
  // they relate to each other), the rest by ThreeStateBreaker::Validate().
  absl::Status ThreeState(const pb::ThreeStateBreakerPolicy& p, const std::string& path,
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
    if (p.has_max_open_duration() && p.has_open_duration_multiplier() &&
        p.open_duration_multiplier() == 1.0) {
      Warn(absl::StrCat(path, ".maxOpenDuration: no effect with openDurationMultiplier 1 (the "
                        "open period stays openDuration)"));
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

  // The limits: each checked by the class that enforces it
  // (FixedConcurrencyLimiter, TokenBucket), so that whatever loads, their
  // Create() accepts.
  absl::StatusOr<ThrottleSettings> Throttle(const pb::ThrottlePolicy& p, const std::string& path) {
    ThrottleSettings t;
    if (!p.has_max_concurrency() && !p.has_rate_per_second() && !p.has_adaptive() &&
        !p.has_global()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": set maxConcurrency or adaptive, ratePerSecond, or both (or global)"));
    }
    if (p.has_adaptive()) {
      absl::StatusOr<AdaptiveLimitSettings> a =
          AdaptiveLimit(p.adaptive(), path + ".adaptive", p.has_max_concurrency(), path);
      if (!a.ok()) return a.status();
      t.adaptive = *a;
    }
    if (p.has_max_concurrency()) {
      if (absl::Status s = AtPath(FixedConcurrencyLimiter::Validate(p.max_concurrency()), "", path);
          !s.ok()) {
        return s;
      }
      t.max_concurrency = p.max_concurrency();
    }
    if (p.has_burst() && !p.has_rate_per_second()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ".burst: needs ratePerSecond"));
    }
    if (p.has_rate_per_second()) {
      const double rate = p.rate_per_second();
      // Without a burst: one second's worth of calls, at least 1, always
      // within TokenBucket::MaxBurst() of a valid rate. The comparisons keep
      // an invalid rate (NaN included) out of the conversion.
      int64_t burst = 1;
      if (p.has_burst()) {
        burst = p.burst();
      } else if (rate >= TokenBucket::kMaxBurst) {
        burst = TokenBucket::kMaxBurst;
      } else if (rate >= 1.0) {
        burst = static_cast<int64_t>(rate);  // floor
      }
      if (absl::Status s = AtPath(TokenBucket::Validate(rate, burst), "", path); !s.ok()) {
        return s;
      }
      t.rate_per_second = rate;
      t.burst = static_cast<int>(burst);  // Validate(): in [1, 1e9]
    }
    if (absl::Status s = ReadDurations(
            path, {{"minPushback", p.has_min_pushback(), p.min_pushback(),
                    Positive(kMaxPolicyInterval), &t.min_pushback},
                   {"maxPushback", p.has_max_pushback(), p.max_pushback(),
                    Positive(kMaxPolicyInterval), &t.max_pushback}});
        !s.ok()) {
      return s;
    }
    if (p.has_global()) {
      absl::StatusOr<GlobalThrottleSettings> g = ReadGlobalThrottle(p.global(), path + ".global");
      if (!g.ok()) return g.status();
      t.global = *std::move(g);
    }
    if (t.max_pushback < t.min_pushback) {
      return Invalid(path + ".maxPushback",
                     absl::StrCat(">= minPushback (", absl::FormatDuration(t.min_pushback), ")"),
                     absl::FormatDuration(t.max_pushback));
    }
    return t;
  }

  // throttle.adaptive: the algorithm's options over their defaults,
  // checked by the limiter's own Validate(). With maxConcurrency too: an
  // error (two concurrency limits, one of them fixed, is a contradiction).
  absl::StatusOr<AdaptiveLimitSettings> AdaptiveLimit(const pb::AdaptiveThrottle& p,
                                                      const std::string& path,
                                                      bool has_max_concurrency,
                                                      const std::string& throttle_path) {
    if (has_max_concurrency) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": cannot be set together with ", throttle_path,
          ".maxConcurrency (a fixed limit); cap the adaptive limit with ", path, ".maxLimit"));
    }
    AdaptiveLimitSettings a;
    if (p.algorithm() == "AIMD") {
      a.algorithm = AdaptiveLimitSettings::Algorithm::kAimd;
    } else if (!p.algorithm().empty() && p.algorithm() != "GRADIENT") {
      return Invalid(path + ".algorithm", "\"GRADIENT\" or \"AIMD\"",
                     absl::StrCat("\"", Printable(p.algorithm(), 64), "\""));
    }
    const bool aimd = a.algorithm == AdaptiveLimitSettings::Algorithm::kAimd;
    AdaptiveConcurrencyLimiter::Options& common =
        aimd ? static_cast<AdaptiveConcurrencyLimiter::Options&>(a.aimd) : a.gradient;
    if (p.has_min_limit()) common.min_limit = p.min_limit();
    if (p.has_max_limit()) common.max_limit = p.max_limit();
    if (p.has_initial_limit()) {
      common.initial_limit = p.initial_limit();
    } else if (common.min_limit <= common.max_limit) {
      common.initial_limit = std::clamp(common.initial_limit, common.min_limit, common.max_limit);
    }
    if (p.has_min_samples()) common.min_samples = p.min_samples();
    if (absl::Status s = ReadDurations(
            path, {{"sampleWindow", p.has_sample_window(), p.sample_window(), kWindowRange,
                    &common.sample_window},
                   {"baselineInterval", p.has_baseline_interval(), p.baseline_interval(),
                    Positive(kMaxPolicyInterval), &a.gradient.baseline_interval},
                   {"timeout", p.has_timeout(), p.timeout(), Positive(kMaxPolicyCallTime),
                    &a.aimd.timeout}});
        !s.ok()) {
      return s;
    }
    if (p.has_baseline_samples()) a.gradient.baseline_samples = p.baseline_samples();
    if (p.has_tolerance()) a.gradient.tolerance = p.tolerance();
    if (p.has_smoothing()) a.gradient.smoothing = p.smoothing();
    if (p.has_backoff_ratio()) a.aimd.backoff_ratio = p.backoff_ratio();
    // The other algorithm's fields: read by nothing.
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
    if (!unused.empty()) {
      Warn(absl::StrCat(path, ": ", absl::StrJoin(unused, ", "),
                        unused.size() == 1 ? " is" : " are", " not used by algorithm ",
                        aimd ? "AIMD" : "GRADIENT", ", ignored"));
    }
    const absl::Status valid = aimd ? AimdConcurrencyLimiter::Validate(a.aimd)
                                    : GradientConcurrencyLimiter::Validate(a.gradient);
    if (!valid.ok()) return AtPath(valid, "", path);
    return a;
  }

  absl::StatusOr<FaultInjectionSettings> FaultInjection(const pb::FaultInjectionPolicy& p,
                                                        const std::string& path) {
    FaultInjectionSettings f;
    if (absl::Status s = ReadDurations(path, {{"delay", p.has_delay(), p.delay(),
                                               NonNegative(kMaxPolicyInterval), &f.delay}});
        !s.ok()) {
      return s;
    }
    if (p.has_delay()) f.delay_fraction = 1.0;
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

  // retryThrottling or a retryBudget at `path`: the set fields over
  // RetryBudget::Options' defaults, checked by RetryBudget itself.
  absl::StatusOr<RetryBudgetSettings> ReadRetryBudget(const pb::RetryThrottling& p,
                                                      const std::string& path) {
    RetryBudget::Options o;
    if (p.has_max_tokens()) o.max_tokens = p.max_tokens();
    if (p.has_token_ratio()) o.token_ratio = p.token_ratio();
    if (absl::Status s = AtPath(RetryBudget::Validate(o), "retry_budget.", path); !s.ok()) {
      return s;
    }
    return o;
  }

  // The policy makes more than one attempt of a call: retries or hedges.
  static bool Reissues(const MethodPolicy& policy) {
    return (policy.retry.has_value() && policy.retry->max_attempts > 1) ||
           policy.hedging.has_value();
  }

  PolicySet set_;
  bool any_retries_ = false;  // some entry has a retryPolicy with maxAttempts > 1
  std::string default_path_;
  absl::flat_hash_map<std::string, std::string> name_paths_;  // name -> where
};

absl::StatusOr<PolicySet> PolicySet::FromJsonString(absl::string_view json,
                                                    LoadOptions options) {
  // Editors on Windows start UTF-8 files with a byte-order mark; RFC 8259
  // lets a parser ignore it, and protobuf's would refuse the file without
  // saying where. Positions below are counted without it, as an editor
  // shows them.
  absl::ConsumePrefix(&json, "\xEF\xBB\xBF");
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

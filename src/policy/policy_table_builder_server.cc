// File: src/policy/policy_table_builder_server.cc
//
// PolicyTableBuilder: the server's settings of an entry, throttle (with its
// adaptive limit) and faultInjection.

#include <algorithm>
#include <array>
#include <optional>

#include "absl/strings/str_cat.h"
#include "src/limits/aimd_concurrency_limiter.h"
#include "src/limits/cpu_utilisation_meter.h"
#include "src/limits/fixed_concurrency_limiter.h"
#include "src/limits/gradient_concurrency_limiter.h"
#include "src/policy/deadline_admission_settings.h"
#include "src/policy/enforcement_setting.h"
#include "src/policy/json_text.h"
#include "src/policy/per_caller_policy.h"
#include "src/policy/retry_shedding_policy.h"
#include "src/policy/policy_table_builder.h"
#include "src/policy/status_codes.h"

namespace resilience {
namespace {

namespace pb = ::resilience::v1;

using internal::Printable;

}  // namespace

absl::StatusOr<ThrottleSettings> PolicyTableBuilder::Throttle(const pb::ThrottlePolicy& p,
                                                              const std::string& path) {
  ThrottleSettings t;
  if (!p.has_max_concurrency() && !p.has_rate_per_second() && !p.has_adaptive() &&
      !p.has_global() && !p.has_per_caller() && !p.has_cpu() && !p.has_deadline_admission()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": set maxConcurrency or adaptive, ratePerSecond, or both (or global, perCaller, cpu, "
        "deadlineAdmission)",
        p.has_load_report() ? "; loadReport alone has no load to report" : ""));
  }
  if (absl::Status s = ReadThrottleLimits(p, path, t); !s.ok()) return s;
  if (absl::Status s = ReadThrottleBlocks(p, path, t); !s.ok()) return s;
  if (absl::Status s = ReadThrottleEnforcement(p, path, t); !s.ok()) return s;
  if (absl::Status s = ReadRetryShedding(p, path, t); !s.ok()) return s;
  if (t.max_pushback < t.min_pushback) {
    return Invalid(path + ".maxPushback",
                   absl::StrCat(">= minPushback (", absl::FormatDuration(t.min_pushback), ")"),
                   absl::FormatDuration(t.max_pushback));
  }
  return t;
}

absl::Status PolicyTableBuilder::ReadThrottleLimits(const pb::ThrottlePolicy& p,
                                                   const std::string& path, ThrottleSettings& t) {
  if (p.has_adaptive()) {
    if (absl::Status s = Assign(
            AdaptiveLimit(p.adaptive(), path + ".adaptive", p.has_max_concurrency(), path),
            t.adaptive);
        !s.ok()) {
      return s;
    }
  }
  if (p.has_max_concurrency()) {
    if (absl::Status s = AtPath(FixedConcurrencyLimiter::Validate(p.max_concurrency()), "", path);
        !s.ok()) {
      return s;
    }
    t.max_concurrency = p.max_concurrency();
  }
  int64_t burst = 0;
  if (absl::Status s = ReadTokenRate(path, p.has_rate_per_second(), p.rate_per_second(),
                                     p.has_burst(), p.burst(), &t.rate_per_second, &burst);
      !s.ok()) {
    return s;
  }
  if (p.has_rate_per_second()) t.burst = static_cast<int>(burst);  // Validate(): in [1, 1e9]
  return ReadDurations(path, {{"minPushback", p.has_min_pushback(), p.min_pushback(),
                               Positive(kMaxPolicyInterval), &t.min_pushback},
                              {"maxPushback", p.has_max_pushback(), p.max_pushback(),
                               Positive(kMaxPolicyInterval), &t.max_pushback}});
}

absl::Status PolicyTableBuilder::ReadThrottleBlocks(const pb::ThrottlePolicy& p,
                                                   const std::string& path, ThrottleSettings& t) {
  absl::Status s;
  if (s.ok() && p.has_criticality_shares()) {
    s = Assign(ReadCriticalityShares(p.criticality_shares(), path + ".criticalityShares"),
               t.criticality_shares);
  }
  if (s.ok() && p.has_global()) {
    s = Assign(ReadGlobalThrottle(p.global(), path + ".global"), t.global);
  }
  if (s.ok() && p.has_per_caller()) {
    s = Assign(ReadPerCallerThrottle(p.per_caller(), path + ".perCaller"), t.per_caller);
  }
  if (s.ok() && p.has_cpu()) s = ReadCpu(p.cpu(), path + ".cpu", t);
  if (!s.ok()) return s;
  if (p.has_load_report()) t.load_report = p.load_report();
  if (!p.has_deadline_admission()) return absl::OkStatus();
  return Assign(ReadDeadlineAdmission(p.deadline_admission(), path + ".deadlineAdmission"),
                t.deadline_admission);
}

absl::Status PolicyTableBuilder::ReadCpu(const pb::CpuThrottle& p, const std::string& path,
                                         ThrottleSettings& t) {
  if (!p.has_threshold()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".threshold: required"));
  }
  if (absl::Status s = AtPath(CpuUtilisationMeter::ValidateThreshold(p.threshold()), "", path);
      !s.ok()) {
    return s;
  }
  t.cpu_threshold = p.threshold();
  return absl::OkStatus();
}

// ReadThrottleEnforcement()
//
// The `enforcement` of the throttle's blocks into `t` (perCaller's is read
// with perCaller; perCaller.global has none of its own).
absl::Status PolicyTableBuilder::ReadThrottleEnforcement(const pb::ThrottlePolicy& p,
                                                        const std::string& path,
                                                        ThrottleSettings& t) {
  struct Field {
    const std::string& value;
    std::string path;
    EnforcementMode* out;
  };
  const Field fields[] = {
      {p.enforcement(), path, &t.enforcement},
      {p.criticality_shares().enforcement(), path + ".criticalityShares", &t.shares_enforcement},
      {p.cpu().enforcement(), path + ".cpu", &t.cpu_enforcement},
  };
  for (const Field& f : fields) {
    absl::StatusOr<EnforcementMode> mode = ReadEnforcement(f.value, f.path);
    if (!mode.ok()) return mode.status();
    *f.out = *mode;
  }
  if (t.global.has_value()) {
    absl::StatusOr<EnforcementMode> mode = ReadEnforcement(p.global().enforcement(), path + ".global");
    if (!mode.ok()) return mode.status();
    t.global->enforcement = *mode;
  }
  if (!p.per_caller().global().enforcement().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ".perCaller.global.enforcement: not a field of its own here: perCaller.global "
              "follows ",
        path, ".perCaller.enforcement"));
  }
  return absl::OkStatus();
}

absl::StatusOr<CriticalityShares> PolicyTableBuilder::ReadCriticalityShares(
    const pb::CriticalityShares& p, const std::string& path) {
  std::array<double, kCriticalityLevels> shares = CriticalityShares().shares();
  if (p.has_critical_plus()) shares[CriticalityIndex(Criticality::kCriticalPlus)] = p.critical_plus();
  if (p.has_critical()) shares[CriticalityIndex(Criticality::kCritical)] = p.critical();
  if (p.has_sheddable_plus()) {
    shares[CriticalityIndex(Criticality::kSheddablePlus)] = p.sheddable_plus();
  }
  if (p.has_sheddable()) shares[CriticalityIndex(Criticality::kSheddable)] = p.sheddable();
  if (absl::Status s = AtPath(CriticalityShares::Validate(shares), "criticality_shares.", path);
      !s.ok()) {
    return s;
  }
  return CriticalityShares(shares);
}

absl::StatusOr<CriticalitySettings> PolicyTableBuilder::ReadCriticality(
    const pb::CriticalityPolicy& p, const std::string& path) {
  CriticalitySettings c;
  const auto level = [&](const std::string& name,
                         const std::string& field) -> absl::StatusOr<Criticality> {
    std::optional<Criticality> parsed = ParseCriticality(name);
    if (!parsed.has_value()) {
      return Invalid(absl::StrCat(path, ".", field),
                     "\"CRITICAL_PLUS\", \"CRITICAL\", \"SHEDDABLE_PLUS\" or \"SHEDDABLE\"",
                     absl::StrCat("\"", Printable(name, 64), "\""));
    }
    return *parsed;
  };
  if (!p.ceiling().empty()) {
    absl::StatusOr<Criticality> ceiling = level(p.ceiling(), "ceiling");
    if (!ceiling.ok()) return ceiling.status();
    c.ceiling = *ceiling;
  }
  c.default_level = LessCritical(Criticality::kCritical, c.ceiling);
  if (!p.default_level().empty()) {
    absl::StatusOr<Criticality> default_level = level(p.default_level(), "default");
    if (!default_level.ok()) return default_level.status();
    if (LessCritical(*default_level, c.ceiling) != *default_level) {
      return Invalid(path + ".default",
                     absl::StrCat("at most the ceiling (\"", CriticalityName(c.ceiling), "\")"),
                     absl::StrCat("\"", CriticalityName(*default_level), "\""));
    }
    c.default_level = *default_level;
  }
  return c;
}

absl::StatusOr<AdaptiveLimitSettings> PolicyTableBuilder::AdaptiveLimit(
    const pb::AdaptiveThrottle& p, const std::string& path, bool has_max_concurrency,
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
  const absl::Status valid = aimd ? AimdConcurrencyLimiter::Validate(a.aimd)
                                  : GradientConcurrencyLimiter::Validate(a.gradient);
  if (!valid.ok()) return AtPath(valid, "", path);
  return a;
}

absl::StatusOr<FaultInjectionSettings> PolicyTableBuilder::FaultInjection(
    const pb::FaultInjectionPolicy& p, const std::string& path) {
  FaultInjectionSettings f;
  if (absl::Status s = ReadDurations(
          path, {{"delay", p.has_delay(), p.delay(), NonNegative(kMaxPolicyInterval), &f.delay}});
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
    absl::StatusOr<absl::StatusCode> code = ReadStatusCode(path + ".abortCode", p.abort_code());
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

}  // namespace resilience

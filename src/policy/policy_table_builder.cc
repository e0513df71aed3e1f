// File: src/policy/policy_table_builder.cc
//
// PolicyTableBuilder: the file, its entries and names, the shared checks.

#include "src/policy/policy_table_builder.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "src/policy/fallback_settings.h"
#include "src/policy/hedging_settings.h"
#include "src/policy/json_text.h"
#include "src/policy/load_balancing_checker.h"
#include "src/policy/policy_canonical_forms.h"
#include "src/policy/policy_lint.h"
#include "src/retry/retry_budget.h"

namespace resilience {
namespace {

namespace pb = ::resilience::v1;

using internal::Printable;
using internal::SnakeToCamel;

}  // namespace

absl::StatusOr<PolicyTable> PolicyTableBuilder::Build(const pb::PolicyFile& file) {
  absl::StatusOr<LoadBalancingSettings> lb = LoadBalancingChecker::Check(file, set_.warnings_);
  if (!lb.ok()) return lb.status();
  set_.load_balancing_ = *std::move(lb);
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
  }
  PolicyLint::File(file, set_.policies_, set_.warnings_);
  // The library's safety default: a method that hedges always keeps a
  // budget of its own, since gRPC's throttle charges failures only and so
  // cannot bound hedges on a backend that is slow without failing; a
  // method that retries keeps one when gRPC's throttle is absent.
  for (MethodPolicy& policy : set_.policies_) {
    const bool needs_budget = policy.hedging.has_value() ||
                              (!file.has_retry_throttling() && PolicyLint::Reissues(policy));
    if (needs_budget && !policy.retry_budget.has_value() && !policy.windowed_budget.has_value()) {
      policy.retry_budget = RetryBudgetSettings();
    }
  }
  return std::move(set_);
}

// Every scope with a throttle.global or a throttle.perCaller.global: the
// names of the file, and the default entry's "".
std::vector<GlobalThrottleScope> PolicyTableBuilder::GlobalThrottleScopes() const {
  std::vector<GlobalThrottleScope> scopes;
  auto add = [&](const std::string& scope, size_t index) {
    const MethodPolicy& p = set_.policies_[index];
    if (!p.throttle) return;
    if (p.throttle->global) scopes.push_back({scope, &*p.throttle->global});
    if (p.throttle->per_caller && p.throttle->per_caller->global) {
      scopes.push_back({scope, &*p.throttle->per_caller->global, /*per_caller=*/true});
    }
  };
  for (const auto& [scope, index] : set_.by_name_) add(scope, index);
  if (set_.default_index_) add("", *set_.default_index_);
  return scopes;
}

void PolicyTableBuilder::NotApplied(absl::string_view path, absl::string_view hint) {
  Warn(absl::StrCat(path, ": accepted for compatibility with gRPC service configs, not applied",
                    hint.empty() ? "" : "; ", hint));
}

std::string PolicyTableBuilder::Show(const google::protobuf::Duration& d) {
  return absl::FormatDuration(ToDuration(d));
}

absl::Status PolicyTableBuilder::CheckFraction(absl::string_view path, double value) {
  if (!(value >= 0.0 && value <= 1.0)) return Invalid(path, "in [0, 1]", value);
  return absl::OkStatus();
}

absl::Status PolicyTableBuilder::AtPath(const absl::Status& s, absl::string_view prefix,
                                        absl::string_view path) {
  if (s.ok()) return s;
  const std::string message =
      prefix.empty() ? absl::StrCat(path, ".", s.message())
                     : absl::StrReplaceAll(s.message(), {{prefix, absl::StrCat(path, ".")}});
  return absl::InvalidArgumentError(SnakeToCamel(message));
}

absl::Status PolicyTableBuilder::AddEntry(const pb::MethodConfig& entry, const std::string& path) {
  if (entry.name_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ".name: must list at least one name ({\"service\": ...} or {} for the default)"));
  }
  if (entry.has_hedging_policy() && entry.has_retry_policy()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".hedgingPolicy: cannot be set together with ", path,
                     ".retryPolicy (as in gRPC, an entry either retries or hedges)"));
  }
  MethodPolicy policy;
  policy.source = path;
  for (auto read : {&PolicyTableBuilder::ReadTimeout, &PolicyTableBuilder::ReadRetries,
                    &PolicyTableBuilder::ReadOthers}) {
    if (absl::Status s = (this->*read)(entry, path, policy); !s.ok()) return s;
  }
  PolicyLint::Entry(entry, policy, path, set_.warnings_);
  policy.canonical = PolicyCanonicalForms(entry);
  set_.policies_.push_back(std::move(policy));
  return AddNames(entry, path, set_.policies_.size() - 1);
}

absl::Status PolicyTableBuilder::ReadTimeout(const pb::MethodConfig& entry,
                                             const std::string& path, MethodPolicy& policy) {
  absl::Duration timeout, deadline;
  if (absl::Status s = ReadDurations(path, {{"timeout", entry.has_timeout(), entry.timeout(),
                                             Positive(kMaxPolicyCallTime), &timeout},
                                            {"deadline", entry.has_deadline(), entry.deadline(),
                                             Positive(kMaxPolicyCallTime), &deadline}});
      !s.ok()) {
    return s;
  }
  if (entry.has_timeout()) policy.timeout = timeout;
  if (!entry.has_deadline()) return absl::OkStatus();
  if (entry.has_timeout()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ".deadline (", Show(entry.deadline()), ") and ", path, ".timeout (",
        Show(entry.timeout()),
        ") are both set; deadline is a deprecated alias of timeout (the call's overall "
        "deadline): keep only timeout (a limit per attempt is "
        "retryPolicy.perAttemptTimeout)"));
  }
  policy.timeout = deadline;
  Warn(absl::StrCat(path,
                    ".deadline: deprecated alias of timeout (the call's overall deadline); "
                    "write timeout"));
  return absl::OkStatus();
}

absl::Status PolicyTableBuilder::ReadRetries(const pb::MethodConfig& entry,
                                             const std::string& path, MethodPolicy& policy) {
  if (entry.has_retry_policy()) {
    absl::StatusOr<RetrySettings> retry = Retry(entry.retry_policy(), path + ".retryPolicy");
    if (!retry.ok()) return retry.status();
    policy.retry = *std::move(retry);
  }
  if (!entry.has_retry_budget()) return absl::OkStatus();
  if (entry.retry_budget().has_ttl()) {
    absl::StatusOr<WindowedRetryBudget::Options> budget =
        ReadWindowedRetryBudget(entry.retry_budget(), path + ".retryBudget");
    if (!budget.ok()) return budget.status();
    policy.windowed_budget = *budget;
    return absl::OkStatus();
  }
  absl::StatusOr<RetryBudgetSettings> budget =
      ReadRetryBudget(entry.retry_budget(), path + ".retryBudget");
  if (!budget.ok()) return budget.status();
  policy.retry_budget = *budget;
  return absl::OkStatus();
}

absl::Status PolicyTableBuilder::ReadOthers(const pb::MethodConfig& entry,
                                            const std::string& path, MethodPolicy& policy) {
  if (entry.has_wait_for_ready()) policy.wait_for_ready = entry.wait_for_ready();
  absl::Status s;
  if (s.ok() && entry.has_breaker()) {
    s = Breaker(entry.breaker(), path + ".breaker", policy.breaker);
  }
  if (s.ok() && entry.has_criticality()) {
    s = Assign(ReadCriticality(entry.criticality(), path + ".criticality"), policy.criticality);
  }
  if (s.ok() && entry.has_throttle()) {
    s = Assign(Throttle(entry.throttle(), path + ".throttle"), policy.throttle);
  }
  if (s.ok() && entry.has_bulkhead()) {
    s = Assign(ReadBulkhead(entry.bulkhead(), path + ".bulkhead"), policy.bulkhead);
  }
  if (s.ok() && entry.has_fallback()) {
    s = Assign(ReadFallback(entry, path + ".fallback", set_.warnings_), policy.fallback);
  }
  if (s.ok() && entry.has_fault_injection()) {
    s = Assign(FaultInjection(entry.fault_injection(), path + ".faultInjection"),
               policy.fault_injection);
  }
  if (!s.ok()) return s;
  if (entry.has_max_request_message_bytes()) NotApplied(path + ".maxRequestMessageBytes");
  if (entry.has_max_response_message_bytes()) NotApplied(path + ".maxResponseMessageBytes");
  if (!entry.has_hedging_policy()) return absl::OkStatus();
  return Assign(
      ReadHedgingSettings(entry.hedging_policy(), path + ".hedgingPolicy", set_.warnings_),
      policy.hedging);
}

absl::Status PolicyTableBuilder::AddNames(const pb::MethodConfig& entry, const std::string& path,
                                          size_t index) {
  for (int n = 0; n < entry.name_size(); ++n) {
    const pb::MethodName& name = entry.name(n);
    const std::string name_path = absl::StrCat(path, ".name[", n, "]");
    set_.names_.push_back(PolicyTable::Name{name.service(), name.method(), name_path});
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
        return absl::InvalidArgumentError(
            absl::StrCat(name_path, ": a second default ({}); the first is in ", default_path_));
      }
      set_.default_index_ = index;
      default_path_ = name_path;
      continue;
    }
    const std::string key = absl::StrCat(name.service(), "/", name.method());
    if (auto [it, inserted] = set_.by_name_.emplace(key, index); !inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_path, ": ", name.method().empty() ? "service " : "method ", key,
                       " is named twice; first in ", name_paths_[key]));
    }
    name_paths_[key] = name_path;
  }
  return absl::OkStatus();
}

absl::StatusOr<RetryBudgetSettings> PolicyTableBuilder::ReadRetryBudget(
    const pb::RetryThrottling& p, const std::string& path) {
  if (p.has_ttl() || p.has_initial_tokens() || p.has_min_retries_per_second()) {
    // Only our retryBudget scales with the calls; gRPC's retryThrottling
    // keeps gRPC's meaning, and a retryBudget without ttl is a bucket.
    const bool throttling = path == "retryThrottling";
    const char* field = p.has_ttl()              ? "ttl"
                        : p.has_initial_tokens() ? "initialTokens"
                                                 : "minRetriesPerSecond";
    return absl::InvalidArgumentError(absl::StrCat(
        path, ".", field, ": ",
        throttling ? "not a field of gRPC's retryThrottling; a budget that scales with the calls "
                     "is a methodConfig entry's retryBudget with a ttl"
                   : absl::StrCat(field, " is for a budget with a ttl; set ttl too, or remove it")));
  }
  RetryBudget::Options o;
  if (p.has_max_tokens()) o.max_tokens = p.max_tokens();
  if (p.has_token_ratio()) o.token_ratio = p.token_ratio();
  if (absl::Status s = AtPath(RetryBudget::Validate(o), "retry_budget.", path); !s.ok()) {
    return s;
  }
  WarnIfTokenRatioRounded(p, path);
  return o;
}

// A retryBudget with a ttl at `path`: the set fields over
// WindowedRetryBudget::Options' defaults, checked by the budget itself;
// maxTokens, which only a bucket has, is ignored with a warning.
absl::StatusOr<WindowedRetryBudget::Options> PolicyTableBuilder::ReadWindowedRetryBudget(
    const pb::RetryThrottling& p, const std::string& path) {
  WindowedRetryBudget::Options o;
  if (p.has_token_ratio()) o.token_ratio = p.token_ratio();
  o.ttl = ToDuration(p.ttl());
  if (p.has_initial_tokens()) o.initial_tokens = p.initial_tokens();
  if (p.has_min_retries_per_second()) o.min_retries_per_second = p.min_retries_per_second();
  if (absl::Status s = AtPath(WindowedRetryBudget::Validate(o), "retry_budget.", path); !s.ok()) {
    return s;
  }
  WarnIfTokenRatioRounded(p, path);
  if (p.has_max_tokens()) {
    Warn(absl::StrCat(path, ".maxTokens: ignored with ttl (the budget is the calls' tokenRatio "
                            "over the ttl, not a bucket); remove it"));
  }
  return o;
}

void PolicyTableBuilder::WarnIfTokenRatioRounded(const pb::RetryThrottling& p,
                                                 const std::string& path) {
  if (!p.has_token_ratio()) return;
  const double used = static_cast<double>(RetryBudget::RatioMilli(p.token_ratio())) / 1000;
  if (std::abs(used - p.token_ratio()) < 1e-9) return;
  Warn(absl::StrCat(path, ".tokenRatio: kept to three decimals, as gRPC keeps it: ",
                    p.token_ratio(), " is used as ", used));
}

}  // namespace resilience

// ServerResilienceImpl's enforcement modes: SetEnforcement() and Update()'s
// part for `enforcement` (server_resilience_impl.h,
// docs/shadow-mode-server.md).

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/policy/policy_set_access.h"
#include "src/server_interceptors/server_resilience_impl.h"

namespace resilience {
namespace {

// The entry of `table` named exactly `scope` ("svc/method", "svc/" or ""
// for the default); policy null when there is none.
PolicyTable::Match FindScope(const PolicyTable& table, absl::string_view scope) {
  PolicyTable::Match match = table.Find(absl::StrCat("/", scope));
  if (match.policy == nullptr || match.scope != scope) return PolicyTable::Match{};
  return match;
}

// The throttle of `settings` has the block `policy` switches.
bool HasBlock(const ThrottleSettings& settings, EnforcedPolicy policy) {
  switch (policy) {
    case EnforcedPolicy::kPerCaller:
      return settings.per_caller.has_value();
    case EnforcedPolicy::kCpu:
      return settings.cpu_threshold.has_value();
    case EnforcedPolicy::kGlobal:
      return settings.global.has_value();
    default:
      return true;
  }
}

absl::string_view BlockPath(EnforcedPolicy policy) {
  switch (policy) {
    case EnforcedPolicy::kThrottle:
      return "throttle";
    case EnforcedPolicy::kCriticalityShares:
      return "throttle.criticalityShares";
    case EnforcedPolicy::kCpu:
      return "throttle.cpu";
    case EnforcedPolicy::kPerCaller:
      return "throttle.perCaller";
    case EnforcedPolicy::kGlobal:
      return "throttle.global";
    default:
      return EnforcedPolicyName(policy);
  }
}

// The method's count for `policy` in shadow.
int64_t ShadowCount(const ServerMethodState& s, EnforcedPolicy policy) {
  switch (policy) {
    case EnforcedPolicy::kThrottle:
      return s.shadow_throttle.load(std::memory_order_relaxed);
    case EnforcedPolicy::kCriticalityShares:
      return s.shadow_shares.load(std::memory_order_relaxed);
    case EnforcedPolicy::kCpu:
      return s.shadow_cpu.load(std::memory_order_relaxed);
    case EnforcedPolicy::kPerCaller:
      return s.shadow_per_caller.load(std::memory_order_relaxed);
    case EnforcedPolicy::kGlobal:
      return s.shadow_global.load(std::memory_order_relaxed);
    default:
      return 0;
  }
}

}  // namespace

void ServerResilienceImpl::AppendShadowSamples(const ServerMethodState& s,
                                               PrometheusText::Family& family) {
  if (s.limits == nullptr) return;
  const EnforcementModes modes = s.limits->enforcement.Load();
  for (EnforcedPolicy policy : ScopeEnforcement::kPolicies) {
    const int64_t count = ShadowCount(s, policy);
    if (count == 0 && ModeOf(modes, policy) != EnforcementMode::kShadow) continue;
    family.Sample({{"grpc_method", s.method}, {"policy", std::string(EnforcedPolicyName(policy))}},
                  count);
  }
}

void ServerResilienceImpl::ShadowStatus(const ServerMethodState& s, const ServerMethodStats& stats,
                                        ServerMethodStatus& row) {
  row.shadow_rejected = stats.shadow_throttle + stats.shadow_shares + stats.shadow_cpu +
                        stats.shadow_per_caller + stats.shadow_global;
  if (s.limits != nullptr) row.enforcement = EnforcementText(s.limits->enforcement.Load());
}

std::string ServerResilienceImpl::EnforcementText(const EnforcementModes& modes) {
  std::string text;
  for (EnforcedPolicy policy : ScopeEnforcement::kPolicies) {
    const EnforcementMode mode = ModeOf(modes, policy);
    if (mode == EnforcementMode::kEnforce) continue;
    absl::StrAppend(&text, text.empty() ? "" : ", ", EnforcedPolicyName(policy), ": ",
                    EnforcementModeName(mode));
  }
  return text;
}

void ServerResilienceImpl::ApplyEnforcement(const PolicyTable& before, const PolicyTable& after) {
  std::vector<std::pair<std::string, std::shared_ptr<ScopeLimits>>> scopes;
  {
    MutexLock lock(&mu_);
    for (const auto& [scope, limits] : scopes_) scopes.emplace_back(scope, limits);
  }
  for (const auto& [scope, limits] : scopes) {
    const PolicyTable::Match now = FindScope(after, scope);
    if (now.policy == nullptr || !now.policy->throttle) continue;
    const PolicyTable::Match was = FindScope(before, scope);
    const EnforcementModes file = ScopeEnforcement::Of(*now.policy->throttle);
    const EnforcementModes previous = was.policy != nullptr && was.policy->throttle
                                          ? ScopeEnforcement::Of(*was.policy->throttle)
                                          : EnforcementModes{};
    for (EnforcedPolicy policy : ScopeEnforcement::kPolicies) {
      if (ModeOf(file, policy) != ModeOf(previous, policy)) {
        limits->enforcement.Set(policy, ModeOf(file, policy));
      }
    }
  }
}

absl::Status ServerResilienceImpl::SetEnforcement(absl::string_view method, EnforcedPolicy policy,
                                                  EnforcementMode mode, absl::string_view origin) {
  const std::string what = absl::StrCat("SetEnforcement(\"", method, "\", ",
                                        EnforcedPolicyName(policy), ", ",
                                        EnforcementModeName(mode), ")");
  if (policy == EnforcedPolicy::kBreaker || policy == EnforcedPolicy::kBulkhead) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", EnforcedPolicyName(policy),
                     " is a client policy: switch it on the ClientResilience of the channels "
                     "that call the method"));
  }
  // Not while an Update() moves the scopes to new policies.
  MutexLock serial(&update_mu_);
  const std::shared_ptr<const Generation> generation = methods_.Current();
  const PolicyTable& table = PolicySetAccess::Table(generation->policies);
  const PolicyTable::Match match =
      absl::StartsWith(method, "/") ? table.Find(method) : FindScope(table, method);
  if (match.policy == nullptr || !match.policy->throttle) {
    return absl::NotFoundError(absl::StrCat(
        what, ": no throttle applies to ",
        absl::StartsWith(method, "/") ? "the method" : "the scope (\"svc/method\", \"svc/\" "
                                                       "or \"\" as the policy file names it)",
        " in the policies in force"));
  }
  const ThrottleSettings& settings = *match.policy->throttle;
  const std::string scope(match.scope);
  if (!HasBlock(settings, policy)) {
    return absl::NotFoundError(absl::StrCat(what, ": the throttle of scope \"", scope,
                                            "\" has no ", BlockPath(policy), " block"));
  }
  EnforcementMode from;
  {
    MutexLock lock(&mu_);
    std::shared_ptr<ScopeLimits> limits =
        LimitsFor(scope, settings, match.policy->canonical.throttle);
    from = limits->enforcement.Get(policy);
    limits->enforcement.Set(policy, mode);
  }
  const std::string line = absl::StrCat(
      "grpc_resilience: operator: ", BlockPath(policy), " of scope \"", scope, "\" (", method,
      "): ", EnforcementModeName(from), " -> ", EnforcementModeName(mode), " (", origin, ")\n");
  std::fwrite(line.data(), 1, line.size(), stderr);  // one write: lines do not interleave
  return absl::OkStatus();
}

}  // namespace resilience

// ServerResilienceImpl's rows of the status page (server_resilience_impl.h):
// every method called so far, and every method the policies name before
// its first call, with its limits.

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "src/policy/method_catalog.h"
#include "src/policy/policy_set_access.h"
#include "src/server_interceptors/server_resilience_impl.h"

namespace resilience {
namespace {

// The limits `policy` gives a method, before its scope's limiter is made:
// a fixed limit, or an adaptive one's initial limit, and the rate.
void SettingsLimits(const MethodPolicy* policy, ServerMethodStatus& row) {
  if (policy == nullptr || !policy->throttle) return;
  const ThrottleSettings& t = *policy->throttle;
  row.concurrency_limit = t.max_concurrency;
  row.adaptive_limit = t.adaptive.has_value();
  if (t.adaptive.has_value()) {
    row.concurrency_limit = t.adaptive->algorithm == AdaptiveLimitSettings::Algorithm::kGradient
                                ? t.adaptive->gradient.initial_limit
                                : t.adaptive->aimd.initial_limit;
  }
  row.rate_limit = t.rate_per_second;
  row.rate_burst = t.rate_per_second > 0 ? t.burst : 0;
}

}  // namespace

void ServerResilienceImpl::AppendStatus(StatusReport& report, absl::string_view name) {
  const size_t first = report.server_methods.size();
  absl::flat_hash_set<std::string> listed;
  for (const std::shared_ptr<const ServerMethodState>& s : SortedStates()) {
    const ServerMethodStats stats = StatsOf(*s);
    ServerMethodStatus row;
    row.server = std::string(name);
    row.method = s->method;
    SettingsLimits(PolicySetAccess::Table(s->policies).Find(s->method).policy, row);
    row.admitted = stats.admitted;
    row.rejected = stats.rejected_concurrency + stats.rejected_rate + stats.rejected_cpu +
                   stats.rejected_retry + stats.rejected_deadline;
    row.rejected_retries = stats.rejected_retry;
    row.in_flight = stats.in_flight;
    // Where the limiter stands (an adaptive one moves).
    row.concurrency_limit = stats.concurrency_limit;
    row.adaptive_limit = s->limits != nullptr && s->limits->adaptive;
    ShadowStatus(*s, stats, row);
    listed.insert(row.method);
    report.server_methods.push_back(std::move(row));
  }
  // The methods the policies name, not called yet: listed from the start
  // with the limits their first call will meet (the scope's limiter when
  // another method of the scope made it).
  const std::shared_ptr<const Generation> generation = methods_.Current();
  const PolicyTable& table = PolicySetAccess::Table(generation->policies);
  for (const std::string& method : table.ConfiguredMethods(MethodCatalog::Linked())) {
    if (listed.contains(method)) continue;
    const PolicyTable::Match match = table.Find(method);
    if (match.policy == nullptr) continue;
    ServerMethodStatus row;
    row.server = std::string(name);
    row.method = method;
    SettingsLimits(match.policy, row);
    if (match.policy->throttle) {
      MutexLock lock(&mu_);
      auto it = scopes_.find(match.scope);
      const bool made = it != scopes_.end() && it->second != nullptr &&
                        it->second->form == match.policy->canonical.throttle;
      if (made && it->second->concurrency != nullptr) {
        row.concurrency_limit = it->second->concurrency->limit();
      }
      // The modes in force (an operator's), else the file's.
      row.enforcement = EnforcementText(made ? it->second->enforcement.Load()
                                             : ScopeEnforcement::Of(*match.policy->throttle));
    }
    report.server_methods.push_back(std::move(row));
  }
  std::sort(
      report.server_methods.begin() + static_cast<std::ptrdiff_t>(first),
      report.server_methods.end(),
      [](const ServerMethodStatus& a, const ServerMethodStatus& b) { return a.method < b.method; });
}

}  // namespace resilience

// ServerResilienceImpl's policy updates: Update(), ReloadFile(), the
// generation in force and the scopes' limits across updates
// (server_resilience_impl.h). What a method keeps of its state across an
// update: docs/operations.md, "Reloading policies".

#include <set>
#include <utility>

#include "src/policy/policy_diff.h"
#include "src/server_interceptors/server_resilience_impl.h"

namespace resilience {
namespace {

// The server's part of a method's policy: its throttle and fault injection
// (null: neither).
const MethodPolicy* ServerPolicy(const PolicyTable& table, absl::string_view method) {
  const MethodPolicy* policy = table.Find(method).policy;
  if (policy == nullptr || (!policy->throttle && !policy->fault_injection)) return nullptr;
  return policy;
}

}  // namespace

std::shared_ptr<const ServerResilienceImpl::Generation> ServerResilienceImpl::CurrentGeneration() {
  MutexLock lock(&generation_mu_);
  return generation_;
}

PolicySet ServerResilienceImpl::policies() { return CurrentGeneration()->policies; }

int64_t ServerResilienceImpl::generation() { return CurrentGeneration()->number; }

void ServerResilienceImpl::SetAnyPolicies(const PolicySet& policies) {
  bool throttle = false;
  bool fault = false;
  for (const MethodPolicy& p : PolicySetAccess::Table(policies).policies()) {
    throttle = throttle || p.throttle.has_value();
    fault = fault || p.fault_injection.has_value();
  }
  // Only ever set: a factory that skipped a lookup must not miss a method
  // an earlier generation limited (its state is replaced by Update()).
  if (throttle) any_throttle_.store(true, std::memory_order_release);
  if (fault) any_fault_injection_.store(true, std::memory_order_release);
}

std::shared_ptr<ScopeLimits> ServerResilienceImpl::LimitsFor(absl::string_view scope,
                                                             const ThrottleSettings& settings,
                                                             const std::string& form) {
  std::shared_ptr<ScopeLimits>& limits = scopes_[scope];
  if (limits != nullptr && limits->form == form) return limits;
  limits = MakeLimits(scope, settings, limits.get());
  limits->form = form;
  return limits;
}

absl::StatusOr<PolicyUpdate> ServerResilienceImpl::Update(const PolicySet& policies,
                                                          absl::string_view source) {
  MutexLock serial(&update_mu_);
  const std::shared_ptr<const Generation> old = CurrentGeneration();
  const PolicyTable& before = PolicySetAccess::Table(old->policies);
  const PolicyTable& after = PolicySetAccess::Table(policies);
  auto next = std::make_shared<Generation>();
  next->policies = policies;
  next->number = old->number + 1;
  SetAnyPolicies(policies);
  // From now on, a method resolved for the first time gets the new
  // policies; Replace() then moves every method resolved before.
  {
    MutexLock lock(&generation_mu_);
    generation_ = next;
  }
  std::set<std::string> names;
  methods_.Replace([&](const std::string& name, std::shared_ptr<ServerMethodState> current)
                       -> std::shared_ptr<ServerMethodState> {
    names.insert(name);
    if (current == nullptr) return Resolve(name.c_str(), *next).state;
    // Resolved since the swap above: already the new policies'.
    if (&PolicySetAccess::Table(current->policies) == &after) return current;
    const MethodPolicy* const policy = ServerPolicy(after, name);
    const std::string form = policy == nullptr ? "" : policy->canonical.server;
    // The same policy for the same scope (a throttle's limits are the
    // scope's): the same object, every part kept.
    const bool same_scope = policy == nullptr || !policy->throttle ||
                            (current->limits != nullptr &&
                             current->limits->scope == after.Find(name).scope);
    if (form == current->form && same_scope) return current;
    return Resolve(name.c_str(), *next, current.get()).state;
  });
  ApplyEnforcement(before, after);
  PolicyDiff diff = PolicyDiff::Of(before, after, std::move(names), ServerPolicy,
                                   &MethodPolicy::CanonicalForms::server);
  PolicyUpdate update;
  update.generation = next->number;
  update.changed = std::move(diff.changed);
  update.added = std::move(diff.added);
  update.removed = std::move(diff.removed);
  update.unchanged = diff.unchanged;
  if (fleet_limits_ == nullptr) {
    for (const MethodPolicy& policy : after.policies()) {
      if (!policy.throttle) continue;
      for (std::string& m : FleetLimitBackend::MissingMessages(*policy.throttle)) {
        update.warnings.push_back(std::move(m));
      }
    }
  }
  if (listener_ != nullptr) {
    PolicyReloadEvent event;
    event.component = "server";
    event.source = std::string(source);
    event.applied = true;
    event.update = update;
    listener_->OnPolicyReload(event);
  }
  return update;
}

absl::StatusOr<PolicyUpdate> ServerResilienceImpl::ReloadFile(
    const std::string& path, const PolicySet::LoadOptions& options) {
  absl::StatusOr<PolicySet> loaded = PolicySet::FromJsonFile(path, options);
  if (loaded.ok()) return Update(*loaded, path);
  failed_reloads_.fetch_add(1, std::memory_order_relaxed);
  if (listener_ != nullptr) {
    PolicyReloadEvent event;
    event.component = "server";
    event.source = path;
    event.error = std::string(loaded.status().message());
    event.update.generation = generation();
    listener_->OnPolicyReload(event);
  }
  return loaded.status();
}

}  // namespace resilience

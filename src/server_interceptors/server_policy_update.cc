// ServerResilienceImpl's policy updates: Update(), ReloadFile(), the
// generation in force and the scopes' limits across updates
// (server_resilience_impl.h). What a method keeps of its state across an
// update: docs/operations.md, "Reloading policies".

#include <utility>

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

PolicySet ServerResilienceImpl::policies() { return methods_.Current()->policies; }

int64_t ServerResilienceImpl::generation() { return methods_.Current()->number; }

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
  std::shared_ptr<ScopeLimits>& current = scopes_[scope];
  if (current != nullptr && current->form == form) return current;
  const ScopeLimits* const previous = current.get();
  auto limits = std::make_shared<ScopeLimits>();
  // Its limiters, sharing those of `previous` that stay meaningful.
  static_cast<ScopeLimiters&>(*limits) = limiters_.ForScope(scope, settings, previous);
  limits->scope = std::string(scope);
  limits->min_pushback = settings.min_pushback;
  limits->max_pushback = settings.max_pushback;
  limits->shares = settings.criticality_shares;
  if (settings.retry_shedding.has_value()) {
    limits->retry_shedding = RetryShedding(settings.criticality_shares, *settings.retry_shedding);
  }
  limits->load_report = settings.load_report;
  if (listener_ != nullptr) {
    // Shadow decisions go to the listener, on its thread, instead of stderr
    // (the listener outlives the executor, as for throttle events).
    limits->shadow_log.SetSink([listener = listener_.get(),
                                events = events_.get()](const ShadowLog::Report& r) {
      ShadowDecisionEvent event;
      event.component = "server";
      event.method = std::string(r.method);
      event.policy = r.policy;
      event.would_have_rejected = r.counted;
      event.total = r.total;
      event.since = r.since;
      event.at = r.at;
      event.last_reason = std::string(r.cause);
      events->Post([listener, event = std::move(event)] { listener->OnShadowDecisions(event); });
    });
  }
  // A rebuilt scope keeps its modes (ApplyEnforcement() then sets those the
  // update changed); a new one starts with the file's.
  limits->enforcement.SetAll(previous != nullptr ? previous->enforcement.Load()
                                                 : ScopeEnforcement::Of(settings));
  if (settings.cpu_threshold.has_value()) {
    limits->cpu_threshold = settings.cpu_threshold;
    limits->cpu_meter = &cpu_meter_;
  }
  limits->form = form;
  current = limits;
  return limits;
}

absl::StatusOr<PolicyUpdate> ServerResilienceImpl::Update(const PolicySet& policies,
                                                          absl::string_view source) {
  MutexLock serial(&update_mu_);
  const PolicyTable& after = PolicySetAccess::Table(policies);
  auto next = std::make_shared<Generation>();
  next->policies = policies;
  SetAnyPolicies(policies);
  // What a method keeps: its state whole for the same policy of the same
  // scope (a throttle's limits are the scope's).
  const auto keep = [&](const std::string& name, const ServerMethodState& current,
                        const Generation&) {
    const MethodPolicy* const policy = ServerPolicy(after, name);
    const std::string form = policy == nullptr ? "" : policy->canonical.server;
    const bool same_scope =
        policy == nullptr || !policy->throttle ||
        (current.limits != nullptr && current.limits->scope == after.Find(name).scope);
    return form == current.form && same_scope;
  };
  MethodRegistry<ServerMethodState, Generation>::Swap swap =
      methods_.Update(next, keep, ServerPolicy, &MethodPolicy::CanonicalForms::server);
  ApplyEnforcement(PolicySetAccess::Table(swap.before->policies), after);
  PolicyUpdate update = decltype(methods_)::UpdateOf<PolicyUpdate>(std::move(swap));
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

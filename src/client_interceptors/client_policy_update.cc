// ClientResilienceImpl's policy updates: Update(), ReloadFile() and the
// generation in force (client_resilience_impl.h). What a method keeps of its
// state across an update: docs/operations.md, "Reloading policies".

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/client_interceptors/breaker_event_queue.h"
#include "src/client_interceptors/client_resilience_impl.h"

namespace resilience {
namespace {

// The client applies a method's whole policy.
const MethodPolicy* ClientPolicy(const PolicyTable& table, absl::string_view method) {
  return table.Find(method).policy;
}

bool SameThrottling(const std::optional<RetryBudgetSettings>& a,
                    const std::optional<RetryBudgetSettings>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a.has_value() || (a->max_tokens == b->max_tokens && a->token_ratio == b->token_ratio);
}

// `text` quoted, or "none" when unset.
std::string Shown(const std::optional<std::string>& text) {
  return text.has_value() ? absl::StrCat("\"", *text, "\"") : "none";
}

// The channel's load-balancing fields that differ, each "field was -> now".
std::vector<std::string> LoadBalancingChanges(const LoadBalancingSettings& was,
                                              const LoadBalancingSettings& now) {
  std::vector<std::string> changes;
  if (was.configs != now.configs) {
    const auto list = [](const std::vector<std::string>& configs) {
      return configs.empty() ? std::string("none")
                             : absl::StrCat("[", absl::StrJoin(configs, ", "), "]");
    };
    changes.push_back(
        absl::StrCat("loadBalancingConfig ", list(was.configs), " -> ", list(now.configs)));
  }
  if (was.policy != now.policy) {
    const auto shown = [](const std::string& policy) {
      return Shown(policy.empty() ? std::nullopt : std::optional<std::string>(policy));
    };
    changes.push_back(
        absl::StrCat("loadBalancingPolicy ", shown(was.policy), " -> ", shown(now.policy)));
  }
  const auto routing = [](const std::optional<LoadBalancingSettings::Routing>& r) {
    return r.has_value() ? absl::StrCat("{\"resilience_p2c\": {\"slowStart\": \"",
                                        absl::FormatDuration(r->slow_start),
                                        "\", \"reresolveInterval\": \"",
                                        absl::FormatDuration(r->reresolve_interval), "\"}}")
                         : std::string("none");
  };
  if (routing(was.routing) != routing(now.routing)) {
    changes.push_back(absl::StrCat("loadBalancingConfig's resilience_p2c ", routing(was.routing),
                                   " -> ", routing(now.routing)));
  }
  if (was.health_check_service != now.health_check_service) {
    changes.push_back(absl::StrCat("healthCheckConfig.serviceName ",
                                   Shown(was.health_check_service), " -> ",
                                   Shown(now.health_check_service)));
  }
  return changes;
}

// What an update from `before` to `after` cannot apply on the live channel
// `channel` (`changed`: the methods whose policy changed).
std::vector<std::string> UpdateWarnings(absl::string_view channel, const PolicyTable& before,
                                        const PolicyTable& after,
                                        const std::vector<std::string>& changed) {
  std::vector<std::string> warnings;
  for (const std::string& name : changed) {
    if (before.Find(name).policy->wait_for_ready != after.Find(name).policy->wait_for_ready) {
      warnings.push_back(absl::StrCat(
          name, ": waitForReady changed; it is part of the channel's service config, set when "
                "the channel was created: a new channel applies it"));
    }
  }
  if (!SameThrottling(before.retry_throttling(), after.retry_throttling())) {
    warnings.push_back(
        "retryThrottling changed: the library's retries and hedges use the new bucket (full) "
        "now; gRPC's built-in retries of streaming calls keep the channel's service config "
        "from its creation");
  }
  if (std::vector<std::string> fixed =
          LoadBalancingChanges(before.load_balancing(), after.load_balancing());
      !fixed.empty()) {
    warnings.push_back(absl::StrCat(
        "channel ", channel, ": ", absl::StrJoin(fixed, "; "),
        ": not applied: gRPC 1.51 cannot change a live channel's service config, the channel "
        "keeps the one it was created with; a restart (a new channel) applies ",
        fixed.size() == 1 ? "it" : "them"));
  }
  return warnings;
}

}  // namespace

std::shared_ptr<RetryBudget> ClientResilienceImpl::MakeRetryThrottle(const PolicySet& policies) {
  const std::optional<RetryBudgetSettings>& settings =
      PolicySetAccess::Table(policies).retry_throttling();
  if (!settings.has_value()) return nullptr;
  return std::make_shared<RetryBudget>(settings->max_tokens, settings->token_ratio);
}

PolicySet ClientResilienceImpl::policies() { return CurrentGeneration()->policies; }

int64_t ClientResilienceImpl::generation() { return CurrentGeneration()->number; }

std::shared_ptr<const RetryBudget> ClientResilienceImpl::retry_throttle() {
  return CurrentGeneration()->throttle;
}

std::optional<RetryBudgetSettings> ClientResilienceImpl::retry_throttling() {
  return PolicySetAccess::Table(CurrentGeneration()->policies).retry_throttling();
}

std::optional<RetryThrottleState> ClientResilienceImpl::retry_throttle_state() {
  const std::shared_ptr<const Generation> generation = CurrentGeneration();
  const std::optional<RetryBudgetSettings>& settings =
      PolicySetAccess::Table(generation->policies).retry_throttling();
  if (generation->throttle == nullptr || !settings.has_value()) return std::nullopt;
  RetryThrottleState state;
  state.tokens = generation->throttle->tokens();
  state.max_tokens = settings->max_tokens;
  state.token_ratio = settings->token_ratio;
  return state;
}

absl::StatusOr<PolicyUpdate> ClientResilienceImpl::Update(const PolicySet& policies,
                                                          absl::string_view source) {
  MutexLock serial(&update_mu_);
  const std::shared_ptr<const Generation> old = CurrentGeneration();
  const PolicyTable& before = PolicySetAccess::Table(old->policies);
  const PolicyTable& after = PolicySetAccess::Table(policies);
  auto next = std::make_shared<Generation>();
  next->policies = policies;
  // The same retryThrottling keeps its bucket and its tokens.
  next->throttle = SameThrottling(before.retry_throttling(), after.retry_throttling())
                       ? old->throttle
                       : MakeRetryThrottle(policies);
  std::vector<OperatorEvent> switched;  // enforcement modes the file changed
  // What a method keeps: its state whole when its policy and the channel's
  // throttle are the same (its policy still points into the set it was made
  // from, which it holds: the same settings). The modes first, on the tally
  // the next state shares: switched in place.
  const auto keep = [&](const std::string& name, const ClientMethodState& current,
                        const Generation& generation) {
    const MethodPolicy* const policy = after.Find(name).policy;
    const bool same_policy =
        current.policy == nullptr
            ? policy == nullptr
            : policy != nullptr && policy->canonical.client == current.policy->canonical.client;
    ApplyFileEnforcement(current, policy, source, &switched);
    return same_policy && current.throttle == generation.throttle.get();
  };
  PolicyUpdate update = decltype(methods_)::UpdateOf<PolicyUpdate>(
      methods_.Update(next, keep, ClientPolicy, &MethodPolicy::CanonicalForms::client));
  update.warnings = UpdateWarnings(options_.name, before, after, update.changed);
  if (options_.events != nullptr) {
    PolicyReloadEvent event;
    event.component = absl::StrCat("channel ", options_.name);
    event.source = std::string(source);
    event.applied = true;
    event.update = update;
    options_.events->OnPolicyReload(event);
    // A breaker switched off was reset: its transition first.
    if (breaker_events_ != nullptr) breaker_events_->Deliver();
    for (const OperatorEvent& e : switched) options_.events->OnOperatorAction(e);
  }
  return update;
}

absl::StatusOr<PolicyUpdate> ClientResilienceImpl::ReloadFile(
    const std::string& path, const PolicySet::LoadOptions& options) {
  absl::StatusOr<PolicySet> loaded = PolicySet::FromJsonFile(path, options);
  if (loaded.ok()) return Update(*loaded, path);
  failed_reloads_.fetch_add(1, std::memory_order_relaxed);
  if (options_.events != nullptr) {
    PolicyReloadEvent event;
    event.component = absl::StrCat("channel ", options_.name);
    event.source = path;
    event.error = std::string(loaded.status().message());
    event.update.generation = generation();
    options_.events->OnPolicyReload(event);
  }
  return loaded.status();
}

}  // namespace resilience

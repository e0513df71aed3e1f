// ClientResilienceImpl's enforcement modes (client_resilience_impl.h): the
// policy file's, applied in place at each resolution and update, and an
// operator's (SetEnforcement()). What the modes do: docs/shadow-mode.md.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/client_interceptors/breaker_event_queue.h"
#include "src/client_interceptors/client_resilience_impl.h"

namespace resilience {

void ClientResilienceImpl::OnEnforcementSwitched(const ClientMethodState& state,
                                                 EnforcedPolicy policy, EnforcementMode mode) {
  if (policy != EnforcedPolicy::kBreaker || mode != EnforcementMode::kOff) return;
  // Off keeps no state: the breaker and its endpoints' start afresh when
  // switched on again.
  if (state.breaker != nullptr) state.breaker->Control(BreakerCommand::kReset);
  if (state.endpoint_breakers != nullptr) {
    for (const EndpointBreakers::EndpointState& e : state.endpoint_breakers->Snapshot()) {
      state.endpoint_breakers->Control(e.endpoint, BreakerCommand::kReset);
    }
  }
}

void ClientResilienceImpl::ApplyFileEnforcement(const ClientMethodState& state,
                                                const MethodPolicy* policy,
                                                absl::string_view source,
                                                std::vector<OperatorEvent>* switched) {
  MethodEnforcement& enforcement = state.tally->enforcement;
  enforcement.Bind(options_.events, options_.name, state.method);
  if (policy == nullptr) return;
  const auto apply = [&](EnforcedPolicy which, EnforcementMode file) {
    const std::optional<EnforcementMode> before = enforcement.ApplyFile(which, file);
    if (!before.has_value()) return;
    OnEnforcementSwitched(state, which, file);
    if (switched == nullptr || options_.events == nullptr) return;
    OperatorEvent event;
    event.channel = options_.name;
    event.method = state.method;
    event.origin = source.empty() ? std::string("policy file")
                                  : absl::StrCat("policy file ", source);
    event.enforcement = file;
    event.policy = which;
    event.previous = *before;
    event.applied = true;
    switched->push_back(std::move(event));
  };
  if (policy->breaker.kind != BreakerKind::kNone) {
    apply(EnforcedPolicy::kBreaker, policy->breaker.enforcement);
  }
  if (policy->bulkhead.has_value()) apply(EnforcedPolicy::kBulkhead, policy->bulkhead->enforcement);
}

absl::Status ClientResilienceImpl::SetEnforcement(absl::string_view method, EnforcedPolicy policy,
                                                  EnforcementMode mode,
                                                  absl::string_view origin) {
  OperatorEvent event;
  event.channel = options_.name;
  event.method = std::string(method);
  event.origin = std::string(origin);
  event.enforcement = mode;
  event.policy = policy;
  const std::string what =
      absl::StrCat("enforcement ", EnforcementModeName(mode), " of ", EnforcedPolicyName(policy),
                   " on channel '", options_.name, "'");
  absl::Status status;
  std::shared_ptr<ClientMethodState> s;
  if (!MethodEnforcement::Applies(policy)) {
    status = absl::InvalidArgumentError(absl::StrCat(
        what, " for method '", method, "': ", EnforcedPolicyName(policy),
        " is a server's policy (throttle, perCaller, cpu, global, criticalityShares): set it on "
        "the ServerResilience; a channel has breaker and bulkhead"));
  } else {
    bool known = false;
    s = StateForOperator(method, known, [policy](const MethodPolicy& p) {
      return policy == EnforcedPolicy::kBreaker ? p.breaker.kind != BreakerKind::kNone
                                                : p.bulkhead.has_value();
    });
    const bool has = s != nullptr && (policy == EnforcedPolicy::kBreaker ? s->breaker != nullptr
                                                                           : s->bulkhead != nullptr);
    if (!has) {
      status = absl::NotFoundError(absl::StrCat(
          what, ": no policy gives method '", method, "' a ", EnforcedPolicyName(policy),
          " (a methodConfig entry covering the method, a full name \"/package.Service/Method\","
          " with a \"", EnforcedPolicyName(policy), "\" field)"));
    }
  }
  if (status.ok()) {
    event.previous = s->tally->enforcement.Set(policy, mode);
    OnEnforcementSwitched(*s, policy, mode);
    event.applied = true;
  } else {
    event.error = std::string(status.message());
  }
  if (breaker_events_ != nullptr) breaker_events_->Deliver();
  if (options_.events != nullptr) options_.events->OnOperatorAction(event);
  return status;
}

}  // namespace resilience

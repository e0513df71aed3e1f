// ClientResilienceImpl's operator side (client_resilience_impl.h): the
// commands to breakers, the status report's rows. The call side is in
// client_resilience_impl.cc.

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/client_interceptors/breaker_event_queue.h"
#include "src/client_interceptors/client_resilience_impl.h"
#include "src/policy/method_catalog.h"
#include "src/policy/policy_set_access.h"

namespace resilience {

absl::Status ClientResilienceImpl::ControlBreaker(absl::string_view method,
                                                  BreakerCommand command,
                                                  absl::string_view origin) {
  OperatorEvent event;
  event.channel = options_.name;
  event.method = std::string(method);
  event.command = command;
  event.origin = std::string(origin);
  bool known = false;
  std::shared_ptr<ClientMethodState> s =
      StateForOperator(method, known, [](const MethodPolicy& policy) {
        return policy.breaker.kind != BreakerKind::kNone;
      });
  absl::Status status;
  if (!known) {
    status = absl::NotFoundError(absl::StrCat(
        "breaker ", BreakerCommandName(command), " on channel '", options_.name, "': method '",
        method, "' is not linked into this process, not named in the policy file and not",
        " called yet (a full name, \"/package.Service/Method\")"));
    event.error = std::string(status.message());
  } else if (s == nullptr || s->breaker == nullptr) {
    status = absl::NotFoundError(absl::StrCat(
        "breaker ", BreakerCommandName(command), " on channel '", options_.name, "': no policy",
        " gives method '", method, "' a circuit breaker (a breaker needs a methodConfig entry",
        " covering the method with a \"breaker\" field)"));
    event.error = std::string(status.message());
  } else {
    s->breaker->Control(command);
    event.applied = true;
    event.snapshot = s->breaker->Snapshot();
  }
  // A reset's transition was queued by the breaker's listener: delivered
  // first, then the command itself.
  if (breaker_events_ != nullptr) breaker_events_->Deliver();
  if (options_.events != nullptr) options_.events->OnOperatorAction(event);
  return status;
}

std::shared_ptr<ClientMethodState> ClientResilienceImpl::StateForOperator(
    absl::string_view method, bool& known, absl::FunctionRef<bool(const MethodPolicy&)> wanted) {
  std::shared_ptr<ClientMethodState> s = methods_.Get(method);
  known = s != nullptr;
  if (s != nullptr) return s;
  // Not called yet: made now if a policy gives it what is `wanted` and the
  // name is a real method (linked into the process, or named in the file),
  // not a typo that a service-wide entry would cover.
  const std::shared_ptr<const Generation> generation = CurrentGeneration();
  const PolicyTable::Match match = PolicySetAccess::Table(generation->policies).Find(method);
  const bool named = !match.scope.empty() && match.scope.back() != '/';
  known = named || MethodCatalog::Linked().Find(method) != nullptr;
  if (!known || match.policy == nullptr || !wanted(*match.policy)) return nullptr;
  return methods_.FindByName(method);
}

absl::Status ClientResilienceImpl::ControlEndpointBreaker(absl::string_view method,
                                                          absl::string_view endpoint,
                                                          BreakerCommand command,
                                                          absl::string_view origin) {
  OperatorEvent event;
  event.channel = options_.name;
  event.method = std::string(method);
  event.endpoint = std::string(endpoint);
  event.command = command;
  event.origin = std::string(origin);
  const std::shared_ptr<ClientMethodState> s = methods_.Get(method);
  absl::Status status;
  if (s == nullptr || s->endpoint_breakers == nullptr) {
    status = absl::NotFoundError(absl::StrCat(
        "breaker ", BreakerCommandName(command), " of endpoint '", endpoint, "' on channel '",
        options_.name, "': method '", method, "' ",
        s == nullptr ? "was not called yet" : "has no per-endpoint breakers (breaker.endpoints)"));
  } else if (!s->endpoint_breakers->Control(event.endpoint, command)) {
    std::vector<std::string> known;
    for (const EndpointBreakers::EndpointState& e : s->endpoint_breakers->Snapshot()) {
      known.push_back(e.endpoint);
    }
    status = absl::NotFoundError(absl::StrCat(
        "breaker ", BreakerCommandName(command), " of endpoint '", endpoint, "' on channel '",
        options_.name, "': method '", method, "' has not seen it recently (it knows ",
        known.empty() ? "none" : absl::StrJoin(known, ", "), ")"));
  } else {
    event.applied = true;
    for (const EndpointBreakers::EndpointState& e : s->endpoint_breakers->Snapshot()) {
      if (e.endpoint == event.endpoint) event.snapshot = e.breaker;
    }
  }
  if (!status.ok()) event.error = std::string(status.message());
  if (breaker_events_ != nullptr) breaker_events_->Deliver();
  if (options_.events != nullptr) options_.events->OnOperatorAction(event);
  return status;
}

void ClientResilienceImpl::AppendStatus(StatusReport& report) {
  // Every method the policies name is listed from the start, not from its
  // first call: its state is made as that call (or ControlBreaker()) would
  // make it.
  const std::shared_ptr<const Generation> generation = CurrentGeneration();
  for (const std::string& method :
       PolicySetAccess::Table(generation->policies).ConfiguredMethods(MethodCatalog::Linked())) {
    if (methods_.Get(method) != nullptr) continue;
    methods_.FindByName(method);
  }
  for (const std::shared_ptr<const ClientMethodState>& s : SortedStates()) {
    ClientMethodStatus row;
    row.channel = options_.name;
    row.method = s->method;
    if (s->breaker != nullptr) {
      row.breaker_kind = std::string(s->breaker->kind());
      row.breaker = s->breaker->Snapshot();
    }
    row.calls = s->calls.load(std::memory_order_relaxed);
    row.attempts = s->attempts.load(std::memory_order_relaxed);
    row.retries = s->retries.load(std::memory_order_relaxed);
    row.rejected_locally = s->rejected_by_breaker.load(std::memory_order_relaxed) +
                           s->rejected_by_bulkhead.load(std::memory_order_relaxed);
    const MethodEnforcement& enforcement = s->tally->enforcement;
    if (s->breaker != nullptr) {
      row.breaker_enforcement = std::string(EnforcementModeName(enforcement.breaker()));
    }
    if (s->bulkhead != nullptr) {
      row.bulkhead_enforcement = std::string(EnforcementModeName(enforcement.bulkhead()));
    }
    row.shadow_rejected = enforcement.breaker_total() + enforcement.bulkhead_total();
    if (s->endpoint_breakers != nullptr) {
      for (EndpointBreakers::EndpointState& e : s->endpoint_breakers->Snapshot()) {
        row.endpoints.push_back(
            EndpointStatus{std::move(e.endpoint), e.breaker, e.outcomes, e.refused});
      }
    }
    report.client_methods.push_back(std::move(row));
  }
  if (health_name_check_ != nullptr) health_name_check_->AppendStatus(report);
  if (router_ != nullptr) router_->AppendStatus(options_.name, report.routed_endpoints);
}

std::optional<BreakerSnapshot> ClientResilienceImpl::BreakerSnapshotOf(absl::string_view method) {
  const std::shared_ptr<ClientMethodState> s = methods_.Get(method);
  if (s == nullptr || s->breaker == nullptr) return std::nullopt;
  return s->breaker->Snapshot();
}

}  // namespace resilience

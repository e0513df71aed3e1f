#include "src/client_interceptors/client_resilience_impl.h"

#include <algorithm>
#include <array>
#include <cstddef>

#include "absl/strings/str_cat.h"
#include "src/client_interceptors/breaker_event_queue.h"
#include "src/client_interceptors/health_name_check.h"
#include "src/client_interceptors/health_probe_sender.h"
#include "src/policy/method_catalog.h"

namespace resilience {

// The public ClientMethodStats names each counter itself (StatsOf() copies
// them by name, so a counter without its field does not compile), and has
// no field of its own before calls_by_code (so a field without a counter
// fails here).
#define GRPC_RESILIENCE_COUNT_ONE(name) +1
static_assert(offsetof(ClientMethodStats, calls_by_code) ==
                  sizeof(int64_t) * (0 GRPC_RESILIENCE_CLIENT_COUNTERS(GRPC_RESILIENCE_COUNT_ONE)),
              "ClientMethodStats and GRPC_RESILIENCE_CLIENT_COUNTERS list different counters");
#undef GRPC_RESILIENCE_COUNT_ONE

ClientResilienceImpl::ClientResilienceImpl(PolicySet policies, Options options, Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      breaker_events_(options_.events != nullptr
                          ? std::make_shared<BreakerEventQueue>(options_.events)
                          : nullptr),
      methods_(
          [&policies] {
            auto first = std::make_shared<Generation>();
            first->throttle = MakeRetryThrottle(policies);
            first->policies = std::move(policies);
            return first;
          }(),
          [this](const char* method, const Generation& generation,
                 const ClientMethodState* previous) {
            return Resolve(method, generation, previous);
          }) {}

void ClientResilienceImpl::EnableHealthProbes(const std::string& target,
                                              std::shared_ptr<grpc::ChannelCredentials> credentials,
                                              const grpc::ChannelArguments& args) {
  // Transitions an answer causes wait in the queue like any other: no call
  // is there to deliver them, so the events thread does.
  probe_sender_ = std::make_unique<HealthProbeSender>(
      target, std::move(credentials), args, clock_, [events = breaker_events_] {
        if (events != nullptr && events->pending()) events->DeliverOnEventsThread();
      });
  const std::optional<std::string>& health =
      PolicySetAccess::Table(CurrentGeneration()->policies).load_balancing().health_check_service;
  if (health.has_value() && !health->empty()) {
    health_name_check_ = std::make_unique<HealthNameCheck>(options_.name, target, *health,
                                                           *probe_sender_, clock_, options_.events);
  }
}

std::vector<std::string> ClientResilienceImpl::EnableRouting(
    const std::string& target, std::shared_ptr<grpc::ChannelCredentials> credentials,
    const grpc::ChannelArguments& args, EndpointRouter::InterceptorMaker make_inner) {
  const LoadBalancingSettings& lb =
      PolicySetAccess::Table(CurrentGeneration()->policies).load_balancing();
  if (!lb.routing.has_value()) return {};
  absl::StatusOr<std::unique_ptr<EndpointRouter>> router = EndpointRouter::Create(
      target, std::move(credentials), args, std::move(make_inner), lb, options_.seed, clock_);
  if (!router.ok()) {
    return {absl::StrCat("channel ", options_.name,
                         ": loadBalancingConfig's resilience_p2c is not applied: ",
                         router.status().message(), "; gRPC's ",
                         lb.root.empty() ? "pick_first" : lb.root, " routes every call")};
  }
  router_ = *std::move(router);
  return {};
}

MethodCache<ClientMethodState>::Resolution ClientResilienceImpl::Resolve(
    const char* method, const Generation& generation, const ClientMethodState* previous) {
  const PolicyTable::Match match = PolicySetAccess::Table(generation.policies).Find(method);
  const bool linked = MethodCatalog::Linked().Find(method) != nullptr;
  // An exact name of the policy file ("svc/method", not "svc/" or "").
  const bool named = !match.scope.empty() && match.scope.back() != '/';
  RetryBudget* const throttle = generation.throttle.get();
  if (match.policy == nullptr) {
    if (!options_.metrics && throttle == nullptr && previous == nullptr) return {nullptr, linked};
    // Counted only (and heard by the channel's throttle): no policy, no
    // breaker, no retries.
    auto state = previous != nullptr ? std::make_shared<ClientMethodState>(previous->tally)
                                     : std::make_shared<ClientMethodState>();
    state->method = method;
    state->policies = generation.policies;
    state->metrics = options_.metrics;
    state->throttle = throttle;
    state->throttle_owner = generation.throttle;
    state->reconnect = &reconnect_;
    state->health_check = health_name_check_.get();
    state->protobuf_method = linked;
    state->retry.max_attempts = 1;
    return {std::move(state), linked};
  }
  const MethodPolicy& policy = *match.policy;
  auto state = previous != nullptr ? std::make_shared<ClientMethodState>(previous->tally)
                                   : std::make_shared<ClientMethodState>();
  state->method = method;
  state->policies = generation.policies;
  state->policy = &policy;
  state->metrics = options_.metrics;
  // Only calls that may be retried pay for re-issuing; a unary call's
  // timeout alone is enforced by the timeout interceptor.
  state->wraps_unary = policy.retry.has_value() && policy.retry->max_attempts > 1;
  state->protobuf_method = linked;
  if (previous != nullptr) {
    state->generated_stub_name.store(previous->generated_stub_name.load(std::memory_order_acquire),
                                     std::memory_order_release);
  }
  if (policy.retry) {
    state->retry = *policy.retry;
  } else {
    state->retry.max_attempts = 1;
  }
  state->throttle = throttle;
  state->throttle_owner = generation.throttle;
  state->reconnect = &reconnect_;
  state->health_check = health_name_check_.get();
  if (router_ != nullptr) state->picker = router_->PickerFor(method);
  const bool had_policy = previous != nullptr && previous->policy != nullptr;
  if (had_policy && previous->throttle == throttle &&
      previous->policy->canonical.retry == policy.canonical.retry) {
    // The same retry settings and throttle: the same deciders, their
    // budgets' tokens, the hedging delay's quantiles and the jitter's draws.
    state->random = previous->random;
    state->retry_decider = previous->retry_decider;
    state->hedging_decider = previous->hedging_decider;
  } else {
    // Different methods draw different sequences from one seed.
    state->random =
        std::make_shared<SplitMixRandom>(options_.seed ^ std::hash<std::string>()(method));
    RetryDecider::Options retry;
    retry.max_attempts = state->retry.max_attempts;
    retry.retryable_codes = state->retry.retryable_status_codes;
    retry.backoff = state->retry;  // its Backoff::Options part
    retry.budget = policy.retry_budget;
    retry.windowed_budget = policy.windowed_budget;
    retry.clock = &clock_;
    retry.throttle = throttle;
    state->retry_decider = std::make_shared<RetryDecider>(retry, *state->random);
    if (policy.hedging.has_value()) {
      state->hedging_decider = MakeHedgingDecider(policy, throttle, clock_);
    }
  }
  if (policy.hedging.has_value()) state->wraps_unary = true;
  if (had_policy && previous->policy->canonical.breaker == policy.canonical.breaker) {
    // The same breaker settings: the same breakers (state, window, mode)
    // and the same recovery probe.
    state->breaker = previous->breaker;
    state->endpoint_breakers = previous->endpoint_breakers;
    state->recovery_probe = previous->recovery_probe;
    state->probe_sender = previous->probe_sender;
  } else {
    state->breaker = MakeBreaker(*state);
    // The same algorithm with other settings: its forced mode, and its
    // state where the algorithm can keep it (Breaker::ContinueFrom()).
    if (state->breaker != nullptr && previous != nullptr && previous->breaker != nullptr &&
        previous->breaker->kind() == state->breaker->kind()) {
      state->breaker->ContinueFrom(previous->breaker->Snapshot());
    }
    if (state->breaker != nullptr && policy.breaker.kind == BreakerKind::kThreeState &&
        policy.breaker.recovery_probe.has_value()) {
      state->recovery_probe = std::make_shared<RecoveryProbe>(
          *policy.breaker.recovery_probe, static_cast<ThreeStateBreaker&>(*state->breaker),
          clock_);
      state->probe_sender = probe_sender_.get();
    }
    if (state->breaker != nullptr && policy.breaker.per_endpoint) {
      state->endpoint_breakers = MakeEndpointBreakers(*state);
    }
  }
  if (policy.bulkhead.has_value()) {
    state->bulkhead = limiters_.MakeBulkhead(
        *policy.bulkhead, had_policy ? previous->policy->bulkhead : std::nullopt,
        had_policy ? previous->bulkhead : nullptr);
  }
  ApplyFileEnforcement(*state, &policy, "");  // silent: Update() told of its switches
  return {std::move(state), linked || named};
}

std::unique_ptr<Breaker> ClientResilienceImpl::MakeBreaker(const ClientMethodState& state) {
  if (state.policy->breaker.kind == BreakerKind::kNone) return nullptr;
  // Counts every transition in the method's tally, and queues it for the
  // events listener if there is one: the breaker calls this outside its own
  // locks, but the call that asked it may hold its own; the call delivers
  // the queue once it holds none (BreakerEventQueue). The listener may
  // outlive `state` (a later state shares the breaker), not the tally it
  // holds nor the breaker it belongs to.
  auto self = std::make_shared<Breaker*>(nullptr);
  BreakerListener listener = [this, self, tally = state.tally,
                              method = state.method](const BreakerTransition& transition) {
    tally->breaker_transitions[static_cast<size_t>(transition.from) % 3]
                              [static_cast<size_t>(transition.to) % 3]
                                  .fetch_add(1, std::memory_order_relaxed);
    if (breaker_events_ != nullptr) {
      breaker_events_->Push(BreakerEvent{options_.name, method, transition, (*self)->Snapshot(), {}});
    }
  };
  std::unique_ptr<Breaker> made = limiters_.MakeBreaker(state.policy->breaker, std::move(listener));
  // Set before the breaker is reachable by any call (the state is not
  // published yet), so before its first transition.
  *self = made.get();
  return made;
}

std::unique_ptr<EndpointBreakers> ClientResilienceImpl::MakeEndpointBreakers(
    const ClientMethodState& state) {
  EndpointBreakers::Options options = state.policy->breaker.endpoints;
  options.listed_endpoints = listed_endpoints_.load(std::memory_order_relaxed);
  if (probe_sender_ != nullptr && state.policy->breaker.kind == BreakerKind::kThreeState) {
    options.recovery_probe = state.policy->breaker.recovery_probe;
  }
  // Each endpoint's breaker: the method's settings, its own listener.
  options.make = [this, settings = state.policy->breaker](BreakerListener listener) {
    return limiters_.MakeBreaker(settings, std::move(listener));
  };
  // Queued like the method's own transitions, with the endpoint named.
  options.listener = [this, method = state.method](const std::string& endpoint,
                                                   const BreakerTransition& transition,
                                                   const BreakerSnapshot& snapshot) {
    if (breaker_events_ != nullptr) {
      breaker_events_->Push(BreakerEvent{options_.name, method, transition, snapshot, endpoint});
    }
  };
  return std::make_unique<EndpointBreakers>(std::move(options), clock_);
}

std::vector<EndpointBreakerStats> ClientResilienceImpl::EndpointStats(absl::string_view method) {
  std::vector<EndpointBreakerStats> out;
  const std::shared_ptr<ClientMethodState> s = methods_.Get(method);
  if (s == nullptr || s->endpoint_breakers == nullptr) return out;
  const absl::Time now = clock_.Now();
  for (EndpointBreakers::EndpointState& e : s->endpoint_breakers->Snapshot()) {
    EndpointBreakerStats stats;
    stats.endpoint = std::move(e.endpoint);
    stats.breaker = e.breaker;
    stats.outcomes = e.outcomes;
    stats.refused = e.refused;
    stats.since_seen = now - e.last_seen;
    out.push_back(std::move(stats));
  }
  return out;
}

std::shared_ptr<ClientMethodState> ClientResilienceImpl::ForMethod(const char* method) {
  return methods_.Find(method);
}

ClientMethodStats ClientResilienceImpl::StatsOf(const ClientMethodState& from) {
  ClientMethodStats to;
  GRPC_RESILIENCE_CLIENT_COUNTERS(GRPC_RESILIENCE_LOAD_COUNTER)
  to.calls_by_code = from.meter.StatusCounts();
  to.shadow_rejected_by_breaker = from.tally->enforcement.breaker_total();
  to.shadow_rejected_by_bulkhead = from.tally->enforcement.bulkhead_total();
  to.breaker_enforcement = from.tally->enforcement.breaker();
  to.bulkhead_enforcement = from.tally->enforcement.bulkhead();
  to.latency = from.meter.Latencies();
  if (from.recovery_probe != nullptr) {
    const RecoveryProbe::Stats probes = from.recovery_probe->stats();
    to.health_probes = probes.probes;
    to.health_probes_serving = probes.serving;
    to.health_probes_not_serving = probes.not_serving + probes.unreachable;
  }
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = 0; j < 3; ++j) {
      to.breaker_transitions[i][j] = from.breaker_transitions[i][j].load(std::memory_order_relaxed);
    }
  }
  return to;
}

ClientMethodStats ClientResilienceImpl::Stats(absl::string_view method) {
  const std::shared_ptr<const ClientMethodState> s = methods_.Get(method);
  if (s == nullptr) return ClientMethodStats{};
  return StatsOf(*s);
}

std::vector<std::shared_ptr<const ClientMethodState>> ClientResilienceImpl::SortedStates() {
  std::vector<std::shared_ptr<ClientMethodState>> made = methods_.States();
  std::vector<std::shared_ptr<const ClientMethodState>> states(made.begin(), made.end());
  std::sort(states.begin(), states.end(),
            [](const std::shared_ptr<const ClientMethodState>& a,
               const std::shared_ptr<const ClientMethodState>& b) { return a->method < b->method; });
  return states;
}

std::vector<std::pair<std::string, ClientMethodStats>> ClientResilienceImpl::AllStats() {
  const std::vector<std::shared_ptr<const ClientMethodState>> states = SortedStates();
  std::vector<std::pair<std::string, ClientMethodStats>> all;
  all.reserve(states.size());
  for (const auto& s : states) all.emplace_back(s->method, StatsOf(*s));
  return all;
}

}  // namespace resilience

#include "src/client_interceptors/client_resilience_impl.h"

#include <algorithm>
#include <cstddef>
#include <initializer_list>

#include "absl/strings/str_cat.h"

#include "src/client_interceptors/breaker_event_queue.h"
#include "src/metrics/metric_catalog.h"
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
    : policies_(std::move(policies)),
      options_(std::move(options)),
      clock_(clock),
      throttle_(PolicySetAccess::Table(policies_).retry_throttling().has_value()
                    ? std::make_unique<RetryBudget>(
                          PolicySetAccess::Table(policies_).retry_throttling()->max_tokens,
                          PolicySetAccess::Table(policies_).retry_throttling()->token_ratio)
                    : nullptr),
      breaker_events_(options_.events != nullptr
                          ? std::make_shared<BreakerEventQueue>(options_.events)
                          : nullptr) {}

MethodCache<ClientMethodState>::Resolution ClientResilienceImpl::Resolve(const char* method) {
  const PolicyTable::Match match = PolicySetAccess::Table(policies_).Find(method);
  const bool linked = MethodCatalog::Linked().Find(method) != nullptr;
  // An exact name of the policy file ("svc/method", not "svc/" or "").
  const bool named = !match.scope.empty() && match.scope.back() != '/';
  if (match.policy == nullptr) {
    if (!options_.metrics && throttle_ == nullptr) return {nullptr, linked};
    // Counted only (and heard by the channel's throttle): no policy, no
    // breaker, no retries.
    auto state = std::make_unique<ClientMethodState>();
    state->method = method;
    state->metrics = options_.metrics;
    state->throttle = throttle_.get();
    state->reconnect = &reconnect_;
    state->protobuf_method = linked;
    state->retry.max_attempts = 1;
    return {std::move(state), linked};
  }
  const MethodPolicy& policy = *match.policy;
  auto state = std::make_unique<ClientMethodState>();
  state->method = method;
  state->policy = &policy;
  state->metrics = options_.metrics;
  // Only calls that may be retried pay for re-issuing; a unary call's
  // timeout alone is enforced by the timeout interceptor.
  state->wraps_unary = policy.retry.has_value() && policy.retry->max_attempts > 1;
  state->protobuf_method = linked;
  if (policy.retry) {
    state->retry = *policy.retry;
  } else {
    state->retry.max_attempts = 1;
  }
  // Different methods draw different sequences from one seed.
  state->random = std::make_unique<SplitMixRandom>(options_.seed ^ std::hash<std::string>()(method));
  state->throttle = throttle_.get();
  state->reconnect = &reconnect_;
  RetryDecider::Options retry;
  retry.max_attempts = state->retry.max_attempts;
  retry.retryable_codes = state->retry.retryable_status_codes;
  retry.backoff = state->retry;  // its Backoff::Options part
  retry.budget = policy.retry_budget;
  retry.throttle = throttle_.get();
  state->retry_decider = std::make_unique<RetryDecider>(retry, *state->random);
  if (policy.hedging.has_value()) {
    state->hedging_decider =
        MakeHedgingDecider(*policy.hedging, policy.retry_budget, throttle_.get());
    state->wraps_unary = true;
  }
  BreakerSettings breaker = policy.breaker;
  if (breaker.kind != BreakerKind::kNone) {
    // Counts every transition, and queues it for the events listener if
    // there is one: the breaker calls this outside its own locks, but the
    // call that asked it may hold its own; the call delivers the queue once
    // it holds none (BreakerEventQueue). The state outlives its breaker.
    ClientMethodState* const raw = state.get();
    BreakerListener listener = [this, raw](const BreakerTransition& transition) {
      raw->breaker_transitions[static_cast<size_t>(transition.from) % 3]
                              [static_cast<size_t>(transition.to) % 3]
                                  .fetch_add(1, std::memory_order_relaxed);
      if (breaker_events_ != nullptr) {
        breaker_events_->Push(
            BreakerEvent{options_.name, raw->method, transition, raw->breaker->Snapshot(), {}});
      }
    };
    breaker.sre.listener = listener;
    breaker.three_state.listener = std::move(listener);
  }
  state->breaker = CreateBreaker(breaker, clock_, options_.seed);
  if (policy.bulkhead.has_value()) {
    state->bulkhead = std::make_unique<Bulkhead>(*policy.bulkhead, clock_);
  }
  if (state->breaker != nullptr && policy.breaker.per_endpoint) {
    state->endpoint_breakers = MakeEndpointBreakers(*state);
  }
  return {std::move(state), linked || named};
}

std::unique_ptr<EndpointBreakers> ClientResilienceImpl::MakeEndpointBreakers(
    ClientMethodState& state) {
  EndpointBreakers::Options options = state.policy->breaker.endpoints;
  // Each endpoint's breaker: the method's settings, its own listener.
  options.make = [this, settings = state.policy->breaker](BreakerListener listener) {
    BreakerSettings mine = settings;
    mine.sre.listener = listener;
    mine.three_state.listener = std::move(listener);
    return CreateBreaker(mine, clock_, options_.seed);
  };
  // Queued like the method's own transitions, with the endpoint named.
  ClientMethodState* const raw = &state;
  options.listener = [this, raw](const std::string& endpoint, const BreakerTransition& transition,
                                 const BreakerSnapshot& snapshot) {
    if (breaker_events_ != nullptr) {
      breaker_events_->Push(BreakerEvent{options_.name, raw->method, transition, snapshot, endpoint});
    }
  };
  return std::make_unique<EndpointBreakers>(std::move(options), clock_);
}

std::vector<EndpointBreakerStats> ClientResilienceImpl::EndpointStats(absl::string_view method) {
  std::vector<EndpointBreakerStats> out;
  ClientMethodState* s = methods_.Get(method);
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

ClientMethodState* ClientResilienceImpl::ForMethod(const char* method) {
  return methods_.Find(method, [this](const char* name) { return Resolve(name); });
}

ClientMethodStats ClientResilienceImpl::StatsOf(const ClientMethodState& from) {
  ClientMethodStats to;
  GRPC_RESILIENCE_CLIENT_COUNTERS(GRPC_RESILIENCE_LOAD_COUNTER)
  to.calls_by_code = from.meter.StatusCounts();
  to.latency = from.meter.Latencies();
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = 0; j < 3; ++j) {
      to.breaker_transitions[i][j] = from.breaker_transitions[i][j].load(std::memory_order_relaxed);
    }
  }
  return to;
}

ClientMethodStats ClientResilienceImpl::Stats(absl::string_view method) {
  const ClientMethodState* s = methods_.Get(method);
  if (s == nullptr) return ClientMethodStats{};
  return StatsOf(*s);
}

std::vector<const ClientMethodState*> ClientResilienceImpl::SortedStates() {
  std::vector<ClientMethodState*> made = methods_.States();
  std::vector<const ClientMethodState*> states(made.begin(), made.end());
  std::sort(states.begin(), states.end(),
            [](const ClientMethodState* a, const ClientMethodState* b) { return a->method < b->method; });
  return states;
}

std::vector<std::pair<std::string, ClientMethodStats>> ClientResilienceImpl::AllStats() {
  const std::vector<const ClientMethodState*> states = SortedStates();
  std::vector<std::pair<std::string, ClientMethodStats>> all;
  all.reserve(states.size());
  for (const ClientMethodState* s : states) all.emplace_back(s->method, StatsOf(*s));
  return all;
}

namespace {

constexpr BreakerState kBreakerStates[] = {BreakerState::kClosed, BreakerState::kOpen,
                                           BreakerState::kHalfOpen};

// Every transition, in the order rendered; `sre` / `three_state`: whether
// that algorithm makes it (rendered even at 0, so that its first
// occurrence shows in a rate()).
struct TransitionKind {
  BreakerState from;
  BreakerState to;
  bool sre;
  bool three_state;
};
constexpr TransitionKind kTransitions[] = {
    {BreakerState::kClosed, BreakerState::kOpen, true, true},
    {BreakerState::kOpen, BreakerState::kHalfOpen, false, true},
    {BreakerState::kHalfOpen, BreakerState::kClosed, false, true},
    {BreakerState::kHalfOpen, BreakerState::kOpen, false, true},
    {BreakerState::kOpen, BreakerState::kClosed, true, false},
    {BreakerState::kClosed, BreakerState::kHalfOpen, false, false},
};

}  // namespace

namespace {

// Endpoints by their breaker's state: the first kEndpointLabels by name one
// by one, the rest summed under "other" (bounded label cardinality).
template <typename Labels>
void AppendEndpointStates(EndpointBreakers& breakers, PrometheusText::Family& family,
                          const Labels& labels) {
  constexpr size_t kEndpointLabels = 16;
  const std::vector<EndpointBreakers::EndpointState> states = breakers.Snapshot();
  int64_t other[3] = {0, 0, 0};
  for (size_t i = 0; i < states.size(); ++i) {
    const BreakerState state = states[i].breaker.state;
    if (i >= kEndpointLabels) {
      ++other[static_cast<size_t>(state) % 3];
      continue;
    }
    for (BreakerState each : kBreakerStates) {
      family.Sample(labels({{"endpoint", states[i].endpoint}, {"state", BreakerStateName(each)}}),
                    each == state ? 1 : 0);
    }
  }
  if (states.size() <= kEndpointLabels) return;
  for (BreakerState each : kBreakerStates) {
    family.Sample(labels({{"endpoint", "other"}, {"state", BreakerStateName(each)}}),
                  other[static_cast<size_t>(each)]);
  }
}

}  // namespace

void ClientResilienceImpl::AppendMetrics(PrometheusText& text) {
  // Declared first, all of them and always in this order, so that the
  // families come out in the same order whatever is called.
  PrometheusText::Family& calls = MetricCatalog::Declare(text, MetricId::kClientCalls);
  PrometheusText::Family& attempts = MetricCatalog::Declare(text, MetricId::kClientAttempts);
  PrometheusText::Family& retries = MetricCatalog::Declare(text, MetricId::kClientRetries);
  PrometheusText::Family& hedges = MetricCatalog::Declare(text, MetricId::kClientHedges);
  PrometheusText::Family& refused = MetricCatalog::Declare(text, MetricId::kClientRetriesRefused);
  PrometheusText::Family& unretried = MetricCatalog::Declare(text, MetricId::kClientUnretriedCalls);
  PrometheusText::Family& rejections =
      MetricCatalog::Declare(text, MetricId::kClientLocalRejections);
  PrometheusText::Family& timeouts = MetricCatalog::Declare(text, MetricId::kClientAttemptTimeouts);
  PrometheusText::Family& breaker_state =
      MetricCatalog::Declare(text, MetricId::kClientBreakerState);
  PrometheusText::Family& drop_probability =
      MetricCatalog::Declare(text, MetricId::kClientBreakerDropProbability);
  PrometheusText::Family& transitions =
      MetricCatalog::Declare(text, MetricId::kClientBreakerTransitions);
  PrometheusText::Family& waived =
      MetricCatalog::Declare(text, MetricId::kClientBreakerRejectionsWaived);
  PrometheusText::Family& endpoints = MetricCatalog::Declare(text, MetricId::kClientEndpointBreakers);
  PrometheusText::Family& duration = MetricCatalog::Declare(text, MetricId::kClientCallDuration);

  const absl::string_view channel = options_.name;
  for (const ClientMethodState* s : SortedStates()) {
    const absl::string_view method = s->method;
    const auto labels = [&](std::initializer_list<MetricLabel> more) {
      std::vector<MetricLabel> all = {{"grpc_method", method}, {"channel", channel}};
      all.insert(all.end(), more.begin(), more.end());
      return all;
    };
    const std::vector<MetricLabel> base = labels({});
    if (s->metrics) s->meter.AppendCalls(calls, base);
    attempts.Sample(base, s->attempts.load(std::memory_order_relaxed));
    if (s->wraps_unary) {
      retries.Sample(base, s->retries.load(std::memory_order_relaxed));
      if (s->hedging_decider != nullptr) {
        hedges.Sample(base, s->hedges.load(std::memory_order_relaxed));
      }
      refused.Sample(labels({{"reason", "budget"}}),
                     s->retry_budget_exhausted.load(std::memory_order_relaxed));
      refused.Sample(labels({{"reason", "pushback"}}),
                     s->pushback_stops.load(std::memory_order_relaxed));
      unretried.Sample(base, s->not_retried_stub_calls.load(std::memory_order_relaxed));
    }
    if (s->retry.per_attempt_timeout.has_value()) {
      timeouts.Sample(base, s->attempt_timeouts.load(std::memory_order_relaxed));
    }
    if (s->breaker != nullptr) {
      rejections.Sample(labels({{"cause", "breaker"}}),
                        s->rejected_by_breaker.load(std::memory_order_relaxed));
      const BreakerSnapshot snapshot = s->breaker->Snapshot();
      for (BreakerState state : kBreakerStates) {
        breaker_state.Sample(labels({{"state", BreakerStateName(state)}}),
                             snapshot.state == state ? 1 : 0);
      }
      drop_probability.Sample(base, snapshot.drop_probability);
      const bool sre = s->policy->breaker.kind == BreakerKind::kSre;
      for (const TransitionKind& t : kTransitions) {
        const int64_t count =
            s->breaker_transitions[static_cast<size_t>(t.from)][static_cast<size_t>(t.to)].load(
                std::memory_order_relaxed);
        if (count == 0 && !(sre ? t.sre : t.three_state)) continue;
        transitions.Sample(
            labels({{"from", BreakerStateName(t.from)}, {"to", BreakerStateName(t.to)}}), count);
      }
    }
    if (s->bulkhead != nullptr) {
      rejections.Sample(labels({{"cause", "bulkhead"}}),
                        s->rejected_by_bulkhead.load(std::memory_order_relaxed));
    }
    if (s->endpoint_breakers != nullptr) {
      waived.Sample(base, s->breaker_rejections_waived.load(std::memory_order_relaxed));
      AppendEndpointStates(*s->endpoint_breakers, endpoints, labels);
    }
    if (s->metrics) s->meter.AppendLatency(duration, base);
  }
}

absl::Status ClientResilienceImpl::ControlBreaker(absl::string_view method,
                                                  BreakerCommand command,
                                                  absl::string_view origin) {
  OperatorEvent event;
  event.channel = options_.name;
  event.method = std::string(method);
  event.command = command;
  event.origin = std::string(origin);
  ClientMethodState* s = methods_.Get(method);
  bool known = s != nullptr;
  if (s == nullptr) {
    // Not called yet: made now if a policy gives it a breaker and the name
    // is a real method (linked into the process, or named in the file), not
    // a typo that a service-wide entry would cover.
    const PolicyTable::Match match = PolicySetAccess::Table(policies_).Find(method);
    const bool named = !match.scope.empty() && match.scope.back() != '/';
    known = named || MethodCatalog::Linked().Find(method) != nullptr;
    if (known && match.policy != nullptr && match.policy->breaker.kind != BreakerKind::kNone) {
      s = methods_.FindByName(method, [this](const char* name) { return Resolve(name); });
    }
  }
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

void ClientResilienceImpl::AppendStatus(StatusReport& report) {
  for (const ClientMethodState* s : SortedStates()) {
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
    report.client_methods.push_back(std::move(row));
  }
}

std::optional<BreakerSnapshot> ClientResilienceImpl::BreakerSnapshotOf(absl::string_view method) {
  ClientMethodState* s = methods_.Get(method);
  if (s == nullptr || s->breaker == nullptr) return std::nullopt;
  return s->breaker->Snapshot();
}

}  // namespace resilience

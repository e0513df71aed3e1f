#include "src/client_interceptors/client_resilience.h"

#include <algorithm>
#include <initializer_list>

#include "src/policy/method_catalog.h"

namespace resilience {

ClientResilience::ClientResilience(PolicySet policies, Options options)
    : policies_(std::move(policies)),
      options_(std::move(options)),
      throttle_(PolicySetAccess::Table(policies_).retry_throttling().has_value()
                    ? std::make_unique<RetryBudget>(
                          PolicySetAccess::Table(policies_).retry_throttling()->max_tokens,
                          PolicySetAccess::Table(policies_).retry_throttling()->token_ratio)
                    : nullptr) {}

MethodCache<ClientMethodState>::Resolution ClientResilience::Resolve(const char* method) {
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
    // Counts every transition, and tells the events listener if there is
    // one. The breaker calls this outside its locks; the state outlives its
    // breaker.
    ClientMethodState* const raw = state.get();
    BreakerListener listener = [this, raw](const BreakerTransition& transition) {
      raw->breaker_transitions[static_cast<size_t>(transition.from) % 3]
                              [static_cast<size_t>(transition.to) % 3]
                                  .fetch_add(1, std::memory_order_relaxed);
      if (options_.events != nullptr) {
        options_.events->OnBreakerTransition(
            BreakerEvent{options_.name, raw->method, transition, raw->breaker->Snapshot()});
      }
    };
    breaker.sre.listener = listener;
    breaker.three_state.listener = std::move(listener);
  }
  state->breaker = CreateBreaker(breaker, *options_.clock, options_.seed);
  return {std::move(state), linked || named};
}

ClientMethodState* ClientResilience::ForMethod(const char* method) {
  return methods_.Find(method, [this](const char* name) { return Resolve(name); });
}

ClientMethodStats ClientResilience::StatsOf(const ClientMethodState& from) {
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

ClientMethodStats ClientResilience::Stats(absl::string_view method) {
  const ClientMethodState* s = methods_.Get(method);
  if (s == nullptr) return ClientMethodStats{};
  return StatsOf(*s);
}

std::vector<const ClientMethodState*> ClientResilience::SortedStates() {
  std::vector<ClientMethodState*> made = methods_.States();
  std::vector<const ClientMethodState*> states(made.begin(), made.end());
  std::sort(states.begin(), states.end(),
            [](const ClientMethodState* a, const ClientMethodState* b) { return a->method < b->method; });
  return states;
}

std::vector<std::pair<std::string, ClientMethodStats>> ClientResilience::AllStats() {
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

void ClientResilience::AppendMetrics(PrometheusText& text) {
  // Declared first, all of them and always in this order, so that the
  // families come out in the same order whatever is called.
  PrometheusText::Family& calls = text.Counter(
      "grpc_resilience_client_calls_total",
      "Calls the application made, by the status it finally got (one per call, however many "
      "attempts it took).");
  PrometheusText::Family& attempts = text.Counter(
      "grpc_resilience_client_attempts_total",
      "Attempts made: each attempt of a retried call, the one attempt of any other call.");
  PrometheusText::Family& retries =
      text.Counter("grpc_resilience_client_retries_total", "Attempts after the first.");
  PrometheusText::Family& hedges = text.Counter(
      "grpc_resilience_client_hedges_total",
      "Of the attempts after the first, the hedges of hedged calls (included in retries_total).");
  PrometheusText::Family& refused = text.Counter(
      "grpc_resilience_client_retries_refused_total",
      "Retries the policy allowed but not made: retry budget spent, or the server's pushback.");
  PrometheusText::Family& unretried = text.Counter(
      "grpc_resilience_client_unretried_calls_total",
      "Calls of a retried method passed through without retry (not from a generated stub).");
  PrometheusText::Family& rejections = text.Counter(
      "grpc_resilience_client_local_rejections_total",
      "Attempts failed here without reaching the server, by cause.");
  PrometheusText::Family& timeouts =
      text.Counter("grpc_resilience_client_attempt_timeouts_total",
                   "Attempts ended by their per-attempt timeout (not the call's deadline).");
  PrometheusText::Family& breaker_state =
      text.Gauge("grpc_resilience_client_breaker_state",
                 "1 for the circuit breaker's current state, 0 for the other two.");
  PrometheusText::Family& drop_probability = text.Gauge(
      "grpc_resilience_client_breaker_drop_probability",
      "The share of calls the breaker rejects now (SRE: its drop probability; three-state: 1 "
      "when open).");
  PrometheusText::Family& transitions = text.Counter(
      "grpc_resilience_client_breaker_transitions_total", "Circuit breaker state changes.");
  PrometheusText::Family& duration = text.Histogram(
      "grpc_resilience_client_call_duration_seconds",
      "Call latency as the application saw it, from start to final status, retries and "
      "backoff included.");

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
    if (s->metrics) s->meter.AppendLatency(duration, base);
  }
}

std::optional<BreakerSnapshot> ClientResilience::BreakerSnapshotOf(absl::string_view method) {
  ClientMethodState* s = methods_.Get(method);
  if (s == nullptr || s->breaker == nullptr) return std::nullopt;
  return s->breaker->Snapshot();
}

}  // namespace resilience

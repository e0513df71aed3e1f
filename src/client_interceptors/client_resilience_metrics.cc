// ClientResilienceImpl::AppendMetrics() (client_resilience_impl.h): the
// channel's families of docs/metrics.md, one sample set per method.

#include <array>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "src/client_interceptors/client_resilience_impl.h"
#include "src/client_interceptors/fallback_stage.h"
#include "src/metrics/metric_catalog.h"

namespace resilience {

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
// The outcome label of RecoveryProbe::Answer's values, in its order.
constexpr std::array<absl::string_view, 4> kProbeOutcomes = {"serving", "not_serving",
                                                              "unreachable", "unknown"};

constexpr TransitionKind kTransitions[] = {
    {BreakerState::kClosed, BreakerState::kOpen, true, true},
    {BreakerState::kOpen, BreakerState::kHalfOpen, false, true},
    {BreakerState::kHalfOpen, BreakerState::kClosed, false, true},
    {BreakerState::kHalfOpen, BreakerState::kOpen, false, true},
    {BreakerState::kOpen, BreakerState::kClosed, true, false},
    {BreakerState::kClosed, BreakerState::kHalfOpen, false, false},
};


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
  PrometheusText::Family& fallbacks = MetricCatalog::Declare(text, MetricId::kClientFallbacks);
  PrometheusText::Family& shadow = MetricCatalog::Declare(text, MetricId::kClientShadowRejections);
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
  PrometheusText::Family& probes = MetricCatalog::Declare(text, MetricId::kClientHealthProbes);
  PrometheusText::Family& duration = MetricCatalog::Declare(text, MetricId::kClientCallDuration);
  PrometheusText::Family& generation =
      MetricCatalog::Declare(text, MetricId::kClientPolicyGeneration);
  PrometheusText::Family& reload_failures =
      MetricCatalog::Declare(text, MetricId::kClientPolicyReloadFailures);

  const absl::string_view channel = options_.name;
  for (const std::shared_ptr<const ClientMethodState>& s : SortedStates()) {
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
    s->tally->enforcement.AppendSamples(shadow, base, s->breaker != nullptr, s->bulkhead != nullptr);
    if (s->bulkhead != nullptr) {
      rejections.Sample(labels({{"cause", "bulkhead"}}),
                        s->rejected_by_bulkhead.load(std::memory_order_relaxed));
    }
    AppendFallbackSamples(fallbacks, *s, fallbacks_, base);
    if (s->endpoint_breakers != nullptr) {
      waived.Sample(base, s->breaker_rejections_waived.load(std::memory_order_relaxed));
      AppendEndpointStates(*s->endpoint_breakers, endpoints, labels);
    }
    if (s->probe_sender != nullptr) {
      const bool probed[2] = {
          s->recovery_probe != nullptr,
          s->endpoint_breakers != nullptr &&
              s->endpoint_breakers->options().recovery_probe.has_value()};
      for (size_t breaker = 0; breaker < 2; ++breaker) {
        if (!probed[breaker]) continue;
        for (size_t answer = 0; answer < kProbeOutcomes.size(); ++answer) {
          probes.Sample(labels({{"breaker", breaker == 0 ? "method" : "endpoint"},
                                {"outcome", kProbeOutcomes[answer]}}),
                        s->tally->health_probes[breaker][answer].load(std::memory_order_relaxed));
        }
      }
    }
    if (s->metrics) s->meter.AppendLatency(duration, base);
  }
  generation.Sample({{"channel", channel}}, this->generation());
  reload_failures.Sample({{"channel", channel}}, failed_reloads());
}

}  // namespace resilience

// ClientResilienceImpl::AppendMetrics() (client_resilience_impl.h): the
// channel's families of docs/metrics.md, one sample set per method.

#include <array>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "src/client_interceptors/client_resilience_impl.h"
#include "src/client_interceptors/fallback_stage.h"
#include "src/metrics/metric_families.h"

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

// The method's retry and hedging samples (a unary call that may be
// retried).
template <typename Labels>
void AppendRetrySamples(const ClientMethodState& s, const MetricFamilies& f, const Labels& labels) {
  using M = MetricId;
  const std::vector<MetricLabel> base = labels({});
  f[M::kClientRetries].Sample(base, s.retries.load(std::memory_order_relaxed));
  if (s.hedging_decider != nullptr) {
    f[M::kClientHedges].Sample(base, s.hedges.load(std::memory_order_relaxed));
  }
  f[M::kClientRetriesRefused].Sample(labels({{"reason", "budget"}}),
                                     s.retry_budget_exhausted.load(std::memory_order_relaxed));
  f[M::kClientRetriesRefused].Sample(labels({{"reason", "pushback"}}),
                                     s.pushback_stops.load(std::memory_order_relaxed));
  f[M::kClientUnretriedCalls].Sample(base,
                                     s.not_retried_stub_calls.load(std::memory_order_relaxed));
}

// The method's breaker: its rejections, state, drop probability and
// transitions.
template <typename Labels>
void AppendBreakerSamples(const ClientMethodState& s, const MetricFamilies& f,
                          const Labels& labels) {
  using M = MetricId;
  f[M::kClientLocalRejections].Sample(labels({{"cause", "breaker"}}),
                                      s.rejected_by_breaker.load(std::memory_order_relaxed));
  const BreakerSnapshot snapshot = s.breaker->Snapshot();
  for (BreakerState state : kBreakerStates) {
    f[M::kClientBreakerState].Sample(labels({{"state", BreakerStateName(state)}}),
                                     snapshot.state == state ? 1 : 0);
  }
  f[M::kClientBreakerDropProbability].Sample(labels({}), snapshot.drop_probability);
  const bool sre = s.policy->breaker.kind == BreakerKind::kSre;
  for (const TransitionKind& t : kTransitions) {
    const int64_t count =
        s.breaker_transitions[static_cast<size_t>(t.from)][static_cast<size_t>(t.to)].load(
            std::memory_order_relaxed);
    if (count == 0 && !(sre ? t.sre : t.three_state)) continue;
    f[M::kClientBreakerTransitions].Sample(
        labels({{"from", BreakerStateName(t.from)}, {"to", BreakerStateName(t.to)}}), count);
  }
}

// The answers of the method's recovery probes, by breaker (the method's,
// the endpoints').
template <typename Labels>
void AppendProbeSamples(const ClientMethodState& s, PrometheusText::Family& probes,
                        const Labels& labels) {
  const bool probed[2] = {
      s.recovery_probe != nullptr,
      s.endpoint_breakers != nullptr && s.endpoint_breakers->options().recovery_probe.has_value()};
  for (size_t breaker = 0; breaker < 2; ++breaker) {
    if (!probed[breaker]) continue;
    for (size_t answer = 0; answer < kProbeOutcomes.size(); ++answer) {
      probes.Sample(labels({{"breaker", breaker == 0 ? "method" : "endpoint"},
                            {"outcome", kProbeOutcomes[answer]}}),
                    s.tally->health_probes[breaker][answer].load(std::memory_order_relaxed));
    }
  }
}

}  // namespace

void ClientResilienceImpl::AppendMetrics(PrometheusText& text) {
  // Every family of the client's group first, in catalog order.
  const MetricFamilies f(text, MetricGroup::kClient);
  using M = MetricId;
  const absl::string_view channel = options_.name;
  for (const std::shared_ptr<const ClientMethodState>& s : SortedStates()) {
    const absl::string_view method = s->method;
    const auto labels = [&](std::initializer_list<MetricLabel> more) {
      std::vector<MetricLabel> all = {{"grpc_method", method}, {"channel", channel}};
      all.insert(all.end(), more.begin(), more.end());
      return all;
    };
    const std::vector<MetricLabel> base = labels({});
    if (s->metrics) s->meter.AppendCalls(f[M::kClientCalls], base);
    f[M::kClientAttempts].Sample(base, s->attempts.load(std::memory_order_relaxed));
    if (s->wraps_unary) AppendRetrySamples(*s, f, labels);
    if (s->retry.per_attempt_timeout.has_value()) {
      f[M::kClientAttemptTimeouts].Sample(base,
                                          s->attempt_timeouts.load(std::memory_order_relaxed));
    }
    if (s->breaker != nullptr) AppendBreakerSamples(*s, f, labels);
    s->tally->enforcement.AppendSamples(f[M::kClientShadowRejections], base, s->breaker != nullptr,
                                        s->bulkhead != nullptr);
    if (s->bulkhead != nullptr) {
      f[M::kClientLocalRejections].Sample(labels({{"cause", "bulkhead"}}),
                                          s->rejected_by_bulkhead.load(std::memory_order_relaxed));
    }
    AppendFallbackSamples(f[M::kClientFallbacks], *s, fallbacks_, base);
    if (s->endpoint_breakers != nullptr) {
      f[M::kClientBreakerRejectionsWaived].Sample(
          base, s->breaker_rejections_waived.load(std::memory_order_relaxed));
      AppendEndpointStates(*s->endpoint_breakers, f[M::kClientEndpointBreakers], labels);
    }
    if (s->probe_sender != nullptr) AppendProbeSamples(*s, f[M::kClientHealthProbes], labels);
    if (s->metrics) s->meter.AppendLatency(f[M::kClientCallDuration], base);
  }
  f[M::kClientPolicyGeneration].Sample({{"channel", channel}}, this->generation());
  f[M::kClientPolicyReloadFailures].Sample({{"channel", channel}}, failed_reloads());
}

}  // namespace resilience

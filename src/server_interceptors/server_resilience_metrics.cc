// File: src/server_interceptors/server_resilience_metrics.cc
//
// ServerResilienceImpl::AppendMetrics() (server_resilience_impl.h): the
// server's families of docs/metrics.md, one sample set per method, then the
// per-caller and fleet-wide limits.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/global_limits/global_limit_metrics.h"
#include "src/metrics/metric_catalog.h"
#include "src/server_interceptors/per_caller_metrics.h"
#include "src/server_interceptors/server_resilience_impl.h"

namespace resilience {

void ServerResilienceImpl::AppendMetrics(PrometheusText& text) {
  // Declared first, all of them and always in this order, so that the
  // families come out in the same order whatever is called.
  PrometheusText::Family& calls = MetricCatalog::Declare(text, MetricId::kServerCalls);
  PrometheusText::Family& rejections = MetricCatalog::Declare(text, MetricId::kServerRejections);
  PrometheusText::Family& in_flight = MetricCatalog::Declare(text, MetricId::kServerInFlight);
  PrometheusText::Family& duration = MetricCatalog::Declare(text, MetricId::kServerHandlerDuration);
  PrometheusText::Family& delayed = MetricCatalog::Declare(text, MetricId::kServerInjectedDelays);
  PrometheusText::Family& expired =
      MetricCatalog::Declare(text, MetricId::kServerExpiredWhileDelayed);
  PrometheusText::Family& limit = MetricCatalog::Declare(text, MetricId::kServerConcurrencyLimit);
  PrometheusText::Family& generation =
      MetricCatalog::Declare(text, MetricId::kServerPolicyGeneration);
  PrometheusText::Family& reload_failures =
      MetricCatalog::Declare(text, MetricId::kServerPolicyReloadFailures);
  generation.Sample({}, this->generation());
  reload_failures.Sample({}, failed_reloads());
  PrometheusText::Family& by_criticality =
      MetricCatalog::Declare(text, MetricId::kServerRejectionsByCriticality);
  PrometheusText::Family& invalid_criticality =
      MetricCatalog::Declare(text, MetricId::kServerCriticalityInvalid);
  PrometheusText::Family& shadow = MetricCatalog::Declare(text, MetricId::kServerShadowRejections);

  for (const std::shared_ptr<const ServerMethodState>& s : SortedStates()) {
    const MetricLabel method{"grpc_method", s->method};
    if (s->metrics) s->meter.AppendCalls(calls, {method});
    // The causes the method's policy can reject for (an unusable rate
    // limit counts as the rate's; a per-caller limit as its kind's).
    const PerCallerLimits* per_caller =
        s->limits != nullptr ? s->limits->per_caller.get() : nullptr;
    if (s->limits != nullptr &&
        (s->limits->concurrency != nullptr ||
         (per_caller != nullptr && per_caller->options().max_concurrency > 0))) {
      rejections.Sample({method, {"cause", "concurrency"}},
                        s->rejected_concurrency.load(std::memory_order_relaxed));
    }
    if (s->limits != nullptr &&
        (s->limits->rate != nullptr || s->limits->global != nullptr ||
         !s->limits->unusable.empty() ||
         (per_caller != nullptr && per_caller->options().rate_per_second > 0))) {
      rejections.Sample({method, {"cause", "rate"}},
                        s->rejected_rate.load(std::memory_order_relaxed));
    }
    if (s->limits != nullptr && s->limits->cpu_threshold.has_value()) {
      rejections.Sample({method, {"cause", "cpu"}}, s->rejected_cpu.load(std::memory_order_relaxed));
    }
    if (s->limits != nullptr && s->limits->retry_shedding.sheds_retries()) {
      rejections.Sample({method, {"cause", "retry"}},
                        s->rejected_retry.load(std::memory_order_relaxed));
    }
    if (s->deadline_admission != nullptr) {
      rejections.Sample({method, {"cause", "deadline"}},
                        s->rejected_deadline.load(std::memory_order_relaxed));
    }
    if (s->fault != nullptr) {
      rejections.Sample({method, {"cause", "injected_abort"}},
                        s->faults_aborted.load(std::memory_order_relaxed));
    }
    in_flight.Sample({method}, s->in_flight.load(std::memory_order_relaxed));
    if (s->metrics) s->meter.AppendLatency(duration, {method});
    if (s->fault != nullptr) {
      delayed.Sample({method}, s->faults_delayed.load(std::memory_order_relaxed));
      expired.Sample({method}, s->expired_while_delayed.load(std::memory_order_relaxed));
    }
    if (s->limits != nullptr && s->limits->concurrency != nullptr) {
      limit.Sample({method}, s->limits->concurrency->limit());
    }
    // Four series per throttled method, once one of its calls carried a
    // criticality: without the header the output is as before.
    if (s->limits != nullptr && s->criticality_seen.load(std::memory_order_relaxed)) {
      for (int i = 0; i < kCriticalityLevels; ++i) {
        by_criticality.Sample(
            {method, {"criticality", std::string(CriticalityName(static_cast<Criticality>(i)))}},
            s->rejected_by_criticality[i].load(std::memory_order_relaxed));
      }
      invalid_criticality.Sample({method}, s->criticality_invalid.load(std::memory_order_relaxed));
    }
    AppendShadowSamples(*s, shadow);
  }
  // The per-caller limits by scope, then the fleet-wide limits by Redis key
  // (each declared only when a policy has one).
  std::vector<GlobalRateLimit*> globals;
  std::vector<std::pair<std::string, std::shared_ptr<PerCallerLimits>>> per_caller;
  {
    MutexLock lock(&mu_);
    for (const auto& [scope, limits] : scopes_) {
      if (limits->global != nullptr) globals.push_back(limits->global.get());
      if (limits->per_caller != nullptr) per_caller.emplace_back(scope, limits->per_caller);
    }
  }
  AppendPerCallerMetrics(text, per_caller);
  AppendGlobalLimitMetrics(text, globals, per_caller);
}

}  // namespace resilience

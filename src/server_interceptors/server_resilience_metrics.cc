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
#include "src/metrics/metric_families.h"
#include "src/server_interceptors/per_caller_metrics.h"
#include "src/server_interceptors/server_resilience_impl.h"

namespace resilience {

namespace {

// The method's rejections, by the causes its policy can reject for (an
// unusable rate limit counts as the rate's; a per-caller limit as its
// kind's).
void AppendRejections(const ServerMethodState& s, const MetricLabel& method,
                      PrometheusText::Family& rejections) {
  const PerCallerLimits* per_caller = s.limits != nullptr ? s.limits->per_caller.get() : nullptr;
  if (s.limits != nullptr &&
      (s.limits->concurrency != nullptr ||
       (per_caller != nullptr && per_caller->options().max_concurrency > 0))) {
    rejections.Sample({method, {"cause", "concurrency"}},
                      s.rejected_concurrency.load(std::memory_order_relaxed));
  }
  if (s.limits != nullptr &&
      (s.limits->rate != nullptr || s.limits->global != nullptr || !s.limits->unusable.empty() ||
       (per_caller != nullptr && per_caller->options().rate_per_second > 0))) {
    rejections.Sample({method, {"cause", "rate"}}, s.rejected_rate.load(std::memory_order_relaxed));
  }
  if (s.limits != nullptr && s.limits->cpu_threshold.has_value()) {
    rejections.Sample({method, {"cause", "cpu"}}, s.rejected_cpu.load(std::memory_order_relaxed));
  }
  if (s.limits != nullptr && s.limits->retry_shedding.sheds_retries()) {
    rejections.Sample({method, {"cause", "retry"}},
                      s.rejected_retry.load(std::memory_order_relaxed));
  }
  if (s.deadline_admission != nullptr) {
    rejections.Sample({method, {"cause", "deadline"}},
                      s.rejected_deadline.load(std::memory_order_relaxed));
  }
  if (s.fault != nullptr) {
    rejections.Sample({method, {"cause", "injected_abort"}},
                      s.faults_aborted.load(std::memory_order_relaxed));
  }
}

}  // namespace

void ServerResilienceImpl::AppendMetrics(PrometheusText& text) {
  // Every family of the server's group first, in catalog order.
  const MetricFamilies f(text, MetricGroup::kServer);
  using M = MetricId;
  f[M::kServerPolicyGeneration].Sample({}, this->generation());
  f[M::kServerPolicyReloadFailures].Sample({}, failed_reloads());
  for (const std::shared_ptr<const ServerMethodState>& s : SortedStates()) {
    const MetricLabel method{"grpc_method", s->method};
    if (s->metrics) s->meter.AppendCalls(f[M::kServerCalls], {method});
    AppendRejections(*s, method, f[M::kServerRejections]);
    f[M::kServerInFlight].Sample({method}, s->in_flight.load(std::memory_order_relaxed));
    if (s->metrics) s->meter.AppendLatency(f[M::kServerHandlerDuration], {method});
    if (s->fault != nullptr) {
      f[M::kServerInjectedDelays].Sample({method},
                                         s->faults_delayed.load(std::memory_order_relaxed));
      f[M::kServerExpiredWhileDelayed].Sample(
          {method}, s->expired_while_delayed.load(std::memory_order_relaxed));
    }
    if (s->limits != nullptr && s->limits->concurrency != nullptr) {
      f[M::kServerConcurrencyLimit].Sample({method}, s->limits->concurrency->limit());
    }
    // Four series per throttled method, once one of its calls carried a
    // criticality: without the header the output is as before.
    if (s->limits != nullptr && s->criticality_seen.load(std::memory_order_relaxed)) {
      for (int i = 0; i < kCriticalityLevels; ++i) {
        f[M::kServerRejectionsByCriticality].Sample(
            {method, {"criticality", std::string(CriticalityName(static_cast<Criticality>(i)))}},
            s->rejected_by_criticality[i].load(std::memory_order_relaxed));
      }
      f[M::kServerCriticalityInvalid].Sample(
          {method}, s->criticality_invalid.load(std::memory_order_relaxed));
    }
    AppendShadowSamples(*s, f[M::kServerShadowRejections]);
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

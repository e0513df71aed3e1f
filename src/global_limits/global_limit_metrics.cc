#include "src/global_limits/global_limit_metrics.h"

#include <algorithm>

#include "src/metrics/metric_catalog.h"

namespace resilience {

void AppendGlobalLimitMetrics(PrometheusText& text, std::vector<GlobalRateLimit*> limits) {
  if (limits.empty()) return;
  std::sort(limits.begin(), limits.end(),
            [](const GlobalRateLimit* a, const GlobalRateLimit* b) { return a->key() < b->key(); });
  PrometheusText::Family& using_store =
      MetricCatalog::Declare(text, MetricId::kGlobalLimitUsingStore);
  PrometheusText::Family& admitted = MetricCatalog::Declare(text, MetricId::kGlobalLimitAdmitted);
  PrometheusText::Family& leased = MetricCatalog::Declare(text, MetricId::kGlobalLimitTokensLeased);
  PrometheusText::Family& expired =
      MetricCatalog::Declare(text, MetricId::kGlobalLimitTokensExpired);
  PrometheusText::Family& failures =
      MetricCatalog::Declare(text, MetricId::kGlobalLimitLeaseFailures);
  PrometheusText::Family& transitions =
      MetricCatalog::Declare(text, MetricId::kGlobalLimitTransitions);
  PrometheusText::Family& repairs =
      MetricCatalog::Declare(text, MetricId::kGlobalLimitBucketRepairs);
  for (GlobalRateLimit* limit : limits) {
    const MetricLabel key{"key", limit->key()};
    const GlobalRateLimiterStats s = limit->limiter().Stats();
    using_store.Sample({key},
                       limit->limiter().mode() == GlobalRateLimiter::Mode::kGlobal ? 1 : 0);
    admitted.Sample({key, {"source", "lease"}}, s.admitted_leased);
    admitted.Sample({key, {"source", "local_share"}}, s.admitted_local);
    leased.Sample({key}, s.tokens_leased);
    expired.Sample({key}, s.tokens_expired);
    failures.Sample({key}, s.lease_failures);
    transitions.Sample({key, {"to", "local_share"}}, s.fallbacks);
    transitions.Sample({key, {"to", "global"}}, s.recoveries);
    repairs.Sample({key, {"kind", "key_lost"}}, s.keys_lost);
    repairs.Sample({key, {"kind", "bad_value"}}, s.bad_values);
    repairs.Sample({key, {"kind", "clock_back"}}, s.clock_steps);
  }
}

}  // namespace resilience

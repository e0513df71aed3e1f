#include "src/global_limits/global_limit_metrics.h"

#include <algorithm>

namespace resilience {

void AppendGlobalLimitMetrics(PrometheusText& text, std::vector<GlobalRateLimit*> limits) {
  if (limits.empty()) return;
  std::sort(limits.begin(), limits.end(),
            [](const GlobalRateLimit* a, const GlobalRateLimit* b) { return a->key() < b->key(); });
  PrometheusText::Family& using_store = text.Gauge(
      "grpc_resilience_server_global_limit_using_store",
      "1 while the fleet-wide rate limit is taken from Redis, 0 while the server admits its "
      "local share (Redis unreachable or not reached yet).");
  PrometheusText::Family& admitted = text.Counter(
      "grpc_resilience_server_global_limit_admitted_total",
      "Calls the fleet-wide rate limit admitted, by where the token came from: a lease from "
      "Redis or the local share.");
  PrometheusText::Family& leased = text.Counter(
      "grpc_resilience_server_global_limit_tokens_leased_total",
      "Tokens this server leased from the fleet's bucket in Redis.");
  PrometheusText::Family& expired = text.Counter(
      "grpc_resilience_server_global_limit_tokens_expired_total",
      "Leased tokens dropped unused after the lease lifetime.");
  PrometheusText::Family& failures = text.Counter(
      "grpc_resilience_server_global_limit_lease_failures_total",
      "Lease round trips to Redis that failed (connect, timeout, error reply).");
  PrometheusText::Family& transitions = text.Counter(
      "grpc_resilience_server_global_limit_transitions_total",
      "Changes between the global limit and the local share: to=\"local_share\" when Redis "
      "became unreachable, to=\"global\" when it answered again.");
  PrometheusText::Family& repairs = text.Counter(
      "grpc_resilience_server_global_limit_bucket_repairs_total",
      "Leases that found the fleet's bucket in Redis lost (kind=\"key_lost\": started again "
      "full), holding values out of range (kind=\"bad_value\": clamped) or a timestamp ahead "
      "of Redis's clock (kind=\"clock_back\": taken as now).");
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

#include "src/global_limits/global_limit_metrics.h"

#include <algorithm>

#include "src/metrics/metric_catalog.h"

namespace resilience {

namespace {

// One sample set: a limit's, or a per-caller fleet limit's sums.
struct Row {
  std::string key;
  GlobalRateLimiterStats stats;
  bool using_store = false;
};

}  // namespace

void AppendGlobalLimitMetrics(
    PrometheusText& text, const std::vector<GlobalRateLimit*>& limits,
    const std::vector<std::pair<std::string, std::shared_ptr<PerCallerLimits>>>& per_caller) {
  std::vector<Row> rows;
  for (GlobalRateLimit* limit : limits) {
    rows.push_back({limit->key(), limit->limiter().Stats(),
                    limit->limiter().mode() == GlobalRateLimiter::Mode::kGlobal});
  }
  for (const auto& [scope, caller] : per_caller) {
    LeaseQueue* queue = caller->fleet_queue();
    if (queue == nullptr) continue;
    Row row{caller->FleetKey("*"), caller->FleetStats(), queue->store_up()};
    row.stats.lease_failures = queue->lease_failures();
    row.stats.fallbacks = queue->outages();
    row.stats.recoveries = queue->recoveries();
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return;
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.key < b.key; });
  // Scopes on one key (the loader lets them share it) are one bucket: one
  // sample set, their sums (two sets with one key's labels are not valid).
  std::vector<Row> merged;
  for (Row& row : rows) {
    if (merged.empty() || merged.back().key != row.key) {
      merged.push_back(std::move(row));
      continue;
    }
    Row& into = merged.back();
#define GRPC_RESILIENCE_ADD_COUNTER(name) into.stats.name += row.stats.name;
    GRPC_RESILIENCE_GLOBAL_LIMIT_COUNTERS(GRPC_RESILIENCE_ADD_COUNTER)
#undef GRPC_RESILIENCE_ADD_COUNTER
    into.using_store = into.using_store && row.using_store;
  }
  rows = std::move(merged);
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
  for (const Row& row : rows) {
    const MetricLabel key{"key", row.key};
    const GlobalRateLimiterStats& s = row.stats;
    using_store.Sample({key}, row.using_store ? 1 : 0);
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

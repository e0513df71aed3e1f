#include "src/global_limits/global_limit_metrics.h"

#include <algorithm>

#include "src/metrics/metric_families.h"

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
  const MetricFamilies f(text, MetricGroup::kGlobalLimits);
  using M = MetricId;
  for (const Row& row : rows) {
    const MetricLabel key{"key", row.key};
    const GlobalRateLimiterStats& s = row.stats;
    f[M::kGlobalLimitUsingStore].Sample({key}, row.using_store ? 1 : 0);
    f[M::kGlobalLimitAdmitted].Sample({key, {"source", "lease"}}, s.admitted_leased);
    f[M::kGlobalLimitAdmitted].Sample({key, {"source", "local_share"}}, s.admitted_local);
    f[M::kGlobalLimitTokensLeased].Sample({key}, s.tokens_leased);
    f[M::kGlobalLimitTokensExpired].Sample({key}, s.tokens_expired);
    f[M::kGlobalLimitLeaseFailures].Sample({key}, s.lease_failures);
    f[M::kGlobalLimitTransitions].Sample({key, {"to", "local_share"}}, s.fallbacks);
    f[M::kGlobalLimitTransitions].Sample({key, {"to", "global"}}, s.recoveries);
    f[M::kGlobalLimitBucketRepairs].Sample({key, {"kind", "key_lost"}}, s.keys_lost);
    f[M::kGlobalLimitBucketRepairs].Sample({key, {"kind", "bad_value"}}, s.bad_values);
    f[M::kGlobalLimitBucketRepairs].Sample({key, {"kind", "clock_back"}}, s.clock_steps);
  }
}

}  // namespace resilience

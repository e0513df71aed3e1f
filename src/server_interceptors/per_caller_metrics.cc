#include "src/server_interceptors/per_caller_metrics.h"

#include <algorithm>

#include "src/metrics/metric_catalog.h"

namespace resilience {

void AppendPerCallerMetrics(
    PrometheusText& text,
    std::vector<std::pair<std::string, std::shared_ptr<PerCallerLimits>>> scopes) {
  if (scopes.empty()) return;
  std::sort(scopes.begin(), scopes.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  PrometheusText::Family& keys = MetricCatalog::Declare(text, MetricId::kServerPerCallerKeys);
  PrometheusText::Family& evicted =
      MetricCatalog::Declare(text, MetricId::kServerPerCallerKeysEvicted);
  PrometheusText::Family& hashed =
      MetricCatalog::Declare(text, MetricId::kServerPerCallerKeysHashed);
  PrometheusText::Family& overflow =
      MetricCatalog::Declare(text, MetricId::kServerPerCallerOverflow);
  PrometheusText::Family& rejections =
      MetricCatalog::Declare(text, MetricId::kServerPerCallerRejections);
  for (const auto& [scope, limits] : scopes) {
    const MetricLabel label{"scope", scope};
    keys.Sample({label}, limits->keys_tracked());
    evicted.Sample({label}, limits->evicted());
    hashed.Sample({label}, limits->hashed());
    overflow.Sample({label}, limits->overflowed());
    rejections.Sample({label, {"cause", "concurrency"}}, limits->rejected_concurrency());
    rejections.Sample({label, {"cause", "rate"}}, limits->rejected_rate());
    if (limits->fleet_queue() != nullptr) {
      rejections.Sample({label, {"cause", "global_rate"}}, limits->rejected_fleet_rate());
    }
  }
}

}  // namespace resilience

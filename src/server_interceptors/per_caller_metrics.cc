#include "src/server_interceptors/per_caller_metrics.h"

#include <algorithm>

#include "src/metrics/metric_families.h"

namespace resilience {

void AppendPerCallerMetrics(
    PrometheusText& text,
    std::vector<std::pair<std::string, std::shared_ptr<PerCallerLimits>>> scopes) {
  if (scopes.empty()) return;
  std::sort(scopes.begin(), scopes.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const MetricFamilies f(text, MetricGroup::kServerPerCaller);
  using M = MetricId;
  PrometheusText::Family& rejections = f[M::kServerPerCallerRejections];
  for (const auto& [scope, limits] : scopes) {
    const MetricLabel label{"scope", scope};
    f[M::kServerPerCallerKeys].Sample({label}, limits->keys_tracked());
    f[M::kServerPerCallerKeysEvicted].Sample({label}, limits->evicted());
    f[M::kServerPerCallerKeysHashed].Sample({label}, limits->hashed());
    f[M::kServerPerCallerOverflow].Sample({label}, limits->overflowed());
    rejections.Sample({label, {"cause", "concurrency"}}, limits->rejected_concurrency());
    rejections.Sample({label, {"cause", "rate"}}, limits->rejected_rate());
    if (limits->fleet_queue() != nullptr) {
      rejections.Sample({label, {"cause", "global_rate"}}, limits->rejected_fleet_rate());
    }
  }
}

}  // namespace resilience

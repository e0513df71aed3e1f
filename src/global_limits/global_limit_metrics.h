// File: src/global_limits/global_limit_metrics.h
//
// The metrics of the fleet-wide rate limits (docs/metrics.md).

#ifndef GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_GLOBAL_LIMIT_METRICS_H_
#define GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_GLOBAL_LIMIT_METRICS_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/global_limits/global_rate_limit.h"
#include "src/limits/per_caller_limits.h"
#include "grpc_resilience/prometheus_text.h"

namespace resilience {

// AppendGlobalLimitMetrics()
//
// The grpc_resilience_server_global_limit_* families, one sample set per
// limit labelled with its Redis key, in key order. A throttle.perCaller.global
// (`per_caller`: its scope and limits) is one sample set labelled with its
// keys' prefix and ":*", summed over its keys (no label per caller key);
// its lease failures and transitions are its queue's (one per outage, not
// one per key). Nothing (not even the families) without limits, so the
// families a server declares depend only on its policies.
void AppendGlobalLimitMetrics(
    PrometheusText& text, const std::vector<GlobalRateLimit*>& limits,
    const std::vector<std::pair<std::string, std::shared_ptr<PerCallerLimits>>>& per_caller = {});

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_GLOBAL_LIMIT_METRICS_H_

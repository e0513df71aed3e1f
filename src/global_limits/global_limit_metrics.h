// File: src/global_limits/global_limit_metrics.h
//
// The metrics of the fleet-wide rate limits (docs/metrics.md).

#ifndef GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_GLOBAL_LIMIT_METRICS_H_
#define GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_GLOBAL_LIMIT_METRICS_H_

#include <vector>

#include "src/global_limits/global_rate_limit.h"
#include "grpc_resilience/prometheus_text.h"

namespace resilience {

// AppendGlobalLimitMetrics()
//
// The grpc_resilience_server_global_limit_* families, one sample set per
// limit labelled with its Redis key, in key order. Nothing (not even the
// families) without limits, so the families a server declares depend only
// on its policies.
void AppendGlobalLimitMetrics(PrometheusText& text, std::vector<GlobalRateLimit*> limits);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_GLOBAL_LIMIT_METRICS_H_

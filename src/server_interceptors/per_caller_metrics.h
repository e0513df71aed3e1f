// File: src/server_interceptors/per_caller_metrics.h
//
// The metrics of the per-caller limits (docs/metrics.md): by throttle
// scope, never by caller key.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_PER_CALLER_METRICS_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_PER_CALLER_METRICS_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "grpc_resilience/prometheus_text.h"
#include "src/limits/per_caller_limits.h"

namespace resilience {

// AppendPerCallerMetrics()
//
// The grpc_resilience_server_per_caller_* families, one sample set per
// scope with a throttle.perCaller, in scope order. Nothing (not even the
// families) without one, so a server without per-caller limits renders
// what it did before.
void AppendPerCallerMetrics(
    PrometheusText& text,
    std::vector<std::pair<std::string, std::shared_ptr<PerCallerLimits>>> scopes);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_PER_CALLER_METRICS_H_

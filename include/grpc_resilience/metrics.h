/// \file include/grpc_resilience/metrics.h
///
/// The Prometheus text exposition that ClientResilience::AppendMetrics() and
/// ServerResilience::AppendMetrics() write into (prometheus_text.h), and the
/// snapshots their stats carry (metric_snapshots.h).

#ifndef GRPC_RESILIENCE_METRICS_H_
#define GRPC_RESILIENCE_METRICS_H_

#include "grpc_resilience/metric_snapshots.h"
#include "grpc_resilience/prometheus_text.h"

#endif  // GRPC_RESILIENCE_METRICS_H_

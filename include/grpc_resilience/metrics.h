// File: include/grpc_resilience/metrics.h
//
// The Prometheus text exposition that ClientResilience::AppendMetrics() and
// ServerResilience::AppendMetrics() write into, and the snapshots their
// stats carry.

#ifndef GRPC_RESILIENCE_METRICS_H_
#define GRPC_RESILIENCE_METRICS_H_

#include "src/metrics/latency_histogram.h"
#include "src/metrics/prometheus_text.h"
#include "src/metrics/status_code_counters.h"

#endif  // GRPC_RESILIENCE_METRICS_H_

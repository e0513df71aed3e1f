// File: src/metrics/metric_families.h
//
// The families of one group of the catalog (metric_catalog.h) declared in
// one go, so that each side's AppendMetrics() only samples.

#ifndef GRPC_RESILIENCE_SRC_METRICS_METRIC_FAMILIES_H_
#define GRPC_RESILIENCE_SRC_METRICS_METRIC_FAMILIES_H_

#include <vector>

#include "grpc_resilience/prometheus_text.h"
#include "src/metrics/metric_catalog.h"

namespace resilience {

// The groups of the catalog, each a run of MetricId in catalog order: what
// one AppendMetrics() (or one part of it) exposes.
enum class MetricGroup {
  kClient,           // kClientCalls .. kClientPolicyReloadFailures
  kServer,           // kServerCalls .. kServerShadowRejections
  kServerPerCaller,  // kServerPerCallerKeys .. kServerPerCallerRejections
  kGlobalLimits,     // kGlobalLimitUsingStore .. kGlobalLimitBucketRepairs
};

// MetricFamilies
//
// Declares every family of `group` in `text`, all of them and in catalog
// order (so the families come out in the same order whatever is sampled),
// and hands each out by its MetricId. Lives no longer than `text`. Not
// thread-safe: one AppendMetrics() uses it.
//
// Example:
//   MetricFamilies families(text, MetricGroup::kServer);
//   families[MetricId::kServerInFlight].Sample({{"grpc_method", m}}, 3);
class MetricFamilies {
 public:
  MetricFamilies(PrometheusText &text, MetricGroup group);

  // The family of `id`, which must belong to the group (checked: a debug
  // build aborts; a release one returns the group's first family).
  PrometheusText::Family &operator[](MetricId id) const;

 private:
  MetricId first_;
  std::vector<PrometheusText::Family *> families_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_METRICS_METRIC_FAMILIES_H_

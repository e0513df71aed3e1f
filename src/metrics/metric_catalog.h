// File: src/metrics/metric_catalog.h
//
// Every metric the library exposes, declared once: its name, type, help
// text and labels. The client's and the server's AppendMetrics() declare
// their families from it, and tests/metrics/metric_catalog_test.cc checks
// docs/metrics.md against it, so the exposition, the list and the operator's
// page cannot drift apart.

#ifndef GRPC_RESILIENCE_SRC_METRICS_METRIC_CATALOG_H_
#define GRPC_RESILIENCE_SRC_METRICS_METRIC_CATALOG_H_

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "grpc_resilience/prometheus_text.h"

namespace resilience {

// One entry per metric family, in the order of the catalog (and of the
// tables of docs/metrics.md): client, server, fleet-wide rate limits.
enum class MetricId {
  // Client (ClientResilience::AppendMetrics()).
  kClientCalls,
  kClientAttempts,
  kClientRetries,
  kClientHedges,
  kClientRetriesRefused,
  kClientUnretriedCalls,
  kClientLocalRejections,
  kClientFallbacks,
  kClientShadowRejections,
  kClientAttemptTimeouts,
  kClientBreakerState,
  kClientBreakerDropProbability,
  kClientBreakerTransitions,
  kClientBreakerRejectionsWaived,
  kClientEndpointBreakers,
  kClientHealthProbes,
  kClientCallDuration,
  kClientPolicyGeneration,
  kClientPolicyReloadFailures,
  // Server (ServerResilience::AppendMetrics()).
  kServerCalls,
  kServerRejections,
  kServerInFlight,
  kServerHandlerDuration,
  kServerInjectedDelays,
  kServerExpiredWhileDelayed,
  kServerConcurrencyLimit,
  kServerPolicyGeneration,
  kServerPolicyReloadFailures,
  kServerRejectionsByCriticality,
  kServerCriticalityInvalid,
  kServerShadowRejections,
  // Per-caller limits, per throttle scope (ServerResilience::AppendMetrics()).
  kServerPerCallerKeys,
  kServerPerCallerKeysEvicted,
  kServerPerCallerKeysHashed,
  kServerPerCallerOverflow,
  kServerPerCallerRejections,
  // Fleet-wide rate limits, per Redis key (AppendGlobalLimitMetrics()).
  kGlobalLimitUsingStore,
  kGlobalLimitAdmitted,
  kGlobalLimitTokensLeased,
  kGlobalLimitTokensExpired,
  kGlobalLimitLeaseFailures,
  kGlobalLimitTransitions,
  kGlobalLimitBucketRepairs,
};

// A label of a metric: its name and, when it takes only fixed values, those
// values (empty: any value, e.g. a method name or a status code).
struct MetricLabelSpec {
  absl::string_view name;
  absl::Span<const absl::string_view> values;
};

// A metric family: what the # HELP and # TYPE lines say, and the labels of
// its samples in the order they are rendered.
struct MetricSpec {
  MetricId id;
  absl::string_view name;
  MetricType type;
  absl::string_view help;
  absl::Span<const MetricLabelSpec> labels;
};

// MetricCatalog
//
// The list. Immutable; thread-safe.
//
// Example:
//   PrometheusText text;
//   PrometheusText::Family& calls =
//       MetricCatalog::Declare(text, MetricId::kClientCalls);
class MetricCatalog {
 public:
  MetricCatalog() = delete;

  // All()
  //
  // Every metric, in MetricId order.
  static absl::Span<const MetricSpec> All();

  // Get()
  //
  // The entry of `id`.
  static const MetricSpec& Get(MetricId id);

  // Declare()
  //
  // Declares the family of `id` in `text` (PrometheusText::Counter(),
  // Gauge() or Histogram() by its type, with its name and help).
  static PrometheusText::Family& Declare(PrometheusText& text, MetricId id);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_METRICS_METRIC_CATALOG_H_

// An exposition with every kind of metric, in families declared from
// MetricCatalog (docs/metrics.md), rendered from real LatencyHistograms and
// StatusCodeCounters, for the tests that check the text against promtool and
// serve it over HTTP.

#ifndef GRPC_RESILIENCE_TESTS_METRICS_SAMPLE_EXPOSITION_H_
#define GRPC_RESILIENCE_TESTS_METRICS_SAMPLE_EXPOSITION_H_

#include <array>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/metrics/latency_histogram.h"
#include "src/metrics/metric_catalog.h"
#include "grpc_resilience/prometheus_text.h"
#include "src/metrics/status_code_counters.h"

namespace resilience {
namespace testing {

// `status` receives the builder's status (OK when every name is valid).
inline std::string RenderSampleExposition(absl::Status* status = nullptr) {
  const std::array<absl::string_view, 2> methods = {"/cache.v1.CacheService/Get",
                                                    "/cache.v1.CacheService/Set"};
  PrometheusText text;
  PrometheusText::Family& calls = MetricCatalog::Declare(text, MetricId::kClientCalls);
  PrometheusText::Family& attempts = MetricCatalog::Declare(text, MetricId::kClientAttempts);
  PrometheusText::Family& retries = MetricCatalog::Declare(text, MetricId::kClientRetries);
  PrometheusText::Family& refused = MetricCatalog::Declare(text, MetricId::kClientRetriesRefused);
  PrometheusText::Family& rejections =
      MetricCatalog::Declare(text, MetricId::kClientLocalRejections);
  PrometheusText::Family& timeouts = MetricCatalog::Declare(text, MetricId::kClientAttemptTimeouts);
  PrometheusText::Family& breaker_state =
      MetricCatalog::Declare(text, MetricId::kClientBreakerState);
  PrometheusText::Family& transitions =
      MetricCatalog::Declare(text, MetricId::kClientBreakerTransitions);
  PrometheusText::Family& duration = MetricCatalog::Declare(text, MetricId::kClientCallDuration);
  PrometheusText::Family& server_calls = MetricCatalog::Declare(text, MetricId::kServerCalls);
  PrometheusText::Family& server_rejections =
      MetricCatalog::Declare(text, MetricId::kServerRejections);
  PrometheusText::Family& in_flight = MetricCatalog::Declare(text, MetricId::kServerInFlight);
  PrometheusText::Family& handler_duration =
      MetricCatalog::Declare(text, MetricId::kServerHandlerDuration);

  int n = 0;
  for (absl::string_view method : methods) {
    ++n;
    StatusCodeCounters codes;
    for (int i = 0; i < 10 * n; ++i) codes.Increment(0);
    codes.Increment(14);
    codes.Increment(4);
    codes.Increment(42);  // counted as OTHER
    const StatusCodeCountsSnapshot code_counts = codes.Snapshot();
    for (size_t slot = 0; slot < StatusCodeCounters::kNumSlots; ++slot) {
      if (code_counts.counts[slot] == 0) continue;
      calls.Sample({{"grpc_method", method}, {"grpc_code", StatusCodeCounters::SlotName(slot)}},
                   code_counts.counts[slot]);
      server_calls.Sample(
          {{"grpc_method", method}, {"grpc_code", StatusCodeCounters::SlotName(slot)}},
          code_counts.counts[slot]);
    }
    attempts.Sample({{"grpc_method", method}}, 15 * n);
    retries.Sample({{"grpc_method", method}}, 2 * n);
    refused.Sample({{"grpc_method", method}, {"reason", "budget"}}, 1);
    refused.Sample({{"grpc_method", method}, {"reason", "pushback"}}, 0);
    rejections.Sample({{"grpc_method", method}, {"cause", "breaker"}}, 3);
    timeouts.Sample({{"grpc_method", method}}, n);
    for (absl::string_view state : {"closed", "open", "half-open"}) {
      breaker_state.Sample({{"grpc_method", method}, {"state", state}}, state == "closed" ? 1 : 0);
    }
    transitions.Sample({{"grpc_method", method}, {"from", "closed"}, {"to", "open"}}, 1);
    transitions.Sample({{"grpc_method", method}, {"from", "open"}, {"to", "half-open"}}, 1);
    transitions.Sample({{"grpc_method", method}, {"from", "half-open"}, {"to", "closed"}}, 1);

    LatencyHistogram client_latency;
    LatencyHistogram server_latency;
    for (int ms : {1, 2, 3, 7, 40, 120, 900, 3000, 20000}) {
      client_latency.Observe(absl::Milliseconds(ms * n));
      server_latency.Observe(absl::Microseconds(300 * ms));
    }
    const LatencyHistogramSnapshot c = client_latency.Snapshot();
    duration.Sample({{"grpc_method", method}},
                    HistogramData{LatencyHistogram::UpperBounds(), c.bucket_counts, c.sum_seconds});
    const LatencyHistogramSnapshot s = server_latency.Snapshot();
    handler_duration.Sample(
        {{"grpc_method", method}},
        HistogramData{LatencyHistogram::UpperBounds(), s.bucket_counts, s.sum_seconds});

    server_rejections.Sample({{"grpc_method", method}, {"cause", "concurrency"}}, 4);
    server_rejections.Sample({{"grpc_method", method}, {"cause", "rate"}}, 5);
    server_rejections.Sample({{"grpc_method", method}, {"cause", "cpu"}}, 1);
    server_rejections.Sample({{"grpc_method", method}, {"cause", "injected_abort"}}, 0);
    in_flight.Sample({{"grpc_method", method}}, n - 1);
  }
  if (status != nullptr) *status = text.status();
  return text.Finish();
}

}  // namespace testing
}  // namespace resilience

#endif  // GRPC_RESILIENCE_TESTS_METRICS_SAMPLE_EXPOSITION_H_

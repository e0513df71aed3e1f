/// \file include/grpc_resilience/prometheus_collectable.h
///
/// The library's metrics for a prometheus-cpp setup: a
/// prometheus::Collectable to register on the service's own
/// prometheus::Exposer (or Registry), so that they appear on its existing
/// /metrics endpoint. Optional: library grpc_resilience::prometheus_cpp,
/// built when prometheus-cpp is found (Debian: prometheus-cpp-dev).

#ifndef GRPC_RESILIENCE_PROMETHEUS_COLLECTABLE_H_
#define GRPC_RESILIENCE_PROMETHEUS_COLLECTABLE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "grpc_resilience/export.h"
#include "grpc_resilience/prometheus_text.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace resilience {

/// PrometheusCollectable
///
/// Gives prometheus-cpp the metrics the library's own exposition renders:
/// on each Collect() it has `source` append them to a PrometheusText (e.g.
/// ClientResilience::AppendMetrics(), ServerResilience::AppendMetrics())
/// and turns every family into a prometheus::MetricFamily with the same
/// name, type, help, labels (in the same order) and values; histograms keep
/// their buckets (LatencyHistogramSnapshot::UpperBounds() and +Inf). So
/// the series, the dashboards and the alerts of docs/metrics.md are the
/// same whichever endpoint serves them. Families without samples are left
/// out, as in the text.
///
/// What the text would leave out (PrometheusText::status(): a bad name, a
/// label set given twice) is left out here too; status() says what, and the
/// first Collect() that meets a new such error writes it as one line to
/// stderr.
///
/// Thread-safe: prometheus-cpp may collect from several threads at once;
/// `source` must be too (AppendMetrics() is).
///
/// Example:
/// \code
///   prometheus::Exposer exposer("0.0.0.0:9464");  // the service's own
///   auto resilience_metrics = std::make_shared<PrometheusCollectable>(
///       [&](PrometheusText& text) {
///         client_resilience->AppendMetrics(text);
///         server_resilience->AppendMetrics(text);
///       });
///   exposer.RegisterCollectable(resilience_metrics);  // keep it alive
/// \endcode
class GRPC_RESILIENCE_EXPORT PrometheusCollectable : public prometheus::Collectable {
 public:
  /// Appends the metrics to serve to `text`; called on every Collect().
  using Source = std::function<void(PrometheusText& text)>;

  /// Serves what `source` appends.
  explicit PrometheusCollectable(Source source);
  ~PrometheusCollectable() override;
  PrometheusCollectable(const PrometheusCollectable&) = delete;
  PrometheusCollectable& operator=(const PrometheusCollectable&) = delete;

  /// Collect()
  ///
  /// The families `source` appends now, as prometheus-cpp takes them.
  std::vector<prometheus::MetricFamily> Collect() const override;

  /// ToMetricFamilies()
  ///
  /// The families of `text` (built with PrometheusText::Recording::kSamplesToo;
  /// a text built without it has no samples to give) as prometheus-cpp
  /// takes them.
  static std::vector<prometheus::MetricFamily> ToMetricFamilies(const PrometheusText& text);

  /// status()
  ///
  /// The last Collect()'s PrometheusText::status(): OK, or what it left out.
  absl::Status status() const;

 private:
  const Source source_;
  mutable absl::Mutex mu_;
  mutable absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_PROMETHEUS_COLLECTABLE_H_

// File: src/prometheus_cpp/prometheus_collectable.cc

#include "grpc_resilience/prometheus_collectable.h"

#include <cstdio>
#include <utility>

#include "prometheus/client_metric.h"
#include "prometheus/metric_type.h"

namespace resilience {
namespace {

prometheus::MetricType ToPrometheusType(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return prometheus::MetricType::Counter;
    case MetricType::kGauge:
      return prometheus::MetricType::Gauge;
    case MetricType::kHistogram:
      return prometheus::MetricType::Histogram;
  }
  return prometheus::MetricType::Untyped;
}

prometheus::ClientMetric ToClientMetric(MetricType type,
                                        const PrometheusText::RecordedSample& sample) {
  prometheus::ClientMetric metric;
  metric.label.reserve(sample.labels.size());
  for (const auto& [name, value] : sample.labels) metric.label.push_back({name, value});
  switch (type) {
    case MetricType::kCounter:
      metric.counter.value = sample.value;
      break;
    case MetricType::kGauge:
      metric.gauge.value = sample.value;
      break;
    case MetricType::kHistogram: {
      // cumulative_counts: one per finite bound, then +Inf (the count).
      metric.histogram.sample_count =
          sample.cumulative_counts.empty() ? 0 : sample.cumulative_counts.back();
      metric.histogram.sample_sum = sample.sum;
      metric.histogram.bucket.reserve(sample.upper_bounds.size());
      for (size_t i = 0; i < sample.upper_bounds.size() && i < sample.cumulative_counts.size();
           ++i) {
        prometheus::ClientMetric::Bucket bucket;
        bucket.upper_bound = sample.upper_bounds[i];
        bucket.cumulative_count = sample.cumulative_counts[i];
        metric.histogram.bucket.push_back(bucket);
      }
      // The +Inf bucket: prometheus-cpp's serializer adds it from
      // sample_count when the last bucket's bound is finite.
      break;
    }
  }
  return metric;
}

}  // namespace

PrometheusCollectable::PrometheusCollectable(Source source) : source_(std::move(source)) {}

PrometheusCollectable::~PrometheusCollectable() = default;

std::vector<prometheus::MetricFamily> PrometheusCollectable::ToMetricFamilies(
    const PrometheusText& text) {
  std::vector<prometheus::MetricFamily> families;
  for (const PrometheusText::Family* family : text.families()) {
    if (family->samples().empty()) continue;
    prometheus::MetricFamily& out = families.emplace_back();
    out.name = family->name();
    out.help = family->help();
    out.type = ToPrometheusType(family->type());
    out.metric.reserve(family->samples().size());
    for (const PrometheusText::RecordedSample& sample : family->samples()) {
      out.metric.push_back(ToClientMetric(family->type(), sample));
    }
  }
  return families;
}

std::vector<prometheus::MetricFamily> PrometheusCollectable::Collect() const {
  PrometheusText text(PrometheusText::Recording::kSamplesToo);
  if (source_) source_(text);
  absl::Status status = text.status();
  {
    absl::MutexLock lock(&mu_);
    if (!status.ok() && status != status_) {
      std::fprintf(stderr, "grpc_resilience: PrometheusCollectable left metrics out: %s\n",
                   status.ToString().c_str());
    }
    status_ = std::move(status);
  }
  return ToMetricFamilies(text);
}

absl::Status PrometheusCollectable::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

}  // namespace resilience

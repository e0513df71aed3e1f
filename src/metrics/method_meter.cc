// File: src/metrics/method_meter.cc

#include "src/metrics/method_meter.h"

#include <cstddef>
#include <vector>

namespace resilience {

void MethodMeter::AppendCalls(PrometheusText::Family& calls,
                              absl::Span<const MetricLabel> labels) const {
  const StatusCodeCountsSnapshot codes = codes_.Snapshot();
  std::vector<MetricLabel> with_code(labels.begin(), labels.end());
  with_code.push_back({"grpc_code", ""});
  for (size_t slot = 0; slot < StatusCodeCounters::kNumSlots; ++slot) {
    if (codes.counts[slot] == 0) continue;
    with_code.back().value = StatusCodeCounters::SlotName(slot);
    calls.Sample(with_code, codes.counts[slot]);
  }
}

void MethodMeter::AppendLatency(PrometheusText::Family& duration,
                                absl::Span<const MetricLabel> labels) const {
  const LatencyHistogramSnapshot latency = latency_.Snapshot();
  duration.Sample(labels, HistogramData{LatencyHistogram::UpperBounds(), latency.bucket_counts,
                                        latency.sum_seconds});
}

}  // namespace resilience

// File: src/metrics/method_meter.h
//
// The call metrics both sides keep for each method: calls by status code and
// their latency, and how they are rendered as Prometheus text.

#ifndef GRPC_RESILIENCE_SRC_METRICS_METHOD_METER_H_
#define GRPC_RESILIENCE_SRC_METRICS_METHOD_METER_H_

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "src/metrics/latency_histogram.h"
#include "grpc_resilience/prometheus_text.h"
#include "src/metrics/status_code_counters.h"

namespace resilience {

// MethodMeter
//
// The calls of one method by the status code they ended with
// (StatusCodeCounters) and their latency (LatencyHistogram), kept by the
// per-method state of the client (ClientMethodState) and of the server
// (ServerMethodState), and rendered by both the same way: AppendCalls()
// adds one sample per status code seen, labelled grpc_code, and
// AppendLatency() the histogram. The families are declared by the caller,
// with its other families, so that each side keeps its own family order,
// names, help and labels.
//
// Counting is what StatusCodeCounters and LatencyHistogram cost: one or two
// relaxed atomic increments, no lock.
//
// This class is thread-safe.
//
// Example:
//   MethodMeter meter;
//   meter.CountStatus(static_cast<int>(status.error_code()));
//   meter.ObserveLatency(clock.Now() - start);  // monotonic: Clock::Now()
//   ...
//   PrometheusText text;
//   PrometheusText::Family& calls = text.Counter("x_calls_total", "Calls.");
//   PrometheusText::Family& duration = text.Histogram("x_duration_seconds", "Latency.");
//   meter.AppendCalls(calls, {{"grpc_method", "/pkg.S/M"}});
//   meter.AppendLatency(duration, {{"grpc_method", "/pkg.S/M"}});
class MethodMeter {
 public:
  MethodMeter() = default;
  MethodMeter(const MethodMeter&) = delete;
  MethodMeter& operator=(const MethodMeter&) = delete;

  // CountStatus()
  //
  // Counts one call that ended with the status `code` (the number of
  // grpc::StatusCode).
  void CountStatus(int code) { codes_.Increment(code); }

  // ObserveLatency()
  //
  // Counts the latency of one call.
  void ObserveLatency(absl::Duration latency) { latency_.Observe(latency); }

  // StatusCounts() / Latencies()
  //
  // What was counted so far.
  StatusCodeCountsSnapshot StatusCounts() const { return codes_.Snapshot(); }
  LatencyHistogramSnapshot Latencies() const { return latency_.Snapshot(); }

  // AppendCalls()
  //
  // Adds to `calls` (a counter family) one sample per status code counted
  // at least once, in code order (OTHER last), labelled `labels` then
  // grpc_code="<code name>".
  void AppendCalls(PrometheusText::Family& calls, absl::Span<const MetricLabel> labels) const;

  // AppendLatency()
  //
  // Adds the latency histogram to `duration` (a histogram family),
  // labelled `labels`.
  void AppendLatency(PrometheusText::Family& duration, absl::Span<const MetricLabel> labels) const;

 private:
  StatusCodeCounters codes_;
  LatencyHistogram latency_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_METRICS_METHOD_METER_H_

// MethodMeter: what it counts, and its samples exactly.

#include "src/metrics/method_meter.h"

#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "src/core/counter_list.h"
#include "gtest/gtest.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MethodMeterTest, CountsStatusesAndLatencies) {
  MethodMeter meter;
  meter.CountStatus(0);
  meter.CountStatus(0);
  meter.CountStatus(14);
  meter.CountStatus(99);  // the other slot
  meter.ObserveLatency(absl::Milliseconds(3));
  meter.ObserveLatency(absl::Seconds(20));
  const StatusCodeCountsSnapshot codes = meter.StatusCounts();
  EXPECT_EQ(codes.counts[0], 2u);
  EXPECT_EQ(codes.counts[14], 1u);
  EXPECT_EQ(codes.counts[StatusCodeCounters::kOtherSlot], 1u);
  EXPECT_EQ(codes.total(), 4u);
  const LatencyHistogramSnapshot latency = meter.Latencies();
  EXPECT_EQ(latency.count, 2u);
  EXPECT_EQ(latency.bucket_counts[LatencyHistogram::BucketIndex(3'000'000)], 1u);
  EXPECT_EQ(latency.bucket_counts[LatencyHistogram::kNumBounds], 1u);  // +Inf
  EXPECT_DOUBLE_EQ(latency.sum_seconds, 20.003);
}

// The calls by code (seen codes only, in code order, OTHER last, grpc_code
// after the labels given) and the histogram, exactly, interleaved with
// another method's as a side's walk over its methods does.
TEST(MethodMeterTest, AppendsItsSamples) {
  MethodMeter get;
  get.CountStatus(14);
  get.CountStatus(-1);
  get.CountStatus(0);
  get.ObserveLatency(absl::Milliseconds(2));
  MethodMeter put;  // nothing counted: no calls samples, an empty histogram

  PrometheusText text;
  PrometheusText::Family& calls = text.Counter("demo_calls_total", "Calls.");
  PrometheusText::Family& duration = text.Histogram("demo_duration_seconds", "Latency.");
  get.AppendCalls(calls, {{"grpc_method", "/a.B/Get"}, {"channel", "c"}});
  get.AppendLatency(duration, {{"grpc_method", "/a.B/Get"}, {"channel", "c"}});
  put.AppendCalls(calls, {{"grpc_method", "/a.B/Put"}, {"channel", "c"}});
  put.AppendLatency(duration, {{"grpc_method", "/a.B/Put"}, {"channel", "c"}});
  ASSERT_TRUE(text.status().ok()) << text.status();
  const std::string body = text.Finish();
  EXPECT_THAT(body,
              HasSubstr("# TYPE demo_calls_total counter\n"
                        "demo_calls_total{grpc_method=\"/a.B/Get\",channel=\"c\",grpc_code="
                        "\"OK\"} 1\n"
                        "demo_calls_total{grpc_method=\"/a.B/Get\",channel=\"c\",grpc_code="
                        "\"UNAVAILABLE\"} 1\n"
                        "demo_calls_total{grpc_method=\"/a.B/Get\",channel=\"c\",grpc_code="
                        "\"OTHER\"} 1\n"
                        "# HELP demo_duration_seconds Latency.\n"));
  EXPECT_THAT(body, HasSubstr("demo_duration_seconds_bucket{grpc_method=\"/a.B/Get\",channel="
                              "\"c\",le=\"0.001\"} 0\n"
                              "demo_duration_seconds_bucket{grpc_method=\"/a.B/Get\",channel="
                              "\"c\",le=\"0.0025\"} 1\n"));
  EXPECT_THAT(body, HasSubstr("demo_duration_seconds_sum{grpc_method=\"/a.B/Get\",channel=\"c\"} "
                              "0.002\n"
                              "demo_duration_seconds_count{grpc_method=\"/a.B/Get\",channel=\"c\"} "
                              "1\n"));
  EXPECT_THAT(body, HasSubstr("demo_duration_seconds_count{grpc_method=\"/a.B/Put\",channel=\"c\"} "
                              "0\n"));
  EXPECT_THAT(body, Not(HasSubstr("demo_calls_total{grpc_method=\"/a.B/Put\"")));
}

// A list macro makes the atomics, the snapshot fields and the copy.
#define DEMO_COUNTERS(X) \
  X(calls)               \
  /* a comment in the list */ \
  X(retries)

struct DemoState {
  DEMO_COUNTERS(GRPC_RESILIENCE_ATOMIC_COUNTER)
};
struct DemoStats {
  DEMO_COUNTERS(GRPC_RESILIENCE_COUNTER_FIELD)
};

DemoStats Read(const DemoState& from) {
  DemoStats to;
  DEMO_COUNTERS(GRPC_RESILIENCE_LOAD_COUNTER)
  return to;
}

TEST(CounterListTest, DeclaresCountsAndCopies) {
  DemoState state;
  EXPECT_EQ(Read(state).calls, 0);
  state.calls.fetch_add(3, std::memory_order_relaxed);
  state.retries.fetch_add(1, std::memory_order_relaxed);
  const DemoStats stats = Read(state);
  EXPECT_EQ(stats.calls, 3);
  EXPECT_EQ(stats.retries, 1);
  static_assert(sizeof(DemoStats) == 2 * sizeof(int64_t));
}

}  // namespace
}  // namespace resilience

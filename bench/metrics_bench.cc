// The cost of the metrics on the call path, beside a floor measured in the
// same run: a bare relaxed fetch_add on a shared std::atomic<uint64_t> (what
// any shared counter costs at least). Measured:
//
//   BM_BareAtomicIncrement            the floor
//   BM_StatusCodeCountersIncrement    StatusCodeCounters::Increment(code)
//   BM_LatencyHistogramObserve        LatencyHistogram::Observe(), latencies
//                                     spread over every bucket (no easy
//                                     branch prediction, nor needed)
//   BM_LatencyHistogramObserveSame    the same latency every time
//   BM_RenderScrape/N                 one scrape: snapshots of N methods'
//                                     counters and two histograms each, and
//                                     the exposition text of 13 families
//
// With 1 and 2 threads on one shared object (the increments); per-thread
// time is what a call pays.
//
//   metrics_bench [--benchmark_...]
//
// Google Benchmark's flags; --help lists them and exits 0; an unknown flag
// exits 2.

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "src/metrics/latency_histogram.h"
#include "src/metrics/metric_catalog.h"
#include "grpc_resilience/prometheus_text.h"
#include "src/metrics/status_code_counters.h"

namespace resilience {
namespace {

// The names come from the catalog; the help texts stay the bench's own short
// ones, so that the text sizes of docs/metrics.md stay comparable.
absl::string_view Name(MetricId id) { return MetricCatalog::Get(id).name; }

void BM_BareAtomicIncrement(benchmark::State& state) {
  static std::atomic<uint64_t> counter{0};
  for (auto _ : state) {
    counter.fetch_add(1, std::memory_order_relaxed);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BareAtomicIncrement)->Threads(1)->Threads(2);

void BM_StatusCodeCountersIncrement(benchmark::State& state) {
  static StatusCodeCounters counters;
  // Mostly OK, as calls are.
  constexpr std::array<int, 8> kCodes = {0, 0, 0, 0, 0, 0, 14, 4};
  size_t i = 0;
  for (auto _ : state) {
    counters.Increment(kCodes[i++ & 7]);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_StatusCodeCountersIncrement)->Threads(1)->Threads(2);

// 64 latencies spread log-uniformly from 0.1 ms to 30 s, in a scrambled
// order.
std::array<absl::Duration, 64> SpreadLatencies() {
  std::array<absl::Duration, 64> latencies;
  uint32_t x = 12345;
  for (size_t i = 0; i < latencies.size(); ++i) {
    x = x * 1103515245u + 12345u;
    const double exponent = -4 + 5.5 * ((x >> 8) % 1000) / 1000.0;  // 1e-4 .. ~3e1 s
    latencies[i] = absl::Seconds(std::pow(10.0, exponent));
  }
  return latencies;
}

void BM_LatencyHistogramObserve(benchmark::State& state) {
  static LatencyHistogram histogram;
  const std::array<absl::Duration, 64> latencies = SpreadLatencies();
  size_t i = 0;
  for (auto _ : state) {
    histogram.Observe(latencies[i++ & 63]);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LatencyHistogramObserve)->Threads(1)->Threads(2);

void BM_LatencyHistogramObserveSame(benchmark::State& state) {
  static LatencyHistogram histogram;
  absl::Duration latency = absl::Milliseconds(3);
  for (auto _ : state) {
    benchmark::DoNotOptimize(latency);
    histogram.Observe(latency);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LatencyHistogramObserveSame)->Threads(1)->Threads(2);

// What one scrape costs the process: the metrics of `methods` methods, as
// the interceptors would keep them, snapshotted and rendered.
void BM_RenderScrape(benchmark::State& state) {
  struct MethodMetrics {
    std::string name;
    StatusCodeCounters codes;
    std::atomic<uint64_t> attempts{0};
    std::atomic<uint64_t> retries{0};
    LatencyHistogram client_latency;
    LatencyHistogram server_latency;
  };
  const size_t num_methods = static_cast<size_t>(state.range(0));
  std::vector<std::unique_ptr<MethodMetrics>> methods;
  const std::array<absl::Duration, 64> latencies = SpreadLatencies();
  for (size_t m = 0; m < num_methods; ++m) {
    methods.push_back(std::make_unique<MethodMetrics>());
    methods.back()->name = absl::StrCat("/bench.v1.Service/Method", m);
    for (int i = 0; i < 1000; ++i) {
      methods.back()->codes.Increment(i % 10 == 0 ? 14 : 0);
      methods.back()->client_latency.Observe(latencies[i & 63]);
      methods.back()->server_latency.Observe(latencies[(i * 7) & 63]);
    }
    methods.back()->attempts = 1100;
    methods.back()->retries = 100;
  }
  size_t bytes = 0;
  for (auto _ : state) {
    PrometheusText text;
    PrometheusText::Family& calls =
        text.Counter(Name(MetricId::kClientCalls), "Calls, by final status.");
    PrometheusText::Family& attempts = text.Counter(Name(MetricId::kClientAttempts), "Attempts.");
    PrometheusText::Family& retries = text.Counter(Name(MetricId::kClientRetries), "Retries.");
    PrometheusText::Family& refused =
        text.Counter(Name(MetricId::kClientRetriesRefused), "Retries not made, by reason.");
    PrometheusText::Family& rejections =
        text.Counter(Name(MetricId::kClientLocalRejections), "Local rejections, by cause.");
    PrometheusText::Family& timeouts =
        text.Counter(Name(MetricId::kClientAttemptTimeouts), "Attempt timeouts.");
    PrometheusText::Family& state_gauge =
        text.Gauge(Name(MetricId::kClientBreakerState), "Breaker state.");
    PrometheusText::Family& transitions =
        text.Counter(Name(MetricId::kClientBreakerTransitions), "Transitions.");
    PrometheusText::Family& duration =
        text.Histogram(Name(MetricId::kClientCallDuration), "Call latency.");
    PrometheusText::Family& server_calls =
        text.Counter(Name(MetricId::kServerCalls), "Server calls.");
    PrometheusText::Family& server_rejections =
        text.Counter(Name(MetricId::kServerRejections), "Server rejections.");
    PrometheusText::Family& in_flight = text.Gauge(Name(MetricId::kServerInFlight), "In flight.");
    PrometheusText::Family& handler =
        text.Histogram(Name(MetricId::kServerHandlerDuration), "Handler latency.");
    for (const auto& method : methods) {
      const StatusCodeCountsSnapshot codes = method->codes.Snapshot();
      for (size_t slot = 0; slot < StatusCodeCounters::kNumSlots; ++slot) {
        if (codes.counts[slot] == 0) continue;
        const absl::string_view code = StatusCodeCounters::SlotName(slot);
        calls.Sample({{"grpc_method", method->name}, {"grpc_code", code}}, codes.counts[slot]);
        server_calls.Sample({{"grpc_method", method->name}, {"grpc_code", code}},
                            codes.counts[slot]);
      }
      attempts.Sample({{"grpc_method", method->name}}, method->attempts.load());
      retries.Sample({{"grpc_method", method->name}}, method->retries.load());
      refused.Sample({{"grpc_method", method->name}, {"reason", "budget"}}, 0);
      refused.Sample({{"grpc_method", method->name}, {"reason", "pushback"}}, 0);
      rejections.Sample({{"grpc_method", method->name}, {"cause", "breaker"}}, 0);
      timeouts.Sample({{"grpc_method", method->name}}, 0);
      for (const char* s : {"closed", "open", "half-open"}) {
        state_gauge.Sample({{"grpc_method", method->name}, {"state", s}}, 0);
      }
      transitions.Sample({{"grpc_method", method->name}, {"from", "closed"}, {"to", "open"}}, 0);
      const LatencyHistogramSnapshot c = method->client_latency.Snapshot();
      duration.Sample(
          {{"grpc_method", method->name}},
          HistogramData{LatencyHistogram::UpperBounds(), c.bucket_counts, c.sum_seconds});
      for (const char* cause : {"concurrency", "rate", "injected_abort"}) {
        server_rejections.Sample({{"grpc_method", method->name}, {"cause", cause}}, 0);
      }
      in_flight.Sample({{"grpc_method", method->name}}, 0);
      const LatencyHistogramSnapshot s = method->server_latency.Snapshot();
      handler.Sample(
          {{"grpc_method", method->name}},
          HistogramData{LatencyHistogram::UpperBounds(), s.bucket_counts, s.sum_seconds});
    }
    const std::string out = text.Finish();
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RenderScrape)->Arg(1)->Arg(20)->Arg(200)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace resilience

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);  // --help: prints the flags, exits 0
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

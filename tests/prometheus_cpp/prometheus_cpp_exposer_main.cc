// prometheus_cpp_exposer: a service's own prometheus-cpp Exposer, on
// 127.0.0.1:0, serving the library's metrics through PrometheusCollectable
// (with a metric of the service's own beside them), for
// tests/e2e/prometheus_cpp_scrape_test.py.
//
// Runs the cache service in process with the library on both sides
// (tests/prometheus_cpp/resilient_cache.h), makes 30 Stores and Gets, prints
// "metrics on http://127.0.0.1:<port>/metrics" and keeps serving (and
// calling, a few calls a second) until SIGTERM or SIGINT, at most 120 s.

#include <csignal>
#include <cstdio>
#include <ctime>
#include <memory>

#include "grpc_resilience/prometheus_collectable.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"
#include "tests/prometheus_cpp/resilient_cache.h"

int main() {
  // Blocked here, before any thread starts, so that every thread inherits
  // the mask and sigtimedwait() below takes them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  resilience::testing::ResilientCache cache;
  if (!cache.Start()) {
    std::fprintf(stderr, "prometheus_cpp_exposer: the cache service did not start\n");
    return 1;
  }
  cache.MakeCalls(30);

  prometheus::Exposer exposer("127.0.0.1:0");
  // The service's own metrics, as it had them before.
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::Counter& requests = prometheus::BuildCounter()
                                      .Name("cache_service_requests_total")
                                      .Help("Requests the service handled.")
                                      .Register(*registry)
                                      .Add({});
  exposer.RegisterCollectable(registry);
  // The library's.
  auto resilience_metrics = std::make_shared<resilience::PrometheusCollectable>(
      [&cache](resilience::PrometheusText& text) { cache.AppendMetrics(text); });
  exposer.RegisterCollectable(resilience_metrics);

  if (exposer.GetListeningPorts().empty()) {
    std::fprintf(stderr, "prometheus_cpp_exposer: the exposer listens on no port\n");
    return 1;
  }
  std::printf("metrics on http://127.0.0.1:%d/metrics\n", exposer.GetListeningPorts().front());
  std::fflush(stdout);

  const timespec tick = {0, 200 * 1000 * 1000};
  for (int i = 0; i < 120 * 5; ++i) {
    if (sigtimedwait(&stop, nullptr, &tick) > 0) return 0;
    cache.MakeCalls(1);
    requests.Increment(2);
  }
  std::fprintf(stderr, "prometheus_cpp_exposer: stopping after 120 s\n");
  return 0;
}

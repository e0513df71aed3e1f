// cache_demo: a narrated session against the example cache service.
//
// Starts a cache server on a free loopback port in this process, with the
// shipped examples/cache_service/policies.json, runs a scripted session
// against it over a real gRPC channel, and prints what each step did and the
// counters that prove it. Every step checks its own outcome; the demo exits 1
// if one did not happen as described, 0 otherwise. No arguments (--help
// prints this; anything else exits 2). --metrics_port=PORT serves the
// metrics of the main server and of the demo's main channel on
// http://127.0.0.1:PORT/metrics while the demo runs (docs/metrics.md), and a
// line on stderr says so: "cache_demo: metrics on
// http://127.0.0.1:PORT/metrics".

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "grpc_resilience/events.h"
#include "examples/cache_service/cache_server.h"
#include "examples/cache_service/demo_scenarios.h"
#include "examples/cache_service/demo_session.h"
#include "examples/cache_service/load_generator.h"
#include "examples/common/command_line.h"
#include "grpc_resilience/resilient_channel.h"
#include "grpc_resilience/prometheus_text.h"
#ifdef CACHE_SERVICE_HAS_METRICS_HTTP
#include "grpc_resilience/metrics_http.h"
#endif

ABSL_FLAG(int, metrics_port, 0,
          "Serve the metrics of the demo's main server and channel for Prometheus on "
          "http://127.0.0.1:PORT/metrics while the demo runs; 0: no metrics endpoint.");

namespace {

using cache::v1::CacheService;
using cache_service::AdaptiveLimit;
using cache_service::DemoSession;
using cache_service::Flaky;
using cache_service::Hedged;
using cache_service::NoFaults;
using cache_service::Outage;
using cache_service::StaleReadsInOutage;
using cache_service::ResilientChannel;
using cache_service::Show;
using cache_service::Slow;
using cache_service::StartServer;

constexpr char kUsage[] =
    "A narrated session against the example cache service: starts a cache server in\n"
    "this process with the shipped examples/cache_service/policies.json, runs a scripted\n"
    "session against it over a real gRPC channel (retries through a flaky backend,\n"
    "per-attempt timeouts on a slow one, a breaker through an outage, a throttled burst,\n"
    "load), and checks every step.\n\n"
    "  cache_demo [--metrics_port=0]\n\n"
    "--metrics_port=PORT serves the metrics of the main server and channel on\n"
    "http://127.0.0.1:PORT/metrics while the demo runs (a line on stderr says where).\n"
    "Exit status: 0 when every step went as described, 1 otherwise, 2 for bad usage.";

}  // namespace

int main(int argc, char** argv) {
  example_cli::ParseFlagsOrExit(argc, argv, kUsage);
  const int metrics_port = absl::GetFlag(FLAGS_metrics_port);
  if (metrics_port < 0 || metrics_port > 65535) {
    return example_cli::UsageError(
        absl::StrCat("--metrics_port: must be in [0, 65535], got ", metrics_port));
  }
#ifndef CACHE_SERVICE_HAS_METRICS_HTTP
  if (metrics_port != 0) {
    return example_cli::UsageError(
        "--metrics_port: this build has no metrics endpoint (RESILIENCE_METRICS_HTTP was off)");
  }
#endif
  const absl::Time demo_start = absl::Now();
  // The main server: the shipped policies, and a slow Dump (an injected
  // 300 ms delay) so that Dump calls hold their throttle slots long enough
  // for a burst to find both taken.
  std::unique_ptr<cache_service::CacheServer> server =
      StartServer([](const std::string& method) -> std::string {
        return method == "Dump" ? R"({"delay": "0.3s"})" : "";
      });
  if (server == nullptr) return 1;
  std::shared_ptr<resilience::ClientResilience> client_stats;
  DemoSession demo(CacheService::NewStub(ResilientChannel(server->address(), &client_stats)));
#ifdef CACHE_SERVICE_HAS_METRICS_HTTP
  // The main server's and channel's metrics, rendered at each scrape.
  // Declared after both, so destroyed (stopped) before them.
  std::unique_ptr<resilience::MetricsHttpServer> metrics;
  if (metrics_port != 0) {
    resilience::MetricsHttpServer::Options metrics_options;
    metrics_options.port = metrics_port;
    resilience::ServerResilience* const server_state = &server->resilience();
    resilience::ClientResilience* const client_state = client_stats.get();
    absl::StatusOr<std::unique_ptr<resilience::MetricsHttpServer>> started =
        resilience::MetricsHttpServer::Start(metrics_options, [server_state, client_state] {
          resilience::PrometheusText text;
          client_state->AppendMetrics(text);
          server_state->AppendMetrics(text);
          return text.Finish();
        });
    if (!started.ok()) {
      server->Shutdown(absl::ZeroDuration());
      return example_cli::UsageError(absl::StrCat("--metrics_port: ", started.status().message()));
    }
    metrics = *std::move(started);
    std::fprintf(stderr, "cache_demo: metrics on http://127.0.0.1:%d/metrics\n", metrics->port());
  }
#endif

  std::printf(
      "cache_demo: cache server listening on %s (max_entries 300, max_value_bytes 4096);\n"
      "client and server use examples/cache_service/policies.json\n",
      server->address().c_str());
  std::string value;
  grpc::Status s;

  std::printf("-- the basics\n");
  s = demo.Store("greeting", "hello, world");
  demo.Step("Store greeting = \"hello, world\"", Show(s), s.ok());
  s = demo.Get("greeting", &value);
  demo.Step("Get greeting", absl::StrCat(Show(s), " \"", value, "\""),
            s.ok() && value == "hello, world");
  s = demo.Get("no-such-key", &value);
  demo.Step("Get a key that was never stored", Show(s),
            s.error_code() == grpc::StatusCode::NOT_FOUND);
  s = demo.Store("", "x");
  demo.Step("Store with an empty key", Show(s),
            s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  s = demo.Store("big", std::string(8192, 'x'));
  demo.Step("Store an 8192-byte value (limit 4096)", Show(s),
            s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);

  std::printf("\n-- a bounded store: least recently used entries go first\n");
  s = grpc::Status::OK;
  for (int i = 0; i < 300 && s.ok(); ++i) {
    s = demo.Store(absl::StrFormat("key-%03d", i), std::string(1024, 'a' + i % 26));
  }
  demo.Step("Store key-000 .. key-299, 1 KiB each", Show(s), s.ok());
  s = demo.Get("greeting", &value);
  demo.Step("Get greeting (301st entry, least recently used)", Show(s),
            s.error_code() == grpc::StatusCode::NOT_FOUND);
  std::vector<std::string> keys;
  s = demo.Dump(&keys);
  demo.Step("Dump",
            absl::StrCat(Show(s), ", ", keys.size(), " entries, ",
                         keys.empty() ? "" : keys.front() + " .. " + keys.back()),
            s.ok() && keys.size() == 300 && std::is_sorted(keys.begin(), keys.end()));

  Flaky(demo);
  Slow(demo);
  Outage(demo);
  StaleReadsInOutage(demo);
  Hedged(demo);
  AdaptiveLimit(demo);

  std::printf(
      "\n-- server throttling: Dump allows 2 calls at once (policies.json), and the\n"
      "   backend is slow (an injected 300 ms delay)\n");
  {
    // Eight Dumps start together: the first two hold the slots for 300 ms,
    // the other six are turned away at once.
    constexpr int kBurst = 8;
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<std::unique_ptr<grpc::ClientReader<cache::v1::DumpItem>>> readers;
    for (int i = 0; i < kBurst; ++i) {
      contexts.push_back(std::make_unique<grpc::ClientContext>());
      contexts.back()->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
      readers.push_back(demo.stub().Dump(contexts.back().get(), cache::v1::DumpReq()));
    }
    int ok = 0, throttled = 0, items_of_throttled = 0;
    std::string message, pushback;
    for (int i = 0; i < kBurst; ++i) {
      cache::v1::DumpItem item;
      int items = 0;
      while (readers[i]->Read(&item)) ++items;
      grpc::Status status = readers[i]->Finish();
      if (status.ok()) ++ok;
      if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        ++throttled;
        items_of_throttled += items;
        message = Show(status);
        auto it = contexts[i]->GetServerTrailingMetadata().find("grpc-retry-pushback-ms");
        if (it != contexts[i]->GetServerTrailingMetadata().end()) {
          pushback = std::string(it->second.data(), it->second.size());
        }
      }
    }
    const resilience::ServerMethodStats stats =
        server->resilience().Stats("/cache.v1.CacheService/Dump");
    // The service is registered behind the guard (CacheServer), so a
    // rejected Dump never runs the handler: it streams nothing.
    demo.Step(absl::StrCat("A burst of ", kBurst, " concurrent Dumps"),
              absl::StrCat(ok, " OK, ", throttled, " RESOURCE_EXHAUSTED carrying ",
                           items_of_throttled, " items"),
              ok == 2 && throttled == 6 && items_of_throttled == 0);
    std::printf("      %s; pushback %s ms (about how long the scope's calls take)\n",
                message.c_str(), pushback.c_str());
    std::printf(
        "      server counters for Dump: admitted %ld, rejected by the concurrency limit "
        "%ld, in flight %ld\n",
        static_cast<long>(stats.admitted), static_cast<long>(stats.rejected_concurrency),
        static_cast<long>(stats.in_flight));
  }

  std::printf("\n-- load\n");
  cache_service::LoadOptions load;
  load.calls = 2000;
  load.concurrency = 4;
  load.key_space = 400;
  load.value_size = 64;
  cache_service::LoadReport report = cache_service::RunLoad(demo.stub(), load);
  const int64_t answered =
      report.count(grpc::StatusCode::OK) + report.count(grpc::StatusCode::NOT_FOUND);
  demo.Step("Load: 2000 calls, 4 at a time, 80% Get / 20% Store",
            absl::StrFormat("%d answered, p99 %.2f ms", answered,
                            absl::ToDoubleMilliseconds(report.Percentile(0.99))),
            answered == load.calls);
  std::printf("\n%s", report.Format().c_str());

  server->Shutdown(absl::Seconds(1));
  std::printf("\ncache_demo: took %.1f s\n", absl::ToDoubleSeconds(absl::Now() - demo_start));
  if (demo.failures() > 0) {
    std::printf("\ncache_demo: %d step(s) did not go as expected\n", demo.failures());
    return 1;
  }
  std::printf("\ncache_demo: every step went as expected\n");
  return 0;
}

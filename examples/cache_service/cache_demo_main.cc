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
#include <functional>
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
#include "examples/cache_service/adaptive_limit_demo.h"
#include "examples/cache_service/cache_calls.h"
#include "examples/cache_service/cache_server.h"
#include "examples/cache_service/load_generator.h"
#include "examples/common/command_line.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "resilience/v1/policy.pb.h"
#include "shipped_policies.h"
#include "src/client_interceptors/resilient_channel.h"
#include "src/grpc_common/status_conversion.h"
#include "grpc_resilience/prometheus_text.h"
#include "grpc_resilience/policy.h"
#ifdef CACHE_SERVICE_HAS_METRICS_HTTP
#include "grpc_resilience/metrics_http.h"
#endif

ABSL_FLAG(int, metrics_port, 0,
          "Serve the metrics of the demo's main server and channel for Prometheus on "
          "http://127.0.0.1:PORT/metrics while the demo runs; 0: no metrics endpoint.");

namespace {

using cache::v1::CacheService;
using cache_service::DumpKeys;
using cache_service::GetValue;
using cache_service::StoreValue;

// The deadline of the demo's own calls.
constexpr absl::Duration kCallTimeout = absl::Seconds(5);

class Demo {
 public:
  explicit Demo(std::unique_ptr<CacheService::Stub> stub) : stub_(std::move(stub)) {}

  // Prints a numbered step with its outcome and remembers whether it held.
  void Step(const std::string& what, const std::string& result, bool as_expected) {
    ++steps_;
    std::printf("%2d. %-58s %s%s\n", steps_, what.c_str(), result.c_str(),
                as_expected ? "" : "   <-- NOT AS EXPECTED");
    if (!as_expected) ++failures_;
  }

  grpc::Status Store(const std::string& key, const std::string& value) {
    return StoreValue(*stub_, key, value, kCallTimeout);
  }
  grpc::Status Get(const std::string& key, std::string* value) {
    return GetValue(*stub_, key, value, kCallTimeout);
  }
  grpc::Status Dump(std::vector<std::string>* keys) { return DumpKeys(*stub_, keys, kCallTimeout); }

  CacheService::Stub& stub() { return *stub_; }
  // Sends the demo's calls through `stub` (a scenario's own server and
  // channel) and returns the stub used so far, to be swapped back.
  std::unique_ptr<CacheService::Stub> SwapStub(std::unique_ptr<CacheService::Stub> stub) {
    stub_.swap(stub);
    return stub;
  }
  int failures() const { return failures_; }

 private:
  std::unique_ptr<CacheService::Stub> stub_;
  int steps_ = 0;
  int failures_ = 0;
};

std::string Show(const grpc::Status& status) { return resilience::FormatStatus(status); }

}  // namespace

// The shipped policies, edited: each scenario adds the fault injection that
// plays its part of the backend.
absl::StatusOr<resilience::PolicySet> ShippedPoliciesWith(
    const std::function<void(const std::string& method, resilience::v1::MethodConfig&)>& edit) {
  resilience::v1::PolicyFile file;
  if (auto s = google::protobuf::util::JsonStringToMessage(cache_service::kShippedPolicies, &file);
      !s.ok()) {
    return absl::InvalidArgumentError(s.ToString());
  }
  for (resilience::v1::MethodConfig& entry : *file.mutable_method_config()) {
    for (const resilience::v1::MethodName& name : entry.name()) edit(name.method(), entry);
  }
  std::string json;
  if (auto s = google::protobuf::util::MessageToJsonString(file, &json); !s.ok()) {
    return absl::InternalError(s.ToString());
  }
  return resilience::PolicySet::FromJsonString(json);
}

// A cache server for one scenario: the shipped policies with `edit`.
std::unique_ptr<cache_service::CacheServer> StartServer(
    const std::function<void(const std::string&, resilience::v1::MethodConfig&)>& edit,
    int port = 0) {
  absl::StatusOr<resilience::PolicySet> policies = ShippedPoliciesWith(edit);
  if (!policies.ok()) {
    std::fprintf(stderr, "cache_demo: policies.json: %s\n", policies.status().ToString().c_str());
    return nullptr;
  }
  cache_service::CacheServer::Options options;
  options.port = port;
  options.store.max_entries = 300;       // small, so that eviction shows
  options.store.max_value_bytes = 4096;  // small, so that the limit shows
  options.policies = *std::move(policies);
  options.events = std::make_shared<resilience::LogEvents>(stdout, "  event: ");
  absl::StatusOr<std::unique_ptr<cache_service::CacheServer>> server =
      cache_service::CacheServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "cache_demo: %s\n", server.status().ToString().c_str());
    return nullptr;
  }
  return *std::move(server);
}

// A client channel with the shipped policies' client chain (retry ->
// timeout -> breaker), reconnecting quickly so that a restarted server is
// found within the demo's short pauses.
std::shared_ptr<grpc::Channel> ResilientChannel(
    const std::string& target, std::shared_ptr<resilience::ClientResilience>* state) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 300);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  resilience::ResilientChannelOptions options;
  options.args = args;
  // Breaker transitions, one line each, as the demo goes.
  options.resilience.events = std::make_shared<resilience::LogEvents>(stdout, "  event: ");
  resilience::ResilientChannel channel = resilience::CreateResilientChannel(
      target, grpc::InsecureChannelCredentials(),
      *resilience::PolicySet::FromJsonString(cache_service::kShippedPolicies), std::move(options));
  *state = channel.resilience;
  return channel.channel;
}

void NoFaults(const std::string&, resilience::v1::MethodConfig&) {}

// The backend fails 5% of Gets with UNAVAILABLE; Get's retry policy
// (3 attempts, UNAVAILABLE retryable) turns the failures into successes.
void Flaky(Demo& demo) {
  std::printf("\n-- a flaky backend: 5%% of Gets fail with UNAVAILABLE (injected); Get retries\n"
              "   (3 attempts, within a retry budget that allows about 1 retry per 10 calls)\n");
  auto server = StartServer([](const std::string& method, resilience::v1::MethodConfig& entry) {
    if (method != "Get") return;
    entry.mutable_fault_injection()->set_abort_code("UNAVAILABLE");
    entry.mutable_fault_injection()->set_abort_fraction(0.05);
    entry.mutable_fault_injection()->set_seed(42);
  });
  if (server == nullptr) return demo.Step("start the flaky server", "failed", false);
  std::shared_ptr<resilience::ClientResilience> stats;
  std::unique_ptr<CacheService::Stub> main_stub =
      demo.SwapStub(CacheService::NewStub(ResilientChannel(server->address(), &stats)));
  std::string value;
  grpc::Status s = demo.Store("k", "v");
  int ok = 0;
  for (int i = 0; i < 100; ++i) ok += demo.Get("k", &value).ok() ? 1 : 0;
  const auto server_stats = server->resilience().Stats("/cache.v1.CacheService/Get");
  const auto client = stats->Stats("/cache.v1.CacheService/Get");
  demo.SwapStub(std::move(main_stub));
  demo.Step("100 Gets against the flaky backend",
            absl::StrFormat("%d OK; server aborted %d attempts, client retried %d", ok,
                            server_stats.faults_aborted, client.retries),
            s.ok() && ok == 100 && server_stats.faults_aborted > 0 &&
                client.retries == server_stats.faults_aborted);
  server->Shutdown(absl::ZeroDuration());
}

// 20% of Gets take 300 ms (injected); Get's per-attempt timeout of 200 ms
// (retryPolicy.perAttemptTimeout) gives up on them and the next attempt
// answers, well within the call's `timeout` of 2 s.
void Slow(Demo& demo) {
  std::printf("\n-- a slow backend: 20%% of Gets take 300 ms (injected); Get's per-attempt\n"
              "   timeout is 200 ms (retryPolicy.perAttemptTimeout), the whole call's 2 s\n");
  auto server = StartServer([](const std::string& method, resilience::v1::MethodConfig& entry) {
    if (method != "Get") return;
    entry.mutable_fault_injection()->mutable_delay()->set_nanos(300000000);
    entry.mutable_fault_injection()->set_delay_fraction(0.2);
    entry.mutable_fault_injection()->set_seed(7);
  });
  if (server == nullptr) return demo.Step("start the slow server", "failed", false);
  std::shared_ptr<resilience::ClientResilience> stats;
  std::unique_ptr<CacheService::Stub> main_stub =
      demo.SwapStub(CacheService::NewStub(ResilientChannel(server->address(), &stats)));
  std::string value;
  grpc::Status s = demo.Store("k", "v");
  int ok = 0;
  absl::Duration slowest;
  for (int i = 0; i < 10; ++i) {
    const absl::Time start = absl::Now();
    ok += demo.Get("k", &value).ok() ? 1 : 0;
    slowest = std::max(slowest, absl::Now() - start);
  }
  const auto client = stats->Stats("/cache.v1.CacheService/Get");
  const auto server_stats = server->resilience().Stats("/cache.v1.CacheService/Get");
  demo.SwapStub(std::move(main_stub));
  demo.Step("10 Gets against the slow backend",
            absl::StrFormat("%d OK; %d attempts timed out and were retried, slowest call %.0f ms",
                            ok, client.attempt_timeouts, absl::ToDoubleMilliseconds(slowest)),
            s.ok() && ok == 10 && client.attempt_timeouts > 0 &&
                client.attempt_timeouts == server_stats.faults_delayed &&
                slowest < absl::Milliseconds(450));
  server->Shutdown(absl::ZeroDuration());
}

// The backend goes away: Store's three-state breaker (10 consecutive
// failures) opens, calls fail fast without reaching the network, and once
// its open period is over a probe finds the restarted backend and closes it.
void Outage(Demo& demo) {
  std::printf("\n-- an outage: the backend goes away and comes back; Store has a three-state\n"
              "   breaker (opens after 10 consecutive failures, open 100 ms, probes every 20 ms)\n");
  auto server = StartServer(NoFaults);
  if (server == nullptr) return demo.Step("start the server", "failed", false);
  const int port = server->port();
  std::shared_ptr<resilience::ClientResilience> stats;
  std::unique_ptr<CacheService::Stub> main_stub =
      demo.SwapStub(CacheService::NewStub(ResilientChannel(server->address(), &stats)));
  const char* kStore = "/cache.v1.CacheService/Store";
  grpc::Status s = demo.Store("k", "v");
  server->Shutdown(absl::ZeroDuration());
  server.reset();  // down
  int failed = 0;
  for (int i = 0; i < 30; ++i) failed += demo.Store("k", "v").ok() ? 0 : 1;
  const auto during = stats->Stats(kStore);
  const auto state_open = stats->BreakerSnapshotOf(kStore)->state;
  server = StartServer(NoFaults, port);  // back
  absl::SleepFor(absl::Seconds(1));  // the channel reconnects; the open period ends
  grpc::Status probe = demo.Store("k", "v");
  const auto state_after = stats->BreakerSnapshotOf(kStore)->state;
  int ok_after = 0;
  for (int i = 0; i < 10; ++i) ok_after += demo.Store("k", "v").ok() ? 1 : 0;
  demo.SwapStub(std::move(main_stub));
  demo.Step("30 Stores while the backend is down",
            absl::StrFormat("%d failed: %d reached the network, %d rejected locally; breaker %s",
                            failed, during.attempts - 1 - during.rejected_by_breaker,
                            during.rejected_by_breaker, resilience::BreakerStateName(state_open)),
            s.ok() && failed == 30 && during.rejected_by_breaker == 20 &&
                state_open == resilience::BreakerState::kOpen);
  demo.Step("backend back; after 1 s a probe Store, then 10 more",
            absl::StrFormat("probe %s, breaker %s, %d of 10 OK", Show(probe),
                            resilience::BreakerStateName(state_after), ok_after),
            probe.ok() && state_after == resilience::BreakerState::kClosed && ok_after == 10);
  if (server != nullptr) server->Shutdown(absl::ZeroDuration());
}

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

// 5% of Gets take 80 ms (injected): the same 800 Gets (4 callers) once on a
// channel without hedging and once on one whose Get has a hedgingPolicy
// (a second attempt 5 ms after the first; the first answer wins). The
// shipped policies are left as they are: the hedging policy is this
// section's own.
void Hedged(Demo& demo) {
  std::printf("\n-- a long tail: 5%% of Gets take 80 ms (injected); a hedged Get sends a\n"
              "   second attempt after 5 ms (hedgingPolicy) and takes the first answer\n");
  auto server = StartServer([](const std::string& method, resilience::v1::MethodConfig& entry) {
    if (method != "Get") return;
    entry.mutable_fault_injection()->mutable_delay()->set_nanos(80000000);
    entry.mutable_fault_injection()->set_delay_fraction(0.05);
    entry.mutable_fault_injection()->set_seed(11);
  });
  if (server == nullptr) return demo.Step("start the long-tailed server", "failed", false);
  cache_service::LoadOptions load;
  load.calls = 800;
  load.concurrency = 4;
  load.get_fraction = 1.0;
  load.key_space = 1;  // key-0, stored below: every Get answers OK
  constexpr char kHedged[] = R"({"methodConfig": [{"name": [{"service": "cache.v1.CacheService",
      "method": "Get"}], "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.005s"}}]})";
  cache_service::LoadReport runs[2];
  std::shared_ptr<resilience::ClientResilience> hedged_stats;
  for (int hedged = 0; hedged < 2; ++hedged) {
    resilience::ResilientChannel channel = resilience::CreateResilientChannel(
        server->address(), grpc::InsecureChannelCredentials(),
        *resilience::PolicySet::FromJsonString(hedged ? kHedged : "{}"), {});
    auto stub = CacheService::NewStub(channel.channel);
    grpc::ClientContext context;
    cache::v1::StoreReq request;
    request.set_key("key-0");
    request.set_value("v");
    cache::v1::StoreResp response;
    stub->Store(&context, request, &response);
    runs[hedged] = cache_service::RunLoad(*stub, load);
    if (hedged) hedged_stats = channel.resilience;
  }
  const auto client = hedged_stats->Stats("/cache.v1.CacheService/Get");
  const double p99_plain = absl::ToDoubleMilliseconds(runs[0].Percentile(0.99));
  const double p99_hedged = absl::ToDoubleMilliseconds(runs[1].Percentile(0.99));
  demo.Step("800 Gets, without and with hedging",
            absl::StrFormat("p99 %.1f ms -> %.1f ms; %.3f attempts per call", p99_plain,
                            p99_hedged, static_cast<double>(client.attempts) / client.calls),
            runs[0].count(grpc::StatusCode::OK) == 800 &&
                runs[1].count(grpc::StatusCode::OK) == 800 && p99_hedged * 3 < p99_plain &&
                client.attempts <= client.calls * 1.2);
  server->Shutdown(absl::ZeroDuration());
}

// An adaptive concurrency limit (throttle.adaptive) in front of a backend of
// bounded capacity that loses half its workers mid-load: the limit follows
// the capacity down and admitted calls keep their latency; the rest are
// turned away at once with a pushback (examples/cache_service/
// adaptive_limit_demo.h, docs/adaptive-concurrency.md).
void AdaptiveLimit(Demo& demo) {
  std::printf("\n-- an adaptive concurrency limit (throttle.adaptive, defaults): a backend of 16\n"
              "   workers x 10 ms loses 8 of them mid-load; 2400 calls/s with a 100 ms deadline\n");
  absl::StatusOr<cache_service::AdaptiveLimitRun> run = cache_service::RunAdaptiveLimitDemo();
  if (!run.ok()) return demo.Step("run the adaptive-limit load", run.status().ToString(), false);
  for (const auto* half : {&run->before, &run->after}) {
    std::printf("      %2d workers: limit %5.1f, %4.0f good calls/s, %4.0f rejected/s (with "
                "pushback), admitted p90 %.1f ms, p99 %.1f ms\n",
                half->workers, half->limit, half->goodput, half->rejected,
                absl::ToDoubleMilliseconds(half->admitted_p90),
                absl::ToDoubleMilliseconds(half->admitted_p99));
  }
  // Held: 8 workers of 10 ms under a limit near 1.5x their number keep
  // admitted calls near 2x the service time, far under the deadline.
  demo.Step("The limit follows the capacity down, latency held",
            absl::StrFormat("limit %.0f -> %.0f, admitted p90 %.0f -> %.0f ms", run->before.limit,
                            run->after.limit, absl::ToDoubleMilliseconds(run->before.admitted_p90),
                            absl::ToDoubleMilliseconds(run->after.admitted_p90)),
            run->after.limit < 0.75 * run->before.limit &&
                run->after.admitted_p90 <= 4 * run->service_time &&
                run->after.goodput > 0.6 * 800 && run->rejections_without_pushback == 0);
}

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
        "--metrics_port: this build has no metrics endpoint (civetweb was not found)");
  }
#endif
  const absl::Time demo_start = absl::Now();
  // The main server: the shipped policies, and a slow Dump (an injected
  // 300 ms delay) so that Dump calls hold their throttle slots long enough
  // for a burst to find both taken.
  std::unique_ptr<cache_service::CacheServer> server =
      StartServer([](const std::string& method, resilience::v1::MethodConfig& entry) {
        if (method == "Dump") entry.mutable_fault_injection()->mutable_delay()->set_nanos(300000000);
      });
  if (server == nullptr) return 1;
  std::shared_ptr<resilience::ClientResilience> client_stats;
  Demo demo(CacheService::NewStub(ResilientChannel(server->address(), &client_stats)));
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

  std::printf("cache_demo: cache server listening on %s (max_entries 300, max_value_bytes 4096);\n"
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
  demo.Step("Dump", absl::StrCat(Show(s), ", ", keys.size(), " entries, ",
                                 keys.empty() ? "" : keys.front() + " .. " + keys.back()),
            s.ok() && keys.size() == 300 && std::is_sorted(keys.begin(), keys.end()));

  Flaky(demo);
  Slow(demo);
  Outage(demo);
  Hedged(demo);
  AdaptiveLimit(demo);

  std::printf("\n-- server throttling: Dump allows 2 calls at once (policies.json), and the\n"
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
    std::printf("      server counters for Dump: admitted %ld, rejected by the concurrency limit "
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
  const int64_t answered = report.count(grpc::StatusCode::OK) +
                           report.count(grpc::StatusCode::NOT_FOUND);
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

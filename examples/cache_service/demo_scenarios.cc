#include "examples/cache_service/demo_scenarios.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "examples/cache_service/adaptive_limit_demo.h"
#include "examples/cache_service/cache_calls.h"
#include "examples/cache_service/load_generator.h"
#include "grpc_resilience/resilient_channel.h"
#include "grpcpp/security/credentials.h"

namespace cache_service {

using cache::v1::CacheService;

// The backend fails 5% of Gets with UNAVAILABLE; Get's retry policy
// (3 attempts, UNAVAILABLE retryable) turns the failures into successes.
void Flaky(DemoSession& demo) {
  std::printf(
      "\n-- a flaky backend: 5%% of Gets fail with UNAVAILABLE (injected); Get retries\n"
      "   (3 attempts, within a retry budget that allows about 1 retry per 10 calls)\n");
  auto server = StartServer([](const std::string& method) -> std::string {
    if (method != "Get") return "";
    return R"({"abortCode": "UNAVAILABLE", "abortFraction": 0.05, "seed": 42})";
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
void Slow(DemoSession& demo) {
  std::printf(
      "\n-- a slow backend: 20%% of Gets take 300 ms (injected); Get's per-attempt\n"
      "   timeout is 200 ms (retryPolicy.perAttemptTimeout), the whole call's 2 s\n");
  auto server = StartServer([](const std::string& method) -> std::string {
    if (method != "Get") return "";
    return R"({"delay": "0.3s", "delayFraction": 0.2, "seed": 7})";
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
void Outage(DemoSession& demo) {
  std::printf(
      "\n-- an outage: the backend goes away and comes back; Store has a three-state\n"
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
  absl::SleepFor(absl::Seconds(1));      // the channel reconnects; the open period ends
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

// 5% of Gets take 80 ms (injected): the same 800 Gets (4 callers) once on a
// channel without hedging and once on one whose Get has a hedgingPolicy
// (a second attempt 5 ms after the first; the first answer wins). The
// shipped policies are left as they are: the hedging policy is this
// section's own.
void Hedged(DemoSession& demo) {
  std::printf(
      "\n-- a long tail: 5%% of Gets take 80 ms (injected); a hedged Get sends a\n"
      "   second attempt after 5 ms (hedgingPolicy) and takes the first answer\n");
  auto server = StartServer([](const std::string& method) -> std::string {
    if (method != "Get") return "";
    return R"({"delay": "0.08s", "delayFraction": 0.05, "seed": 11})";
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
            absl::StrFormat("p99 %.1f ms -> %.1f ms; %.3f attempts per call", p99_plain, p99_hedged,
                            static_cast<double>(client.attempts) / client.calls),
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
void AdaptiveLimit(DemoSession& demo) {
  std::printf(
      "\n-- an adaptive concurrency limit (throttle.adaptive, defaults): a backend of 16\n"
      "   workers x 10 ms loses 8 of them mid-load; 2400 calls/s with a 100 ms deadline\n");
  absl::StatusOr<cache_service::AdaptiveLimitRun> run = cache_service::RunAdaptiveLimitDemo();
  if (!run.ok()) return demo.Step("run the adaptive-limit load", run.status().ToString(), false);
  for (const auto* half : {&run->before, &run->after}) {
    std::printf(
        "      %2d workers: limit %5.1f, %4.0f good calls/s, %4.0f rejected/s (with "
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

}  // namespace cache_service
